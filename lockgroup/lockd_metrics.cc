#include "lockgroup/lockd_metrics.h"

#include "metrics/checkpoint_seconds.h"

namespace palisade::lockgroup {

namespace {

metrics::Counter& single(metrics::Registry& r, const char* name, const char* help) {
  return r.counter(name, help).get();
}

metrics::Gauge& gauge(metrics::Registry& r, const char* name, const char* help) { return r.gauge(name, help).get(); }

}  // namespace

LockdMetrics::LockdMetrics()
    : requests_(registry_.counter("palisade_lockd_requests_total",
                                  "Client requests answered, by type and outcome (a status code: ok, busy, "
                                  "not_master, no_session, permission_denied, ...)",
                                  {"type", "outcome"})),
      latency_(registry_.histogram("palisade_lockd_request_seconds",
                                   "Time from a request's arrival to its reply (after the sync that makes it durable)",
                                   metrics::latency_buckets(), {"type"})),
      turn_frames_(registry_
                       .histogram("palisade_lockd_turn_messages", "Messages (requests and peer messages) per turn",
                                  metrics::power_of_two_buckets(4096))
                       .get()),
      sync_seconds_(registry_
                        .histogram("palisade_lockd_sync_seconds",
                                   "Time to commit a turn's acceptor state to disk and send its messages",
                                   metrics::latency_buckets())
                        .get()),
      checkpoint_seconds_(metrics::checkpoint_seconds(registry_)),
      refused_requests_(single(registry_, "palisade_lockd_refused_requests_total",
                               "Client requests refused before the service saw them: malformed, of another "
                               "cluster, or not permitted (also counted in palisade_lockd_requests_total)")),
      forged_peer_messages_(single(registry_, "palisade_lockd_forged_peer_messages_total",
                                   "Messages that claim to be a peer's without a MAC that verifies: dropped")),
      refused_peer_messages_(single(registry_, "palisade_lockd_refused_peer_messages_total",
                                    "Peer messages that verified but were refused")),
      peer_bytes_taken_(single(registry_, "palisade_lockd_peer_bytes_taken_total",
                               "Bytes of the peer messages this node took: the log, snapshots and heartbeats the "
                               "others sent (a node that joins counts its catch-up here)")),
      master_changes_(single(registry_, "palisade_lockd_master_changes_total",
                             "Times the master this node knows became another node (the first one found included)")),
      elections_(single(registry_, "palisade_lockd_elections_total", "Campaigns for master this node began")),
      is_master_(gauge(registry_, "palisade_lockd_is_master", "1 while this node is the master, with a valid lease")),
      epoch_(gauge(registry_, "palisade_lockd_epoch", "The epoch (ballot) this node knows")),
      sessions_(gauge(registry_, "palisade_lockd_sessions", "Open sessions in this node's lock table")),
      locks_held_(gauge(registry_, "palisade_lockd_locks_held", "Locks held now (sampled once a second)")),
      waiters_(gauge(registry_, "palisade_lockd_waiters", "Acquires waiting for a lock (sampled once a second)")),
      lock_delays_(gauge(registry_, "palisade_lockd_locks_in_lock_delay",
                         "Free locks that cannot be granted yet: in lock-delay after a holder's session "
                         "expired (sampled once a second)")),
      proposals_pending_(gauge(registry_, "palisade_lockd_proposals_pending",
                               "Lock-table commands this master proposed that the log has not chosen and applied "
                               "yet: the lock service's queue")),
      member_(gauge(registry_, "palisade_lockd_member",
                    "1 while this node is a member of the lock group as it applied it; 0 while it joins, "
                    "or once it was removed")),
      members_version_(gauge(registry_, "palisade_lockd_members_version",
                             "Membership changes this node applied (0: the cluster file's members)")),
      events_(registry_.counter("palisade_lockd_lock_events_total",
                                "What this node applied as master: granted, released, closed (sessions) and "
                                "expired (sessions, whose locks go into lock-delay)",
                                {"event"})) {
  const char* names[] = {"granted", "released", "closed", "expired"};
  for (size_t i = 0; i < by_event_.size(); ++i) by_event_[i] = &events_.with({names[i]});
}

LockdMetrics::Series& LockdMetrics::series(std::string_view type, Code code) {
  if (type.empty()) type = "undecoded";
  for (Series& s : series_) {
    if (s.code == code && s.type == type) return s;
  }
  const std::string name(type);
  return series_.emplace_back(Series{.type = name,
                                     .code = code,
                                     .requests = &requests_.with({name, std::string(code_name(code))}),
                                     .latency = &latency_.with({name})});
}

void LockdMetrics::answered(std::string_view type, const wire::LockReply& reply,
                            std::chrono::steady_clock::duration took) {
  Series& s = series(type, reply.status.code());
  s.requests->inc();
  s.latency->observe(std::chrono::duration<double>(took).count());
}

void LockdMetrics::refused(std::string_view type, Code code) { series(type, code).requests->inc(); }

void LockdMetrics::turn(size_t frames, std::chrono::steady_clock::duration sync) {
  if (frames > 0) turn_frames_.observe(static_cast<double>(frames));
  sync_seconds_.observe(std::chrono::duration<double>(sync).count());
}

void LockdMetrics::checkpointed(std::chrono::steady_clock::duration took) {
  checkpoint_seconds_.observe(std::chrono::duration<double>(took).count());
}

void LockdMetrics::observe(const LockdDriver& driver, const std::vector<LockEvent>& events, uint64_t now_ms) {
  refused_requests_.advance_to(driver.refused_requests());
  forged_peer_messages_.advance_to(driver.forged_peer_messages());
  refused_peer_messages_.advance_to(driver.refused_peer_messages());
  peer_bytes_taken_.advance_to(driver.peer_bytes_taken());
  for (const LockEvent& e : events) by_event_[static_cast<size_t>(e.kind)]->inc();

  const LockService& service = driver.service();
  const PaxosNode& node = service.node();
  if (node.role() == PaxosNode::Role::kCandidate && node.epoch() != last_campaign_) {
    last_campaign_ = node.epoch();
    elections_.inc();
  }
  const bool master = service.is_master(now_ms);
  const NodeId known = node.master_hint();
  if (known != 0 && known != last_master_) {
    last_master_ = known;
    master_changes_.inc();
  }
  is_master_.set(master ? 1 : 0);
  epoch_.set(static_cast<int64_t>(node.epoch()));
  sessions_.set(static_cast<int64_t>(service.table().sessions().size()));
  proposals_pending_.set(static_cast<int64_t>(service.pending_commands()));
  member_.set(node.is_member() ? 1 : 0);
  members_version_.set(static_cast<int64_t>(service.table().members_version()));
  if (now_ms >= next_sample_ms_) sample_table(service.table(), now_ms);

  health_.turned();
  if (known != 0) {
    health_.set_ready(true);
  } else {
    health_.set_ready(false, "no master known: an election is under way, or too few lock group nodes answer");
  }
}

void LockdMetrics::sample_table(const LockTable& table, uint64_t now_ms) {
  next_sample_ms_ = now_ms + 1000;
  int64_t held = 0, waiting = 0, delayed = 0;
  for (const auto& [name, lock] : table.locks()) {
    if (!lock.holders.empty()) ++held;
    if (lock.holders.empty() && lock.delay_ms > 0) ++delayed;
    waiting += static_cast<int64_t>(lock.waiters.size());
  }
  locks_held_.set(held);
  waiters_.set(waiting);
  lock_delays_.set(delayed);
}

}  // namespace palisade::lockgroup
