// `palisade put|get|del`, and `get --prefix`: the store through its quorums. Writes are fenced by a
// sequencer (--sequencer, else $PALISADE_SEQUENCER, which `palisade lock` sets
// for its COMMAND), and unfenced without one; with --if-absent or
// --if-version they are conditional (palisade/conditional.h), under the key's
// own lock. put reads its value from the command line, stdin (`-`) or a file
// (--from-file): argv holds 128 KiB at most.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "wire/sequencer.h"
#include "cli/base64.h"
#include "cli/cluster_clients.h"
#include "cli/command.h"
#include "cli/reachable.h"
#include "palisade/conditional.h"

namespace palisade::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct KvFlags {
  std::string key;
  std::optional<std::string> value;
  std::string from_file;
  std::optional<std::string> sequencer;  // given, perhaps empty
  std::chrono::milliseconds timeout{5000};
  std::optional<std::string> prefix;  // get --prefix
  std::string after;
  size_t limit = 0;  // 0: every key
  bool if_absent = false;  // put --if-absent
  std::optional<std::string> if_version;  // put, del --if-version TS
};

std::string dump(const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

Result<Fence> fence_of(const KvFlags& flags, const ClusterConfig& config) {
  if (flags.sequencer && flags.sequencer->empty()) {
    return Status(Code::kBadRequest, "--sequencer is empty: leave it out for an unfenced write");
  }
  std::string text = flags.sequencer.value_or("");
  if (!flags.sequencer) {
    const char* env = std::getenv("PALISADE_SEQUENCER");
    if (env != nullptr) text = env;
  }
  if (text.empty()) return Fence{};
  auto parsed = parse_sequencer(text);
  if (!parsed.is_ok()) return Status(Code::kBadRequest, "the sequencer is not one: " + parsed.status().message());
  if (parsed.value().mode != LockMode::kExclusive) {
    return Status(Code::kBadRequest, "the sequencer is of a shared grant of lock '" + parsed.value().lock +
                                         "', which cannot fence a write (shared holders write side by side): "
                                         "take the lock without --shared to write under it");
  }
  if (parsed.value().group != config.group) {
    return Status(Code::kBadRequest, "the sequencer is of lock group '" + parsed.value().group + "', not of " +
                                         config.path + " ('" + config.group + "')");
  }
  return Fence::from_sequencer(text);
}

// The value to put: VALUE, stdin for "-", or --from-file.
Result<std::string> value_of(const KvFlags& flags) {
  if (!flags.from_file.empty() && flags.value) {
    return Status(Code::kBadRequest, "give VALUE or --from-file, not both");
  }
  if (flags.from_file.empty() && !flags.value) return Status(Code::kBadRequest, "VALUE is required (or --from-file F)");
  if (flags.value && *flags.value != "-") return *flags.value;
  std::stringstream ss;
  if (flags.value) {
    ss << std::cin.rdbuf();
    if (std::cin.bad()) return Status(Code::kStorageError, "cannot read the value from stdin");
  } else {
    std::ifstream in(flags.from_file, std::ios::binary);
    if (!in) return Status(Code::kBadRequest, "cannot read " + flags.from_file + ": " + std::strerror(errno));
    ss << in.rdbuf();
    if (in.bad()) return Status(Code::kStorageError, "cannot read " + flags.from_file + ": " + std::strerror(errno));
  }
  return ss.str();
}

// A store failure: unavailable once the whole --timeout passed with replicas
// that accept connections is a timeout (they did not answer in time).
int report_store_error(const char* what, const Status& status, Clock::time_point began,
                       std::chrono::milliseconds timeout) {
  // The store counts its deadline in whole milliseconds: it may end up to 1 ms early.
  if (status.code() == Code::kUnavailable && Clock::now() - began + std::chrono::milliseconds(1) >= timeout) {
    return report_error(what, Status(Code::kTimeout, "no quorum answered within --timeout " +
                                                         format_duration(timeout) + ": " + status.message()));
  }
  return report_error(what, status);
}

// What a conditional write expects: --if-absent or --if-version TS.
Result<Expect> expect_of(const KvFlags& flags) {
  if (flags.sequencer) {
    return Status(Code::kBadRequest, "--sequencer and --if-absent/--if-version: a conditional write is fenced by "
                                     "the key's own lock");
  }
  if (flags.if_absent && flags.if_version) return Status(Code::kBadRequest, "give --if-absent or --if-version");
  if (flags.if_absent) return Expect::absent();
  auto ts = FencedTimestamp::parse(*flags.if_version);
  if (!ts) {
    return Status(Code::kBadRequest, "--if-version '" + *flags.if_version +
                                         "' is not a version: give the timestamp `get -o json` prints "
                                         "(TOKEN@MS.LOGICAL)");
  }
  return Expect::at(*ts);
}

// put/del --if-absent/--if-version: the key's lock, a read, the compare, the write.
int write_conditionally(const char* what, const KvFlags& flags, const CommonOptions& common,
                        const ClusterAccess& cluster, QuorumStore& store, const Expect& expect,
                        std::optional<std::string> value) {
  std::vector<std::string> nodes;
  for (const LockdNode& n : cluster.config.lockd) nodes.push_back(n.endpoint);
  if (Status s = enough_listening(nodes, nodes.size() / 2 + 1, "lock group nodes"); !s.is_ok()) {
    return report_error(what, s);
  }
  LockClientOptions options = lock_client_options(cluster);
  options.store = &store;  // each grant fences a write quorum before the read
  auto client = LockClient::connect(options, flags.timeout);
  if (!client.is_ok()) return report_error(what, client.status());
  ConditionalStore conditional(*client.value(), store, {.wait = flags.timeout});
  const ConditionalResult r = value ? conditional.put(flags.key, *value, expect) : conditional.del(flags.key, expect);
  if (r.status.code() == Code::kStale) {
    const std::string now = r.current.found ? "is at version " + r.current.ts.to_string() : "has no value";
    return report_failure(what,
                          "key '" + flags.key + "' " + now + ", not " +
                              (expect.version ? "at version " + expect.version->to_string() : "absent") +
                              "; nothing was written",
                          kExitNotAsExpected);
  }
  if (!r.status.is_ok()) return report_error(what, r.status);
  if (common.json()) {
    nlohmann::json out{{"timestamp", r.ts.to_string()}, {"token", r.ts.token}};
    put_bytes(out, "key", flags.key);
    out["lock"] = ConditionalStore::lock_for(flags.key);
    std::printf("%s\n", dump(out).c_str());
  } else {
    std::printf("OK\n");
  }
  return kExitOk;
}

int write(const char* what, const KvFlags& flags, const CommonOptions& common, bool tombstone) {
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error(what, loaded.status());
  const ClusterConfig& config = loaded.value().config;
  const bool conditional = flags.if_absent || flags.if_version;
  auto expect = conditional ? expect_of(flags) : Result<Expect>(Expect{});
  if (!expect.is_ok()) return report_error(what, expect.status());
  auto fence = conditional ? Result<Fence>(Fence{}) : fence_of(flags, config);
  if (!fence.is_ok()) return report_error(what, fence.status());
  std::string value;
  if (!tombstone) {
    auto read = value_of(flags);
    if (!read.is_ok()) return report_error(what, read.status());
    value = std::move(read).value();
  }
  auto store = open_store(loaded.value(), flags.timeout);
  if (!store.is_ok()) return report_error(what, store.status());
  const ReplicaSetInUse set = store.value()->replica_set();  // the lock group's, once it records one
  if (Status s = enough_listening(set.replicas, set.write_quorum, "replicas"); !s.is_ok()) return report_error(what, s);
  if (conditional) {
    return write_conditionally(what, flags, common, loaded.value(), *store.value(), expect.value(),
                               tombstone ? std::nullopt : std::optional<std::string>(std::move(value)));
  }
  const auto began = Clock::now();
  const WriteResult wr = tombstone ? store.value()->del(flags.key, fence.value())
                                   : store.value()->put(flags.key, value, fence.value());
  if (!wr.status.is_ok()) {
    if (wr.status.code() == Code::kFenced) {
      const Fence& f = fence.value();
      const std::string message =
          f.lock.empty()
              ? "key '" + flags.key + "' holds a write fenced by a lock (token " + std::to_string(wr.floor) +
                    "); an unfenced write cannot replace it: write it holding that lock; nothing was written"
              : "fenced: lock '" + f.lock + "' has a newer holder (token " + std::to_string(f.token) + " < " +
                    std::to_string(wr.floor) + "); nothing was written";
      return report_failure(what, message, kExitFenced);
    }
    return report_store_error(what, wr.status, began, flags.timeout);
  }
  if (common.json()) {
    nlohmann::json out{{"timestamp", wr.ts.to_string()}, {"token", wr.ts.token}};
    put_bytes(out, "key", flags.key);
    out["lock"] = fence.value().lock.empty() ? nlohmann::json(nullptr) : nlohmann::json(fence.value().lock);
    std::printf("%s\n", dump(out).c_str());
  } else {
    std::printf("OK\n");
  }
  return kExitOk;
}

// get --prefix: every key of the prefix (or --limit of them), a page of up
// to 1000 at a time, each page read as gets of its keys would read them.
int read_prefix(const KvFlags& flags, const CommonOptions& common, QuorumStore& store) {
  std::vector<KeyValue> entries;
  std::string after = flags.after;
  constexpr size_t kPage = 1000;
  for (;;) {
    const size_t want = flags.limit == 0 ? kPage : std::min(kPage, flags.limit - entries.size());
    const auto began = Clock::now();
    ScanResult page = store.scan(*flags.prefix, after, want);
    if (!page.status.is_ok()) return report_store_error("get", page.status, began, flags.timeout);
    std::move(page.entries.begin(), page.entries.end(), std::back_inserter(entries));
    after = page.next;
    if (after.empty() || (flags.limit != 0 && entries.size() >= flags.limit)) break;
  }
  if (common.json()) {
    nlohmann::json list = nlohmann::json::array();
    for (const KeyValue& e : entries) {
      nlohmann::json out;
      put_bytes(out, "key", e.key);
      put_bytes(out, "value", e.value);
      out["timestamp"] = e.ts.to_string();
      out["token"] = e.ts.token;
      out["lock"] = e.lock.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.lock);
      list.push_back(std::move(out));
    }
    nlohmann::json out{{"entries", std::move(list)}};
    put_bytes(out, "prefix", *flags.prefix);
    out["next"] = nullptr;
    if (!after.empty()) put_bytes(out, "next", after);
    std::printf("%s\n", dump(out).c_str());
    return kExitOk;
  }
  for (const KeyValue& e : entries) {
    std::fwrite(e.key.data(), 1, e.key.size(), stdout);
    std::fputc('\t', stdout);
    std::fwrite(e.value.data(), 1, e.value.size(), stdout);
    std::fputc('\n', stdout);
  }
  if (!after.empty()) {
    std::fflush(stdout);  // the keys first, then what follows them
    std::fprintf(stderr, "palisade get: --limit %zu reached; more keys follow: add --after '%s'\n", flags.limit,
                 after.c_str());
  }
  return kExitOk;
}

int read(const KvFlags& flags, const CommonOptions& common) {
  if (flags.prefix.has_value() == !flags.key.empty()) {
    return report_error("get", Status(Code::kBadRequest, "give KEY or --prefix P, not both"));
  }
  if (!flags.prefix && (!flags.after.empty() || flags.limit != 0)) {
    return report_error("get", Status(Code::kBadRequest, "--after and --limit go with --prefix"));
  }
  auto loaded = load_cluster(common);
  if (!loaded.is_ok()) return report_cluster_error("get", loaded.status());
  auto store = open_store(loaded.value(), flags.timeout);
  if (!store.is_ok()) return report_error("get", store.status());
  const ReplicaSetInUse set = store.value()->replica_set();
  if (Status s = enough_listening(set.replicas, set.read_quorum, "replicas"); !s.is_ok()) return report_error("get", s);
  if (flags.prefix) return read_prefix(flags, common, *store.value());
  const auto began = Clock::now();
  const ReadResult rr = store.value()->get(flags.key);
  if (!rr.status.is_ok()) return report_store_error("get", rr.status, began, flags.timeout);
  if (common.json()) {
    nlohmann::json out{{"found", rr.found}};
    put_bytes(out, "key", flags.key);
    if (rr.found) {
      put_bytes(out, "value", rr.value);
      out["timestamp"] = rr.ts.to_string();
      out["token"] = rr.ts.token;
      out["lock"] = rr.lock.empty() ? nlohmann::json(nullptr) : nlohmann::json(rr.lock);
    }
    std::printf("%s\n", dump(out).c_str());
  } else if (rr.found) {
    std::fwrite(rr.value.data(), 1, rr.value.size(), stdout);
    std::printf("\n");
  } else {
    report_failure("get", "no key '" + flags.key + "'", kExitNotFound);
  }
  return rr.found ? kExitOk : kExitNotFound;
}

void add_flags(CLI::App* sub, KvFlags& flags, bool with_value, bool fenced, bool prefix = false) {
  auto* key =
      sub->add_option("KEY", flags.key, "The key (1..511 bytes)")
          ->check(CLI::Validator([](std::string& key) { return key.empty() ? "the key is empty" : ""; }, "", "key"));
  if (!prefix) key->required();
  if (prefix) {
    sub->add_option("--prefix", flags.prefix,
                    "Instead of KEY: every key that starts with P (\"\" for all), in byte order, as KEY<TAB>VALUE "
                    "lines")
        ->type_name("P");
    sub->add_option("--after", flags.after, "With --prefix: start after this key (a --limit's last key)")
        ->type_name("KEY");
    sub->add_option("--limit", flags.limit, "With --prefix: at most N keys (0: all)")->type_name("N");
  }
  if (with_value) {
    sub->add_option("VALUE", flags.value, "The value; - reads it from stdin (up to 1 MiB)");
    sub->add_option("--from-file", flags.from_file, "Read the value from this file instead")->type_name("FILE");
  }
  if (fenced) {
    sub->add_option("--sequencer", flags.sequencer,
                    "Fence the write with this lock grant (default: $PALISADE_SEQUENCER; none: unfenced)");
    if (with_value) {
      sub->add_flag("--if-absent", flags.if_absent, "Write only if the key has no value (exit 10 otherwise)");
    }
    sub->add_option("--if-version", flags.if_version,
                    "Write only if the key is at this version, the timestamp `get -o json` printed (exit 10 "
                    "otherwise)")
        ->type_name("TS");
  }
  add_duration_option(sub, "--timeout", flags.timeout, /*allow_zero=*/false, "How long to wait for the quorum");
}

}  // namespace

void add_kv_commands(CLI::App& app, const CommonOptions& common, int& exit_code) {
  auto flags = std::make_shared<KvFlags>();
  auto* put = app.add_subcommand("put", "Write KEY=VALUE to a write quorum of replicas");
  add_flags(put, *flags, true, true);
  put->footer("Examples:\n"
              "  palisade put greeting hello\n"
              "  palisade put photo --from-file photo.jpg\n"
              "  tar c dir | palisade put backup -\n"
              "  palisade lock L -- palisade put k v     # fenced by the grant of L\n"
              "  palisade put config v1 --if-absent\n"
              "  palisade put config v2 --if-version 7@1764479453123.4   # compare-and-set");
  put->callback([flags, &common, &exit_code] { exit_code = write("put", *flags, common, false); });

  auto* get = app.add_subcommand(
      "get", "Read KEY, or every key of --prefix P, from a read quorum (repairing replicas that answered older)");
  add_flags(get, *flags, false, false, true);
  get->footer("-o json: key, found, value (value_base64, value null, when not UTF-8), timestamp, token, lock;\n"
              "with --prefix: prefix, entries (each: key, value, timestamp, token, lock) and next (the key to\n"
              "give --after for the rest, null when none are left).\n"
              "Examples:\n"
              "  palisade get greeting -o json\n"
              "  palisade get --prefix jobs/\n"
              "  palisade get --prefix jobs/ --limit 100 --after jobs/0099");
  get->callback([flags, &common, &exit_code] { exit_code = read(*flags, common); });

  auto* del = app.add_subcommand("del", "Delete KEY (a tombstone written to a write quorum)");
  add_flags(del, *flags, false, true);
  del->callback([flags, &common, &exit_code] { exit_code = write("del", *flags, common, true); });
}

}  // namespace palisade::cli
