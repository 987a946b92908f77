#include "tests/support/sim_disk.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace palisade::test {
namespace {

using WriteFn = ssize_t (*)(int, const void*, size_t);
using PwriteFn = ssize_t (*)(int, const void*, size_t, off_t);
using WritevFn = ssize_t (*)(int, const struct iovec*, int);
using PwritevFn = ssize_t (*)(int, const struct iovec*, int, off_t);
using SyncFn = int (*)(int);

template <typename F>
F next_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// The C library's pwrite, for the disk's own writes (never interposed).
ssize_t real_pwrite(int fd, const void* data, size_t n, off_t at) {
  static const PwriteFn f = next_symbol<PwriteFn>("pwrite");
  return f(fd, data, n, at);
}

struct Entry {
  enum class State { kUnsynced, kDurable, kFailed };  // kFailed: a sync failed; no later sync vouches for it
  uint64_t offset = 0;
  std::string before;  // the bytes it overwrote; zeros where it grew the file
  uint64_t old_size = 0;  // the file's size before it
  State state = State::kUnsynced;
};

struct File {
  std::string path;  // as last seen
  std::vector<Entry> log;
};

struct Disk {
  std::mutex mu;
  std::vector<std::string> dirs;  // each ending in '/'
  std::map<std::pair<dev_t, ino_t>, File> files;
  int fail_syncs = 0;
  SimDisk::Full full = SimDisk::Full::kNo;
  std::optional<uint64_t> tear;  // seed of the next torn write's length
  bool fail_next_write = false;
  std::string liar;
  bool crashed = false;
  std::string scope;  // what the crash covers: files under it ("": every tracked file)
  bool lose_all = false;
  uint64_t crash_seed = 0;
  double keep = 0.5, cut = 0.25;
  uint64_t crash_countdown = 0;  // 0: no crash armed
  uint64_t armed_seed = 0;
  std::string armed_scope;  // what the armed crash counts and covers
  double armed_keep = 0.5, armed_cut = 0.25;
  SimDisk::Counters counters;
};

Disk& disk() {
  static Disk* d = new Disk;  // never destroyed: writes may come during exit
  return *d;
}

std::atomic<bool> any_tracked{false};
std::atomic<int> legacy_failures{0};

// A tracked file, as one call sees it.
struct Target {
  std::pair<dev_t, ino_t> id;
  std::string path;
  uint64_t size = 0;
  int flags = 0;
};

// Under the mutex.
std::optional<Target> classify(Disk& d, int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  char link[64], path[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = ::readlink(link, path, sizeof path - 1);
  if (n <= 0) return std::nullopt;
  std::string p(path, static_cast<size_t>(n));
  const bool tracked =
      std::any_of(d.dirs.begin(), d.dirs.end(), [&](const std::string& dir) { return p.starts_with(dir); });
  if (!tracked) return std::nullopt;
  return Target{{st.st_dev, st.st_ino}, std::move(p), static_cast<uint64_t>(st.st_size), ::fcntl(fd, F_GETFL)};
}

bool in_scope(const std::string& scope, const std::string& path) { return path.starts_with(scope); }

// Whether the crash swallows writes and syncs of `path`.
bool crashed_at(const Disk& d, const std::string& path) { return d.crashed && in_scope(d.scope, path); }

void start_crash(Disk& d, uint64_t seed, double keep, double cut, bool lose_all, std::string scope) {
  d.crashed = true;
  d.scope = std::move(scope);
  d.crash_seed = seed;
  d.keep = keep;
  d.cut = cut;
  d.lose_all = lose_all;
  d.crash_countdown = 0;
  ++d.counters.crashes;
}

// Counts one write or sync of tracked file `path` toward an armed crash.
void tick(Disk& d, const std::string& path) {
  if (d.crash_countdown == 0 || !in_scope(d.armed_scope, path)) return;
  if (--d.crash_countdown == 0 && !d.crashed) {
    start_crash(d, d.armed_seed, d.armed_keep, d.armed_cut, false, d.armed_scope);
  }
}

// `n` bytes of the file at `at`, zeros past `size`.
std::string read_before(int fd, const std::string& path, uint64_t at, size_t n, uint64_t size) {
  std::string out(n, '\0');
  if (at >= size) return out;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(n, size - at));
  int rfd = fd;
  ssize_t got = ::pread(fd, out.data(), want, static_cast<off_t>(at));
  if (got < 0 && errno == EBADF) {  // opened write-only
    rfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd >= 0) got = ::pread(rfd, out.data(), want, static_cast<off_t>(at));
    if (rfd >= 0) ::close(rfd);
  }
  if (got < 0 || static_cast<size_t>(got) != want) {
    std::fprintf(stderr, "sim_disk: cannot read %s before a write\n", path.c_str());
    std::abort();
  }
  return out;
}

// A write of `data` to `fd`, at `at` or (nullopt) at the descriptor's offset,
// which then moves past what was written. `direct` is the C library's call
// that does the same, for untracked files.
template <typename Direct>
ssize_t sim_write(int fd, std::string_view data, std::optional<off_t> at, Direct direct) {
  if (!any_tracked.load()) return direct();
  Disk& d = disk();
  std::unique_lock lock(d.mu);
  std::optional<Target> t = classify(d, fd);
  if (!t) {
    lock.unlock();
    return direct();
  }
  tick(d, t->path);
  uint64_t off = at ? static_cast<uint64_t>(*at) : 0;
  if (!at) off = (t->flags & O_APPEND) != 0 ? t->size : static_cast<uint64_t>(::lseek(fd, 0, SEEK_CUR));
  auto advance = [&](size_t n) {
    if (!at) ::lseek(fd, static_cast<off_t>(off + n), SEEK_SET);
  };
  if (crashed_at(d, t->path)) {
    ++d.counters.swallowed;
    advance(data.size());
    return static_cast<ssize_t>(data.size());
  }
  if (data.empty()) return 0;
  if (d.fail_next_write) {
    d.fail_next_write = false;
    ++d.counters.writes_failed;
    errno = EIO;
    return -1;
  }
  if (d.full == SimDisk::Full::kEverything || (d.full == SimDisk::Full::kGrowth && off + data.size() > t->size)) {
    ++d.counters.writes_refused;
    errno = ENOSPC;
    return -1;
  }
  if (d.tear) {
    const uint64_t seed = *d.tear;
    d.tear.reset();
    ++d.counters.writes_torn;
    if (data.size() == 1) {
      errno = EIO;
      return -1;
    }
    data = data.substr(0, 1 + seed % (data.size() - 1));
    d.fail_next_write = true;
  }
  File& file = d.files[t->id];
  file.path = t->path;
  const bool durable = (t->flags & (O_DSYNC | O_SYNC)) != 0;
  Entry e;
  e.offset = off;
  e.old_size = t->size;
  e.state = durable ? Entry::State::kDurable : Entry::State::kUnsynced;
  // A durable write needs no undo; it is logged only to shield itself from
  // the undo of older unsynced writes it overwrote.
  if (!durable) e.before = read_before(fd, t->path, off, data.size(), t->size);
  const ssize_t n = real_pwrite(fd, data.data(), data.size(), static_cast<off_t>(off));
  if (n <= 0) return n;
  if (durable) {
    e.before.assign(static_cast<size_t>(n), '\0');
  } else {
    e.before.resize(static_cast<size_t>(n));
  }
  if (!durable || !file.log.empty()) file.log.push_back(std::move(e));
  ++d.counters.writes;
  advance(static_cast<size_t>(n));
  return n;
}

std::string gather(const struct iovec* iov, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  return out;
}

int sim_sync(int fd, bool data_only, SyncFn real) {
  if (data_only) {
    for (int left = legacy_failures.load(); left > 0;) {
      if (legacy_failures.compare_exchange_weak(left, left - 1)) {
        if (any_tracked.load()) {
          Disk& d = disk();
          std::lock_guard lock(d.mu);
          if (auto t = classify(d, fd)) {
            for (Entry& e : d.files[t->id].log) {
              if (e.state == Entry::State::kUnsynced) e.state = Entry::State::kFailed;
            }
            ++d.counters.syncs_failed;
          }
        }
        errno = EIO;
        return -1;
      }
    }
  }
  if (!any_tracked.load()) return real(fd);
  Disk& d = disk();
  std::unique_lock lock(d.mu);
  std::optional<Target> t = classify(d, fd);
  if (!t) {
    lock.unlock();
    return real(fd);
  }
  tick(d, t->path);
  if (crashed_at(d, t->path)) {
    ++d.counters.swallowed;
    return 0;
  }
  File& file = d.files[t->id];
  file.path = t->path;
  const std::string name = t->path.substr(t->path.find_last_of('/') + 1);
  if (!d.liar.empty() && name == d.liar) {
    ++d.counters.syncs_lied;
    return 0;
  }
  const bool fail = d.fail_syncs > 0;
  if (fail) --d.fail_syncs;
  // The real file system is not asked: what is durable is the disk's model.
  const int rc = fail ? -1 : 0;
  const int saved = EIO;
  bool failed_before = false;
  for (Entry& e : file.log) {
    if (e.state == Entry::State::kUnsynced) e.state = rc == 0 ? Entry::State::kDurable : Entry::State::kFailed;
    failed_before = failed_before || e.state == Entry::State::kFailed;
  }
  if (rc != 0) {
    ++d.counters.syncs_failed;
    errno = saved;
    return rc;
  }
  if (!failed_before) file.log.clear();
  ++d.counters.syncs;
  return 0;
}

// Restores `e.before` on the bytes of [from, to) (offsets in the file) that no
// range of `kept` covers.
void undo(int fd, const Entry& e, uint64_t from, uint64_t to, std::vector<std::pair<uint64_t, uint64_t>>& kept) {
  std::sort(kept.begin(), kept.end());
  uint64_t at = from;
  auto restore = [&](uint64_t a, uint64_t b) {
    if (a >= b) return;
    const std::string_view bytes = std::string_view(e.before).substr(a - e.offset, b - a);
    if (real_pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(a)) != static_cast<ssize_t>(bytes.size())) {
      std::fprintf(stderr, "sim_disk: cannot undo a write\n");
      std::abort();
    }
  };
  for (const auto& [a, b] : kept) {
    if (b <= at || a >= to) continue;
    restore(at, std::min(a, to));
    at = std::max(at, b);
    if (at >= to) return;
  }
  restore(at, to);
}

void roll_back(Disk& d, File& file, Random& rng) {
  const int fd = ::open(file.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;  // gone: renamed over or removed
  struct stat st;
  std::vector<std::pair<uint64_t, uint64_t>> kept;  // ranges later persisted writes wrote
  uint64_t size = file.log.front().old_size;
  for (auto it = file.log.rbegin(); it != file.log.rend(); ++it) {
    const Entry& e = *it;
    const uint64_t end = e.offset + e.before.size();
    uint64_t keep_to = e.offset;  // [offset, keep_to) persisted, the rest lost
    if (e.state == Entry::State::kDurable) {
      keep_to = end;
    } else if (!d.lose_all && rng.chance(d.keep)) {
      keep_to = end;
      ++d.counters.writes_kept;
    } else if (!d.lose_all && e.before.size() > 1 && rng.chance(d.cut)) {
      keep_to = e.offset + rng.uniform(1, e.before.size() - 1);
      ++d.counters.writes_cut;
    } else {
      ++d.counters.writes_lost;
    }
    undo(fd, e, keep_to, end, kept);
    if (keep_to > e.offset) {
      kept.emplace_back(e.offset, keep_to);
      size = std::max(size, keep_to);
    }
  }
  if (::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) > size) {
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      std::fprintf(stderr, "sim_disk: cannot truncate %s\n", file.path.c_str());
      std::abort();
    }
  }
  ::close(fd);
}

// A directory as tracked: its real path (what file descriptors resolve to), with a '/'.
std::string tracked_path(const std::string& dir) {
  char* resolved = ::realpath(dir.c_str(), nullptr);
  std::string path = resolved != nullptr ? resolved : dir;
  std::free(resolved);
  if (!path.ends_with('/')) path += '/';
  return path;
}

}  // namespace

void SimDisk::track(const std::string& dir) {
  const std::string path = tracked_path(dir);
  Disk& d = disk();
  std::lock_guard lock(d.mu);
  if (std::find(d.dirs.begin(), d.dirs.end(), path) == d.dirs.end()) d.dirs.push_back(path);
  any_tracked = true;
}

void SimDisk::untrack(const std::string& dir) {
  const std::string path = tracked_path(dir);
  Disk& d = disk();
  std::lock_guard lock(d.mu);
  d.dirs.erase(std::remove(d.dirs.begin(), d.dirs.end(), path), d.dirs.end());
  std::erase_if(d.files, [&](const auto& f) { return f.second.path.starts_with(path); });
  any_tracked = !d.dirs.empty();
}

void SimDisk::fail_syncs(int n) {
  std::lock_guard lock(disk().mu);
  disk().fail_syncs = n;
}

void SimDisk::fill(Full full) {
  std::lock_guard lock(disk().mu);
  disk().full = full;
}

void SimDisk::tear_next_write(Random& rng) {
  std::lock_guard lock(disk().mu);
  disk().tear = rng.next();
}

void SimDisk::lie_about_syncs(const std::string& name) {
  std::lock_guard lock(disk().mu);
  disk().liar = name;
}

void SimDisk::crash(Random& rng, double keep, double cut) {
  std::lock_guard lock(disk().mu);
  if (!disk().crashed) start_crash(disk(), rng.next(), keep, cut, false, "");
}

void SimDisk::crash_dir(const std::string& dir, Random& rng, double keep, double cut) {
  const std::string scope = tracked_path(dir);
  std::lock_guard lock(disk().mu);
  if (!disk().crashed) start_crash(disk(), rng.next(), keep, cut, false, scope);
}

void SimDisk::crash_losing_everything() {
  std::lock_guard lock(disk().mu);
  if (!disk().crashed) start_crash(disk(), 0, 0, 0, true, "");
}

void SimDisk::crash_after(uint64_t n, Random& rng, double keep, double cut) { crash_dir_after("", n, rng, keep, cut); }

void SimDisk::crash_dir_after(const std::string& dir, uint64_t n, Random& rng, double keep, double cut) {
  const std::string scope = dir.empty() ? "" : tracked_path(dir);
  Disk& d = disk();
  std::lock_guard lock(d.mu);
  d.crash_countdown = n;
  d.armed_scope = scope;
  d.armed_seed = rng.next();
  d.armed_keep = keep;
  d.armed_cut = cut;
}

void SimDisk::heal() {
  Disk& d = disk();
  std::lock_guard lock(d.mu);
  d.fail_syncs = 0;
  d.full = Full::kNo;
  d.tear.reset();
  d.fail_next_write = false;
  d.crash_countdown = 0;
}

bool SimDisk::crashed() {
  std::lock_guard lock(disk().mu);
  return disk().crashed;
}

void SimDisk::revive() {
  Disk& d = disk();
  std::lock_guard lock(d.mu);
  if (!d.crashed) return;
  // Files in the order of their paths, so that a seed replays.
  std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> order;
  for (const auto& [id, file] : d.files) {
    if (!file.log.empty() && in_scope(d.scope, file.path)) order.emplace_back(file.path, id);
  }
  std::sort(order.begin(), order.end());
  Random rng(d.crash_seed);
  for (const auto& [path, id] : order) {
    File& file = d.files[id];
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || std::pair<dev_t, ino_t>{st.st_dev, st.st_ino} != id) continue;
    roll_back(d, file, rng);
  }
  std::erase_if(d.files, [&](const auto& f) { return in_scope(d.scope, f.second.path); });
  d.crashed = false;
  d.scope.clear();
  d.crash_countdown = 0;
}

uint64_t SimDisk::unsynced_writes() {
  Disk& d = disk();
  std::lock_guard lock(d.mu);
  uint64_t n = 0;
  for (const auto& [id, file] : d.files) {
    n += static_cast<uint64_t>(std::count_if(file.log.begin(), file.log.end(),
                                             [](const Entry& e) { return e.state != Entry::State::kDurable; }));
  }
  return n;
}

SimDisk::Counters SimDisk::counters() {
  std::lock_guard lock(disk().mu);
  return disk().counters;
}

void SimDisk::reset() {
  Disk& d = disk();
  std::lock_guard lock(d.mu);
  d.dirs.clear();
  d.files.clear();
  d.fail_syncs = 0;
  d.full = Full::kNo;
  d.tear.reset();
  d.fail_next_write = false;
  d.liar.clear();
  d.crashed = false;
  d.scope.clear();
  d.crash_countdown = 0;
  d.armed_scope.clear();
  d.counters = Counters{};
  any_tracked = false;
}

void fail_next_syncs(int n) { legacy_failures = n; }

}  // namespace palisade::test

using palisade::test::gather;
using palisade::test::sim_sync;
using palisade::test::sim_write;
using palisade::test::SyncFn;

extern "C" {

ssize_t write(int fd, const void* buf, size_t n) {
  static const auto f = palisade::test::next_symbol<palisade::test::WriteFn>("write");
  return sim_write(fd, std::string_view(static_cast<const char*>(buf), n), std::nullopt, [&] { return f(fd, buf, n); });
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t at) {
  static const auto f = palisade::test::next_symbol<palisade::test::PwriteFn>("pwrite");
  return sim_write(fd, std::string_view(static_cast<const char*>(buf), n), at, [&] { return f(fd, buf, n, at); });
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off_t at) {
  static const auto f = palisade::test::next_symbol<palisade::test::PwriteFn>("pwrite64");
  return sim_write(fd, std::string_view(static_cast<const char*>(buf), n), at, [&] { return f(fd, buf, n, at); });
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  static const auto f = palisade::test::next_symbol<palisade::test::WritevFn>("writev");
  if (!palisade::test::any_tracked.load()) return f(fd, iov, count);
  return sim_write(fd, gather(iov, count), std::nullopt, [&] { return f(fd, iov, count); });
}

ssize_t pwritev(int fd, const struct iovec* iov, int count, off_t at) {
  static const auto f = palisade::test::next_symbol<palisade::test::PwritevFn>("pwritev");
  if (!palisade::test::any_tracked.load()) return f(fd, iov, count, at);
  return sim_write(fd, gather(iov, count), at, [&] { return f(fd, iov, count, at); });
}

ssize_t pwritev64(int fd, const struct iovec* iov, int count, off_t at) {
  static const auto f = palisade::test::next_symbol<palisade::test::PwritevFn>("pwritev64");
  if (!palisade::test::any_tracked.load()) return f(fd, iov, count, at);
  return sim_write(fd, gather(iov, count), at, [&] { return f(fd, iov, count, at); });
}

int fdatasync(int fd) {
  static const auto f = palisade::test::next_symbol<SyncFn>("fdatasync");
  return sim_sync(fd, true, f);
}

int fsync(int fd) {
  static const auto f = palisade::test::next_symbol<SyncFn>("fsync");
  return sim_sync(fd, false, f);
}

}  // extern "C"
