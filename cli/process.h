// A child process (a daemon of a local cluster, or under test): spawned with argv, its output appended
// to a log file, killed with SIGKILL if still running when the object dies, and also when this
// process dies without destroying it (PR_SET_PDEATHSIG: strictly, when the thread that started it
// exits, so start long-lived children from a long-lived thread).
//
// A detached child (`palisade cluster up`) is in a session of its own, reads
// /dev/null, and outlives this process once release()d. One in a process group
// of its own is like a shell's job: a kill() to this process's group misses it.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace palisade::cli {

struct ProcessOptions {
  bool detached = false;
  bool own_process_group = false;  // its pid is its process group's id
};

class Process {
 public:
  // Starts argv[0] (a path) with its stdout and stderr appended to `log_path`.
  Process(std::vector<std::string> argv, std::string log_path, bool detached = false);
  Process(std::vector<std::string> argv, std::string log_path, ProcessOptions options);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig);
  // Waits up to `timeout_ms` for exit; the wait status, nullopt on timeout.
  std::optional<int> wait(int timeout_ms);
  // SIGKILL and reap.
  void kill();
  // Forgets the child: the destructor leaves it running. Only for a detached one.
  void release();
  const std::string& log_path() const { return log_path_; }
  std::string log() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_path_;
  bool detached_ = false;
  bool released_ = false;
};

// A TCP port on 127.0.0.1 that was free a moment ago, drawn from
// 10000..19999: below the ports the kernel gives outgoing connections.
int free_port();
// `n` endpoints tcp://127.0.0.1:PORT whose ports were free a moment ago and
// are distinct (free_port() twice may give one port twice).
std::vector<std::string> free_endpoints(int n);

// 127.0.0.1:`port` (0: any free port, when bound).
sockaddr_in loopback_address(int port);
// Whether a process listens on the port of a tcp://HOST:PORT endpoint on this
// machine now (false for other endpoints). TIME_WAIT leftovers do not count.
bool listening_on(const std::string& endpoint);

}  // namespace palisade::cli
