#include "tests/sim/replacer.h"

#include <algorithm>

#include "auth/config_certificate.h"
#include "tests/sim/sim_links.h"

namespace palisade::sim {

Replacer::Replacer(World& world, ReplicaSet& replicas, ReplicaRecord& record, Options options)
    : world_(world), replicas_(replicas), record_(record), o_(options) {
  for (int i = 0; i < o_.members; ++i) {
    members_.push_back(member(static_cast<uint32_t>(i + 1), i));
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

wire::ReplicaInfo Replacer::member(uint32_t id, int replica) const {
  return {.id = id,
          .address = sim_endpoint(replica),
          .receipt_id = o_.receipt_ids ? static_cast<uint64_t>(replica) + 1 : 0};
}

std::string Replacer::unsettled() const {
  if (busy_) return "a change is under way";
  if (watching_) return "the record is paused";
  for (int r : involved_) {
    auto kept = kept_.find(r);
    const uint64_t version = kept == kept_.end() ? 0 : kept->second;
    if (version < newest_version_) {
      return "replica " + std::to_string(r) + " keeps version " + std::to_string(version) + " of " +
             std::to_string(newest_version_);
    }
  }
  return "";
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

std::optional<wire::ReplicaSet> Replacer::learn(const std::string& certificate) {
  if (certificate.empty()) {  // none recorded yet: the first list serves
    if (newest_version_ == 0) watching_ = false;
    return std::nullopt;
  }
  auto set = read_config_certificate(std::nullopt, certificate);
  if (!set.is_ok()) return std::nullopt;
  if (set.value().version > newest_version_) {
    newest_version_ = set.value().version;
    newest_ = certificate;
  }
  if (record_.shared() && set.value().version == newest_version_) {
    watching_ = set.value().phase == wire::ReplicaPhase::kPaused;
  }
  return set.value();
}

std::string Replacer::frame_of(const wire::ReplicaRequest& request) const {
  std::string bytes = wire::encode_request(request);
  return o_.seal && client::changes_versions(request.body) ? o_.seal->seal(bytes, kEpochMs + world_.now_ms()) : bytes;
}

void Replacer::say(const std::string& line) const { world_.record("replacer: " + line); }

void Replacer::change_later(uint64_t delay_ms) {
  if (busy_ || stopped_ || possible().empty()) return;
  busy_ = true;
  world_.at(delay_ms, "replacer begins", [this] { begin(); });
}

void Replacer::begin() {
  // As the command does, from the record as it is now: a shared one may have
  // moved on without the replacer (a change whose end it did not hear of).
  record_.get([this](const Result<std::string>& r) {
    if (!r.is_ok()) {
      say("cannot read the record: " + r.status().to_string());
      return end();
    }
    std::optional<wire::ReplicaSet> set = learn(r.value());
    if (set && set->version > version_) {
      members_ = set->replicas;
      quorums_ = {set->write_quorum, set->read_quorum};
      version_ = set->version;
      version_paused_ = set->phase == wire::ReplicaPhase::kPaused;
      certificate_ = r.value();
      for (const wire::ReplicaInfo& m : members_) involved_.insert(sim_replica_node(m.address));
      refresh();  // a change whose end the replacer missed: its replicas may not know it either
    }
    // Paused as far as the newest record it knows says: a lagging lock
    // group node may answer with an older one.
    if (version_paused_) {
      say("version " + std::to_string(version_) + " is paused: a change is under way");
      refresh();
      return end();
    }
    start();
  });
}

void Replacer::end() {
  busy_ = false;
  if (watching_) refresh();  // the record may have changed: learn how it ends
  if (ended) ended();
}

void Replacer::start() {
  const std::vector<ReplicaChangeKind> kinds = possible();
  if (kinds.empty()) return end();
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
        world_.send(o_.node, replica_of(install.replica), frame_of(install.request));
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
    std::string bytes = frame_of(send.request);
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
    std::string bytes = frame_of(send.request);
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
  record_.set(version_, paused, [this](const Result<std::string>& r) {
    if (!r.is_ok()) {
      // It may have been recorded all the same (an answer lost): watch.
      watching_ = record_.shared();
      return commit(false, "the record did not take the pause: " + r.status().to_string());
    }
    ++version_;
    version_paused_ = true;
    certificate_ = r.value();
    learn(certificate_);
    paused_ = true;
    say("pauses: version " + std::to_string(version_));
    pause_installs_.clear();
    pause_kept_.clear();
    for (int member : compared_) {
      pause_installs_.insert(next_install_id_);
      send_install(member, certificate_, next_install_id_++);
    }
    const uint64_t generation = ++run_generation_;
    world_.at(o_.timeout_ms, "replacer counts the pause", [this, generation] {
      if (generation == run_generation_) paused_kept();
    });
    refresh();
  });
}

void Replacer::paused_kept() {
  ++run_generation_;
  pause_installs_.clear();
  const size_t needed = std::max(quorums_.read, quorums_.write);
  say("the pause is kept by " + std::to_string(pause_kept_.size()) + " replicas");
  if (pause_kept_.size() < needed) return commit(false, "too few replicas took the pause");
  if (o_.walk_away > 0 && world_.chance(o_.walk_away)) {
    say("walks away from the paused set: the lock group's master ends the pause");
    run_.reset();
    ++run_generation_;
    paused_ = false;
    ++abandoned_;
    ++walked_away_;
    return end();
  }
  if (o_.broken_skip_paused_fill) return commit(true, "");
  fill(true, version_, certificate_, 1, [this](const Result<AntiEntropyReport>& r) {
    const std::string why = fill_failure(r, true);
    commit(why.empty(), why);
  });
}

void Replacer::commit(bool done, const std::string& why) {
  run_.reset();
  ++run_generation_;
  if (!done && !paused_) {  // the set never changed: nothing to undo
    ++abandoned_;
    say("gives up (" + why + ") before the pause");
    return end();
  }
  std::vector<wire::ReplicaInfo> next;
  for (const wire::ReplicaInfo& m : members_) {
    if (!done || leaving_ < 0 || m.address != sim_endpoint(leaving_)) next.push_back(m);
  }
  if (done && spare_ >= 0) next.push_back(member(members_.back().id + 1, spare_));
  const Quorums quorums = done ? next_quorums_ : quorums_;
  const wire::ReplicaSet serving = set_of(next, version_ + 1, wire::ReplicaPhase::kServing, quorums);
  record_.set(version_, serving, [this, done, why, serving](const Result<std::string>& r) {
    paused_ = false;
    if (!r.is_ok()) {
      // The lock group's master ended the pause first, or the answer was lost.
      ++abandoned_;
      watching_ = record_.shared();
      say("the record did not take the end of the pause (" + r.status().to_string() + ")");
      refresh();
      return end();
    }
    members_ = serving.replicas;
    quorums_ = {serving.write_quorum, serving.read_quorum};
    version_ = serving.version;
    version_paused_ = false;
    certificate_ = r.value();
    learn(certificate_);
    if (done && spare_ >= 0) involved_.insert(spare_);
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
    end();
  });
}

void Replacer::refresh() {
  bool behind = false;
  for (int r : involved_) {
    if (kept_[r] >= newest_version_) continue;
    behind = true;
    send_install(r, newest_, next_install_id_++);
  }
  if ((!behind && !watching_) || refreshing_) return;
  refreshing_ = true;
  world_.at(1000, "replacer refresh", [this] {
    refreshing_ = false;
    if (!watching_) return refresh();
    // The paused replicas ask the lock group for its record: here the
    // replacer asks for them, and hands them what it gets.
    record_.get([this](const Result<std::string>& r) {
      if (r.is_ok()) learn(r.value());
      refresh();
    });
  });
}

void Replacer::send_install(int replica, const std::string& certificate, uint64_t id) {
  world_.send(o_.node, replica, frame_of({id, wire::InstallConfigRequest{certificate}, "", 0}));
}

void Replacer::receive(int from, const std::string& bytes) {
  auto reply = wire::decode_reply(bytes, wire::Limits{});
  if (reply.is_ok() && reply.value().id >= (uint64_t{1} << 61) && reply.value().id < (uint64_t{1} << 62)) {
    const uint64_t kept = version_of(reply.value().config);
    kept_[from] = std::max(kept_[from], kept);
    if (pause_installs_.erase(reply.value().id) == 0) return;
    if (paused_ && kept >= version_ && reply.value().status.is_ok()) pause_kept_.insert(from);
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
