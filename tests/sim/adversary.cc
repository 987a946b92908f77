#include "tests/sim/adversary.h"

#include <algorithm>

#include "tests/support/sequencers.h"

namespace palisade::sim {
namespace {

constexpr size_t kKeptFrames = 48;  // captured frames kept of each kind
constexpr size_t kMaxPeerFrameBytes = size_t{64} << 20;

// A key of its own, from the world's RNG: never the cluster key.
ClusterKey own_key(World& world) { return ClusterKey::from_hex(world.rng().hex(32)).value(); }

}  // namespace

Adversary::Adversary(World& world, Setup setup, History& history, AdversaryCounters& counters)
    : world_(world),
      s_(std::move(setup)),
      history_(history),
      counters_(counters),
      wall_(world, 0),
      hlc_(wall_),
      own_key_(own_key(world)),
      own_auth_(own_key_, s_.group) {
  world_.attach(s_.node, [this](int from, const std::string& bytes) { receive(from, bytes); });
}

void Adversary::observe(int from, int to, const std::string& bytes) {
  if (from == s_.node || stopped_) return;
  const bool from_lockd = from > s_.lockd_base && from <= s_.lockd_base + s_.lockd;
  const bool to_lockd = to > s_.lockd_base && to <= s_.lockd_base + s_.lockd;
  if (from_lockd && to_lockd) {
    // One frame in three: the capture costs copies, and a few suffice.
    if (seen_peer_++ % 3 != 0) return;
    peer_frames_.push_back({to - s_.lockd_base, bytes});
    if (peer_frames_.size() > kKeptFrames) peer_frames_.pop_front();
    return;
  }
  if (to < 0 || to >= s_.replicas || from < s_.lockd_base) return;  // only clients' requests to replicas
  auto request = wire::decode_request(bytes, wire::Limits{});
  if (!request.is_ok()) return;
  config_ = std::max(config_, request.value().config);
  const std::string* sequencer = nullptr;
  if (auto* f = std::get_if<wire::FenceRequest>(&request.value().body)) sequencer = &f->sequencer;
  if (auto* w = std::get_if<wire::WriteRequest>(&request.value().body)) sequencer = &w->sequencer;
  if (sequencer != nullptr && !sequencer->empty()) {
    if (auto parsed = parse_sequencer(*sequencer); parsed.is_ok()) {
      sequencers_[parsed.value().lock].emplace(parsed.value().token, *sequencer);
    }
  }
  if (seen_replica_++ % 2 != 0) return;
  replica_frames_.push_back({to, bytes});
  if (replica_frames_.size() > kKeptFrames) replica_frames_.pop_front();
}

void Adversary::receive(int from, const std::string& bytes) {
  if (from < 0 || from >= s_.replicas) return;
  auto reply = wire::decode_reply(bytes, wire::Limits{});
  if (!reply.is_ok()) return;
  const wire::ReplicaReply& r = reply.value();
  (void)hlc_.observe(r.clock);
  auto it = in_flight_.find(r.id);
  if (it == in_flight_.end()) return;  // a reply to a replayed request, or a duplicate
  const Sent sent = it->second;
  in_flight_.erase(it);
  const Code code = r.status.code();
  if (sent == Sent::kWrite) {
    auto value = written_.find(r.id);
    if (value != written_.end()) {
      wire::Certificate& mine = receipts_[value->second];
      for (const wire::Receipt& receipt : r.receipts) {
        if (std::find(mine.begin(), mine.end(), receipt) == mine.end()) mine.push_back(receipt);
      }
      written_.erase(value);
    }
    if (code == Code::kOk) ++counters_.stored;
    if (code == Code::kFenced || code == Code::kStale || code == Code::kBadSequencer) ++counters_.refused;
    if (code == Code::kBadSequencer) ++counters_.bad_sequencer;
  } else if (r.status.is_ok() && r.applied) {
    ++counters_.commits_applied;
  }
}

void Adversary::start() { schedule(); }

void Adversary::schedule() {
  world_.at(world_.uniform(200, 2500), "adversary " + std::to_string(s_.index) + " acts", [this] {
    if (stopped_) return;
    act();
    schedule();
  });
}

void Adversary::act() {
  const uint64_t r = world_.uniform(0, 99);
  if (r < 15) return forge_peer();
  if (r < 30) return replay_peer();
  if (r < 40) return wrong_sequencer();
  if (r < 60) return superseded();
  if (r < 80) return one_replica();
  return replay_replica();
}

const std::string& Adversary::pick_lock() {
  return s_.locks[world_.index(s_.locks.size())];
}

// ---- lockd peers ----

void Adversary::forge_peer() {
  const int to = random_lockd();
  std::string frame;
  std::string what;
  const uint64_t variant = world_.uniform(0, 3);
  if ((variant == 0 || variant == 3) && !peer_frames_.empty()) {
    const PeerFrame& captured = peer_frames_[world_.index(peer_frames_.size())];
    frame = captured.bytes;
    if (variant == 0) {
      // Any byte flipped, in the map or in the MAC.
      frame[world_.index(frame.size())] ^= static_cast<char>(world_.uniform(1, 255));
      what = "flipped";
    } else {
      // A field changed under the genuine MAC.
      const size_t body_bytes = frame.size() - lockgroup::PeerAuth::kMacBytes;
      auto m = lockgroup::decode_peer(std::string_view(frame).substr(0, body_bytes), kMaxPeerFrameBytes);
      if (!m.is_ok()) return;
      lockgroup::PeerMessage changed = m.value();
      changed.to = static_cast<lockgroup::NodeId>(to);
      changed.serial += world_.uniform(1, 1'000'000);
      if (auto* a = std::get_if<lockgroup::Accept>(&changed.body)) a->chosen_through += world_.uniform(1, 50);
      if (auto* p = std::get_if<lockgroup::Prepare>(&changed.body)) p->ballot += 256 * world_.uniform(1, 1000);
      frame = lockgroup::encode_peer(changed) + frame.substr(body_bytes);
      what = "altered";
    }
  } else {
    // New, with made-up fields: a higher ballot than anyone's, entries of garbage.
    lockgroup::PeerMessage m;
    m.from = static_cast<lockgroup::NodeId>(random_lockd());
    m.to = static_cast<lockgroup::NodeId>(to);
    m.group = s_.group_hash;
    m.incarnation = world_.rng().next();
    m.serial = world_.rng().next();
    const lockgroup::Ballot ballot = lockgroup::make_ballot(world_.uniform(1, lockgroup::kMaxRound), m.from);
    switch (world_.uniform(0, 3)) {
      case 0:
        m.body = lockgroup::Prepare{.ballot = ballot, .from_slot = 1, .seq = world_.rng().next()};
        break;
      case 1: {
        lockgroup::Accept a{.ballot = ballot, .seq = world_.rng().next(), .chosen_through = world_.uniform(0, 100)};
        for (uint64_t k = 0, n = world_.uniform(1, 3); k < n; ++k) {
          a.entries.push_back({.slot = world_.uniform(1, 100), .ballot = ballot, .value = "forged"});
        }
        m.body = std::move(a);
        break;
      }
      case 2:
        m.body = lockgroup::CatchUpRequest{.from_slot = 1};
        break;
      default:
        m.body = lockgroup::Promise{.ballot = ballot, .ok = true, .seq = world_.rng().next()};
        break;
    }
    const bool sealed = world_.chance(0.5);
    frame = sealed ? own_auth_.seal(m) : lockgroup::encode_peer(m);
    what = sealed ? "sealed under its own key" : "unsealed";
  }
  ++counters_.peer_forged;
  world_.record("adversary " + std::to_string(s_.index) + " forges a peer frame (" + what + ") to lockd " +
                std::to_string(to));
  world_.send(s_.node, lockd_node(to), std::move(frame));
}

void Adversary::replay_peer() {
  if (peer_frames_.empty()) return;
  const PeerFrame& captured = peer_frames_[world_.index(peer_frames_.size())];
  const int to = world_.chance(0.75) ? captured.to : random_lockd();
  ++counters_.peer_replayed;
  world_.record("adversary " + std::to_string(s_.index) + " replays a peer frame for lockd " +
                std::to_string(captured.to) + " to lockd " + std::to_string(to));
  world_.send(s_.node, lockd_node(to), captured.bytes);
}

// ---- replicas ----

wire::WriteRequest Adversary::new_write(const std::string& lock, uint64_t token, std::string sequencer,
                                        bool committed, std::string why) {
  wire::WriteRequest w;
  w.key = s_.key_of(lock);
  w.value = new_value();
  w.ts = FencedTimestamp{token, hlc_.now()};
  w.lock = lock;
  w.committed = committed;
  w.sequencer = std::move(sequencer);
  history_.adversary.push_back({w.key, w.value, lock, token, world_.now_ms(), std::move(why)});
  ++counters_.values;
  world_.record("adversary " + std::to_string(s_.index) + " writes " + w.key + " '" + w.value + "' " +
                w.ts.to_string() + (committed ? " committed" : "") + " (" + history_.adversary.back().why + ")");
  return w;
}

void Adversary::send_write(int replica, const wire::WriteRequest& w) {
  const uint64_t id = next_id_++;
  in_flight_[id] = Sent::kWrite;
  written_[id] = w.value;
  ++counters_.writes;
  wire::WriteRequest sent = w;
  if (sent.committed) sent.certificate = receipts_[w.value];
  world_.send(s_.node, replica, wire::encode_request({id, sent, "", config_}));
}

void Adversary::send_commit(int replica, const wire::WriteRequest& w) {
  const wire::Version v{w.ts, w.lock, wire::VersionState::kPending, w.tombstone, w.value, w.sequencer};
  const uint64_t id = next_id_++;
  in_flight_[id] = Sent::kCommit;
  ++counters_.commits;
  world_.send(s_.node, replica,
              wire::encode_request(
                  {id, wire::CommitRequest{w.key, w.ts, wire::content_hash(v), receipts_[w.value]}, "", config_}));
}

// Commits `w` on `replicas` a while later, as if it had been acknowledged.
void Adversary::commit_later(std::vector<int> replicas, const wire::WriteRequest& w) {
  world_.at(world_.uniform(5, 20000), "adversary " + std::to_string(s_.index) + " commits",
            [this, replicas = std::move(replicas), w] {
              if (stopped_) return;
              for (int r : replicas) send_commit(r, w);
            });
}

void Adversary::wrong_sequencer() {
  const std::string& lock = pick_lock();
  auto own = sequencers_.find(lock);
  if (own == sequencers_.end() || own->second.empty()) return;
  auto grant = own->second.begin();
  std::advance(grant, static_cast<long>(world_.uniform(0, own->second.size() - 1)));
  const uint64_t token = grant->first;
  std::string sequencer;
  uint64_t claimed = token;
  std::string why;
  switch (world_.uniform(0, 3)) {
    case 0: {  // another lock's, claiming its token (a grant of one lock used for another)
      std::vector<std::pair<std::string, uint64_t>> others;
      for (const auto& [l, grants] : sequencers_) {
        if (l == lock) continue;
        for (const auto& [t, text] : grants) others.emplace_back(l, t);
      }
      if (others.empty()) return;
      const auto& [l, t] = others[world_.index(others.size())];
      sequencer = sequencers_[l][t];
      claimed = t;
      why = "wrong sequencer: " + l + "'s token " + std::to_string(t);
      break;
    }
    case 1:  // another token's: its own grant's, claiming a larger token
      sequencer = grant->second;
      claimed = token + world_.uniform(1, 1000);
      why = "wrong sequencer: token " + std::to_string(token) + "'s";
      break;
    case 2:  // made up: a huge token, signed under its own key
      claimed = token + world_.uniform(1000, uint64_t{1} << 40);
      sequencer = sign_sequencer({s_.group, lock, LockMode::kExclusive, claimed}, own_key_);
      why = "wrong sequencer: signed under a key of its own";
      break;
    default:  // genuine, a byte flipped
      // In the first characters of its payload ("ps2." and base64): the last
      // character of a base64 text may carry bits that decoding ignores, and
      // then the flip would leave the sequencer genuine.
      sequencer = grant->second;
      sequencer[static_cast<size_t>(world_.uniform(4, 9))] ^= 0x01;
      why = "wrong sequencer: a genuine one with a byte flipped";
      break;
  }
  const wire::WriteRequest w = new_write(lock, claimed, std::move(sequencer), s_.commits && world_.chance(0.5), why);
  for (int r = 0; r < s_.replicas; ++r) send_write(r, w);
  if (s_.commits && !w.committed) {
    std::vector<int> all;
    for (int r = 0; r < s_.replicas; ++r) all.push_back(r);
    commit_later(std::move(all), w);
  }
}

void Adversary::superseded() {
  // The newest grant seen of a lock that a fence of a newer grant superseded.
  std::vector<std::pair<std::string, uint64_t>> candidates;  // lock, token
  for (const std::string& lock : s_.locks) {
    auto grants = sequencers_.find(lock);
    if (grants == sequencers_.end()) continue;
    const uint64_t fenced = s_.fenced_token(lock);
    auto below = grants->second.lower_bound(fenced);  // the first token >= fenced
    if (below == grants->second.begin()) continue;
    --below;
    // Mostly the newest superseded grant (its writes lose to the fewest
    // versions), sometimes an older one.
    if (world_.chance(0.3)) {
      auto first = grants->second.begin();
      below = std::next(first, static_cast<long>(world_.uniform(
                                   0, static_cast<uint64_t>(std::distance(first, below)))));
    }
    candidates.emplace_back(lock, below->first);
  }
  if (candidates.empty()) return replay_replica();
  const auto& [lock, token] = candidates[world_.index(candidates.size())];
  const uint64_t fenced = s_.fenced_token(lock);
  const bool committed = s_.commits && world_.chance(0.6);
  const wire::WriteRequest w = new_write(lock, token, sequencers_[lock][token], committed,
                                         "superseded: token " + std::to_string(fenced) + " fenced before");
  std::vector<int> to;
  for (int r = 0; r < s_.replicas; ++r) {
    if (world_.chance(0.8)) to.push_back(r);
  }
  for (int r : to) send_write(r, w);
  if (s_.commits && !committed) commit_later(std::move(to), w);
}

void Adversary::one_replica() {
  if (s_.write_quorum < 2) return replay_replica();  // one copy would be W copies
  const std::string& lock = pick_lock();
  auto grants = sequencers_.find(lock);
  if (grants == sequencers_.end() || grants->second.empty()) return replay_replica();
  // The newest grant seen: often still held, so that the replica stores it;
  // with a repairer, the newest superseded one.
  auto grant = std::prev(grants->second.end());
  if (s_.repairer_runs) {
    grant = grants->second.lower_bound(s_.fenced_token(lock));
    if (grant == grants->second.begin()) return replay_replica();
    --grant;
  }
  const auto& [token, sequencer] = *grant;
  const int replica = static_cast<int>(world_.uniform(0, static_cast<uint64_t>(s_.replicas - 1)));
  const bool committed = s_.commits && world_.chance(0.3);
  const wire::WriteRequest w =
      new_write(lock, token, sequencer, committed,
                "one replica: sent to replica " + std::to_string(replica) + " only" +
                    (s_.repairer_runs ? ", token " + std::to_string(s_.fenced_token(lock)) + " fenced before" : ""));
  send_write(replica, w);
  if (s_.commits && !committed) {
    commit_later({replica}, w);
    if (world_.chance(0.3)) commit_later({replica}, w);  // and once more, later
  }
}

void Adversary::replay_replica() {
  if (replica_frames_.empty()) return;
  const Captured& captured = replica_frames_[world_.index(replica_frames_.size())];
  const int to = world_.chance(0.6) ? captured.to
                                    : static_cast<int>(world_.uniform(0, static_cast<uint64_t>(s_.replicas - 1)));
  ++counters_.replica_replays;
  world_.record("adversary " + std::to_string(s_.index) + " replays a request for replica " +
                std::to_string(captured.to) + " to replica " + std::to_string(to));
  world_.send(s_.node, to, captured.bytes);
}

}  // namespace palisade::sim
