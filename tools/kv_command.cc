// `palisade put|get|del`: the store through its quorums. Writes are fenced by a
// sequencer (--sequencer, else $PALISADE_SEQUENCER, which `palisade lock` sets
// for its COMMAND), and unfenced without one.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "tools/cluster_clients.h"
#include "tools/command.h"

namespace palisade::tools {
namespace {

struct KvFlags {
  std::string key;
  std::string value;
  std::string sequencer;
  std::chrono::milliseconds timeout{5000};
};

std::string dump(const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

Result<Fence> fence_of(const KvFlags& flags) {
  std::string text = flags.sequencer;
  if (text.empty()) {
    const char* env = std::getenv("PALISADE_SEQUENCER");
    if (env != nullptr) text = env;
  }
  if (text.empty()) return Fence{};
  auto fence = Fence::from_sequencer(text);
  if (!fence.is_ok()) return Status(Code::kBadRequest, "the sequencer is not one: " + fence.status().message());
  return fence;
}

int write(const char* what, const KvFlags& flags, const CommonOptions& common, bool tombstone) {
  auto config = load_cluster(common);
  if (!config.is_ok()) return report_cluster_error(what, config.status());
  auto fence = fence_of(flags);
  if (!fence.is_ok()) return report_error(what, fence.status());
  auto store = open_store(config.value(), flags.timeout);
  if (!store.is_ok()) return report_error(what, store.status());
  const WriteResult w = tombstone ? store.value()->del(flags.key, fence.value())
                                  : store.value()->put(flags.key, flags.value, fence.value());
  if (!w.status.is_ok()) {
    if (w.status.code() == Code::kFenced) {
      std::fprintf(stderr, "palisade: %s: fenced: lock '%s' has a newer holder (token %llu < %llu); nothing was written\n",
                   what, fence.value().lock.c_str(), static_cast<unsigned long long>(fence.value().token),
                   static_cast<unsigned long long>(w.floor));
      return kExitFenced;
    }
    return report_error(what, w.status);
  }
  if (common.json()) {
    nlohmann::json out{{"key", flags.key}, {"timestamp", w.ts.to_string()}, {"token", w.ts.token}};
    out["lock"] = fence.value().lock.empty() ? nlohmann::json(nullptr) : nlohmann::json(fence.value().lock);
    std::printf("%s\n", dump(out).c_str());
  } else {
    std::printf("OK\n");
  }
  return kExitOk;
}

int read(const KvFlags& flags, const CommonOptions& common) {
  auto config = load_cluster(common);
  if (!config.is_ok()) return report_cluster_error("get", config.status());
  auto store = open_store(config.value(), flags.timeout);
  if (!store.is_ok()) return report_error("get", store.status());
  const ReadResult r = store.value()->get(flags.key);
  if (!r.status.is_ok()) return report_error("get", r.status);
  if (common.json()) {
    nlohmann::json out{{"key", flags.key}, {"found", r.found}};
    if (r.found) {
      out["value"] = r.value;
      out["timestamp"] = r.ts.to_string();
      out["token"] = r.ts.token;
      out["lock"] = r.lock.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.lock);
    }
    std::printf("%s\n", dump(out).c_str());
  } else if (r.found) {
    std::fwrite(r.value.data(), 1, r.value.size(), stdout);
    std::printf("\n");
  } else {
    std::fprintf(stderr, "palisade: get: no key '%s'\n", flags.key.c_str());
  }
  return r.found ? kExitOk : kExitNotFound;
}

void add_flags(CLI::App* sub, KvFlags& flags, bool with_value, bool fenced) {
  sub->add_option("KEY", flags.key, "The key")->required();
  if (with_value) sub->add_option("VALUE", flags.value, "The value")->required();
  if (fenced) {
    sub->add_option("--sequencer", flags.sequencer,
                    "Fence the write with this lock grant (default: $PALISADE_SEQUENCER; none: unfenced)");
  }
  add_duration_option(sub, "--timeout", flags.timeout, "How long to wait for the quorum");
}

}  // namespace

void add_kv_commands(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<KvFlags>();
  auto* put = app.add_subcommand("put", "Write KEY=VALUE to a write quorum of replicas");
  add_flags(put, *flags, true, true);
  put->callback([flags, &common, &exit_code] { exit_code = write("put", *flags, common, false); });

  auto* get = app.add_subcommand("get", "Read KEY from a read quorum (repairing replicas that answered older)");
  add_flags(get, *flags, false, false);
  get->callback([flags, &common, &exit_code] { exit_code = read(*flags, common); });

  auto* del = app.add_subcommand("del", "Delete KEY (a tombstone written to a write quorum)");
  add_flags(del, *flags, false, true);
  del->callback([flags, &common, &exit_code] { exit_code = write("del", *flags, common, true); });
}

}  // namespace palisade::tools
