// The history a fault campaign on real processes records (scripts/torture,
// docs/reliability.md), and its judge: the simulator's checkers
// (tests/sim/history.h) on calls made by real clients to real daemons.
//
// One JSON object a line, one line per call a client made, written when the
// call returned. Times are microseconds of CLOCK_MONOTONIC, which every
// process on the machine shares (daemons' clocks may be faked; the clients'
// are not). Fields:
//   op      "acquire", "put", "del" or "get"
//   client  the client's number
//   start, end   when the call began and returned
//   result  the code's name ("ok", "fenced", "timeout", ...: palisade::code_name)
//   acquire: lock, token (the grant's; 0 when it failed), session (the lock
//            group session it went to; optional)
//   put/del: key, value (put), lock and token (0 and "" without a lock),
//            ts (the write's timestamp, "TOKEN@MS.LOGICAL"; null when none)
//   get:    key, found, value (when found), ts (null when the key has no version)
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/sim/history.h"

namespace palisade::nemesis {

// Reads the lines of `in` (named `name` in errors) into `into`: acquires as
// fences that handed out a lease when ok, writes and reads as the simulator
// records them. Returns one error per line it could not read (file:line: why);
// blank lines are skipped.
std::vector<std::string> read_history(std::istream& in, std::string_view name, sim::History& into);

// Tokens strictly increase per lock: an acquire that returned ok after another
// of the same lock had returned ok got a larger token, and no token was
// granted twice, except to the session that holds it (an acquire of a lock
// the session holds returns the same grant). One line per violation.
std::vector<std::string> check_tokens(const sim::History& history);

// What the clients did, for the campaign's summary.
struct Tally {
  uint64_t acquires = 0, acquires_ok = 0;
  uint64_t writes = 0, writes_ok = 0, writes_refused = 0;  // refused: fenced, stale or bad_sequencer
  uint64_t reads = 0, reads_ok = 0;
  // Writes under a grant sent after an acquire of the same lock with a larger
  // token returned (a paused holder's, say); how many were not acknowledged,
  // and of those how many were answered fenced, stale or bad_sequencer (the
  // others unavailable or timeout: docs/design-changes.md 16).
  uint64_t zombie_writes = 0, zombie_writes_refused = 0, zombie_writes_fenced = 0;
  std::vector<sim::WriteRecord> zombies;  // those writes, for the timeline
};
Tally tally(const sim::History& history);

// Every violation of the campaign's promises: check_tokens, then sim::check
// (no refused or superseded write read, no acknowledged write lost, no read
// back in time, no superseded holder's write acknowledged).
std::vector<std::string> check_campaign(const sim::History& history);

}  // namespace palisade::nemesis
