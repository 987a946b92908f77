#include "cli/command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "antientropy/anti_entropy.h"
#include "client/replica_view.h"
#include "cli/replica_record.h"
#include "config/client_cluster.h"

namespace palisade::cli {
namespace {

using namespace std::chrono_literals;

struct RepairFlags {
  std::vector<std::string> replicas;
  bool dry_run = false;
  std::optional<std::chrono::milliseconds> gc_grace;
  std::chrono::milliseconds timeout{5000};
};

std::string bytes_text(uint64_t bytes) {
  char out[32];
  if (bytes < 10 * 1024) {
    std::snprintf(out, sizeof out, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < 10 * 1024 * 1024) {
    std::snprintf(out, sizeof out, "%.1f KiB", bytes / 1024.0);
  } else {
    std::snprintf(out, sizeof out, "%.1f MiB", bytes / (1024.0 * 1024.0));
  }
  return out;
}

void print_progress(const AntiEntropyReport& r) {
  std::fprintf(stderr, "\r\033[Kranges %llu/%llu, keys compared %llu, moved %s",
               static_cast<unsigned long long>(r.ranges_done), static_cast<unsigned long long>(r.ranges_total),
               static_cast<unsigned long long>(r.keys_compared), bytes_text(r.bytes_moved()).c_str());
}

void print_text(const AntiEntropyReport& r, size_t compared, int cluster_size) {
  const char* outcome = r.equal ? "equal" : r.dry_run ? "differed (dry run: nothing changed)" : "differed, repaired";
  std::printf("%zu of %d replicas compared, %zu answered: %s\n", compared, cluster_size,
              compared - r.unreachable.size(), outcome);
  std::printf("ranges %llu/%llu, entries compared %llu, differing %llu\n",
              static_cast<unsigned long long>(r.ranges_done), static_cast<unsigned long long>(r.ranges_total),
              static_cast<unsigned long long>(r.keys_compared), static_cast<unsigned long long>(r.keys_differing));
  std::printf("%s: versions sent %llu, committed %llu, floors raised %llu, purged %llu, tombstones dropped %llu, "
              "corrupt replaced %llu\n",
              r.dry_run ? "would do" : "done", static_cast<unsigned long long>(r.versions_sent),
              static_cast<unsigned long long>(r.versions_committed), static_cast<unsigned long long>(r.floors_raised),
              static_cast<unsigned long long>(r.purged), static_cast<unsigned long long>(r.tombstones_dropped),
              static_cast<unsigned long long>(r.corrupt_replaced));
  if (r.undecided != 0) {
    std::printf("undecided: %llu pending versions (a replica not heard from could hold them)\n",
                static_cast<unsigned long long>(r.undecided));
  }
  if (r.refused != 0) {
    std::printf("refused: %llu repairs (first: %s)\n", static_cast<unsigned long long>(r.refused),
                r.first_refusal.c_str());
  }
  std::printf("traffic: %llu messages, %s (tree and leaves %s)\n", static_cast<unsigned long long>(r.messages),
              bytes_text(r.bytes_moved()).c_str(), bytes_text(r.tree_bytes).c_str());
  for (const auto& e : r.unreachable) std::printf("unreachable: %s\n", e.c_str());
}

void print_json(const AntiEntropyReport& r) {
  nlohmann::json out{{"equal", r.equal},
                     {"dry_run", r.dry_run},
                     {"ranges_done", r.ranges_done},
                     {"ranges_total", r.ranges_total},
                     {"keys_compared", r.keys_compared},
                     {"keys_differing", r.keys_differing},
                     {"versions_sent", r.versions_sent},
                     {"versions_committed", r.versions_committed},
                     {"floors_raised", r.floors_raised},
                     {"purged", r.purged},
                     {"tombstones_dropped", r.tombstones_dropped},
                     {"corrupt_replaced", r.corrupt_replaced},
                     {"undecided", r.undecided},
                     {"refused", r.refused},
                     {"messages", r.messages},
                     {"bytes_moved", r.bytes_moved()},
                     {"tree_bytes", r.tree_bytes},
                     {"unreachable", r.unreachable}};
  if (!r.first_refusal.empty()) out["first_refusal"] = r.first_refusal;
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

int run(const RepairFlags& flags, const CommonOptions& common) {
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error("repair", loaded.status());
  if (loaded.value().config.replicas.empty()) {  // a file that names only the lock group
    loaded = with_recorded_replicas(std::move(loaded).value(), 1000ms);
    if (!loaded.is_ok()) return report_error("repair", loaded.status());
  }
  const ClusterConfig& config = loaded.value().config;
  AntiEntropyOptions o;
  o.replicas = flags.replicas.empty() ? config.replicas : flags.replicas;
  o.cluster_size = static_cast<int>(config.replicas.size());
  if (!config.cluster_id.empty()) o.cluster_id = cluster_id_hex(config.cluster_id);
  o.write_quorum = config.write_quorum;
  o.credentials = loaded.value().credentials;
  o.gc_grace = flags.gc_grace;
  o.dry_run = flags.dry_run;
  o.timeout = flags.timeout;
  // A repairer holds the replicas' key: replicas that check sequencers take its
  // copies and commits of versions under a lock (docs/anti-entropy.md).
  const std::string& key_file = config.replicas_key_file();
  if (!key_file.empty() && ::access(key_file.c_str(), R_OK) == 0) {
    o.key_file = key_file;
    o.group = config.group;
  } else if (!key_file.empty() && !flags.dry_run) {
    std::fprintf(stderr,
                 "palisade repair: cannot read the replicas' key %s (%s): replicas that check sequencers will "
                 "refuse its repairs of versions under a lock\n",
                 key_file.c_str(), std::strerror(errno));
  }
  // Replicas take repairs only from replica and admin identities, and once
  // roles are configured let only them compare: say so before anything is sent.
  if (const auto& credentials = loaded.value().credentials) {
    const Permissions permissions = config.permissions();
    const std::string& who = credentials->identity;
    if (!flags.dry_run && !permissions.may_repair(who)) {
      return report_error("repair", Status(Code::kPermissionDenied,
                                           "identity '" + who +
                                               "' may not repair: give --key the key file of an identity with the "
                                               "admin role, or compare only with --dry-run"));
    }
    if (!permissions.may_inspect(who)) {
      return report_error("repair", Status(Code::kPermissionDenied,
                                           "identity '" + who +
                                               "' may not compare replicas: the cluster file's roles give that to "
                                               "admins; give --key the key file of one"));
    }
  }
  const bool show_progress = !common.json() && isatty(STDERR_FILENO);
  if (show_progress) o.progress = print_progress;
  // Replicas that keep a newer replica set than the file's list refuse the
  // run (stale_config): it goes again over that set, once its certificate
  // checks out (docs/design.md "The replica set").
  client::ReplicaView view{.endpoints = o.replicas, .credentials = o.credentials};
  std::string newer;
  o.newer_config = [&newer](const std::string& certificate) { newer = certificate; };
  auto report = run_anti_entropy(o);
  for (int moves = 0; !report.is_ok() && report.status().code() == Code::kStaleConfig && moves < 3; ++moves) {
    auto check = config_check(config.group, config.sequencer_public_key);
    auto next = client::next_view(view, newer, check ? check->signature_verifies : nullptr);
    if (!next.is_ok()) {
      return report_error("repair", Status(Code::kStaleConfig, report.status().message() +
                                                                   "; cannot follow it: " + next.status().message()));
    }
    view = std::move(next).value();
    std::fprintf(stderr, "palisade repair: the replicas keep replica set version %llu: comparing its %zu replicas\n",
                 static_cast<unsigned long long>(view.version), view.endpoints.size());
    if (flags.replicas.empty()) o.replicas = view.endpoints;
    o.cluster_size = static_cast<int>(view.endpoints.size());
    o.write_quorum = view.write_quorum;
    o.credentials = view.credentials;
    o.config = view.version;
    o.config_certificate = view.certificate;
    report = run_anti_entropy(o);
  }
  if (show_progress) std::fprintf(stderr, "\r\033[K");
  if (!report.is_ok()) return report_error("repair", report.status());
  const AntiEntropyReport& r = report.value();
  if (common.json()) {
    print_json(r);
  } else {
    print_text(r, o.replicas.size(), o.cluster_size);
  }
  if (!r.unreachable.empty()) return kExitUnavailable;
  return r.equal ? kExitOk : kExitDiffered;
}

}  // namespace

void add_repair_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<RepairFlags>();
  auto* sub = app.add_subcommand(
      "repair", "Anti-entropy: compare the replicas' Merkle trees and copy what differs, by the fence rules");
  sub->add_option(
         "--replica", flags->replicas,
         "A replica endpoint to compare (repeat it; default: every replica of the set, the cluster file's or, when it "
         "lists none, the one the lock group records)")
      ->type_name("ENDPOINT")
      ->check(endpoint_validator());
  sub->add_flag("--dry-run", flags->dry_run, "Report what differs, change nothing");
  sub->add_option_function<std::string>(
         "--gc-grace",
         [flags](const std::string& text) {
           auto d = parse_duration(text);
           if (!d) throw CLI::ValidationError("'" + text + "' is not a duration: write it with a unit, as 10m or 240h");
           flags->gc_grace = *d;
         },
         "Drop tombstones that every replica holds committed and that are older than this (default: keep them)")
      ->type_name("DURATION");
  add_duration_option(sub, "--timeout", flags->timeout, /*allow_zero=*/false, "A replica that does not answer within this is unreachable");
  sub->footer("Exit status: 0 the replicas were equal, 8 they differed (repaired, or left alone with --dry-run),\n"
              "4 a replica could not be reached (what the others allowed was repaired).");
  sub->callback([flags, &common, &exit_code] { exit_code = run(*flags, common); });
}

}  // namespace palisade::cli
