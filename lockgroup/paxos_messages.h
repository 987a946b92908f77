// Messages between palisade-lockd nodes (docs/protocol.md, "Lock group peers"):
// multi-Paxos phase 1 (prepare/promise), phase 2 (accept/accepted, which also
// carry the master lease and the chosen prefix), catch-up, and a stopping
// master's step-down.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "palisade/status.h"

namespace palisade::lockgroup {

using NodeId = uint32_t;  // 1..255, from the cluster file
using Slot = uint64_t;    // log position, from 1
// A ballot is the epoch: (round << 8) | proposer id. Unique per proposer and
// totally ordered; 0 means none.
using Ballot = uint64_t;
// The nodes of one membership, sorted.
using Members = std::vector<NodeId>;

constexpr Ballot make_ballot(uint64_t round, NodeId node) { return (round << 8) | node; }
constexpr uint64_t ballot_round(Ballot b) { return b >> 8; }
constexpr NodeId ballot_node(Ballot b) { return static_cast<NodeId>(b & 0xff); }
// The highest round a node accepts from a peer. Far below the 56-bit top, so
// that a node that saw the highest ballot allowed can always campaign above it.
constexpr uint64_t kMaxRound = (uint64_t{1} << 48) - 1;
constexpr bool ballot_in_range(Ballot b) { return ballot_round(b) <= kMaxRound; }

// A value an acceptor accepted (or, in catch-up, a chosen value) for one slot.
// An empty value is a no-op (a gap filled by a new master).
struct Entry {
  Slot slot = 0;
  Ballot ballot = 0;
  std::string value;
  friend bool operator==(const Entry&, const Entry&) = default;
};

// Phase 1a: "promise me `ballot`, and tell me what you accepted from `from_slot` on."
struct Prepare {
  Ballot ballot = 0;
  Slot from_slot = 0;
  uint64_t seq = 0;  // the sender's message number, echoed in the reply (lease timing)
  friend bool operator==(const Prepare&, const Prepare&) = default;
};

// Phase 1b. ok=false: `promised` is the higher ballot (or the live lease holder's)
// that stops this acceptor from promising.
struct Promise {
  Ballot ballot = 0;  // the prepare's ballot
  bool ok = false;
  Ballot promised = 0;
  uint64_t seq = 0;
  Slot snapshot_slot = 0;        // the acceptor has compacted the log through this slot
  std::vector<Entry> accepted{};  // accepted entries with slot >= the prepare's from_slot
  friend bool operator==(const Promise&, const Promise&) = default;
};

// Phase 2a, sent by the master. Also its heartbeat (no entries): it renews the
// master lease and tells followers that every slot through `chosen_through` is chosen.
struct Accept {
  Ballot ballot = 0;
  uint64_t seq = 0;
  Slot chosen_through = 0;
  std::vector<Entry> entries{};  // each with ballot == this ballot
  friend bool operator==(const Accept&, const Accept&) = default;
};

// Phase 2b, sent only once the accepted entries are durable.
struct Accepted {
  Ballot ballot = 0;  // the accept's ballot
  bool ok = false;
  Ballot promised = 0;       // ok=false: the higher ballot this acceptor promised
  uint64_t seq = 0;
  std::vector<Slot> slots{};  // the slots accepted
  friend bool operator==(const Accepted&, const Accepted&) = default;
};

// "Send me the chosen values from `from_slot` on."
struct CatchUpRequest {
  Slot from_slot = 0;
  friend bool operator==(const CatchUpRequest&, const CatchUpRequest&) = default;
};

// Chosen values. When the sender has compacted past the asked slot it sends its
// snapshot (the state machine through `snapshot_slot`) first.
struct CatchUp {
  Slot snapshot_slot = 0;  // 0: no snapshot in this message
  std::string snapshot{};
  std::vector<Entry> chosen{};  // contiguous, from snapshot_slot + 1 or the asked slot
  friend bool operator==(const CatchUp&, const CatchUp&) = default;
};

// A master that stops (a planned restart) gave up `ballot` before sending
// this: "I no longer lead in `ballot`; release the lease you promised me for
// it. `successor`, campaign now." Only the acceptor whose promise is still
// `ballot` releases anything (PaxosNode::hand_over, docs/design-changes.md 19).
struct StepDown {
  Ballot ballot = 0;
  NodeId successor = 0;
  friend bool operator==(const StepDown&, const StepDown&) = default;
};

using PeerBody = std::variant<Prepare, Promise, Accept, Accepted, CatchUpRequest, CatchUp, StepDown>;

struct PeerMessage {
  NodeId from = 0;
  NodeId to = 0;
  uint64_t group = 0;  // hash of the group id: a node refuses messages of another cluster
  // Set by the sending node as it hands the message out (PaxosNode): which
  // start of that node sent it, and its number among the messages sent since.
  // (incarnation, serial) grows with every message a node sends, so a receiver
  // can tell a replayed or stale message from a new one.
  uint64_t incarnation = 0;
  uint64_t serial = 0;
  PeerBody body;
  friend bool operator==(const PeerMessage&, const PeerMessage&) = default;
};

// The wire name of the body's type ("prepare", "catch_up", ...).
std::string_view peer_type_name(const PeerBody& body);

std::string encode_peer(const PeerMessage& message);
// Whether `bytes` is a map whose type names a peer message (whatever its other
// fields): for telling a forged or unsigned peer message from a client's bad request.
bool names_peer_type(std::string_view bytes, size_t max_bytes);
// Malformed, BadRequest (missing/mistyped/unknown field), TooLarge past `max_bytes`.
Result<PeerMessage> decode_peer(std::string_view bytes, size_t max_bytes);

}  // namespace palisade::lockgroup
