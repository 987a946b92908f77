// The multi-Paxos node on its own: election by phase 1, the master lease, chosen
// values identical on every node and kept across failovers, catch-up from the
// log and from snapshots, restarts from the durable state, and the negative
// control (acceptors that ignore the lease) doing what it says. A small
// harness delivers messages in order with a manual clock; the simulator
// (tests/sim) adds loss, delay, duplication and drifting clocks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <type_traits>
#include <vector>

#include "lockgroup/memory_paxos_storage.h"
#include "lockgroup/paxos_node.h"

namespace palisade::lockgroup {
namespace {

constexpr uint64_t kLease = 4000;

// The harness's membership changes: "members:1,2,4" makes 1, 2 and 4 the members.
std::optional<Members> test_members_after(std::string_view value) {
  constexpr std::string_view kPrefix = "members:";
  if (value.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  Members members;
  for (char ch : value.substr(kPrefix.size())) {
    if (ch != ',') members.push_back(static_cast<NodeId>(ch - '0'));
  }
  return members;
}

struct Cluster {
  // `initial` of the `n` nodes are the first members (all when 0); the others
  // start empty, as nodes that join.
  explicit Cluster(int n, bool ignore_lease = false, int initial = 0) {
    for (int i = 1; i <= n; ++i) all.push_back(static_cast<NodeId>(i));
    members.assign(all.begin(), all.begin() + (initial == 0 ? n : initial));
    for (NodeId id : all) {
      options[id] = PaxosOptions{.self = id,
                                 .members = id <= members.size() ? members : Members{},
                                 .members_after = test_members_after,
                                 .group = 7,
                                 .master_lease_ms = kLease,
                                 .heartbeat_ms = 500,
                                 .election_timeout_ms = 1000,
                                 .max_drift_ppm = 1000,
                                 .seed = 42,
                                 .max_entries_per_message = 64,
                                 .ignore_master_lease = ignore_lease};
      disks[id] = std::make_unique<MemoryPaxosStorage>();
      boot(id);
    }
  }

  void boot(NodeId id) {
    ++options[id].incarnation;  // as the daemon's wall clock grows from start to start
    auto node = PaxosNode::start(options[id], *disks[id], now);
    REQUIRE(node.is_ok());
    nodes[id] = std::move(node).value();
    settle(id);
  }
  void crash(NodeId id) {
    disks[id]->crash();
    nodes.erase(id);
    delivered[id].clear();
    applied[id] = 0;
  }

  // The driver's contract: commit, then send and apply.
  void settle(NodeId id) {
    PaxosNode& node = *nodes[id];
    for (auto& m : node.take_early_messages()) wire.push_back(std::move(m));
    REQUIRE(disks[id]->commit().is_ok());
    node.on_synced();
    for (auto& m : node.take_early_messages()) wire.push_back(std::move(m));
    for (auto& m : node.take_messages()) wire.push_back(std::move(m));
    for (auto& d : node.take_deliveries()) {
      if (d.snapshot) {
        applied[id] = d.slot;
        snapshot_installs[id]++;
        continue;
      }
      REQUIRE(d.slot == applied[id] + 1);
      applied[id] = d.slot;
      delivered[id][d.slot] = d.value;
      auto [it, fresh] = chosen.emplace(d.slot, d.value);
      REQUIRE(it->second == d.value);  // one value per slot, on every node
    }
  }

  void deliver_all() {
    while (!wire.empty()) {
      PeerMessage m = std::move(wire.front());
      wire.pop_front();
      if (!nodes.count(m.to) || cut.count(m.from) || cut.count(m.to) || (drop && drop(m))) continue;
      // A node may refuse a message (it then changes nothing): the tests judge state.
      (void)nodes[m.to]->receive(m, now);
      settle(m.to);
    }
  }

  // Advances time in 10 ms steps, ticking every node and delivering everything.
  void run(uint64_t ms) {
    for (uint64_t end = now + ms; now < end;) {
      now += 10;
      for (auto& [id, node] : nodes) {
        node->tick(now);
        settle(id);
      }
      deliver_all();
      std::set<NodeId> masters;
      for (auto& [id, node] : nodes) {
        if (node->is_master(now)) masters.insert(id);
      }
      max_masters = std::max(max_masters, masters.size());
    }
  }

  std::optional<NodeId> master() {
    for (auto& [id, node] : nodes) {
      if (node->is_master(now)) return id;
    }
    return std::nullopt;
  }

  // Runs until a master is elected (a lease and some election timeouts), and returns it.
  NodeId elect() {
    run(kLease + 3000);
    auto m = master();
    REQUIRE(m);
    return *m;
  }

  // As the daemon drives a node: ticked only when its next_timer_ms() is due,
  // with a value proposed every `every` ms, each of which moves the master's
  // next heartbeat away.
  void run_on_timers(uint64_t ms, uint64_t every) {
    for (uint64_t end = now + ms; now < end;) {
      now += 10;
      for (auto& [id, node] : nodes) {
        if (node->next_timer_ms() > now) continue;
        node->tick(now);
        settle(id);
      }
      if (now % every == 0) propose("v" + std::to_string(now));
      deliver_all();
    }
  }

  bool propose(const std::string& value) {
    auto m = master();
    if (!m) return false;
    bool ok = nodes[*m]->propose(value, now);
    settle(*m);
    deliver_all();
    return ok;
  }

  std::vector<NodeId> all;  // every node
  std::vector<NodeId> members;  // the first members
  std::map<NodeId, PaxosOptions> options;
  std::map<NodeId, std::unique_ptr<MemoryPaxosStorage>> disks;
  std::map<NodeId, std::unique_ptr<PaxosNode>> nodes;
  std::map<NodeId, std::map<Slot, std::string>> delivered;
  std::map<NodeId, Slot> applied;
  std::map<NodeId, int> snapshot_installs;
  std::map<Slot, std::string> chosen;
  std::deque<PeerMessage> wire;
  std::set<NodeId> cut;  // nodes cut off from everyone
  std::function<bool(const PeerMessage&)> drop;  // messages lost on the way, when set
  uint64_t now = 0;
  size_t max_masters = 0;
};

// A node other than `id`.
NodeId other_than(NodeId id) { return id == 1 ? 2 : 1; }

std::vector<std::string> values_of(const std::map<Slot, std::string>& delivered) {
  std::vector<std::string> out;
  for (const auto& [slot, v] : delivered) {
    if (!v.empty()) out.push_back(v);
  }
  return out;
}

}  // namespace

// Reaches into a node to break one invariant at a time (PaxosNode befriends it).
struct PaxosNodeTestAccess {
  static Ballot& promised(PaxosNode& n) { return n.promised_; }
  static Ballot& durable_promised(PaxosNode& n) { return n.durable_promised_; }
  static Ballot& highest_seen(PaxosNode& n) { return n.highest_seen_; }
  static Ballot& ballot(PaxosNode& n) { return n.ballot_; }
  static Slot& applied(PaxosNode& n) { return n.applied_; }
  static Slot& snapshot_slot(PaxosNode& n) { return n.snapshot_slot_; }
  static Slot& next_slot(PaxosNode& n) { return n.next_slot_; }
  static Slot& ready_slot(PaxosNode& n) { return n.ready_slot_; }
  static std::map<Slot, Entry>& log(PaxosNode& n) { return n.log_; }
  static std::map<Slot, std::set<NodeId>>& votes(PaxosNode& n) { return n.votes_; }
};

TEST_CASE("check_invariants reports each invariant broken, and nothing once it is mended", "[paxos]") {
  Cluster c(3);
  const NodeId m = c.elect();
  for (int i = 0; i < 5; ++i) REQUIRE(c.propose("v" + std::to_string(i)));
  PaxosNode& node = *c.nodes[m];
  using A = PaxosNodeTestAccess;
  REQUIRE(node.check_invariants().empty());
  REQUIRE(!A::log(node).empty());
  // Breaks one field, expects `problem` in the report, then puts it back.
  auto broken = [&](auto& field, auto bad, const std::string& problem) {
    const auto kept = field;
    field = bad;
    INFO("expected: " << problem);
    CHECK_THAT(node.check_invariants(), Catch::Contains(problem));
    field = kept;
    CHECK(node.check_invariants().empty());
  };
  broken(A::durable_promised(node), A::promised(node) + 1, "the promise on disk is above the promise");
  broken(A::promised(node), A::highest_seen(node) + 1, "the promise is above the highest ballot seen");
  broken(A::ballot(node), A::promised(node) + 1, "its own ballot is above its promise");
  broken(A::snapshot_slot(node), A::applied(node) + 1, "the snapshot is above the applied slot");
  const Slot first = A::log(node).begin()->first;
  broken(A::log(node)[first].slot, first + 1, "holds the entry of slot");
  broken(A::snapshot_slot(node), first, "not above the snapshot");
  broken(A::ballot(node), Ballot{0}, "leads another node's ballot");  // ballot 0 is nobody's
  broken(A::next_slot(node), A::applied(node), "a master's next slot is already applied");
  broken(A::ready_slot(node), A::applied(node) + 1, "ready before its first own slot is applied");
  std::map<Slot, std::set<NodeId>> stale_votes = {{A::applied(node), {m}}};
  broken(A::votes(node), stale_votes, "votes kept for an applied slot");
}

TEST_CASE("a lone node elects itself and chooses at once", "[paxos]") {
  Cluster c(1);
  c.run(500);
  CHECK_FALSE(c.master());  // waits out the lease it may have promised before a restart
  c.run(kLease + 2000);
  REQUIRE(c.master() == NodeId{1});
  REQUIRE(c.propose("a"));
  CHECK(values_of(c.delivered[1]) == std::vector<std::string>{"a"});
}

TEST_CASE("three nodes elect one master and apply the same values in order", "[paxos]") {
  Cluster c(3);
  NodeId m = c.elect();
  CHECK(c.nodes[m]->epoch() > 0);
  for (int i = 0; i < 20; ++i) REQUIRE(c.propose("v" + std::to_string(i)));
  c.run(1000);  // heartbeats carry the chosen prefix to the followers
  for (NodeId id : c.members) {
    REQUIRE(values_of(c.delivered[id]).size() == 20);
    CHECK(values_of(c.delivered[id]) == values_of(c.delivered[m]));
    CHECK(c.nodes[id]->master_hint() == m);
  }
  CHECK(c.max_masters == 1);
}

TEST_CASE("a master's accepts leave before its own sync, and its vote counts only after it", "[paxos]") {
  Cluster c(3);
  NodeId m = c.elect();
  PaxosNode& master = *c.nodes[m];
  REQUIRE(master.propose("x", c.now));
  // Its ballot's promise is on disk, so the accepts may go out before the sync.
  auto early = master.take_early_messages();
  CHECK(early.size() == 2);
  for (const auto& msg : early) CHECK(std::holds_alternative<Accept>(msg.body));
  CHECK(master.take_messages().empty());
  // One follower's vote is not a majority while this node's accept is unsynced.
  PeerMessage to_f = early.front();
  CHECK(c.nodes[to_f.to]->receive(to_f, c.now).is_ok());
  c.settle(to_f.to);
  auto reply = std::find_if(c.wire.begin(), c.wire.end(), [&](const PeerMessage& p) { return p.to == m; });
  REQUIRE(reply != c.wire.end());
  CHECK(master.receive(*reply, c.now).is_ok());
  c.wire.erase(reply);
  CHECK(master.take_deliveries().empty());
  // Once the storage committed, its own vote makes the majority.
  REQUIRE(c.disks[m]->commit().is_ok());
  master.on_synced();
  auto delivered = master.take_deliveries();
  REQUIRE(delivered.size() == 1);
  CHECK(delivered[0].value == "x");
}

TEST_CASE("a lone master chooses only once its own accept is synced", "[paxos]") {
  Cluster c(1);
  PaxosNode& node = *c.nodes[1];
  c.now = kLease + 10;
  node.tick(c.now);  // campaigns and, alone, becomes master at once
  CHECK(node.role() == PaxosNode::Role::kMaster);
  CHECK(node.take_deliveries().empty());  // its no-op needs its own, synced, vote
  REQUIRE(c.disks[1]->commit().is_ok());
  node.on_synced();
  CHECK(node.take_deliveries().size() == 1);
  CHECK(node.is_master(c.now));
}

TEST_CASE("a new master's first own slot holds ready_value of its ballot", "[paxos]") {
  Cluster c(1);
  c.options[1].ready_value = [](Ballot b) { return "epoch " + std::to_string(b); };
  c.boot(1);
  PaxosNode& node = *c.nodes[1];
  c.now = kLease + 10;
  node.tick(c.now);
  REQUIRE(node.role() == PaxosNode::Role::kMaster);
  REQUIRE(c.disks[1]->commit().is_ok());
  node.on_synced();
  auto delivered = node.take_deliveries();
  REQUIRE(delivered.size() == 1);
  CHECK(delivered[0].value == "epoch " + std::to_string(node.epoch()));
  CHECK(node.is_master(c.now));
}

TEST_CASE("a new master's first accepts wait until its promise is synced", "[paxos]") {
  Cluster c(3);
  c.now = kLease + 10;  // every boot-time promise has run out
  PaxosNode& n1 = *c.nodes[1];
  n1.tick(c.now);
  REQUIRE(n1.role() == PaxosNode::Role::kCandidate);
  CHECK(n1.take_early_messages().empty());  // a prepare never leaves before the sync
  auto prepares = n1.take_messages();
  REQUIRE(prepares.size() == 2);
  // Answer as the other two would, without syncing node 1.
  for (const PeerMessage& p : prepares) {
    CHECK(c.nodes[p.to]->receive(p, c.now).is_ok());
    c.settle(p.to);
  }
  while (!c.wire.empty()) {
    PeerMessage promise = c.wire.front();
    c.wire.pop_front();
    if (promise.to == 1) CHECK(n1.receive(promise, c.now).is_ok());
  }
  REQUIRE(n1.role() == PaxosNode::Role::kMaster);
  // Its promise of the new ballot is not on disk yet: a crash now could make it
  // reuse the ballot with other values, so its accepts wait for the sync.
  CHECK(n1.take_early_messages().empty());
  auto accepts = n1.take_messages();
  CHECK(accepts.size() == 2);
  for (const auto& msg : accepts) CHECK(std::holds_alternative<Accept>(msg.body));
}

TEST_CASE("a follower does not propose", "[paxos]") {
  Cluster c(3);
  NodeId m = c.elect();
  NodeId follower = other_than(m);
  CHECK_FALSE(c.nodes[follower]->propose("x", c.now));
}

TEST_CASE("the master keeps its lease while a majority answers heartbeats", "[paxos]") {
  Cluster c(3);
  NodeId m = c.elect();
  Ballot epoch = c.nodes[m]->epoch();
  c.run(30000);  // many lease lengths, nothing proposed
  CHECK(c.master() == m);
  CHECK(c.nodes[m]->epoch() == epoch);
}

TEST_CASE("a cut-off master loses its lease before another node can win one", "[paxos]") {
  Cluster c(3);
  NodeId old = c.elect();
  REQUIRE(c.propose("before"));
  uint64_t lease_end = c.nodes[old]->master_lease_until();
  c.cut.insert(old);
  std::optional<uint64_t> new_master_at;
  std::optional<NodeId> successor;
  for (int i = 0; i < 2000 && !new_master_at; ++i) {
    c.run(10);
    for (auto& [id, node] : c.nodes) {
      if (id != old && node->is_master(c.now)) {
        new_master_at = c.now;
        successor = id;
      }
    }
  }
  REQUIRE(new_master_at);
  CHECK(*new_master_at >= lease_end);     // all nodes share one clock here
  CHECK_FALSE(c.nodes[old]->is_master(c.now));
  CHECK(c.max_masters == 1);
  CHECK(c.nodes[*successor]->epoch() > c.nodes[old]->epoch());
  // What the old master had chosen is still there, in the same slot.
  REQUIRE(c.propose("after"));
  c.run(1000);
  CHECK(values_of(c.delivered[*successor]) == std::vector<std::string>{"before", "after"});
  // The old master comes back, follows, and learns the new value.
  c.cut.clear();
  c.run(2000);
  CHECK(c.master() == successor);
  CHECK(values_of(c.delivered[old]) == std::vector<std::string>{"before", "after"});
}

TEST_CASE("negative control: acceptors that ignore the lease allow two masters", "[paxos]") {
  Cluster c(3, /*ignore_lease=*/true);
  NodeId old = c.elect();
  c.cut.insert(old);
  c.run(3000);  // shorter than the lease: the cut-off master still believes in it
  // Count masters by each node's own view, as the simulator's checker does.
  int masters = 0;
  for (auto& [id, node] : c.nodes) masters += node->is_master(c.now) ? 1 : 0;
  CHECK(masters == 2);
  CHECK(c.max_masters == 2);
}

TEST_CASE("a value accepted by a majority survives the master's crash", "[paxos]") {
  Cluster c(3);
  NodeId old = c.elect();
  REQUIRE(c.propose("kept"));
  c.crash(old);
  c.run(2 * kLease + 3000);
  auto successor = c.master();
  REQUIRE(successor);
  CHECK(values_of(c.delivered[*successor]) == std::vector<std::string>{"kept"});
  c.boot(old);
  REQUIRE(c.propose("next"));
  // It missed the new master's prepare: it takes the new ballot's accepts
  // once the lease it may have promised before its crash is over.
  c.run(kLease + 1000);
  CHECK(values_of(c.delivered[old]) == std::vector<std::string>{"kept", "next"});
}

TEST_CASE("a restarted node catches up from a snapshot when the log was compacted", "[paxos]") {
  Cluster c(3);
  NodeId m = c.elect();
  NodeId lagging = m == 3 ? 2 : 3;
  c.crash(lagging);
  for (int i = 0; i < 30; ++i) REQUIRE(c.propose("v" + std::to_string(i)));
  c.run(1000);
  for (auto& [id, node] : c.nodes) {
    node->compact(node->applied_through(), "state@" + std::to_string(node->applied_through()));
    c.settle(id);
  }
  c.boot(lagging);
  REQUIRE(c.propose("after"));
  c.run(2000);
  CHECK(c.snapshot_installs[lagging] == 1);
  CHECK(c.applied[lagging] == c.applied[m]);
  CHECK(c.delivered[lagging].rbegin()->second == "after");
  // Its durable state holds the snapshot, not the compacted log.
  CHECK(c.disks[lagging]->committed().snapshot_slot > 0);
}

TEST_CASE("a catch-up that arrives after its asker became master is ignored", "[paxos]") {
  // Node 3 is driven by hand; nodes 1 and 2 speak only through the messages written here.
  Cluster c(3);
  PaxosNode& n3 = *c.nodes[3];
  auto step = [&] {
    c.now += 10;
    n3.tick(c.now);
    c.settle(3);
  };
  // The messages node 3 sent of type T, taken off the wire.
  auto sent = [&]<typename T>(std::type_identity<T>) {
    std::vector<std::pair<NodeId, T>> out;
    for (const PeerMessage& m : c.wire) {
      if (const T* body = std::get_if<T>(&m.body); body != nullptr && m.from == 3) out.emplace_back(m.to, *body);
    }
    c.wire.clear();
    return out;
  };
  auto from = [&](NodeId node, PeerBody body) {
    // Outside CHECK, which names its argument twice (once never evaluated).
    const Status received = n3.receive({.from = node, .to = 3, .group = 7, .body = std::move(body)}, c.now);
    CHECK(received.is_ok());
    c.settle(3);
  };

  while (n3.role() != PaxosNode::Role::kCandidate) step();
  Prepare first = sent(std::type_identity<Prepare>{}).at(0).second;
  // Node 1 compacted through slot 10: node 3 gives up this campaign and asks it to catch up.
  from(1, Promise{.ballot = first.ballot, .ok = true, .promised = first.ballot, .seq = first.seq, .snapshot_slot = 10});
  REQUIRE(n3.role() == PaxosNode::Role::kFollower);
  REQUIRE(sent(std::type_identity<CatchUpRequest>{}).size() == 1);

  // It campaigns again and wins with node 2, which accepted slots 1..10 (and compacted nothing).
  while (n3.role() != PaxosNode::Role::kCandidate) step();
  Prepare second = sent(std::type_identity<Prepare>{}).at(0).second;
  std::vector<Entry> accepted;
  for (Slot slot = 1; slot <= 10; ++slot) accepted.push_back({slot, make_ballot(1, 1), "s" + std::to_string(slot)});
  from(2, Promise{.ballot = second.ballot, .ok = true, .promised = second.ballot, .seq = second.seq,
                  .accepted = accepted});
  REQUIRE(n3.role() == PaxosNode::Role::kMaster);

  // Node 1's answer to the first campaign's request arrives only now.
  from(1, CatchUp{.snapshot_slot = 10, .snapshot = "state@10", .chosen = {}});
  CHECK(c.snapshot_installs[3] == 0);
  CHECK(n3.applied_through() == 0);
  CHECK(n3.log().size() == 11);  // slots 1..10 again, and its own no-op

  // Its heartbeats still find every slot they resend; node 2's votes choose them.
  c.wire.clear();
  for (int i = 0; i < 100; ++i) REQUIRE_NOTHROW(step());
  REQUIRE(n3.role() == PaxosNode::Role::kMaster);
  auto accepts = sent(std::type_identity<Accept>{});
  auto to_2 = std::find_if(accepts.rbegin(), accepts.rend(), [](const auto& a) { return a.first == 2; });
  REQUIRE(to_2 != accepts.rend());
  std::vector<Slot> slots;
  for (const Entry& e : to_2->second.entries) slots.push_back(e.slot);
  CHECK(slots.size() == 11);
  from(2, Accepted{.ballot = second.ballot, .ok = true, .promised = second.ballot, .seq = to_2->second.seq,
                   .slots = slots});
  CHECK(n3.applied_through() == 11);
  CHECK(c.delivered[3].at(10) == "s10");
  CHECK(n3.is_master(c.now));
}

TEST_CASE("a node whose commit failed restarts from disk and rejoins", "[paxos]") {
  Cluster c(3);
  NodeId m = c.elect();
  NodeId f = other_than(m);
  c.disks[f]->fail_next_commit();
  // The follower's accept of this value is not durable: the driver drops the
  // step's messages and restarts it from what is.
  REQUIRE(c.nodes[m]->propose("x", c.now));
  c.settle(m);
  auto it = std::find_if(c.wire.begin(), c.wire.end(), [&](const PeerMessage& p) { return p.to == f; });
  REQUIRE(it != c.wire.end());
  PeerMessage to_f = *it;
  c.wire.erase(it);
  CHECK(c.nodes[f]->receive(to_f, c.now).is_ok());
  REQUIRE_FALSE(c.disks[f]->commit().is_ok());
  c.nodes[f]->take_early_messages();
  c.nodes[f]->take_messages();
  c.nodes[f]->take_deliveries();
  c.nodes.erase(f);
  c.delivered[f].clear();
  c.applied[f] = 0;
  c.boot(f);
  c.run(3000);
  CHECK(values_of(c.delivered[f]) == std::vector<std::string>{"x"});
  CHECK(c.max_masters == 1);
}

TEST_CASE("messages of another group or to another node are ignored, a non-member is told the chosen values",
          "[paxos]") {
  Cluster c(3);
  NodeId m = c.elect();
  NodeId f = other_than(m);
  Ballot before = c.nodes[f]->epoch();
  PeerMessage foreign{.from = 3, .to = f, .group = 8, .body = Prepare{.ballot = make_ballot(99, 3), .from_slot = 1, .seq = 1}};
  CHECK(c.nodes[f]->receive(foreign, c.now).is_ok());  // ignored: ok, and nothing changes
  PeerMessage stranger{.from = 9, .to = f, .group = 7, .body = Prepare{.ballot = make_ballot(99, 9), .from_slot = 1, .seq = 1}};
  CHECK(c.nodes[f]->receive(stranger, c.now).is_ok());
  c.settle(f);
  // A node outside the membership (one removed that did not learn so) gets
  // the chosen values, and no promise while the master's lease holds.
  REQUIRE(c.wire.size() == 2);
  for (const PeerMessage& m : c.wire) CHECK(m.to == 9);
  CHECK(std::holds_alternative<CatchUp>(c.wire.front().body));
  CHECK_FALSE(std::get<Promise>(c.wire.back().body).ok);
  CHECK(c.nodes[f]->epoch() == before);
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

TEST_CASE("a forged accept with a round near the top is refused, and the node still campaigns", "[paxos][guards]") {
  // Issue #23: this accept made a follower promise round 2^56-1; its next
  // campaign wrapped the round and aborted, and the promise on disk aborted
  // every restart.
  Cluster c(3);
  NodeId m = c.elect();
  NodeId f = other_than(m);
  NodeId claimed = 6 - m - f;  // the third node
  const Ballot before = c.nodes[f]->epoch();
  PeerMessage forged{.from = claimed, .to = f, .group = 7,
                     .body = Accept{.ballot = make_ballot((uint64_t{1} << 56) - 1, claimed), .seq = 1}};
  Status s = c.nodes[f]->receive(forged, c.now);
  c.settle(f);
  CHECK(s.code() == Code::kBadRequest);
  CHECK(c.nodes[f]->epoch() == before);
  CHECK(c.nodes[f]->master_hint() == m);
  CHECK(c.disks[f]->committed().promised == before);
  // The master dies: the others elect a new one above the old epoch.
  c.crash(m);
  c.run(kLease + 4000);
  auto next = c.master();
  REQUIRE(next);
  CHECK(c.nodes[*next]->epoch() > before);
}

TEST_CASE("ballots above the highest round are refused in every message that carries one", "[paxos][guards]") {
  Cluster c(3);
  NodeId m = c.elect();
  NodeId f = other_than(m);
  NodeId third = 6 - m - f;
  const Ballot top = make_ballot(kMaxRound + 1, third);
  const Ballot ok_ballot = make_ballot(kMaxRound, third);
  REQUIRE(ballot_in_range(ok_ballot));
  REQUIRE_FALSE(ballot_in_range(top));
  auto to_f = [&](PeerBody body) {
    Status s = c.nodes[f]->receive({.from = third, .to = f, .group = 7, .body = std::move(body)}, c.now);
    c.settle(f);
    return s;
  };
  const Ballot before = c.nodes[f]->epoch();
  CHECK(to_f(Prepare{.ballot = top, .from_slot = 1, .seq = 1}).code() == Code::kBadRequest);
  CHECK(to_f(Promise{.ballot = before, .ok = false, .promised = top}).code() == Code::kBadRequest);
  CHECK(to_f(Accepted{.ballot = before, .ok = false, .promised = top}).code() == Code::kBadRequest);
  CHECK(to_f(CatchUp{.chosen = {{.slot = 1, .ballot = top, .value = ""}}}).code() == Code::kBadRequest);
  CHECK(to_f(StepDown{.ballot = top, .successor = f}).code() == Code::kBadRequest);
  CHECK(c.nodes[f]->epoch() == before);
  c.wire.clear();
  // The highest allowed round is not out of range (the acceptor may still say no).
  CHECK(to_f(Prepare{.ballot = ok_ballot, .from_slot = 1, .seq = 1}).is_ok());
}

TEST_CASE("entries absurdly far past the applied slot are not accepted", "[paxos][guards]") {
  Cluster c(3);
  NodeId m = c.elect();
  NodeId f = other_than(m);
  const Ballot b = c.nodes[f]->epoch();
  const Slot next = c.nodes[f]->applied_through() + 1;
  const Slot far = c.nodes[f]->applied_through() + (Slot{1} << 21);
  // The accept is taken (it renews the lease), its far entry is not accepted.
  // (Stamped as if from a later start of m: newer than anything m sent.)
  Status s = c.nodes[f]->receive({.from = m, .to = f, .group = 7, .incarnation = c.options[m].incarnation + 1,
                                  .serial = 1,
                                  .body = Accept{.ballot = b, .seq = 1, .entries = {{next, b, "x"}, {far, b, ""}}}},
                                 c.now);
  CHECK(s.is_ok());
  CHECK(c.nodes[f]->log().count(next));
  CHECK_FALSE(c.nodes[f]->log().count(far));
  c.settle(f);
  bool acked = false;
  for (const PeerMessage& out : c.wire) {
    if (const auto* a = std::get_if<Accepted>(&out.body); a != nullptr && out.from == f && a->seq == 1) {
      acked = true;
      CHECK(a->slots == std::vector<Slot>{next});
    }
  }
  CHECK(acked);
  c.wire.clear();
  s = c.nodes[f]->receive({.from = m, .to = f, .group = 7, .body = CatchUp{.snapshot_slot = ~Slot{0}}}, c.now);
  CHECK(s.code() == Code::kBadRequest);
  CHECK(c.nodes[f]->applied_through() < far);
}

TEST_CASE("a node whose disk holds a promise at the top round does not abort, and says it is stuck",
          "[paxos][guards]") {
  // Written by a node before ballots were range-checked: it can neither lead
  // (no round above its promise is allowed) nor follow (every accept is below
  // its promise). It keeps running instead of aborting on every start, and
  // tells the driver, which tells the operator to stop it.
  Cluster c(3);
  c.disks[1]->set_promised(make_ballot((uint64_t{1} << 56) - 1, 2));
  REQUIRE(c.disks[1]->commit().is_ok());
  c.crash(1);
  c.boot(1);
  CHECK_FALSE(c.nodes[1]->stuck_at_top_round());  // not known before it tries to campaign
  c.cut = {2, 3};
  REQUIRE_NOTHROW(c.run(3 * kLease));
  CHECK(c.nodes[1]->role() == PaxosNode::Role::kFollower);
  CHECK(c.nodes[1]->stuck_at_top_round());
  // It does not follow the master the others elect.
  c.cut.clear();
  NodeId m = c.elect();
  CHECK(m != 1);
  REQUIRE(c.propose("x"));
  c.run(2000);
  CHECK(c.nodes[1]->applied_through() == 0);
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

TEST_CASE("a catch-up snapshot at or below the applied slot is not installed", "[paxos][guards]") {
  // A replayed or stale catch-up must never move a node's state back.
  Cluster c(3);
  NodeId m = c.elect();
  for (int i = 0; i < 5; ++i) REQUIRE(c.propose("v" + std::to_string(i)));
  c.run(500);
  NodeId f = other_than(m);
  const Slot applied = c.nodes[f]->applied_through();
  REQUIRE(applied >= 5);
  for (Slot at : {applied - 2, applied}) {
    Status s = c.nodes[f]->receive(
        {.from = m, .to = f, .group = 7, .body = CatchUp{.snapshot_slot = at, .snapshot = "old", .chosen = {}}}, c.now);
    c.settle(f);
    CHECK(s.is_ok());
    CHECK(c.nodes[f]->applied_through() == applied);
    CHECK(c.snapshot_installs[f] == 0);
    CHECK(c.disks[f]->committed().snapshot_slot == 0);
  }
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

// The messages `from` sends to `to` when it next ticks at `at` (a master's heartbeat).
std::vector<PeerMessage> sent_at_tick(Cluster& c, NodeId from, NodeId to, uint64_t at) {
  c.now = at;
  c.nodes[from]->tick(c.now);
  c.settle(from);
  std::vector<PeerMessage> out;
  for (const PeerMessage& m : c.wire) {
    if (m.from == from && m.to == to) out.push_back(m);
  }
  return out;
}

TEST_CASE("a replayed heartbeat does not hold off the election after the master dies", "[paxos][guards][replay]") {
  // Peer frames are signed, not encrypted: anyone on the path can keep one of
  // the master's heartbeats and send it again. It verifies, and before the
  // (incarnation, serial) check it renewed the dead master's lease on every
  // follower and restarted their election timers.
  Cluster c(3);
  NodeId m = c.elect();
  NodeId f = other_than(m);
  NodeId g = 6 - m - f;
  c.run(1000);
  std::map<NodeId, PeerMessage> captured;
  for (NodeId to : {f, g}) {
    for (const PeerMessage& msg : sent_at_tick(c, m, to, c.nodes[m]->next_timer_ms())) {
      if (std::holds_alternative<Accept>(msg.body)) captured.emplace(to, msg);
    }
  }
  REQUIRE(captured.size() == 2);
  c.deliver_all();
  const Ballot old = c.nodes[f]->epoch();
  c.crash(m);
  // Replayed to both followers every 100 ms, for two leases and more.
  std::optional<NodeId> next;
  const uint64_t end = c.now + 2 * kLease + 4000;
  while (c.now < end && !next) {
    for (auto& [to, msg] : captured) {
      CHECK(c.nodes[to]->receive(msg, c.now).is_ok());
      c.settle(to);
    }
    c.run(100);
    next = c.master();
  }
  REQUIRE(next);
  CHECK(c.nodes[*next]->epoch() > old);
  CHECK(c.nodes[f]->stale_messages() + c.nodes[g]->stale_messages() > 0);
  CHECK(c.max_masters == 1);
}

TEST_CASE("a replayed accept gives its entries again, but vouches for no lease time and costs no sync",
          "[paxos][guards][replay]") {
  // Dropping a stale accept would be safe, but in a network that reorders
  // (the simulator's) it also drops entries that only a heartbeat resends.
  Cluster c(3);
  NodeId m = c.elect();
  NodeId f = other_than(m);
  c.run(1000);
  REQUIRE(c.nodes[m]->propose("v", c.now));
  for (auto& out : c.nodes[m]->take_early_messages()) c.wire.push_back(std::move(out));
  c.settle(m);
  std::optional<PeerMessage> accept;
  for (const PeerMessage& msg : c.wire) {
    if (const auto* a = std::get_if<Accept>(&msg.body); a != nullptr && msg.to == f && !a->entries.empty()) {
      accept = msg;
    }
  }
  REQUIRE(accept);
  c.deliver_all();
  c.run(1000);
  const uint64_t syncs = c.disks[f]->sync_count();
  const uint64_t election_at = c.nodes[f]->next_timer_ms();
  c.now += 10;
  REQUIRE(c.nodes[f]->receive(*accept, c.now).is_ok());
  CHECK(c.nodes[f]->stale_messages() == 1);
  CHECK(c.nodes[f]->next_timer_ms() == election_at);  // the election timer is not restarted
  for (auto& out : c.nodes[f]->take_early_messages()) c.wire.push_back(std::move(out));
  REQUIRE(c.disks[f]->commit().is_ok());
  c.nodes[f]->on_synced();
  CHECK(c.disks[f]->sync_count() == syncs);  // nothing written again
  bool answered = false;
  for (const PeerMessage& out : c.nodes[f]->take_messages()) {
    if (const auto* a = std::get_if<Accepted>(&out.body); a != nullptr) {
      answered = true;
      CHECK(a->ok);
      CHECK(a->seq == 0);  // no send time of the master's to count a lease from
      CHECK(a->slots.size() == std::get<Accept>(accept->body).entries.size());  // its entries are acknowledged
    }
  }
  CHECK(answered);
}

TEST_CASE("a replayed catch_up_request is not answered again, and snapshots to a peer are rate-limited",
          "[paxos][guards][replay]") {
  Cluster c(3);
  NodeId m = c.elect();
  for (int i = 0; i < 5; ++i) REQUIRE(c.propose("v" + std::to_string(i)));
  c.run(500);
  NodeId f = other_than(m);
  const Slot applied = c.nodes[m]->applied_through();
  c.nodes[m]->compact(applied, std::string(1000, 's'));
  c.settle(m);
  c.deliver_all();
  auto ask = [&](uint64_t serial) {
    PeerMessage request{.from = f, .to = m, .group = 7, .incarnation = c.options[f].incarnation + 1,
                        .serial = serial, .body = CatchUpRequest{.from_slot = 1}};
    REQUIRE(c.nodes[m]->receive(request, c.now).is_ok());
    c.settle(m);
    size_t snapshots = 0;
    for (const PeerMessage& out : c.wire) {
      if (const auto* cu = std::get_if<CatchUp>(&out.body); cu != nullptr && out.to == f) {
        CHECK(cu->snapshot_slot == applied);
        ++snapshots;
      }
    }
    c.wire.clear();
    return snapshots;
  };
  CHECK(ask(10) == 1);
  // The same frame again, over and over, a second apart: never answered again.
  for (int i = 0; i < 10; ++i) {
    c.now += 1000;
    CHECK(ask(10) == 0);
  }
  CHECK(c.nodes[m]->stale_messages() >= 10);
  // A new request is answered, but a second snapshot within half a heartbeat is not sent.
  c.now += 1000;
  CHECK(ask(11) == 1);
  CHECK(ask(12) == 0);
  CHECK(c.nodes[m]->catch_ups_limited() == 1);
  c.now += 250;
  CHECK(ask(13) == 1);
}

TEST_CASE("a candidate far behind a promise's snapshot catches up instead of having the promise refused",
          "[paxos][guards]") {
  // Nodes 2 and 3 are 2^21 slots ahead of node 1, with an accepted entry past
  // their snapshot. Node 1's promise from them must send it to catch up, not be
  // refused for the entry's distance (it then kept campaigning, and its
  // prepares kept resetting its peers' election timers).
  Cluster c(3);
  const Slot far = Slot{1} << 21;
  for (NodeId id : {NodeId{2}, NodeId{3}}) {
    c.disks[id]->put_snapshot(far, "snap");
    c.disks[id]->put_accepted({far + 1, make_ballot(5, 2), ""});
    REQUIRE(c.disks[id]->commit().is_ok());
    c.crash(id);
    c.boot(id);
  }
  c.cut = {1, 2, 3};
  c.run(3 * kLease);
  for (int i = 0; i < 1000 && c.nodes[1]->role() != PaxosNode::Role::kCandidate; ++i) c.run(10);
  REQUIRE(c.nodes[1]->role() == PaxosNode::Role::kCandidate);
  REQUIRE(c.nodes[1]->applied_through() == 0);
  c.wire.clear();
  const Ballot b = c.nodes[1]->epoch();
  auto promise = [&](Slot snapshot_slot, std::vector<Entry> accepted) {
    return PeerMessage{.from = 2, .to = 1, .group = 7, .body = Promise{.ballot = b, .ok = true, .promised = b,
                                                                       .seq = 1, .snapshot_slot = snapshot_slot,
                                                                       .accepted = std::move(accepted)}};
  };
  // A snapshot slot beyond any slot is refused.
  CHECK(c.nodes[1]->receive(promise(~Slot{0}, {}), c.now).code() == Code::kBadRequest);
  CHECK(c.nodes[1]->role() == PaxosNode::Role::kCandidate);
  Status s = c.nodes[1]->receive(promise(far, {{far + 1, make_ballot(5, 2), ""}}), c.now);
  c.settle(1);
  CHECK(s.is_ok());
  CHECK(c.nodes[1]->role() == PaxosNode::Role::kFollower);
  bool asked = false;
  for (const PeerMessage& out : c.wire) {
    if (const auto* r = std::get_if<CatchUpRequest>(&out.body); r != nullptr && out.from == 1 && out.to == 2) {
      asked = r->from_slot == 1;
    }
  }
  CHECK(asked);
  // Let them talk: node 1 installs the snapshot and the group elects a master.
  c.cut.clear();
  c.wire.clear();
  c.run(3 * kLease);
  CHECK(c.nodes[1]->applied_through() >= far);
  CHECK(c.master());
}

TEST_CASE("a promise with entries far ahead but no snapshot past the applied slot also makes the candidate catch up",
          "[paxos][guards]") {
  Cluster c(3);
  c.cut = {1, 2, 3};
  for (int i = 0; i < 1000 && c.nodes[1]->role() != PaxosNode::Role::kCandidate; ++i) c.run(10);
  REQUIRE(c.nodes[1]->role() == PaxosNode::Role::kCandidate);
  c.wire.clear();
  const Ballot b = c.nodes[1]->epoch();
  const Slot far = Slot{1} << 21;
  Status s = c.nodes[1]->receive(
      {.from = 2, .to = 1, .group = 7,
       .body = Promise{.ballot = b, .ok = true, .promised = b, .seq = 1, .accepted = {{far, make_ballot(5, 2), ""}}}},
      c.now);
  c.settle(1);
  CHECK(s.is_ok());
  // Not master (it would fill 2^21 slots), and the far entry is not dropped either: it catches up.
  CHECK(c.nodes[1]->role() == PaxosNode::Role::kFollower);
  bool asked = false;
  for (const PeerMessage& out : c.wire) asked = asked || std::holds_alternative<CatchUpRequest>(out.body);
  CHECK(asked);
}

}  // namespace palisade::lockgroup

namespace palisade::lockgroup {

// The step-downs `id` hands out as it hands over (left on the wire too).
std::vector<PeerMessage> hand_over(Cluster& c, NodeId id) {
  REQUIRE(c.nodes[id]->hand_over(c.now));
  c.settle(id);
  std::vector<PeerMessage> out;
  for (const PeerMessage& m : c.wire) {
    if (m.from == id && std::holds_alternative<StepDown>(m.body)) out.push_back(m);
  }
  return out;
}

TEST_CASE("a master that hands over lets its successor lead at once, not after its lease", "[paxos][step_down]") {
  Cluster c(3);
  NodeId old = c.elect();
  REQUIRE(c.propose("before"));
  c.run(1000);
  const Ballot old_epoch = c.nodes[old]->epoch();
  const uint64_t lease_end = c.nodes[old]->master_lease_until();
  REQUIRE(lease_end > c.now + 2000);
  auto step_downs = hand_over(c, old);
  CHECK_FALSE(c.nodes[old]->is_master(c.now));
  CHECK(c.nodes[old]->role() == PaxosNode::Role::kFollower);
  REQUIRE(step_downs.size() == 2);
  const NodeId successor = std::get<StepDown>(step_downs[0].body).successor;
  CHECK(successor != old);
  for (const PeerMessage& m : step_downs) CHECK(std::get<StepDown>(m.body) == StepDown{old_epoch, successor});
  c.crash(old);  // a planned restart: it goes once the step-down is sent
  // No clock moves: the successor campaigns on the step-down, both followers
  // have released the lease, and its no-op is chosen by their answers.
  c.deliver_all();
  REQUIRE(c.master() == successor);
  CHECK(c.nodes[successor]->epoch() > old_epoch);
  CHECK(c.now < lease_end);
  int masters = 0;
  for (auto& [id, node] : c.nodes) masters += node->is_master(c.now) ? 1 : 0;
  CHECK(masters == 1);
  REQUIRE(c.propose("after"));
  c.run(1000);
  CHECK(values_of(c.delivered[successor]) == std::vector<std::string>{"before", "after"});
  c.boot(old);
  c.run(kLease + 1000);
  CHECK(c.master() == successor);
  CHECK(values_of(c.delivered[old]) == std::vector<std::string>{"before", "after"});
  CHECK(c.max_masters == 1);
}

TEST_CASE("without a hand-over the followers wait out the stopped master's lease", "[paxos][step_down]") {
  // The same stop as above, as a crash: what the hand-over saves.
  Cluster c(3);
  NodeId old = c.elect();
  c.run(1000);
  const uint64_t lease_end = c.nodes[old]->master_lease_until();
  c.crash(old);
  std::optional<uint64_t> next_at;
  for (int i = 0; i < 1000 && !next_at; ++i) {
    c.run(10);
    if (c.master()) next_at = c.now;
  }
  REQUIRE(next_at);
  CHECK(*next_at >= lease_end);
}

TEST_CASE("a follower does not hand over, and a lone master tells nobody", "[paxos][step_down]") {
  Cluster c(3);
  NodeId m = c.elect();
  CHECK_FALSE(c.nodes[other_than(m)]->hand_over(c.now));
  Cluster lone(1);
  NodeId only = lone.elect();
  REQUIRE(lone.nodes[only]->hand_over(lone.now));
  lone.settle(only);
  CHECK(lone.wire.empty());
  CHECK_FALSE(lone.nodes[only]->is_master(lone.now));
}

TEST_CASE("if the successor is gone, the other followers elect one after a timeout, not the lease",
          "[paxos][step_down]") {
  Cluster c(5);
  NodeId old = c.elect();
  c.run(1000);
  const uint64_t lease_end = c.nodes[old]->master_lease_until();
  auto step_downs = hand_over(c, old);
  const NodeId successor = std::get<StepDown>(step_downs[0].body).successor;
  c.crash(old);
  c.crash(successor);
  std::optional<uint64_t> next_at;
  for (int i = 0; i < 1000 && !next_at; ++i) {
    c.run(10);
    if (c.master()) next_at = c.now;
  }
  REQUIRE(next_at);
  CHECK(*next_at < lease_end);
  CHECK(c.max_masters == 1);
}

TEST_CASE("a successor restarted since its promise keeps its start-up wait, and it does not campaign at once",
          "[paxos][step_down]") {
  Cluster c(3);
  NodeId old = c.elect();
  c.run(1000);
  auto step_downs = hand_over(c, old);
  const NodeId successor = std::get<StepDown>(step_downs[0].body).successor;
  c.wire.clear();
  c.crash(successor);
  c.boot(successor);  // its promise of the old ballot is on disk; whom it leased to is forgotten
  for (const PeerMessage& m : step_downs) {
    if (m.to == successor) REQUIRE(c.nodes[successor]->receive(m, c.now).is_ok());
  }
  c.settle(successor);
  CHECK(c.nodes[successor]->role() == PaxosNode::Role::kFollower);
  CHECK(c.wire.empty());
}

TEST_CASE("an accept sent before the step-down and delivered after it renews no lease", "[paxos][step_down][replay]") {
  Cluster c(3);
  NodeId m = c.elect();
  c.run(1000);
  NodeId f = other_than(m);
  NodeId g = 6 - m - f;
  // A heartbeat to f, held back in the network: g answers the later one, so
  // g is the follower heard from last, and the successor.
  std::optional<PeerMessage> late;
  for (const PeerMessage& msg : sent_at_tick(c, m, f, c.nodes[m]->next_timer_ms())) {
    if (std::holds_alternative<Accept>(msg.body)) late = msg;
  }
  REQUIRE(late);
  std::erase_if(c.wire, [&](const PeerMessage& msg) { return msg.to == f && msg.from == m; });
  c.deliver_all();
  auto step_downs = hand_over(c, m);
  REQUIRE(std::get<StepDown>(step_downs[0].body).successor == g);
  c.crash(m);
  // f gets the step-down, then the held-back heartbeat.
  for (const PeerMessage& msg : step_downs) {
    if (msg.to == f) REQUIRE(c.nodes[f]->receive(msg, c.now).is_ok());
  }
  std::erase_if(c.wire, [&](const PeerMessage& msg) { return msg.to == f && msg.from == m; });
  c.settle(f);
  const uint64_t stale = c.nodes[f]->stale_messages();
  REQUIRE(c.nodes[f]->receive(*late, c.now).is_ok());
  c.settle(f);
  CHECK(c.nodes[f]->stale_messages() == stale + 1);
  // Had the heartbeat renewed f's lease for m, f would refuse g's prepare.
  c.deliver_all();
  CHECK(c.master() == g);
}

TEST_CASE("a step-down of an older ballot, replayed, releases nothing", "[paxos][step_down][guards][replay]") {
  Cluster c(3);
  NodeId m = c.elect();
  c.run(1000);
  auto old_step_downs = hand_over(c, m);
  c.deliver_all();
  // Hand back to m, in a later ballot. A master names as successor the
  // follower it heard from last (ties go to the lower id), so the third node
  // is cut off while m answers the master's heartbeats.
  const NodeId successor = *c.master();
  REQUIRE(successor != m);
  const NodeId third = 6 - m - successor;
  c.cut.insert(third);
  c.run(1000);
  hand_over(c, successor);
  c.deliver_all();
  c.cut.erase(third);
  REQUIRE(c.master() == m);
  c.run(1000);
  const uint64_t lease_end = c.nodes[m]->master_lease_until();
  c.cut.insert(m);
  for (PeerMessage msg : old_step_downs) {
    const uint64_t stale = c.nodes[msg.to]->stale_messages();
    REQUIRE(c.nodes[msg.to]->receive(msg, c.now).is_ok());  // as captured: stale
    CHECK(c.nodes[msg.to]->stale_messages() == stale + 1);
    msg.serial += 1'000'000;  // past the replay guard (as after the receiver restarted): the ballot still differs
    REQUIRE(c.nodes[msg.to]->receive(msg, c.now).is_ok());
    c.settle(msg.to);
  }
  std::optional<uint64_t> next_at;
  for (int i = 0; i < 2000 && !next_at; ++i) {
    c.run(10);
    for (auto& [id, node] : c.nodes) {
      if (id != m && node->is_master(c.now)) next_at = c.now;
    }
  }
  REQUIRE(next_at);
  CHECK(*next_at >= lease_end);
  CHECK(c.max_masters == 1);
}

// ---- Membership changes (docs/design.md "Membership") ----

TEST_CASE("the group grows from three nodes to five and back while values are chosen", "[paxos][members]") {
  Cluster c(5, false, 3);
  const NodeId m = c.elect();
  CHECK_FALSE(c.nodes[4]->is_member());
  REQUIRE(c.propose("a"));
  REQUIRE(c.propose("members:1,2,3,4,5"));
  c.run(1000);
  for (NodeId id : c.all) CHECK(c.nodes[id]->members() == Members{1, 2, 3, 4, 5});
  REQUIRE(c.master() == m);  // the master kept serving through the change
  REQUIRE(c.propose("b"));
  c.run(1000);
  // The new nodes learnt everything, the values before the change too.
  for (NodeId id : c.all) CHECK(values_of(c.delivered[id]) == std::vector<std::string>{"a", "members:1,2,3,4,5", "b"});
  // Five members: any three elect and choose, two of the first three gone.
  const NodeId lost = m == 1 ? 2 : 1;
  c.cut = {m, lost};
  c.run(kLease + 4000);
  const auto next = c.master();
  REQUIRE(next);
  CHECK((*next == 3 || *next == 4 || *next == 5));
  REQUIRE(c.propose("c"));
  // The two come back; one of them campaigned while cut off and holds a
  // higher ballot: the group settles on one master again first.
  c.cut.clear();
  c.run(3 * kLease);
  REQUIRE(c.propose("members:1,2,3"));
  c.run(1000);
  for (NodeId id : c.members) CHECK(c.nodes[id]->members() == Members{1, 2, 3});
  REQUIRE(c.master());
  CHECK(*c.master() <= 3);  // a removed master hands over to a member
  REQUIRE(c.propose("d"));
  // A removed node that missed its removal campaigns once its wait is over:
  // the members answer with the chosen values, and it learns it.
  c.run(2 * kLease);
  for (NodeId id : {4, 5}) {
    CHECK(c.nodes[id]->members() == Members{1, 2, 3});
    CHECK_FALSE(c.nodes[id]->is_member());
    CHECK(c.nodes[id]->role() == PaxosNode::Role::kFollower);
  }
  CHECK(c.max_masters == 1);
}

TEST_CASE("a master that removes its own node hands over and stops leading", "[paxos][members]") {
  Cluster c(4, false, 3);
  const NodeId m = c.elect();
  Members without;
  for (NodeId id : c.all) {
    if (id != m) without.push_back(id);
  }
  std::string change = "members:";
  for (NodeId id : without) change += std::to_string(id) + ",";
  REQUIRE(c.propose(change));
  // Well before its lease would run out on the new members: it handed over.
  c.run(kLease / 2);
  REQUIRE(c.master());
  CHECK(*c.master() != m);
  CHECK_FALSE(c.nodes[m]->is_member());
  CHECK(c.nodes[4]->is_member());
  REQUIRE(c.propose("after"));
  // The removed node never campaigns again, though nobody talks to it.
  c.run(3 * kLease);
  CHECK(c.nodes[m]->role() == PaxosNode::Role::kFollower);
  CHECK(c.max_masters == 1);
}

TEST_CASE("a node that joins never campaigns before it is a member", "[paxos][members]") {
  Cluster c(4, false, 3);
  c.cut = {1, 2, 3};
  c.run(4 * kLease);
  CHECK(c.nodes[4]->role() == PaxosNode::Role::kFollower);
  CHECK(c.nodes[4]->members().empty());
  CHECK(c.nodes[4]->epoch() == 0);
}

TEST_CASE("a change waits for a majority of the new members, and is dropped when they never answer",
          "[paxos][members]") {
  Cluster c(5, false, 3);
  const NodeId m = c.elect();
  c.cut = {4, 5};
  // Of {m, 4, 5} a majority must promise: m alone is not one.
  REQUIRE(c.propose("members:" + std::to_string(m) + ",4,5"));
  CHECK_FALSE(c.nodes[m]->members_settled());
  // Staged, not proposed: the group and its master go on as before.
  REQUIRE(c.propose("a"));
  c.run(1000);
  CHECK(c.master() == m);
  CHECK(c.nodes[m]->members() == Members{1, 2, 3});
  CHECK_FALSE(c.propose("members:1,2,3,4"));  // one change at a time
  c.run(2 * kLease + 1000);
  CHECK(c.nodes[m]->members_settled());
  CHECK(c.nodes[m]->staged_dropped() == 1);
  CHECK(c.master() == m);
  for (NodeId id : c.members) CHECK(c.nodes[id]->members() == Members{1, 2, 3});
  CHECK(values_of(c.chosen) == std::vector<std::string>{"a"});
}

TEST_CASE("a change whose prepares were lost asks again though values keep the heartbeat away", "[paxos][members]") {
  Cluster c(5, false, 3);
  const NodeId m = c.elect();
  c.cut = {4, 5};  // its first prepares are lost
  REQUIRE(c.propose("members:" + std::to_string(m) + ",4,5"));
  c.run_on_timers(100, 100);
  c.cut.clear();
  // A value every 100 ms: the master's heartbeat (500 ms) is never due, the
  // next ask for the promises must be.
  c.run_on_timers(2000, 100);
  CHECK(c.nodes[m]->staged_dropped() == 0);
  CHECK(c.nodes[4]->members() == Members{m, 4, 5});
  CHECK(c.max_masters <= 1);
}

TEST_CASE("a node restarted after a change comes back with the changed members", "[paxos][members]") {
  Cluster c(4, false, 3);
  c.elect();
  REQUIRE(c.propose("members:1,2,3,4"));
  c.run(1000);
  // Compacted into a snapshot that records the members: the harness's
  // snapshot is the change itself.
  for (NodeId id : c.all) {
    c.options[id].members_in_snapshot = test_members_after;
    c.nodes[id]->compact(c.nodes[id]->applied_through(), "members:1,2,3,4");
    c.settle(id);
  }
  c.crash(4);
  c.boot(4);
  CHECK(c.nodes[4]->members() == Members{1, 2, 3, 4});
  CHECK(c.nodes[4]->is_member());
}

TEST_CASE("a node keeps its first members: later starts ignore the members they pass", "[paxos][members]") {
  Cluster c(4, false, 3);
  c.elect();
  // The cluster file now lists node 4 too (its address), and node 4 was
  // started as a joiner: neither changes any membership.
  for (NodeId id : c.all) c.options[id].members = Members{1, 2, 3, 4};
  for (NodeId id : c.all) {
    c.crash(id);
    c.boot(id);
    CHECK(c.nodes[id]->first_members() == (id == 4 ? Members{} : Members{1, 2, 3}));
  }
  CHECK(c.nodes[1]->members() == Members{1, 2, 3});
  CHECK_FALSE(c.nodes[4]->is_member());
  c.elect();
  CHECK(c.nodes[4]->role() == PaxosNode::Role::kFollower);
  CHECK(c.nodes[4]->epoch() == 0);  // never asked to promise: not a member
}

TEST_CASE("the negative control takes the members it is given at every start", "[paxos][members]") {
  Cluster c(4, false, 3);
  c.options[4].members = Members{1, 2, 3, 4};
  c.options[4].broken_first_members_from_options = true;
  c.crash(4);
  c.boot(4);
  CHECK(c.nodes[4]->first_members() == Members{1, 2, 3, 4});
  CHECK(c.nodes[4]->is_member());
}

TEST_CASE("an acceptor leased to one master takes no higher ballot's accept from another before its prepare",
          "[paxos][members]") {
  Cluster c(3);
  const NodeId m = c.elect();
  const NodeId f = other_than(m);
  const NodeId rival = 6 - m - f;  // the third node
  // The rival's accept of a higher ballot, as a master elected by members
  // the follower's master does not count would send it.
  const Ballot higher = make_ballot(ballot_round(c.nodes[f]->epoch()) + 5, rival);
  PeerMessage accept{.from = rival,
                     .to = f,
                     .group = 7,
                     .incarnation = 99,
                     .serial = 1,
                     .body = Accept{.ballot = higher, .seq = 1, .chosen_through = 0}};
  REQUIRE(c.nodes[f]->receive(accept, c.now).is_ok());
  CHECK(c.nodes[f]->epoch() < higher);
  c.wire.clear();
  c.settle(f);
  REQUIRE(c.wire.size() == 1);
  CHECK_FALSE(std::get<Accepted>(c.wire.front().body).ok);
  // It names the rival as master all the same: it leads a newer ballot, and
  // clients asking this node are sent there.
  CHECK(c.nodes[f]->master_hint() == rival);
  c.wire.clear();
  // Once the lease is over, the same ballot's accept is taken.
  c.cut = {m};
  c.run(kLease + 100);
  c.cut.clear();
  c.wire.clear();
  accept.serial = 2;
  REQUIRE(c.nodes[f]->receive(accept, c.now).is_ok());
  CHECK(c.nodes[f]->epoch() >= higher);
}

TEST_CASE("a master whose new member compacted past the slots it fixed steps down and catches up", "[paxos][members]") {
  Cluster c(5, false, 3);
  const NodeId m = c.elect();
  REQUIRE(c.propose("a"));
  c.cut = {4, 5};
  // Staged: of {m, 4, 5} a majority must promise, so it asks nodes 4 and 5.
  REQUIRE(c.propose("members:" + std::to_string(m) + ",4,5"));
  REQUIRE_FALSE(c.nodes[m]->members_settled());
  c.wire.clear();
  // Node 4's promise says it holds a snapshot past every slot this master
  // fixed: the values there were chosen without it, so it cannot lead them.
  const Ballot b = c.nodes[m]->epoch();
  const Slot ahead = c.nodes[m]->applied_through() + 50;
  PeerMessage promise{.from = 4,
                      .to = m,
                      .group = 7,
                      .incarnation = 99,
                      .serial = 1,
                      .body = Promise{.ballot = b, .ok = true, .promised = b, .seq = 1, .snapshot_slot = ahead}};
  REQUIRE(c.nodes[m]->receive(promise, c.now).is_ok());
  c.settle(m);
  CHECK(c.nodes[m]->role() == PaxosNode::Role::kFollower);
  bool asked = false;
  for (const PeerMessage& out : c.wire) {
    if (const auto* r = std::get_if<CatchUpRequest>(&out.body); r != nullptr && out.from == m && out.to == 4) {
      asked = true;
    }
  }
  CHECK(asked);
}

namespace {

// Four nodes shrink to their master alone, and the others learn that they
// left: each knows a membership without itself. Returns the master.
NodeId shrink_to_master(Cluster& c) {
  const NodeId m = c.elect();
  REQUIRE(c.propose("members:" + std::to_string(m)));
  c.run(4 * kLease);
  for (NodeId id : c.all) REQUIRE(c.nodes[id]->members() == Members{m});
  // They campaigned to learn it: a new ballot of the master's outdoes theirs.
  REQUIRE(c.nodes[m]->hand_over(c.now));
  c.settle(m);
  REQUIRE(c.elect() == m);
  return m;
}

Members all_but(const Cluster& c, NodeId m) {
  Members others;
  for (NodeId id : c.all) {
    if (id != m) others.push_back(id);
  }
  return others;
}

std::string change_to(const Members& members) {
  std::string change = "members:";
  for (NodeId id : members) change += std::to_string(id) + ",";
  return change;
}

}  // namespace

TEST_CASE("members that missed the change that made them members learn it from a former member", "[paxos][members]") {
  Cluster c(4);
  const NodeId m = shrink_to_master(c);
  // It hands the group to the other three, who promise its ballot but miss
  // its accepts and its step-down: none of them learns that the change was
  // chosen, and the only node that knows is no member any more.
  const Members others = all_but(c, m);
  c.drop = [m](const PeerMessage& out) { return out.to != m && !std::holds_alternative<Prepare>(out.body); };
  REQUIRE(c.propose(change_to(others)));
  c.run(2 * kLease);
  REQUIRE(c.nodes[m]->members() == others);
  REQUIRE_FALSE(c.master());
  for (NodeId id : others) REQUIRE(c.nodes[id]->members() == Members{m});
  // Healed: a node outside the members it knows asks them what was chosen,
  // finds itself a member and campaigns.
  c.drop = nullptr;
  c.run(3 * kLease);
  const auto next = c.master();
  REQUIRE(next);
  CHECK(*next != m);
  for (NodeId id : c.all) CHECK(c.nodes[id]->members() == others);
  CHECK(c.max_masters == 1);
}

}  // namespace palisade::lockgroup
