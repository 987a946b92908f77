// The operator of a simulated replica set: it changes the set one replica at
// a time, replacing one by a spare, adding a spare or removing one, as
// `palisade member replace|add|remove --replica` do (docs/design.md "The
// replica set"; antientropy/replica_change.h): read the record, fill the
// spare while the set serves, pause the set (version v+1, kept by max(R, W)
// replicas), fill it again, then commit the new set (v+2), or the old one
// again when a step failed. The record is kept where ReplicaRecord says: its
// own signer, or the real lock group. It gives the newest record to every
// replica of any set until each keeps it (the paused replicas' refresh,
// replica/config_refresh.h), and watches a shared record while it is paused,
// for the lock group's master ends a pause that lasts too long. Its fills are
// the daemon's own anti-entropy run (antientropy/anti_entropy_run.h) over the
// simulated network, sealed as a repairer's when the replicas check seals.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "antientropy/anti_entropy_run.h"
#include "antientropy/replica_change.h"
#include "auth/repair_seal.h"
#include "tests/sim/replica_record.h"
#include "tests/sim/replica_set.h"
#include "tests/sim/world.h"
#include "wire/replica_set.h"

namespace palisade::sim {

class Replacer {
 public:
  struct Options {
    int node = 0;  // its world node
    int members = 3;  // replicas 0 .. members-1 start as the set
    int spares = 0;  // replicas members .. members+spares-1, each joins at most once
    int read_quorum = 2;
    int write_quorum = 2;
    // Additions and removals too, not only replacements: each change is one
    // of those the set allows, drawn from the seed.
    bool adds_and_removes = false;
    int max_members = 5;  // no addition beyond this many
    // Chance that the operator walks away once the set is paused (its command
    // killed): the set stays paused until the lock group's master ends the
    // pause. Drawn only when above 0.
    double walk_away = 0;
    // The repairers' seal (the replicas' key and group), for replicas that
    // take a fill's copies only from a repairer; nullopt: frames go plain.
    std::optional<RepairSeal> seal = std::nullopt;
    // The record names each replica by its receipt id too (node + 1, as
    // ReplicaSet gives them), so that a removed replica knows it.
    bool receipt_ids = false;
    uint64_t timeout_ms = 1000;  // a fill's request, or the pause's installs, unanswered this long
    // Negative controls (docs in quorum_sim.h): the new set is committed
    // after the fill while serving, with no paused fill; there is no pause
    // (a second fill while serving, then the new set); the spare is not
    // given the fence floors.
    bool broken_skip_paused_fill = false;
    bool broken_skip_pause = false;
    bool broken_targets_skip_floors = false;
  };

  // `record` must outlive the replacer.
  Replacer(World& world, ReplicaSet& replicas, ReplicaRecord& record, Options options);

  // Begins a change `delay_ms` from now, unless one is under way or the set
  // allows none (no spare left, and no removal).
  void change_later(uint64_t delay_ms);
  // Begins no more changes (one under way goes on to its end).
  void stop() { stopped_ = true; }
  bool busy() const { return busy_; }
  // Why the replica set is not settled: a change under way, the record
  // paused as far as it knows, or a replica of some set that does not keep
  // the newest record; "" when it is.
  std::string unsettled() const;

  // Changes committed (of them, additions and removals), and those that
  // ended with the old set serving again.
  int changed() const { return changed_; }
  int added() const { return added_; }
  int removed() const { return removed_; }
  int abandoned() const { return abandoned_; }
  // Of those, the ones it walked away from paused (Options::walk_away).
  int walked_away() const { return walked_away_; }
  // Told after each change ends (committed or not).
  std::function<void()> ended;

 private:
  using RunDone = std::function<void(const Result<AntiEntropyReport>&)>;

  wire::ReplicaSet set_of(const std::vector<wire::ReplicaInfo>& members, uint64_t version, wire::ReplicaPhase phase,
                          Quorums quorums) const;
  wire::ReplicaInfo member(uint32_t id, int replica) const;
  // The changes the set allows now, in a fixed order.
  std::vector<ReplicaChangeKind> possible() const;
  void say(const std::string& line) const;
  // Takes `certificate`'s record as the newest when it is newer; as the set
  // to change too when no change is under way. Its set; nullopt when none.
  std::optional<wire::ReplicaSet> learn(const std::string& certificate);
  // A request's frame, sealed when it changes what replicas hold.
  std::string frame_of(const wire::ReplicaRequest& request) const;

  void begin();
  void start();
  // An anti-entropy run over the members with the spare, if any, as its target.
  void fill(bool paused, uint64_t version, const std::string& certificate, int tries, RunDone done);
  // The replica (world node) of a run's index: the members, then the spare.
  int replica_of(int index) const;
  void pump_run();
  void expire_run(uint64_t generation);
  // Why a fill does not let the change go on (replica_change.h); "" when it does.
  std::string fill_failure(const Result<AntiEntropyReport>& r, bool paused) const;
  void pause();
  void paused_kept();
  // Ends the change: the new set serving when `done`, else the old.
  void commit(bool done, const std::string& why);
  // Ends the change here; the record goes on as it is.
  void end();

  // The refresh: the newest certificate to every replica that took part in a
  // set, until each keeps it, once a second.
  void refresh();
  void send_install(int replica, const std::string& certificate, uint64_t id);
  void receive(int from, const std::string& bytes);

  World& world_;
  ReplicaSet& replicas_;
  ReplicaRecord& record_;
  Options o_;
  // The set the next change starts from, or the change under way changes.
  std::vector<wire::ReplicaInfo> members_;
  Quorums quorums_;  // the serving set's
  uint64_t version_ = 0;  // the record's; 0: the initial list, no certificate
  bool version_paused_ = false;  // that record's phase
  std::string certificate_;
  // The newest record known, which the refresh gives every replica.
  uint64_t newest_version_ = 0;
  std::string newest_;
  bool watching_ = false;  // a shared record may change without the replacer
  std::set<int> involved_;  // replicas that ever were in a set
  std::map<int, uint64_t> kept_;  // per replica: the newest version it said it keeps
  bool refreshing_ = false;
  int next_spare_ = 0;
  bool busy_ = false;
  bool stopped_ = false;
  int changed_ = 0, added_ = 0, removed_ = 0, abandoned_ = 0, walked_away_ = 0;

  // The change under way.
  ReplicaChangeKind kind_ = ReplicaChangeKind::kReplace;
  Quorums next_quorums_;
  int leaving_ = -1;  // its replica (world node); -1: none (an addition)
  int spare_ = -1;  // -1: none (a removal)
  bool paused_ = false;  // the pause's version is out
  std::vector<int> compared_;  // the members' replicas, the run's indexes
  std::unique_ptr<client::AntiEntropyRun> run_;
  RunDone run_done_;
  std::vector<client::AntiEntropySend> last_installs_;  // what the last run that ended said to install
  uint64_t run_generation_ = 0;
  // The pause's installs: their ids, and the members that said they keep it.
  std::set<uint64_t> pause_installs_;
  std::set<int> pause_kept_;
  uint64_t next_install_id_ = uint64_t{1} << 61;
};

}  // namespace palisade::sim
