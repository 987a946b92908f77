// A simulated disk below real files, for tests and the storage simulation.
//
// LMDB maps its data file and does its own I/O (pwrite, write, writev after
// lseek, fdatasync, and pwrite on a second descriptor opened with O_DSYNC for
// its meta pages), with no hook to put a simulated file under it. So the
// simulated disk sits below real files instead: linking this file into an
// executable puts its write, pwrite, pwrite64, writev, pwritev, pwritev64,
// fdatasync and fsync in front of the C library's, for the executable and for
// the libraries it loads (LMDB included). Calls on files under a directory
// registered with track() go through the simulated disk; every other call goes
// straight to the C library. A descriptor is mapped to its file by fstat (the
// file's identity) and /proc/self/fd (its path), at each call.
//
// What the disk does to tracked files:
// - Unsynced writes. Before each write it keeps the bytes the write overwrites
//   and the file's old size (an undo log per file). fdatasync or fsync of the
//   file makes its writes durable; a write through a descriptor opened with
//   O_DSYNC or O_SYNC is durable when it returns. Syncs of tracked files never
//   reach the real file system (durability is the model's), so they cost nothing.
// - crash(rng): power loss. From then on, writes and syncs of tracked files
//   are swallowed (they report success and change nothing), so the process
//   can tear its stores down without making anything durable. revive(), once
//   nothing has the files open or mapped, puts every file in a state the disk
//   could have been left in: each unsynced write independently persisted,
//   lost, or cut (a prefix of it persisted, a random number of bytes), the
//   latest persisted write winning on every byte, and a file that grew keeping
//   only the size its persisted writes give it. crash_after(n, rng) crashes
//   just before the n-th write or sync of a tracked file from now: anywhere
//   in a commit, between a write and its sync included.
// - fail_syncs(n): the next n syncs fail with EIO. The writes they covered
//   stay unsynced for good (Linux drops dirty pages after a failed fsync, so a
//   later successful sync does not vouch for them): a crash may still lose them.
// - fill(Full::kGrowth): writes that would grow a file fail with ENOSPC,
//   overwrites within it succeed (a file system without copy-on-write needs no
//   new block for them); Full::kEverything: every write fails with ENOSPC.
//   Until fill(Full::kNo).
// - tear_next_write(rng): the next write writes a prefix of itself (1 to n-1
//   bytes, random) and returns that short count; the write after it (the
//   caller's retry for the rest) fails with EIO.
// - lie_about_syncs(name): a disk that lies about fsync, the negative control
//   of the durability checks: syncs of tracked files named `name` (the last
//   path component) report success and make nothing durable.
//
// Not modelled: directory operations (create, rename, unlink are durable when
// they return), ftruncate, msync and mmap writes (LMDB uses them only with
// MDB_WRITEMAP, which palisade never sets), reads of data lost before revive().
// One mutex guards the disk; calls of any thread go through it.
#pragma once

#include <cstdint>
#include <string>

#include "base/random.h"

namespace palisade::test {

class SimDisk {
 public:
  enum class Full { kNo, kGrowth, kEverything };

  // What the disk did, since the last reset().
  struct Counters {
    uint64_t writes = 0;  // writes of tracked files that reached the file
    uint64_t syncs = 0;  // syncs that made writes durable
    uint64_t syncs_failed = 0;  // syncs failed with EIO (fail_syncs, fail_next_syncs)
    uint64_t syncs_lied = 0;  // syncs that reported success and did nothing
    uint64_t writes_refused = 0;  // writes failed with ENOSPC
    uint64_t writes_torn = 0;  // writes cut short by tear_next_write
    uint64_t writes_failed = 0;  // writes failed with EIO (after a torn one)
    uint64_t crashes = 0;
    uint64_t swallowed = 0;  // writes and syncs after a crash
    uint64_t writes_kept = 0;  // unsynced writes a revive kept whole
    uint64_t writes_lost = 0;  // unsynced writes a revive undid
    uint64_t writes_cut = 0;  // unsynced writes a revive kept a prefix of
  };

  // Files under `dir` (made absolute, symbolic links resolved) go through the
  // simulated disk from now on; untrack() stops that and forgets their undo logs.
  static void track(const std::string& dir);
  static void untrack(const std::string& dir);

  static void fail_syncs(int n);
  static void fill(Full full);
  static void tear_next_write(Random& rng);
  // Empty: an honest disk again.
  static void lie_about_syncs(const std::string& name);

  // Power loss now, unsynced writes each kept with probability `keep`, else cut
  // with probability `cut`, else lost, as drawn from `rng` at revive().
  static void crash(Random& rng, double keep = 0.5, double cut = 0.25);
  // Power loss now; revive() loses every unsynced write.
  static void crash_losing_everything();
  // Crash (as crash()) just before the n-th (n >= 1) write or sync of a tracked file from now.
  static void crash_after(uint64_t n, Random& rng, double keep = 0.5, double cut = 0.25);
  // The power loss of one machine among several whose files the disk tracks:
  // as crash() and crash_after(), for the files under `dir` alone. Their
  // writes and syncs are swallowed (and counted toward the armed crash), and
  // revive() rolls back only them; the other files go on as before. One crash
  // at a time.
  static void crash_dir(const std::string& dir, Random& rng, double keep = 0.5, double cut = 0.25);
  static void crash_dir_after(const std::string& dir, uint64_t n, Random& rng, double keep = 0.5, double cut = 0.25);
  // Drops every fault to come (failed syncs, a full disk, a torn write and the
  // failure after it, an armed crash), as after a reboot; a lying disk still lies.
  static void heal();
  static bool crashed();
  // After a crash: rolls the files it covers back as described above and lets writes
  // through again. Whatever had the files open must be gone: a file mapped in
  // memory may shrink. Does nothing without a crash.
  static void revive();

  // Writes of tracked files not yet durable, over all files.
  static uint64_t unsynced_writes();
  static Counters counters();
  // Forgets every directory, fault, undo log and count. A crash not revived is dropped.
  static void reset();
};

// Tracks `dir` for its lifetime; reset() when it ends.
class SimDiskScope {
 public:
  explicit SimDiskScope(const std::string& dir) { SimDisk::track(dir); }
  ~SimDiskScope() { SimDisk::reset(); }
  SimDiskScope(const SimDiskScope&) = delete;
  SimDiskScope& operator=(const SimDiskScope&) = delete;
};

// The next `n` calls of fdatasync in this process, on any file (tracked or
// not), fail with EIO.
void fail_next_syncs(int n);

}  // namespace palisade::test
