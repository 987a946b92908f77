// What a watcher has told, and what it tells next (palisade/watch.h's rules).
// Sans-I/O: Watcher runs it over its gets, scans and the replicas' change
// feeds, and the quorum simulation over those of its simulated watchers
// (tests/sim).
//
// Two sources, one record of what was told:
// - rounds: a read of every key (by the read rules), which tells each key's
//   newest version when it is newer than the one told;
// - feeds: each replica's change feed (docs/protocol.md "changes"), which
//   tells every version once it is known acknowledged: committed on some
//   replica, or stored by a client's write on W replicas. A key's versions
//   are told in timestamp order; a version that may still prove
//   acknowledged (held by fewer than W feeds read, with enough feeds not
//   read to make up W) holds the key's newer versions back.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "palisade/timestamp.h"
#include "palisade/watch.h"
#include "wire/replica_protocol.h"

namespace palisade::client {

// A key as a round read it by the read rules: its value, or its tombstone.
struct KeyRead {
  bool deleted = false;
  std::string value{};
  FencedTimestamp ts{};
  std::string lock{};
};

class WatchState {
 public:
  // `initial`: the first round tells the keys that have a value (else it
  // only learns them).
  explicit WatchState(bool initial = true) : initial_(initial) {}

  // What a round that read `now` tells: `now` holds every key of the watched
  // range that has a version (a value, or a tombstone replicas keep). A key
  // told before with a value and missing from it is told deleted, version
  // unknown. Per key in the order reads give versions; keys in byte order.
  // A key whose versions the feeds hold back is not told: its version read
  // joins them, to be told in order (decide()).
  std::vector<WatchEvent> round(const std::map<std::string, KeyRead>& now);

  // ---- Feeds. The replica set (its version), N replicas, W of which make a
  // write acknowledged. A new set starts the feeds anew: every feed is then
  // unknown, and a round is due.
  void use_feeds(uint64_t version, int n, int w);
  // The set use_feeds() last named: pages read from another set's replicas
  // (the store moved meanwhile) must not be given to feed_page().
  uint64_t feeds_version() const { return version_; }
  // Where the next page of replica i's feed starts: its `after`. An unknown
  // feed (never read, or read before a gap) is asked from its oldest change
  // kept, except on the watcher's first poll, which asks for the newest only
  // (kFeedHead): the first round tells what came before.
  static constexpr uint64_t kFeedHead = UINT64_MAX;
  uint64_t feed_after(int replica) const;
  // A page of replica i's feed. A page of another feed than the one read
  // before (the replica restarted), or one whose oldest change kept is past
  // what was read (the replica forgot changes in between), is a gap: the
  // changes in between are lost (a restarted replica's page is not used: its
  // feed is asked again from its oldest change kept). The watcher then reads
  // a round, so that no key is left behind its newest version (round_due()).
  // Returns false when the page was not used.
  bool feed_page(int replica, const wire::FeedPosition& position, const std::vector<wire::FeedChange>& changes);
  // Whether a round is due: none yet, or a gap was found since the last one.
  bool round_due() const { return first_ || gap_; }
  bool gap() const { return gap_; }
  // The versions the feeds now show acknowledged, per key in timestamp order,
  // keys in byte order. `caught_up[i]`: replica i's feed was read up to its
  // newest change since the poll began.
  std::vector<WatchEvent> decide(const std::vector<bool>& caught_up);
  // Versions seen on some feed and neither told nor given up yet.
  size_t undecided() const;
  // At most this many are kept: versions stored on fewer than W replicas and
  // never committed (writes that failed) wait until a newer version of their
  // key is told, and a watched key written no more would keep its own for
  // ever. Past it, decide() forgets them all and marks a gap: the next round
  // tells each key's newest version, as after a replica's restart.
  static constexpr size_t kMaxUndecided = 1024;
  // The keys whose versions the last decide() held back (a version that may
  // still prove acknowledged): the next feed read waits for every replica.
  const std::set<std::string>& held() const { return held_; }

  // The version last told (or learnt) of each key; {0, 0} for a delete whose
  // version is unknown.
  std::map<std::string, FencedTimestamp> seen() const;
  // Goes on from `seen` (another watcher's): a key read at a version not
  // newer is not told again, and one gone since is told deleted.
  void resume(const std::map<std::string, FencedTimestamp>& seen);

  // Negative controls for the simulation's watch checker: a key is told only
  // the first time (its later versions are missed); a version is told from
  // one feed, before W replicas are known to hold it.
  bool broken_tells_new_keys_only = false;
  bool broken_trusts_one_feed = false;

 private:
  struct Told {
    FencedTimestamp ts;
    std::optional<uint64_t> content;  // of the version told; nullopt when resumed or unknown
    bool alive = false;  // told with a value
  };
  // A version some feed showed: the replicas whose clients' writes stored
  // it, and whether some replica committed it.
  struct Candidate {
    wire::Version version;
    std::set<int> written;
    bool committed = false;
  };
  struct Feed {
    bool known = false;
    uint64_t log = 0;
    uint64_t after = 0;
    // Not read when a round was: the log it shows later may have begun
    // since, after changes of an earlier one the watcher never read.
    bool missed_round = false;
  };
  // Whether `v` of `key` is newer than what was told of it (nothing told: yes).
  bool newer_than_told(const std::string& key, const FencedTimestamp& ts, uint64_t content) const;
  void tell(std::vector<WatchEvent>& events, const std::string& key, const KeyRead& read, uint64_t content);

  bool initial_;
  bool first_ = true;
  std::map<std::string, Told> told_;
  std::vector<Feed> feeds_;
  uint64_t version_ = 0;
  int w_ = 0;
  bool gap_ = false;
  // By key, then by version order (timestamp, then content hash).
  std::map<std::string, std::map<std::pair<FencedTimestamp, uint64_t>, Candidate>> candidates_;
  std::set<std::string> held_;
};

}  // namespace palisade::client
