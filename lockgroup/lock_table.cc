#include "lockgroup/lock_table.h"

#include <algorithm>
#include <utility>

#include <msgpack.hpp>

#include "base/check.h"

namespace palisade::lockgroup {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

// Wire numbers of the commands in a batch. Never renumber: batches live in Paxos logs.
enum class Kind : uint64_t {
  kOpenSession = 0,
  kCloseSession = 1,
  kExpireSession = 2,
  kAcquire = 3,
  kRelease = 4,
  kEndDelay = 5,
  kCancelWait = 6,
  kSetMembers = 7,
  kSetReplicas = 8,
  kMasterEpoch = 9,
};
constexpr size_t kMaxMembers = 255;

constexpr std::string_view kSnapshotMagic = "palisade.lock_table";
// Version 2 has the table's epoch after the version; 1 (no master epoch
// applied yet) has none.
constexpr uint64_t kSnapshotVersion = 1;
constexpr uint64_t kSnapshotVersionWithEpoch = 2;
// A snapshot nests deepest: snapshot > locks > lock > holders > holder.
constexpr size_t kMaxDepth = 6;

std::string to_string(const msgpack::sbuffer& buf) { return {buf.data(), buf.size()}; }

void pack_text(Packer& pk, std::string_view text) {
  pk.pack_str(static_cast<uint32_t>(text.size()));
  pk.pack_str_body(text.data(), static_cast<uint32_t>(text.size()));
}

void pack_mode(Packer& pk, LockMode mode) { pk.pack_uint8(static_cast<uint8_t>(mode)); }

void pack_nodes(Packer& pk, const std::vector<LockNode>& nodes) {
  pk.pack_array(static_cast<uint32_t>(nodes.size()));
  for (const LockNode& n : nodes) {
    pk.pack_array(n.key.empty() ? 2 : 3);
    pk.pack_uint64(n.id);
    pack_text(pk, n.address);
    if (!n.key.empty()) pack_text(pk, n.key);
  }
}

// Unpacks exactly one MessagePack object (trailing bytes are an error). Every array
// element and every str/bin byte takes at least one input byte, so limits of
// bytes.size() never refuse well-formed input but stop a forged length from
// allocating more than the input justifies. Any problem is `code`.
Result<msgpack::object_handle> unpack_exactly(std::string_view bytes, Code code, std::string_view what) {
  size_t n = bytes.size();
  msgpack::unpack_limit limit(n, n, n, n, /*ext=*/0, kMaxDepth);
  size_t offset = 0;
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
  } catch (const msgpack::insufficient_bytes&) {
    return Status(code, std::string(what) + ": truncated MessagePack");
  } catch (const std::exception& e) {
    return Status(code, std::string(what) + ": not MessagePack: " + e.what());
  }
  if (offset != bytes.size()) {
    return Status(code, std::string(what) + ": " + std::to_string(bytes.size() - offset) + " trailing bytes");
  }
  return handle;
}

// Reads MessagePack arrays element by element. The first problem becomes status();
// after it every read returns a default value, so callers check once at the end.
class ArrayReader {
 public:
  struct Cursor {
    const msgpack::object* items = nullptr;
    uint32_t size = 0;
    uint32_t next = 0;
  };

  explicit ArrayReader(Code code) : code_(code) {}

  void set_what(std::string what) { what_ = std::move(what); }
  bool ok() const { return status_.is_ok(); }
  const Status& status() const { return status_; }
  void fail(const std::string& problem) {
    if (ok()) status_ = Status(code_, what_ + ": " + problem);
  }

  Cursor open(const msgpack::object& o) {
    if (o.type != msgpack::type::ARRAY) {
      fail("expected an array");
      return {};
    }
    return {o.via.array.ptr, o.via.array.size, 0};
  }
  // Fails unless every element of `c` was read.
  void close(const Cursor& c) {
    if (c.next != c.size) fail("an array has " + std::to_string(c.size - c.next) + " elements too many");
  }
  // Whether `c` has an element left: optional trailing elements, added to a
  // format later, are read only when present.
  bool more(const Cursor& c) const { return ok() && c.next < c.size; }
  Cursor array(Cursor& c) {
    const msgpack::object* o = take(c);
    return o == nullptr ? Cursor{} : open(*o);
  }
  uint64_t u64(Cursor& c) {
    const msgpack::object* o = take(c);
    if (o == nullptr) return 0;
    if (o->type == msgpack::type::POSITIVE_INTEGER) return o->via.u64;
    fail("expected a non-negative integer");
    return 0;
  }
  bool boolean(Cursor& c) {
    const msgpack::object* o = take(c);
    if (o == nullptr) return false;
    if (o->type == msgpack::type::BOOLEAN) return o->via.boolean;
    fail("expected a boolean");
    return false;
  }
  // str or bin, as raw bytes.
  std::string text(Cursor& c) {
    const msgpack::object* o = take(c);
    if (o == nullptr) return {};
    if (o->type == msgpack::type::STR) return {o->via.str.ptr, o->via.str.size};
    if (o->type == msgpack::type::BIN) return {o->via.bin.ptr, o->via.bin.size};
    fail("expected str or bin");
    return {};
  }
  LockMode mode(Cursor& c) {
    uint64_t m = u64(c);
    if (m > static_cast<uint64_t>(LockMode::kShared)) fail("unknown lock mode " + std::to_string(m));
    return m == static_cast<uint64_t>(LockMode::kShared) ? LockMode::kShared : LockMode::kExclusive;
  }

 private:
  const msgpack::object* take(Cursor& c) {
    if (!ok()) return nullptr;
    if (c.next >= c.size) {
      fail("an array has too few elements");
      return nullptr;
    }
    return &c.items[c.next++];
  }

  Code code_;
  std::string what_;
  Status status_;
};

struct CommandEncoder {
  Packer& pk;
  uint64_t tag;

  void head(Kind kind, uint32_t fields) const {
    pk.pack_array(2 + fields);
    pk.pack_uint64(tag);
    pk.pack_uint64(static_cast<uint64_t>(kind));
  }
  // [tag, 0] for the cluster's default lease and no identity (the only form
  // before per-session leases, so old logs decode as the default), else
  // [tag, 0, lease_ms], and [tag, 0, lease_ms, identity] with an identity.
  void operator()(const OpenSession& c) const {
    if (c.lease_ms == 0 && c.identity.empty()) return head(Kind::kOpenSession, 0);
    head(Kind::kOpenSession, c.identity.empty() ? 1 : 2);
    pk.pack_uint64(c.lease_ms);
    if (!c.identity.empty()) pack_text(pk, c.identity);
  }
  void operator()(const CloseSession& c) const {
    head(Kind::kCloseSession, 1);
    pk.pack_uint64(c.session);
  }
  // Timer-made commands end with their epoch when it is not 0 (the only
  // form before epochs, so old logs decode with epoch 0).
  void operator()(const ExpireSession& c) const {
    head(Kind::kExpireSession, c.epoch == 0 ? 1 : 2);
    pk.pack_uint64(c.session);
    if (c.epoch != 0) pk.pack_uint64(c.epoch);
  }
  void operator()(const Acquire& c) const {
    head(Kind::kAcquire, 7);
    pk.pack_uint64(c.session);
    pack_text(pk, c.lock);
    pack_mode(pk, c.mode);
    pk.pack_uint64(c.lock_delay_ms);
    pk.pack(c.wait);
    pk.pack_uint64(c.wait_ms);
    pk.pack_uint64(c.call);
  }
  void operator()(const Release& c) const {
    head(Kind::kRelease, 3);
    pk.pack_uint64(c.session);
    pack_text(pk, c.lock);
    pk.pack_uint64(c.call);
  }
  void operator()(const EndDelay& c) const {
    head(Kind::kEndDelay, c.epoch == 0 ? 2 : 3);
    pack_text(pk, c.lock);
    pk.pack_uint64(c.token);
    if (c.epoch != 0) pk.pack_uint64(c.epoch);
  }
  void operator()(const CancelWait& c) const {
    head(Kind::kCancelWait, c.epoch == 0 ? 2 : 3);
    pk.pack_uint64(c.session);
    pack_text(pk, c.lock);
    if (c.epoch != 0) pk.pack_uint64(c.epoch);
  }
  void operator()(const MasterEpoch& c) const {
    head(Kind::kMasterEpoch, 1);
    pk.pack_uint64(c.epoch);
  }
  // [tag, 7, [[id, address]...]], with [id, address, key] for a node with a key
  void operator()(const SetMembers& c) const {
    head(Kind::kSetMembers, 1);
    pack_nodes(pk, c.nodes);
  }
  // [tag, 8, record]: the record's canonical encoding (wire/replica_set.h)
  void operator()(const SetReplicas& c) const {
    head(Kind::kSetReplicas, 1);
    pack_text(pk, wire::encode_replica_set(c.set));
  }
};

// A replica set record held as its canonical bytes; a record that does not
// decode fails the reader.
wire::ReplicaSet read_replica_set(ArrayReader& r, ArrayReader::Cursor& c) {
  const std::string bytes = r.text(c);
  if (!r.ok()) return {};
  auto set = wire::decode_replica_set(bytes);
  if (!set.is_ok()) {
    r.fail(set.status().message());
    return {};
  }
  if (set.value().version == 0) {
    r.fail("replica set version 0 is no record");
    return {};
  }
  return std::move(set).value();
}

// 1 to 255 nodes, ids 1..255 in increasing order, each with an address.
std::vector<LockNode> read_nodes(ArrayReader& r, ArrayReader::Cursor& c) {
  std::vector<LockNode> nodes;
  ArrayReader::Cursor list = r.array(c);
  if (r.ok() && (list.size == 0 || list.size > kMaxMembers))
    r.fail("a membership of " + std::to_string(list.size) + " nodes");
  for (uint32_t i = 0; i < list.size && r.ok(); ++i) {
    ArrayReader::Cursor nc = r.array(list);
    const uint64_t id = r.u64(nc);
    std::string address = r.text(nc);
    std::string key = r.more(nc) ? r.text(nc) : "";  // absent before keys were kept, and when insecure
    r.close(nc);
    if (!r.ok()) break;
    if (id == 0 || id > kMaxMembers) r.fail("node id " + std::to_string(id) + " is not in 1..255");
    if (!nodes.empty() && id <= nodes.back().id) r.fail("node ids out of order or listed twice");
    if (address.empty()) r.fail("node " + std::to_string(id) + " has no address");
    if (nc.size == 3 && key.empty()) r.fail("node " + std::to_string(id) + " has an empty key");
    nodes.push_back({static_cast<uint32_t>(id), std::move(address), std::move(key)});
  }
  r.close(list);
  return nodes;
}

// The epoch of a command made by a master's clock; 0 for the others.
uint64_t timer_epoch(const Command& command) {
  if (const auto* e = std::get_if<ExpireSession>(&command)) return e->epoch;
  if (const auto* d = std::get_if<EndDelay>(&command)) return d->epoch;
  if (const auto* w = std::get_if<CancelWait>(&command)) return w->epoch;
  return 0;
}

// A timer-made command's trailing epoch: absent is 0, and 0 is never written.
uint64_t read_epoch(ArrayReader& r, ArrayReader::Cursor& c) {
  if (!r.more(c)) return 0;
  const uint64_t epoch = r.u64(c);
  if (r.ok() && epoch == 0) r.fail("an epoch of 0 written out");
  return epoch;
}

Command read_command(ArrayReader& r, ArrayReader::Cursor& c, uint64_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::kOpenSession: {
      OpenSession open;
      if (r.more(c)) open.lease_ms = r.u64(c);
      if (r.more(c)) open.identity = r.text(c);
      return open;
    }
    case Kind::kCloseSession:
      return CloseSession{r.u64(c)};
    case Kind::kExpireSession: {
      ExpireSession e;
      e.session = r.u64(c);
      e.epoch = read_epoch(r, c);
      return e;
    }
    case Kind::kAcquire: {
      Acquire a;
      a.session = r.u64(c);
      a.lock = r.text(c);
      a.mode = r.mode(c);
      a.lock_delay_ms = r.u64(c);
      a.wait = r.boolean(c);
      a.wait_ms = r.u64(c);
      a.call = r.u64(c);
      return a;
    }
    case Kind::kRelease: {
      Release rel;
      rel.session = r.u64(c);
      rel.lock = r.text(c);
      rel.call = r.u64(c);
      return rel;
    }
    case Kind::kEndDelay: {
      EndDelay e;
      e.lock = r.text(c);
      e.token = r.u64(c);
      e.epoch = read_epoch(r, c);
      return e;
    }
    case Kind::kCancelWait: {
      CancelWait w;
      w.session = r.u64(c);
      w.lock = r.text(c);
      w.epoch = read_epoch(r, c);
      return w;
    }
    case Kind::kSetMembers:
      return SetMembers{read_nodes(r, c)};
    case Kind::kSetReplicas:
      return SetReplicas{read_replica_set(r, c)};
    case Kind::kMasterEpoch: {
      MasterEpoch m{r.u64(c)};
      if (r.ok() && m.epoch == 0) r.fail("master epoch 0");
      return m;
    }
  }
  r.fail("unknown command kind " + std::to_string(kind));
  return OpenSession{};
}

// The invariants every state reached by apply() keeps; a snapshot that breaks one is corrupt.
std::string check_state(SessionId next_session, Token grant_counter, const Sessions& sessions,
                        const std::map<std::string, LockState, std::less<>>& locks) {
  if (next_session == 0) return "next session id 0";
  if (!sessions.empty() && (sessions.begin()->first == 0 || sessions.rbegin()->first >= next_session)) {
    return "a session id out of range";
  }
  for (const auto& [name, l] : locks) {
    std::string where = "lock '" + name + "': ";
    if (l.token > grant_counter) return where + "token above the grant counter";
    // Idle entries are forgotten, and a free lock that is not delayed has granted its queue.
    if (l.holders.empty() && l.delay_ms == 0) return where + "free, not delayed, yet remembered";
    if (l.token == 0) return where + "held or delayed without a token";
    if (!l.holders.empty() && l.delay_ms != 0) return where + "held and delayed";
    if (l.mode == LockMode::kExclusive && l.holders.size() > 1) return where + "several exclusive holders";
    for (const auto& [session, delay] : l.holders) {
      if (sessions.count(session) == 0) return where + "held by an unknown session";
    }
    std::set<SessionId> queued;
    for (const Waiter& w : l.waiters) {
      if (sessions.count(w.session) == 0 || l.holders.count(w.session) != 0 || !queued.insert(w.session).second) {
        return where + "a waiter that is unknown, a holder, or queued twice";
      }
    }
    if (!l.waiters.empty() && l.delay_ms == 0 && l.mode == LockMode::kShared &&
        l.waiters.front().mode == LockMode::kShared) {
      return where + "a shared waiter at the head of a shared lock";
    }
  }
  return {};
}

std::deque<Waiter>::iterator find_waiter(std::deque<Waiter>& waiters, SessionId session) {
  return std::find_if(waiters.begin(), waiters.end(), [&](const Waiter& w) { return w.session == session; });
}

Grant make_grant(SessionId session, const std::string& lock, const LockState& l) {
  return Grant{session, lock, l.mode, l.token};
}

}  // namespace

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kQueued:
      return "queued";
    case Outcome::kBusy:
      return "busy";
    case Outcome::kDelayed:
      return "delayed";
    case Outcome::kNoSession:
      return "no_session";
    case Outcome::kNotHeld:
      return "not_held";
    case Outcome::kConflict:
      return "conflict";
    case Outcome::kStaleCall:
      return "stale_call";
    case Outcome::kWaitEnded:
      return "wait_ended";
    case Outcome::kStaleVersion:
      return "stale_version";
    case Outcome::kStaleEpoch:
      return "stale_epoch";
  }
  return "unknown";
}

// A batch is an array of commands; a command is an array [tag, kind, fields of the kind...].
std::string encode_batch(const std::vector<TaggedCommand>& batch) {
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(static_cast<uint32_t>(batch.size()));
  for (const TaggedCommand& tc : batch) std::visit(CommandEncoder{pk, tc.tag}, tc.command);
  return to_string(buf);
}

Result<std::vector<TaggedCommand>> decode_batch(std::string_view bytes) {
  auto unpacked = unpack_exactly(bytes, Code::kMalformed, "batch");
  if (!unpacked.is_ok()) return unpacked.status();
  const msgpack::object& root = unpacked.value().get();
  if (root.type != msgpack::type::ARRAY) return Status(Code::kMalformed, "batch: not a MessagePack array");
  std::vector<TaggedCommand> batch;
  batch.reserve(root.via.array.size);
  ArrayReader r(Code::kBadRequest);
  for (uint32_t i = 0; i < root.via.array.size && r.ok(); ++i) {
    r.set_what("batch command " + std::to_string(i));
    ArrayReader::Cursor c = r.open(root.via.array.ptr[i]);
    uint64_t tag = r.u64(c);
    uint64_t kind = r.u64(c);
    Command command = read_command(r, c, kind);
    r.close(c);
    batch.push_back({tag, std::move(command)});
  }
  if (!r.ok()) return r.status();
  return batch;
}

namespace {
std::vector<uint32_t> ids_of(const std::vector<LockNode>& nodes) {
  std::vector<uint32_t> ids;
  for (const LockNode& n : nodes) ids.push_back(n.id);
  return ids;
}
}  // namespace

std::optional<std::vector<uint32_t>> members_after(std::string_view value) {
  // Most values hold more than one command, or another one: a batch of one
  // command is a fixarray of 1 (0x91) holding an array whose kind is 7.
  if (value.size() < 4 || static_cast<uint8_t>(value[0]) != 0x91) return std::nullopt;
  auto batch = decode_batch(value);
  if (!batch.is_ok() || batch.value().size() != 1) return std::nullopt;
  const auto* set = std::get_if<SetMembers>(&batch.value()[0].command);
  if (set == nullptr) return std::nullopt;
  return ids_of(set->nodes);
}

std::optional<std::vector<uint32_t>> members_in_snapshot(std::string_view snapshot) {
  LockTable table;
  if (!table.restore(snapshot).is_ok() || table.members_version() == 0) return std::nullopt;
  return ids_of(table.members());
}

Effects LockTable::apply(const std::vector<TaggedCommand>& batch) {
  Effects effects;
  effects.results.reserve(batch.size());
  for (const TaggedCommand& tc : batch) effects.results.push_back(apply_one(tc.tag, tc.command, effects));
  PALISADE_DCHECK_INVARIANTS(check_invariants());
  return effects;
}

std::string LockTable::check_invariants() const {
  return check_state(next_session_, grant_counter_, sessions_, locks_);
}

CommandResult LockTable::apply_one(uint64_t tag, const Command& command, Effects& effects) {
  CommandResult result{tag, Outcome::kOk};
  auto with = [&](Outcome outcome) {
    result.outcome = outcome;
    return result;
  };
  auto no_session = [&] { return with(Outcome::kNoSession); };
  auto drop_session = [&](SessionId session, bool expired) {
    if (sessions_.count(session) == 0) {
      result.outcome = Outcome::kNoSession;
      return;
    }
    std::vector<std::string> affected;
    for (auto& [name, l] : locks_) {
      bool touched = false;
      if (auto h = l.holders.find(session); h != l.holders.end()) {
        uint64_t delay = h->second;
        l.holders.erase(h);
        result.released.push_back(name);
        touched = true;
        // Only an expiry delays, and only when it leaves the lock free: the session may
        // still be alive somewhere and believe it holds the lock.
        if (expired && l.holders.empty() && delay > 0) {
          l.delay_ms = delay;
          effects.delays.push_back({name, l.token, delay});
        }
      }
      if (auto w = find_waiter(l.waiters, session); w != l.waiters.end()) {
        l.waiters.erase(w);
        touched = true;
      }
      if (touched) affected.push_back(name);
    }
    sessions_.erase(session);
    identities_.erase(session);
    calls_.erase(calls_.lower_bound({session, std::string()}), calls_.lower_bound({session + 1, std::string()}));
    for (const std::string& name : affected) {
      wake(name, effects);
      forget_if_idle(name);
    }
  };

  // Made by an older master's clock: every master since timed it afresh.
  if (const uint64_t made = timer_epoch(command); made != 0 && made < epoch_) return with(Outcome::kStaleEpoch);
  if (const auto* m = std::get_if<MasterEpoch>(&command)) {
    // Recovery may choose an older master's first slot after a newer one's.
    epoch_ = std::max(epoch_, m->epoch);
  } else if (const auto* open = std::get_if<OpenSession>(&command)) {
    result.session = next_session_++;
    sessions_.emplace(result.session, open->lease_ms);
    if (!open->identity.empty()) identities_.emplace(result.session, open->identity);
  } else if (const auto* close = std::get_if<CloseSession>(&command)) {
    drop_session(close->session, /*expired=*/false);
  } else if (const auto* set = std::get_if<SetMembers>(&command)) {
    members_ = set->nodes;
    ++members_version_;
  } else if (const auto* replicas = std::get_if<SetReplicas>(&command)) {
    // Checked again here: the master checked the version it proposed against,
    // but another change may have been chosen in an earlier slot since.
    if (replicas->set.version != replica_set_.version + 1) return with(Outcome::kStaleVersion);
    replica_set_ = replicas->set;
  } else if (const auto* expire = std::get_if<ExpireSession>(&command)) {
    drop_session(expire->session, /*expired=*/true);
  } else if (const auto* a = std::get_if<Acquire>(&command)) {
    if (sessions_.count(a->session) == 0) return no_session();
    const CallAge age = call_age(a->session, a->lock, a->call);
    if (age == CallAge::kStale) return with(Outcome::kStaleCall);
    if (age == CallAge::kRepeat) {
      // Answered already (the client may have moved on): only a hold or a wait
      // the first one left is reported below; anything else would grant or
      // queue afresh, and a grant nobody waits for is never released.
      auto held = locks_.find(a->lock);
      if (held == locks_.end() ||
          (held->second.holders.count(a->session) == 0 &&
           find_waiter(held->second.waiters, a->session) == held->second.waiters.end())) {
        return with(a->wait ? Outcome::kWaitEnded : Outcome::kBusy);
      }
    }
    auto it = locks_.try_emplace(a->lock).first;  // a new entry is free, so the acquire is granted below
    LockState& l = it->second;
    if (l.holders.count(a->session) != 0) {
      // A retry (e.g. after failover) gets the grant it already has.
      if (l.mode != a->mode) return with(Outcome::kConflict);
      result.grant = make_grant(a->session, it->first, l);
      result.again = true;
      return result;
    }
    if (find_waiter(l.waiters, a->session) != l.waiters.end()) return with(Outcome::kQueued);
    // Nothing overtakes a queued waiter, so a stream of shared acquires cannot starve an exclusive one.
    bool grantable = l.delay_ms == 0 && l.waiters.empty() &&
                     (l.holders.empty() || (a->mode == LockMode::kShared && l.mode == LockMode::kShared));
    if (grantable) {
      if (l.holders.empty()) {
        l.mode = a->mode;
        l.token = ++grant_counter_;
      }
      l.holders[a->session] = a->lock_delay_ms;
      result.grant = make_grant(a->session, it->first, l);
    } else if (a->wait) {
      l.waiters.push_back({a->session, a->mode, a->lock_delay_ms, a->wait_ms});
      result.outcome = Outcome::kQueued;
    } else {
      result.outcome = l.delay_ms > 0 ? Outcome::kDelayed : Outcome::kBusy;
    }
  } else if (const auto* rel = std::get_if<Release>(&command)) {
    if (sessions_.count(rel->session) == 0) return no_session();
    const CallAge age = call_age(rel->session, rel->lock, rel->call);
    if (age == CallAge::kStale) return with(Outcome::kStaleCall);
    auto it = locks_.find(rel->lock);
    if (it == locks_.end() || it->second.holders.count(rel->session) == 0) return with(Outcome::kNotHeld);
    // A repeat: the first one left the lock free, so this hold came later (a call 0).
    if (age == CallAge::kRepeat) return with(Outcome::kStaleCall);
    it->second.holders.erase(rel->session);
    wake(it->first, effects);
    forget_if_idle(rel->lock);
  } else if (const auto* end = std::get_if<EndDelay>(&command)) {
    // Only the delay that took `token` away ends; a duplicate or stale EndDelay is ignored.
    auto it = locks_.find(end->lock);
    if (it != locks_.end() && it->second.delay_ms > 0 && it->second.token == end->token) {
      it->second.delay_ms = 0;
      wake(it->first, effects);
      forget_if_idle(end->lock);
    }
  } else if (const auto* cancel = std::get_if<CancelWait>(&command)) {
    // Unknown session: NoSession (its waits went with it). A wait that is not queued: Ok.
    if (sessions_.count(cancel->session) == 0) return no_session();
    auto it = locks_.find(cancel->lock);
    if (it == locks_.end()) return result;
    auto& waiters = it->second.waiters;
    auto w = find_waiter(waiters, cancel->session);
    if (w == waiters.end()) return result;
    waiters.erase(w);
    // The waiter may have stood in front of shared waiters that can now join.
    wake(it->first, effects);
    forget_if_idle(cancel->lock);
  }
  return result;
}

void LockTable::wake(const std::string& name, Effects& effects) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return;
  LockState& l = it->second;
  // Grants the head while it can be granted: a free lock grants any head (new token);
  // a shared lock lets shared heads join (same token). So after a shared head is granted
  // from free, the consecutive shared waiters behind it join with its token.
  while (l.delay_ms == 0 && !l.waiters.empty()) {
    const Waiter& w = l.waiters.front();
    if (l.holders.empty()) {
      l.mode = w.mode;
      l.token = ++grant_counter_;
    } else if (l.mode != LockMode::kShared || w.mode != LockMode::kShared) {
      break;
    }
    l.holders[w.session] = w.lock_delay_ms;
    effects.woken.push_back(make_grant(w.session, name, l));
    l.waiters.pop_front();
  }
}

LockTable::CallAge LockTable::call_age(SessionId session, const std::string& lock, uint64_t call) {
  if (call == 0) return CallAge::kNew;
  uint64_t& last = calls_[{session, lock}];
  if (call < last) return CallAge::kStale;
  if (call == last) return CallAge::kRepeat;
  last = call;
  return CallAge::kNew;
}

// Safe because tokens come from the global counter, not from the entry.
void LockTable::forget_if_idle(const std::string& name) {
  auto it = locks_.find(name);
  if (it == locks_.end()) return;
  const LockState& l = it->second;
  if (l.holders.empty() && l.delay_ms == 0 && l.waiters.empty()) locks_.erase(it);
}

uint64_t LockTable::session_lease_ms(SessionId session) const {
  auto it = sessions_.find(session);
  return it == sessions_.end() ? 0 : it->second;
}

std::string_view LockTable::session_identity(SessionId session) const {
  auto it = identities_.find(session);
  return it == identities_.end() ? std::string_view() : std::string_view(it->second);
}

const LockState* LockTable::lock(std::string_view name) const {
  auto it = locks_.find(name);
  return it == locks_.end() ? nullptr : &it->second;
}

std::vector<std::string> LockTable::held_by(SessionId session) const {
  std::vector<std::string> out;
  for (const auto& [name, l] : locks_) {
    if (l.holders.count(session) != 0) out.push_back(name);
  }
  return out;
}

std::vector<std::string> LockTable::waited_by(SessionId session) const {
  std::vector<std::string> out;
  for (const auto& [name, l] : locks_) {
    if (std::any_of(l.waiters.begin(), l.waiters.end(), [&](const Waiter& w) { return w.session == session; })) {
      out.push_back(name);
    }
  }
  return out;
}

bool LockTable::is_current(std::string_view lock, LockMode mode, Token token) const {
  const LockState* l = this->lock(lock);
  return l != nullptr && !l->holders.empty() && l->mode == mode && l->token == token;
}

// [magic, version, (epoch,) next_session, grant_counter, [session...], [lock...], [[session, lock, call]...],
//  [[session, lease_ms]...], [[session, identity]...]]
// where the epoch (MasterEpoch) is there in version 2 only, the form of a
// table whose epoch is not 0 (version 1: 0, as every table before epochs), a
// lock is [name, mode, token, delay_ms, [[session, lock_delay_ms]...],
// [[session, mode, lock_delay_ms, wait_ms]...]], then optional elements: the
// sessions that chose their own lease length, the sessions opened by an
// identity, the membership [version, [[id, address(, key)]...]] ([] when
// none was set but a replica set follows), and the replica set record's
// canonical bytes (wire/replica_set.h). Trailing elements with nothing to
// list are left out (so the form of a table is unique): snapshots from before
// per-session leases end after the calls, and their sessions all have the
// cluster's default and no identity; snapshots from before replica set
// records have none (version 0).
std::string LockTable::snapshot() const {
  std::vector<std::pair<SessionId, uint64_t>> own_leases;
  for (const auto& [s, lease_ms] : sessions_) {
    if (lease_ms != 0) own_leases.emplace_back(s, lease_ms);
  }
  msgpack::sbuffer buf;
  Packer pk(buf);
  const uint32_t elements = replica_set_.version > 0 ? 11
                            : members_version_ > 0   ? 10
                            : !identities_.empty()   ? 9
                            : !own_leases.empty()    ? 8
                                                     : 7;
  pk.pack_array(elements + (epoch_ == 0 ? 0 : 1));
  pack_text(pk, kSnapshotMagic);
  if (epoch_ == 0) {
    pk.pack_uint64(kSnapshotVersion);
  } else {
    pk.pack_uint64(kSnapshotVersionWithEpoch);
    pk.pack_uint64(epoch_);
  }
  pk.pack_uint64(next_session_);
  pk.pack_uint64(grant_counter_);
  pk.pack_array(static_cast<uint32_t>(sessions_.size()));
  for (const auto& entry : sessions_) pk.pack_uint64(entry.first);
  pk.pack_array(static_cast<uint32_t>(locks_.size()));
  for (const auto& [name, l] : locks_) {
    pk.pack_array(6);
    pack_text(pk, name);
    pack_mode(pk, l.mode);
    pk.pack_uint64(l.token);
    pk.pack_uint64(l.delay_ms);
    pk.pack_array(static_cast<uint32_t>(l.holders.size()));
    for (const auto& [session, delay] : l.holders) {
      pk.pack_array(2);
      pk.pack_uint64(session);
      pk.pack_uint64(delay);
    }
    pk.pack_array(static_cast<uint32_t>(l.waiters.size()));
    for (const Waiter& w : l.waiters) {
      pk.pack_array(4);
      pk.pack_uint64(w.session);
      pack_mode(pk, w.mode);
      pk.pack_uint64(w.lock_delay_ms);
      pk.pack_uint64(w.wait_ms);
    }
  }
  pk.pack_array(static_cast<uint32_t>(calls_.size()));
  for (const auto& [key, call] : calls_) {
    pk.pack_array(3);
    pk.pack_uint64(key.first);
    pack_text(pk, key.second);
    pk.pack_uint64(call);
  }
  if (elements >= 8) {
    pk.pack_array(static_cast<uint32_t>(own_leases.size()));
    for (const auto& [s, lease_ms] : own_leases) {
      pk.pack_array(2);
      pk.pack_uint64(s);
      pk.pack_uint64(lease_ms);
    }
  }
  if (elements >= 9) {
    pk.pack_array(static_cast<uint32_t>(identities_.size()));
    for (const auto& [s, identity] : identities_) {
      pk.pack_array(2);
      pk.pack_uint64(s);
      pack_text(pk, identity);
    }
  }
  if (elements >= 10 && members_version_ == 0) {
    pk.pack_array(0);
  } else if (elements >= 10) {
    pk.pack_array(2);
    pk.pack_uint64(members_version_);
    pack_nodes(pk, members_);
  }
  if (elements >= 11) pack_text(pk, wire::encode_replica_set(replica_set_));
  return to_string(buf);
}

Status LockTable::restore(std::string_view bytes) {
  auto unpacked = unpack_exactly(bytes, Code::kCorrupt, "lock table snapshot");
  if (!unpacked.is_ok()) return unpacked.status();
  ArrayReader r(Code::kCorrupt);
  r.set_what("lock table snapshot");
  ArrayReader::Cursor top = r.open(unpacked.value().get());
  if (r.text(top) != kSnapshotMagic) r.fail("not a lock table snapshot");
  LockTable t;
  if (uint64_t version = r.u64(top); r.ok() && version == kSnapshotVersionWithEpoch) {
    t.epoch_ = r.u64(top);
    if (r.ok() && t.epoch_ == 0) r.fail("snapshot version 2 with epoch 0");
  } else if (r.ok() && version != kSnapshotVersion) {
    r.fail("unknown snapshot version " + std::to_string(version));
  }
  t.next_session_ = r.u64(top);
  t.grant_counter_ = r.u64(top);
  ArrayReader::Cursor sessions = r.array(top);
  for (uint32_t i = 0; i < sessions.size && r.ok(); ++i) {
    SessionId s = r.u64(sessions);
    // Written in order; out of order or twice means the bytes are damaged.
    if (r.ok() && !t.sessions_.empty() && s <= t.sessions_.rbegin()->first) r.fail("sessions out of order");
    t.sessions_.emplace_hint(t.sessions_.end(), s, 0);
  }
  r.close(sessions);
  ArrayReader::Cursor locks = r.array(top);
  for (uint32_t i = 0; i < locks.size && r.ok(); ++i) {
    ArrayReader::Cursor lc = r.array(locks);
    std::string name = r.text(lc);
    if (r.ok() && !t.locks_.empty() && name <= t.locks_.rbegin()->first) r.fail("locks out of order");
    LockState& l = t.locks_.emplace_hint(t.locks_.end(), std::move(name), LockState{})->second;
    l.mode = r.mode(lc);
    l.token = r.u64(lc);
    l.delay_ms = r.u64(lc);
    ArrayReader::Cursor holders = r.array(lc);
    for (uint32_t j = 0; j < holders.size && r.ok(); ++j) {
      ArrayReader::Cursor hc = r.array(holders);
      SessionId s = r.u64(hc);
      uint64_t delay = r.u64(hc);
      r.close(hc);
      if (r.ok() && !l.holders.empty() && s <= l.holders.rbegin()->first) r.fail("holders out of order");
      l.holders.emplace_hint(l.holders.end(), s, delay);
    }
    r.close(holders);
    ArrayReader::Cursor waiters = r.array(lc);
    for (uint32_t j = 0; j < waiters.size && r.ok(); ++j) {
      ArrayReader::Cursor wc = r.array(waiters);
      Waiter& w = l.waiters.emplace_back();
      w.session = r.u64(wc);
      w.mode = r.mode(wc);
      w.lock_delay_ms = r.u64(wc);
      w.wait_ms = r.u64(wc);
      r.close(wc);
    }
    r.close(waiters);
    r.close(lc);
  }
  r.close(locks);
  ArrayReader::Cursor calls = r.array(top);
  for (uint32_t i = 0; i < calls.size && r.ok(); ++i) {
    ArrayReader::Cursor cc = r.array(calls);
    SessionId s = r.u64(cc);
    std::string lock = r.text(cc);
    uint64_t call = r.u64(cc);
    r.close(cc);
    if (r.ok() && t.sessions_.count(s) == 0) r.fail("a call of unknown session " + std::to_string(s));
    if (r.ok() && !t.calls_.emplace(std::make_pair(s, std::move(lock)), call).second) r.fail("a call listed twice");
  }
  r.close(calls);
  if (r.more(top)) {
    ArrayReader::Cursor leases = r.array(top);
    SessionId last = 0;
    for (uint32_t i = 0; i < leases.size && r.ok(); ++i) {
      ArrayReader::Cursor lc = r.array(leases);
      SessionId s = r.u64(lc);
      uint64_t lease_ms = r.u64(lc);
      r.close(lc);
      if (!r.ok()) break;
      auto it = t.sessions_.find(s);
      // Written in order, for known sessions, only when not the default (so one form per table).
      if (s <= last) r.fail("session leases out of order");
      if (it == t.sessions_.end()) r.fail("a lease of unknown session " + std::to_string(s));
      if (lease_ms == 0) r.fail("a session lease of 0 listed");
      if (r.ok()) it->second = lease_ms;
      last = s;
    }
    r.close(leases);
  }
  if (r.more(top)) {
    ArrayReader::Cursor ids = r.array(top);
    // Only when some session has one, or a membership follows: the form of a table is unique.
    if (r.ok() && ids.size == 0 && !r.more(top)) r.fail("an empty list of session identities");
    for (uint32_t i = 0; i < ids.size && r.ok(); ++i) {
      ArrayReader::Cursor ic = r.array(ids);
      SessionId s = r.u64(ic);
      std::string identity = r.text(ic);
      r.close(ic);
      if (!r.ok()) break;
      if (!t.identities_.empty() && s <= t.identities_.rbegin()->first) r.fail("session identities out of order");
      if (t.sessions_.count(s) == 0) r.fail("an identity of unknown session " + std::to_string(s));
      if (identity.empty()) r.fail("an empty session identity listed");
      if (r.ok()) t.identities_.emplace_hint(t.identities_.end(), s, std::move(identity));
    }
    r.close(ids);
  }
  if (r.more(top)) {
    ArrayReader::Cursor mc = r.array(top);
    // Empty only as the place of a membership never set, before a replica set.
    if (r.ok() && mc.size == 0 && !r.more(top)) r.fail("an empty membership listed");
    if (mc.size != 0) {
      t.members_version_ = r.u64(mc);
      t.members_ = read_nodes(r, mc);
      if (r.ok() && t.members_version_ == 0) r.fail("a membership of version 0");
    }
    r.close(mc);
  }
  if (r.more(top)) t.replica_set_ = read_replica_set(r, top);
  r.close(top);
  if (!r.ok()) return r.status();
  if (std::string problem = check_state(t.next_session_, t.grant_counter_, t.sessions_, t.locks_); !problem.empty()) {
    return Status(Code::kCorrupt, "lock table snapshot: " + problem);
  }
  *this = std::move(t);
  return Status::ok();
}

}  // namespace palisade::lockgroup
