// What clients asked and were answered, with simulated start and end times, and
// the checkers that judge it against the promises of docs/design.md
// "Fence safety".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "palisade/quorum_store.h"
#include "palisade/status.h"
#include "palisade/timestamp.h"

namespace palisade::sim {

struct WriteRecord {
  int client = 0;
  std::string key;
  std::string value;
  bool tombstone = false;
  std::string lock;  // empty for a write without a lock
  uint64_t token = 0;
  uint64_t start_ms = 0, end_ms = 0;
  Code result = Code::kOk;
  FencedTimestamp ts;
  // Earlier timestamps it was sent with: a client that moves to a new replica
  // set sends its write in flight again there, with a new timestamp.
  std::vector<FencedTimestamp> attempts{};
};

struct FenceRecord {  // a lock acquisition's "make the fence" step
  int client = 0;
  std::string lock;
  uint64_t token = 0;
  uint64_t start_ms = 0, end_ms = 0;
  Code result = Code::kOk;
  // The client went on to use the grant: acquire returned it as a lease
  // (the lock simulation; client::grant_fence_status said so).
  bool lease = false;
  // The lock group session it was granted to, when recorded (0: not known).
  uint64_t session = 0;
};

struct ReadRecord {
  int client = 0;
  std::string key;
  uint64_t start_ms = 0, end_ms = 0;
  Code result = Code::kOk;
  bool found = false;
  std::string value;
  FencedTimestamp ts;  // {0,0} when the key has no version at all
};

// A value the adversary of the lock simulation (tests/sim/adversary.h) wrote:
// one that no read may ever return, whatever else the adversary did with it.
// Values are unique ("x<adversary>-<n>"), so a read that returns one is
// told by its value alone.
struct AdversaryWrite {
  std::string key;
  std::string value;
  std::string lock;
  uint64_t token = 0;    // the token of its timestamp
  uint64_t sent_ms = 0;  // when the adversary first sent it
  // Why it must stay invisible: "superseded" (sent after a fence of the lock
  // with a larger token completed), "one replica" (sent to one replica only,
  // so never W copies), "wrong sequencer" (the sequencer does not grant that
  // lock and token, or is forged), with the detail.
  std::string why;
};

struct History {
  std::vector<WriteRecord> writes;
  std::vector<FenceRecord> fences;
  std::vector<ReadRecord> reads;
  std::vector<AdversaryWrite> adversary;
};

// Every violation found, one line each; empty when the history is safe:
//  - a read returns a version that was never written, or with another value;
//  - a read returns a write that was answered Fenced or Stale;
//  - a write started after a fence of its lock with a higher token completed is acknowledged,
//    or returned by a read (a superseded holder's write);
//  - a read started after a write was acknowledged returns an older version
//    (an acknowledged write was lost);
//  - a read started after another read returned goes back in time;
//  - a read returns a value the adversary wrote (History::adversary);
//  - a grant is handed out as a lease although its fence started after a
//    fence of the lock with a higher token completed (W replicas had a floor
//    above it, so its fence must have seen one).
// "Older" is the order replicas and readers use (wire::newer): timestamp, then,
// for two writes with one timestamp, content hash. So a read that returns the
// loser of such a tie after the winner was acknowledged or returned is caught.
std::vector<std::string> check(const History& history);

// Ends a read record with what the read returned at `now_ms` (both simulations).
void finish_read(ReadRecord& record, const ReadResult& result, uint64_t now_ms);

}  // namespace palisade::sim
