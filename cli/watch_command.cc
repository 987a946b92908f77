// `palisade watch KEY | --prefix P | --lock NAME`: prints each change as a
// watcher sees it (palisade/watch.h), one line each, until interrupted or
// --count changes.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <stop_token>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/base64.h"
#include "cli/cluster_clients.h"
#include "cli/command.h"
#include "cli/held_command.h"
#include "cli/reachable.h"
#include "cli/signal_relay.h"
#include "palisade/watch.h"

namespace palisade::cli {
namespace {

struct WatchFlags {
  std::string key;
  std::optional<std::string> prefix;
  std::string lock;
  std::chrono::milliseconds every{500};
  bool only_changes = false;
  size_t count = 0;  // 0: until interrupted
};

void print_line(const nlohmann::json& out) {
  std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

// "put<TAB>KEY<TAB>TS<TAB>VALUE" or "del<TAB>KEY<TAB>TS" ("?" for a delete
// whose version is not known); -o json: one object a line.
void print_event(const WatchEvent& e, const CommonOptions& common) {
  const bool put = e.kind == WatchEvent::Kind::kPut;
  const bool known = e.ts != FencedTimestamp{};
  if (common.json()) {
    nlohmann::json out{{"event", put ? "put" : "delete"}};
    put_bytes(out, "key", e.key);
    if (put) put_bytes(out, "value", e.value);
    out["timestamp"] = known ? nlohmann::json(e.ts.to_string()) : nlohmann::json(nullptr);
    out["token"] = e.ts.token;
    if (put) out["lock"] = e.lock.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.lock);
    return print_line(out);
  }
  std::fputs(put ? "put\t" : "del\t", stdout);
  std::fwrite(e.key.data(), 1, e.key.size(), stdout);
  std::printf("\t%s", known ? e.ts.to_string().c_str() : "?");
  if (put) {
    std::fputc('\t', stdout);
    std::fwrite(e.value.data(), 1, e.value.size(), stdout);
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// "held<TAB>TOKEN<TAB>MODE" or "free"; -o json: {"event": "held"|"free", ...}.
void print_lock_event(const LockWatchEvent& e, const CommonOptions& common) {
  if (common.json()) {
    nlohmann::json out{{"event", e.grant ? "held" : "free"}, {"lock", e.lock}};
    if (e.grant) {
      out["token"] = e.grant->token;
      out["mode"] = mode_name(e.grant->mode);
    }
    return print_line(out);
  }
  if (e.grant) {
    std::printf("held\t%llu\t%s\n", static_cast<unsigned long long>(e.grant->token),
                std::string(mode_name(e.grant->mode)).c_str());
  } else {
    std::printf("free\n");
  }
  std::fflush(stdout);
}

// Said on stderr when rounds start to fail, and when they succeed again.
std::function<void(const Status&)> say_status(const WatchFlags& flags) {
  return [every = flags.every](const Status& s) {
    if (s.is_ok()) {
      std::fprintf(stderr, "palisade: watch: answering again\n");
    } else {
      std::fprintf(stderr, "palisade: watch: %s; asking again every %lld ms\n", s.to_string().c_str(),
                   static_cast<long long>(every.count()));
    }
  };
}

// Runs `watch` until a stop signal, or until it told `count` changes.
Status watch_until_done(const WatchFlags& flags,
                        const std::function<Status(std::stop_token, std::function<void()>)>& watch) {
  Status ended;
  until_stop_signal([&](std::stop_token signalled) {
    std::stop_source done;
    std::stop_callback relay(signalled, [&] { done.request_stop(); });
    size_t told = 0;
    ended = watch(done.get_token(), [&] {
      if (flags.count != 0 && ++told >= flags.count) done.request_stop();
    });
  });
  return ended;
}

int run(const WatchFlags& flags, const CommonOptions& common) {
  const int targets = (flags.key.empty() ? 0 : 1) + (flags.prefix ? 1 : 0) + (flags.lock.empty() ? 0 : 1);
  if (targets != 1) return report_failure("watch", "give one of KEY, --prefix P or --lock NAME", kExitUsage);
  if (flags.every < std::chrono::milliseconds(10)) {
    return report_failure("watch", "--every must be at least 10ms", kExitUsage);
  }
  // Before any thread starts, so that only until_stop_signal takes them.
  const sigset_t stops = stop_signals();
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);

  if (!flags.lock.empty()) {
    HeldSession session;
    if (int failed = open_held_session("watch", common, {}, std::chrono::seconds(10), false, session)) return failed;
    LockWatcher watcher(*session.client, flags.lock);
    bool first = true;
    const Status ended = watch_until_done(flags, [&](std::stop_token stop, std::function<void()> told) {
      return watcher.run(
          [&](const LockWatchEvent& e) {
            const bool now = std::exchange(first, false);
            if (now && flags.only_changes) return;
            print_lock_event(e, common);
            told();
          },
          stop, flags.every, say_status(flags));
    });
    return ended.is_ok() ? kExitOk : report_error("watch", ended);
  }

  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error("watch", loaded.status());
  auto store = open_store(loaded.value());
  if (!store.is_ok()) return report_error("watch", store.status());
  const ReplicaSetInUse set = store.value()->replica_set();
  if (Status s = enough_listening(set.replicas, set.read_quorum, "replicas"); !s.is_ok()) {
    return report_error("watch", s);
  }
  Watcher watcher(*store.value(), {.key = flags.prefix.value_or(flags.key),
                                   .prefix = flags.prefix.has_value(),
                                   .initial = !flags.only_changes,
                                   .page = 1000});
  const Status ended = watch_until_done(flags, [&](std::stop_token stop, std::function<void()> told) {
    return watcher.run(
        [&](const WatchEvent& e) {
          print_event(e, common);
          told();
        },
        stop, flags.every, say_status(flags));
  });
  return ended.is_ok() ? kExitOk : report_error("watch", ended);
}

}  // namespace

void add_watch_command(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<WatchFlags>();
  auto* watch = app.add_subcommand("watch", "Print each change of KEY, of the keys under --prefix P, or of who "
                                            "holds --lock NAME, until interrupted");
  watch->add_option("KEY", flags->key, "The key to watch");
  watch->add_option("--prefix", flags->prefix, "Watch every key that starts with P (\"\" for every key)")
      ->type_name("P");
  watch->add_option("--lock", flags->lock, "Watch who holds lock NAME (its grants, by token)")->type_name("NAME");
  add_duration_option(watch, "--every", flags->every, "How often to read what is watched")->default_str("500ms");
  watch->add_flag("--only-changes", flags->only_changes, "Print only what changes from now on, not the state now");
  watch->add_option("--count", flags->count, "Exit after N changes (0: until interrupted)")->type_name("N");
  watch->footer(
      "Each round reads KEY or the prefix by the read rules (as `get` does), or asks the lock group's\n"
      "master who holds the lock, and prints what changed since the round before, a line each:\n"
      "  put<TAB>KEY<TAB>TIMESTAMP<TAB>VALUE    del<TAB>KEY<TAB>TIMESTAMP    held<TAB>TOKEN<TAB>MODE    free\n"
      "(-o json: one object a line). Each key's versions come in timestamp order, never one a read\n"
      "would not return (a fenced write), never going back; versions written and overwritten between\n"
      "two rounds are printed as the last of them (docs/consistency.md, \"Watches\"). A delete whose\n"
      "version is no longer known prints \"?\". Rounds that fail (too few replicas) are said on stderr\n"
      "and tried again. The first round prints the state now (the keys' values, the lock's holder),\n"
      "unless --only-changes.\n"
      "Exit: 0 when interrupted (SIGINT, SIGTERM, SIGHUP) or after --count changes; 9 when the key's\n"
      "identity may not read it; 2 on bad flags.\n"
      "Examples:\n"
      "  palisade watch config/feature-x\n"
      "  palisade watch --prefix services/ -o json\n"
      "  palisade watch --lock scheduler --count 1      # wait for the next grant or release");
  watch->callback([flags, &common, &exit_code] { exit_code = run(*flags, common); });
}

}  // namespace palisade::cli
