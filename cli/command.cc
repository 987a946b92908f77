#include "cli/command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/endpoint.h"
#include "config/cluster_keys.h"
#include "lockgroup/paxos_messages.h"

namespace palisade::cli {
namespace {

// How errors are printed: as -o asks (main() also sets it for usage errors).
OutputFormat error_format = OutputFormat::kText;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

std::string default_cluster_dir() {
  if (std::string home = env("PALISADE_HOME"); !home.empty()) return home + "/local";
  if (std::string state = env("XDG_STATE_HOME"); !state.empty()) return state + "/palisade/local";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.local/state/palisade/local";
  return "/tmp/palisade-" + std::to_string(getuid()) + "/local";
}

std::string resolve_cluster_file(const CommonOptions& common) {
  if (!common.cluster_file.empty()) return common.cluster_file;
  if (std::string file = env("PALISADE_CLUSTER"); !file.empty()) return file;
  return default_cluster_dir() + "/cluster.toml";
}

Result<ClusterAccess> load_cluster(const CommonOptions& common) {
  const std::string file = resolve_cluster_file(common);
  const char* how = !common.cluster_file.empty()        ? "--cluster"
                    : !env("PALISADE_CLUSTER").empty() ? "$PALISADE_CLUSTER"
                                                       : "the local cluster's file";
  if (!std::filesystem::exists(file)) {
    std::string hint = common.cluster_file.empty() && env("PALISADE_CLUSTER").empty()
                           ? " (start one with `palisade cluster up`, or name a cluster file with --cluster)"
                           : "";
    return Status(Code::kUnavailable, "no cluster file at " + file + " (" + how + ")" + hint);
  }
  auto config = load_cluster_file(file);
  if (!config.is_ok()) {
    return Status(Code::kBadRequest, "cluster file " + file + " (" + how + "): " + config.status().message());
  }
  // A plaintext cluster ignores $PALISADE_KEY (set for another cluster, say),
  // not a --key given for it.
  std::string key = common.key_file;
  if (key.empty() && !config.value().identities.empty()) {
    key = env("PALISADE_KEY");
    const std::string beside = (std::filesystem::path(file).parent_path() / "keys" / "admin.key").string();
    if (key.empty() && std::filesystem::exists(beside)) key = beside;
  }
  auto credentials = load_client_credentials(config.value(), key);
  if (!credentials.is_ok()) return credentials.status();
  return ClusterAccess{std::move(config).value(), std::move(credentials).value()};
}

int report_cluster_error(std::string_view what, const Status& status) {
  return report_failure(what, status.message(),
                        status.code() == Code::kUnavailable ? kExitUnavailable : kExitFailure);
}

int exit_code_for(const Status& status) {
  switch (status.code()) {
    case Code::kOk: return kExitOk;
    case Code::kFenced: return kExitFenced;
    case Code::kBadSequencer: return kExitUsage;  // forged, another cluster's, a shared grant: not a newer holder
    case Code::kUnavailable:
    case Code::kNotMaster:
    case Code::kStaleEpoch: return kExitUnavailable;
    case Code::kTimeout:
    case Code::kBusy: return kExitTimeout;
    case Code::kBadRequest:
    case Code::kTooLarge: return kExitUsage;
    // The cluster file leads to another cluster's daemons: a bad cluster file
    // (or a port taken over), which no retry mends.
    case Code::kWrongCluster: return kExitFailure;
    case Code::kPermissionDenied:
      return kExitPermissionDenied;
    default: return kExitFailure;
  }
}

int report_error(std::string_view what, const Status& status) {
  return report_failure(what, status.to_string(), exit_code_for(status));
}

int report_failure(std::string_view what, std::string_view message, int code) {
  if (error_format == OutputFormat::kJson) {
    const nlohmann::json out{{"error", {{"command", what}, {"message", message}, {"exit_code", code}}}};
    std::fprintf(stderr, "%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fprintf(stderr, "palisade: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
                 static_cast<int>(message.size()), message.data());
  }
  return code;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    uint64_t n = 0;
    size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      if (n > (UINT64_MAX - 9) / 10) return std::nullopt;
      n = n * 10 + static_cast<uint64_t>(text[i] - '0');
    }
    size_t unit_start = i;
    while (i < text.size() && (text[i] < '0' || text[i] > '9')) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    uint64_t scale = 0;
    if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60'000;
    else if (unit == "h") scale = 3'600'000;
    if (digits == 0 || scale == 0) return std::nullopt;
    if (n > (UINT64_MAX - total_ms) / scale) return std::nullopt;
    total_ms += n * scale;
  }
  if (total_ms > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(total_ms));
}

std::string format_duration(std::chrono::milliseconds d) {
  const int64_t ms = d.count();
  if (ms % 3'600'000 == 0 && ms != 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0 && ms != 0) return std::to_string(ms / 60'000) + "m";
  if (ms >= 1000 && ms % 100 == 0) {
    std::string s = std::to_string(ms / 1000);
    if (ms % 1000 != 0) s += "." + std::to_string(ms % 1000 / 100);
    return s + "s";
  }
  return std::to_string(ms) + "ms";
}

EpochParts epoch_parts(uint64_t epoch) { return {lockgroup::ballot_round(epoch), lockgroup::ballot_node(epoch)}; }

std::string format_epoch(uint64_t epoch) {
  if (epoch == 0) return "0";
  const EpochParts p = epoch_parts(epoch);
  return std::to_string(p.round) + "." + std::to_string(p.node);
}

CLI::Option* add_duration_option(CLI::App* app, const std::string& name, std::chrono::milliseconds& target,
                                 const std::string& description) {
  return add_duration_option(app, name, target, true, description);
}

CLI::Option* add_duration_option(CLI::App* app, const std::string& name, std::chrono::milliseconds& target,
                                 bool allow_zero, const std::string& description) {
  auto* option = app->add_option_function<std::string>(
      name,
      [&target, allow_zero, name](const std::string& text) {
        auto d = parse_duration(text);
        if (!d) throw CLI::ValidationError("'" + text + "' is not a duration: write it with a unit, as 500ms, 2s, 1m or 1m30s");
        if (!allow_zero && d->count() == 0) throw CLI::ValidationError(name + " must be more than 0");
        target = *d;
      },
      description);
  option->type_name("DURATION")->default_str(format_duration(target));
  return option;
}

CLI::Validator endpoint_validator() {
  return CLI::Validator([](std::string& endpoint) { return endpoint_problem(endpoint); }, "ENDPOINT", "endpoint");
}

void set_error_format(OutputFormat format) { error_format = format; }

void add_common_options(CLI::App& app, CommonOptions& common) {
  app.add_option("--cluster", common.cluster_file,
                 "The cluster file (default: $PALISADE_CLUSTER, else the local cluster's: " + default_cluster_dir() +
                     "/cluster.toml)")
      ->type_name("FILE");
  app.add_option("--key", common.key_file,
                 "The key file to connect with when the cluster file lists identities (default:\n"
                 "$PALISADE_KEY, else keys/admin.key beside the cluster file, as `cluster up` makes)")
      ->type_name("FILE");
  app.add_option_function<std::string>(
         "-o,--output",
         [&common](const std::string& format) {
           common.output = format == "json" ? OutputFormat::kJson : OutputFormat::kText;
           error_format = common.output;
         },
         "Output format: text, or json for tools")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("text|json")
      ->default_str("text");
}

}  // namespace palisade::cli
