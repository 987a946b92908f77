#include "tests/sim/replacer.h"

#include <algorithm>

#include "auth/cluster_key.h"
#include "auth/config_certificate.h"
#include "tests/sim/sim_links.h"

namespace palisade::sim {
namespace {

// The simulated lock group's key: fixed, so a seed signs the same bytes.
ClusterKey group_key() { return ClusterKey::from_hex(std::string(64, '5')).value(); }

// The version `certificate` records; 0 when it holds none.
uint64_t version_of(const std::string& certificate) {
  if (certificate.empty()) return 0;
  auto set = read_config_certificate(std::nullopt, certificate);
  return set.is_ok() ? set.value().version : 0;
}

}  // namespace

Replacer::Replacer(World& world, ReplicaSet& replicas, Options options)
    : world_(world), replicas_(replicas), o_(options), signer_(group_key(), "sim") {
  for (int i = 0; i < o_.members; ++i) {
    members_.push_back({.id = static_cast<uint32_t>(i + 1), .address = sim_endpoint(i)});
    involved_.insert(i);
  }
  quorums_ = {static_cast<uint32_t>(o_.write_quorum), static_cast<uint32_t>(o_.read_quorum)};
  next_spare_ = o_.members;
  world_.attach(o_.node, [this](int from, const std::string& bytes) { receive(from, bytes); });
}

wire::ReplicaSet Replacer::set_of(const std::vector<wire::ReplicaInfo>& members, uint64_t version,
                                  wire::ReplicaPhase phase, Quorums quorums) const {
  return {.version = version,
          .phase = phase,
          .replicas = members,
          .write_quorum = quorums.write,
          .read_quorum = quorums.read};
}

std::vector<ReplicaChangeKind> Replacer::possible() const {
  std::vector<ReplicaChangeKind> out;
  const bool spare = next_spare_ < o_.members + o_.spares;
  if (spare) out.push_back(ReplicaChangeKind::kReplace);
  if (!o_.adds_and_removes) return out;
  const wire::ReplicaSet now = set_of(members_, version_, wire::ReplicaPhase::kServing, quorums_);
  if (spare && static_cast<int>(members_.size()) < o_.max_members &&
      quorums_after(ReplicaChangeKind::kAdd, now, {}).is_ok()) {
    out.push_back(ReplicaChangeKind::kAdd);
  }
  if (members_.size() > 2 && quorums_after(ReplicaChangeKind::kRemove, now, {}).is_ok()) {
    out.push_back(ReplicaChangeKind::kRemove);
  }
  return out;
}

std::string Replacer::sign(const wire::ReplicaSet& set) const { return sign_config_certificate(signer_, set); }

void Replacer::say(const std::string& line) const { world_.record("replacer: " + line); }

void Replacer::change_later(uint64_t delay_ms) {
  if (busy_ || stopped_ || possible().empty()) return;
  busy_ = true;
  world_.at(delay_ms, "replacer begins", [this] { begin(); });
}

void Replacer::begin() {
  const std::vector<ReplicaChangeKind> kinds = possible();
  kind_ = kinds[world_.index(kinds.size())];
  next_quorums_ = quorums_after(kind_, set_of(members_, version_, wire::ReplicaPhase::kServing, quorums_), {}).value();
  compared_.clear();
  for (const wire::ReplicaInfo& m : members_) compared_.push_back(sim_replica_node(m.address));
  leaving_ = kind_ == ReplicaChangeKind::kAdd ? -1 : compared_[world_.index(compared_.size())];
  // The spare is given no certificate before the commit: its requests name version 0.
  spare_ = kind_ == ReplicaChangeKind::kRemove ? -1 : next_spare_++;
  say(std::string(change_name(kind_)) + ": replica " + std::to_string(leaving_) + " out, " + std::to_string(spare_) +
      " in, W " + std::to_string(next_quorums_.write) + " R " + std::to_string(next_quorums_.read) + ", from version " +
      std::to_string(version_));
  // A removal has no replica to fill while the set serves: it pauses at once.
  if (spare_ < 0 && !o_.broken_skip_pause) return pause();
  fill(false, version_, certificate_, 1, [this](const Result<AntiEntropyReport>& r) {
    if (std::string why = fill_failure(r, false); !why.empty()) return commit(false, "the fill failed: " + why);
    if (o_.broken_skip_pause) {
      // Negative control: a second fill while the set serves, then the new set.
      return fill(false, version_, certificate_, 1, [this](const Result<AntiEntropyReport>& again) {
        const std::string why2 = fill_failure(again, false);
        commit(why2.empty(), why2);
      });
    }
    pause();
  });
}

void Replacer::fill(bool paused, uint64_t version, const std::string& certificate, int tries, RunDone done) {
  std::vector<std::string> endpoints;
  for (int r : compared_) endpoints.push_back(sim_endpoint(r));
  if (spare_ >= 0) endpoints.push_back(sim_endpoint(spare_));
  client::AntiEntropyConfig config{.replicas = static_cast<int>(compared_.size()),
                                   .targets = spare_ >= 0 ? 1 : 0,
                                   .cluster_size = static_cast<int>(compared_.size()),
                                   .write_quorum = static_cast<int>(quorums_.write),
                                   .config = version,
                                   .target_config = 0,
                                   .paused = paused,
                                   .broken_targets_skip_floors = o_.broken_targets_skip_floors};
  run_ = std::make_unique<client::AntiEntropyRun>(client::AntiEntropyRunSetup{.core = config,
                                                                              .endpoints = endpoints,
                                                                              .timeout_ms = o_.timeout_ms,
                                                                              .config_certificate = certificate});
  ++run_generation_;
  // A replica that had not kept the run's set is given it, and the run goes
  // again (as the command does, three times at most).
  run_done_ = [this, paused, version, certificate, tries, done](const Result<AntiEntropyReport>& r) {
    if (!r.is_ok() && r.code() == Code::kUnknownConfig && tries < 3) {
      for (const client::AntiEntropySend& install : last_installs_) {
        world_.send(o_.node, replica_of(install.replica), wire::encode_request(install.request));
      }
      const uint64_t generation = run_generation_;
      world_.at(o_.timeout_ms, "replacer fills again", [this, paused, version, certificate, tries, done, generation] {
        if (generation == run_generation_) fill(paused, version, certificate, tries + 1, done);
      });
      return;
    }
    done(r);
  };
  pump_run();
}

int Replacer::replica_of(int index) const {
  return index < static_cast<int>(compared_.size()) ? compared_[static_cast<size_t>(index)] : spare_;
}

void Replacer::pump_run() {
  if (!run_) return;
  for (const client::AntiEntropySend& send : run_->take_sends()) {
    std::string bytes = wire::encode_request(send.request);
    run_->sent(send, bytes.size(), world_.now_ms());
    world_.send(o_.node, replica_of(send.replica), std::move(bytes));
  }
  if (run_->done()) {
    const std::unique_ptr<client::AntiEntropyRun> finished = std::move(run_);
    Result<AntiEntropyReport> result = finished->finish();
    last_installs_ = finished->installs();
    RunDone done = std::move(run_done_);
    ++run_generation_;  // its expiry timers go idle
    done(result);
    return;
  }
  if (auto due = run_->next_deadline_ms()) {
    const uint64_t generation = run_generation_;
    world_.at(*due - std::min(*due, world_.now_ms()), "replacer run expires",
              [this, generation] { expire_run(generation); });
  }
}

void Replacer::expire_run(uint64_t generation) {
  if (!run_ || generation != run_generation_) return;
  for (const client::AntiEntropySend& send : run_->expire(world_.now_ms())) {
    std::string bytes = wire::encode_request(send.request);
    run_->resent(bytes.size());
    world_.send(o_.node, replica_of(send.replica), std::move(bytes));
  }
  pump_run();
}

std::string Replacer::fill_failure(const Result<AntiEntropyReport>& r, bool paused) const {
  std::vector<std::string> staying;
  for (int c : compared_) {
    if (c != leaving_) staying.push_back(sim_endpoint(c));
  }
  return fill_shortfall(kind_, r, paused, spare_ >= 0 ? sim_endpoint(spare_) : "", staying);
}

void Replacer::pause() {
  const wire::ReplicaSet paused = set_of(members_, version_ + 1, wire::ReplicaPhase::kPaused, quorums_);
  version_ = paused.version;
  certificate_ = sign(paused);
  paused_ = true;
  say("pauses: version " + std::to_string(version_));
  pause_installs_.clear();
  pause_kept_.clear();
  for (int r : compared_) {
    pause_installs_.insert(next_install_id_);
    send_install(r, certificate_, next_install_id_++);
  }
  const uint64_t generation = ++run_generation_;
  world_.at(o_.timeout_ms, "replacer counts the pause", [this, generation] {
    if (generation == run_generation_) paused_kept();
  });
  refresh();
}

void Replacer::paused_kept() {
  ++run_generation_;
  pause_installs_.clear();
  const size_t needed = std::max(quorums_.read, quorums_.write);
  say("the pause is kept by " + std::to_string(pause_kept_.size()) + " replicas");
  if (pause_kept_.size() < needed) return commit(false, "too few replicas took the pause");
  if (o_.broken_skip_paused_fill) return commit(true, "");
  fill(true, version_, certificate_, 1, [this](const Result<AntiEntropyReport>& r) {
    const std::string why = fill_failure(r, true);
    commit(why.empty(), why);
  });
}

void Replacer::commit(bool done, const std::string& why) {
  run_.reset();
  ++run_generation_;
  busy_ = false;
  if (!done && !paused_) {  // the set never changed: nothing to undo
    ++abandoned_;
    say("gives up (" + why + ") before the pause");
    if (ended) ended();
    return;
  }
  paused_ = false;
  std::vector<wire::ReplicaInfo> next;
  for (const wire::ReplicaInfo& m : members_) {
    if (!done || leaving_ < 0 || m.address != sim_endpoint(leaving_)) next.push_back(m);
  }
  if (done && spare_ >= 0) {
    next.push_back({.id = members_.back().id + 1, .address = sim_endpoint(spare_)});
    involved_.insert(spare_);
  }
  members_ = next;
  if (done) quorums_ = next_quorums_;
  version_ = version_ + 1;
  certificate_ = sign(set_of(members_, version_, wire::ReplicaPhase::kServing, quorums_));
  if (done) {
    ++changed_;
    added_ += kind_ == ReplicaChangeKind::kAdd ? 1 : 0;
    removed_ += kind_ == ReplicaChangeKind::kRemove ? 1 : 0;
    say("commits version " + std::to_string(version_) + ": the " + std::string(change_name(kind_)) + " of " +
        std::to_string(members_.size()) + " replicas, W " + std::to_string(quorums_.write) + " R " +
        std::to_string(quorums_.read));
  } else {
    ++abandoned_;
    say("gives up (" + why + "): version " + std::to_string(version_) + " is the old set");
  }
  refresh();
  if (ended) ended();
}

void Replacer::refresh() {
  bool behind = false;
  for (int r : involved_) {
    if (kept_[r] >= version_) continue;
    behind = true;
    send_install(r, certificate_, next_install_id_++);
  }
  if (!behind || refreshing_) return;
  refreshing_ = true;
  world_.at(1000, "replacer refresh", [this] {
    refreshing_ = false;
    refresh();
  });
}

void Replacer::send_install(int replica, const std::string& certificate, uint64_t id) {
  world_.send(o_.node, replica, wire::encode_request({id, wire::InstallConfigRequest{certificate}, "", 0}));
}

void Replacer::receive(int from, const std::string& bytes) {
  auto reply = wire::decode_reply(bytes, wire::Limits{});
  if (reply.is_ok() && reply.value().id >= (uint64_t{1} << 61) && reply.value().id < (uint64_t{1} << 62)) {
    const uint64_t kept = version_of(reply.value().config);
    kept_[from] = std::max(kept_[from], kept);
    if (pause_installs_.erase(reply.value().id) == 0) return;
    if (kept >= version_ && reply.value().status.is_ok()) pause_kept_.insert(from);
    if (pause_installs_.empty()) paused_kept();  // every member answered: no need to wait
    return;
  }
  if (run_ == nullptr) return;
  int index = -1;
  for (size_t i = 0; i < compared_.size(); ++i) {
    if (compared_[i] == from) index = static_cast<int>(i);
  }
  if (spare_ >= 0 && from == spare_) index = static_cast<int>(compared_.size());
  if (index < 0) return;
  run_->on_frame(index, bytes);
  pump_run();
}

}  // namespace palisade::sim
