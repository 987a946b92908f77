// A whole palisade cluster on this machine: palisade-lockd nodes and
// palisade-replica daemons on free loopback ports, as child processes, with a
// cluster file and key in one directory. For `palisade cluster up`, the demo,
// benchmarks and the integration tests.
//
//   auto cluster = LocalCluster::start({.dir = "/tmp/c", .timing = fast});
//   LockClientOptions o;
//   o.nodes = cluster.value()->lockd_endpoints();
//   ...
//   cluster.value()->lockd(*cluster.value()->master_id()).kill();
//
// Layout of `dir`: cluster.toml, cluster.key (mode 0600), lockd-ID/ and
// replica-I/ (data directories), lockd-ID.log and replica-I.log (each daemon's
// output, appended to across restarts); for a secure cluster, keys/ with a key
// file per daemon (lockd-ID.key, replica-I.key) and admin.key, the one the
// command line and this class connect with. The lockd ids are the cluster
// file's (`palisade cluster add` and `remove` change them); a lockd node with
// no data of its own while another has some was added to a group that ran,
// and starts with --join.
//
// Children are started from the calling thread and die with it (cli::Process:
// PR_SET_PDEATHSIG), so start and restart them from a long-lived thread.
// Thread safety: one thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cluster_access.h"
#include "config/cluster_config.h"
#include "palisade/credentials.h"
#include "wire/lock_protocol.h"
#include "palisade/status.h"
#include "cli/process.h"

namespace zmq {
class context_t;
}

namespace palisade::cli {

// The palisade-lockd binary beside the running program (same directory, or
// ../lockgroup/ in a build tree), else "palisade-lockd" from PATH.
std::string sibling_lockd_binary();

// Short leases, for the demo and tests: a paused holder loses its lock within
// seconds, and a new master is elected within about two.
ClusterTiming short_lease_timing();

// A daemon started by an earlier process: its name, pid and start time (field
// 22 of /proc/PID/stat, which tells it from a later process with its pid).
struct AdoptedDaemon {
  std::string name;
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string endpoint;
};

struct LocalClusterOptions {
  std::string dir;  // created if missing; should be empty (its data dirs are reused as they are)
  int lockd = 3;    // 1..7 lock group nodes, ids 1..lockd
  int replicas = 3;
  std::string lockd_binary;    // empty: sibling_lockd_binary()
  std::string replica_binary;  // empty: sibling_replica_binary()
  std::string group = "local";  // the lock group's id, in every sequencer
  ClusterTiming timing;
  int read_quorum = 0;   // 0: a majority (written to the cluster file only when set)
  int write_quorum = 0;
  // Replicas get --cluster and so verify the sequencer of every fenced write.
  // False: no key for them, they run --insecure: fenced writes are not authenticated.
  bool verify_sequencers = true;
  // CurveZMQ on every link (docs/security.md): a key pair per daemon and one
  // for identity "admin" under dir/keys, listed in the cluster file. False:
  // plaintext links. A reused cluster file decides for itself.
  bool secure = false;
  std::vector<std::string> lockd_args;    // extra flags for every lockd, e.g. {"--snapshot-every", "20"}
  std::vector<std::string> replica_args;  // extra flags for every replica
  std::string log_level = "info";
  std::string log_format;  // the daemons' --log-format (text, json); empty: their default
  // Every daemon serves metrics, /healthz and /readyz (--metrics-listen) on
  // 127.0.0.1: with base_port, on the ports after the cluster's (base_port +
  // daemons + i, lockd nodes first); else on free ports. Daemon::metrics_address().
  bool metrics = false;
  // 0: free ports. Else lockd nodes listen on base_port, base_port+1, ... and
  // the replicas on the ports after them.
  int base_port = 0;
  // When dir/cluster.toml exists, start the cluster it describes (its nodes,
  // ports, key and timing; lockd, replicas, base_port and timing above are
  // ignored) on the data already in dir: a cluster stopped and started again.
  bool reuse_cluster_file = false;
  // Daemons in sessions of their own that outlive this process after release().
  bool detached = false;
  // Daemons of this cluster still running from an earlier detached start (as
  // recorded in DIR/daemons by `palisade cluster up`): start() adopts each one
  // whose name ("lockd-2", "replica-0") and endpoint match the cluster file
  // instead of starting it again, and waits for it as for the others.
  // BadRequest when one matches no daemon of the cluster file.
  std::vector<AdoptedDaemon> adopt;
  // start() fails when the cluster is not healthy by then.
  std::chrono::milliseconds start_timeout{20000};
};

// One daemon of the cluster: its command line, endpoint and data dir stay the
// same across restarts.
class Daemon {
 public:
  // `probe(timeout_ms)`: whether the daemon answered a request within the timeout.
  Daemon(std::string name, std::vector<std::string> argv, std::string endpoint, std::string data_dir,
         std::string log_path, std::function<bool(int)> probe);
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& name() const { return name_; }  // "lockd-2", "replica-0"
  const std::string& endpoint() const { return endpoint_; }
  const std::string& data_dir() const { return data_dir_; }
  const std::string& log_path() const { return log_path_; }
  const std::vector<std::string>& argv() const { return argv_; }
  // HOST:PORT of its --metrics-listen (an adopted daemon's: the one it runs
  // with); empty without one.
  std::string metrics_address() const;
  // -1 when not started (nor adopted).
  pid_t pid() const { return process_ ? process_->pid() : adopted_ ? adopted_->pid : -1; }
  // Started (or adopted) and not exited (a paused daemon is running).
  bool running();
  // Takes over this daemon running from an earlier start, by pid and start
  // time: running() while that process lives, start() leaves it be, and
  // LocalCluster's destructor does not kill it (it is not ours to end on a
  // failed start). paused() says whether it is stopped now. A later start()
  // after it exited starts a child of our own.
  void adopt(pid_t pid, uint64_t start_time);
  // Whether the current run is an adopted one (not a child of this process).
  bool adopted() const { return !process_ && adopted_.has_value(); }
  // Sends `sig` to the running daemon (adopted or not); no-op when not running.
  void signal(int sig);
  bool paused() const { return paused_; }
  // Its output so far (every run).
  std::string log() const;
  // The process of the current run; null before the first start.
  Process* process() { return process_.get(); }

  // Starts it (when not running) without waiting; `detached` as for Process.
  void start(bool detached = false);
  // Starts it when not running and waits until it answers. Unavailable (with
  // the end of its log) when it exits or does not answer within `timeout`.
  Status start_and_wait(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits until it answers; Unavailable as above.
  Status wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGKILL and reap (a crash: nothing is flushed). No-op when not running.
  void kill();
  // SIGTERM, then SIGKILL after `grace`: a clean stop.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
  // SIGSTOP / SIGCONT: a paused process, as in a long GC pause.
  void pause();
  void resume();
  // kill(), then start_and_wait() on the same data dir and endpoint.
  Status restart(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  std::string name_;
  std::vector<std::string> argv_;
  std::string endpoint_;
  std::string data_dir_;
  std::string log_path_;
  std::function<bool(int)> probe_;
  std::unique_ptr<Process> process_;
  struct Adopted {
    pid_t pid = 0;
    uint64_t start_time = 0;
  };
  std::optional<Adopted> adopted_;  // the run adopt() took over; reset by start()
  bool paused_ = false;
};

// The name a local cluster gives the replica at `endpoint`, `index` of the
// file's [[replica]] entries (the set's, then the spares'): the identity it
// serves as, so that it keeps its name, data directory and log when entries
// before it leave (`cluster replace`); without one (a cluster started
// --insecure), replica-INDEX.
std::string local_replica_name(const ClusterConfig& config, const std::string& endpoint, size_t index);

class LocalCluster {
 public:
  // Writes dir/cluster.toml and dir/cluster.key, starts every daemon and
  // returns once every replica answers a ping and a lockd master is elected.
  // BadRequest for bad options; StorageError when the files cannot be written;
  // Unavailable (with the end of the daemons' logs) when the cluster does not
  // become healthy within options.start_timeout. Nothing it started is left
  // running on failure (adopted daemons are left as they were).
  static Result<std::unique_ptr<LocalCluster>> start(LocalClusterOptions options);
  // The cluster of dir/cluster.toml as it is now, started earlier and
  // detached (`palisade cluster add` starts a node of it): nothing is started,
  // and only options.adopt adopted. BadRequest when dir holds no cluster file.
  static Result<std::unique_ptr<LocalCluster>> open(LocalClusterOptions options);
  // Kills every daemon it started that is still running (SIGKILL), unless
  // release()d; adopted daemons are left running.
  ~LocalCluster();
  // Leaves a detached cluster's daemons running when this object dies.
  void release();
  // Stops every daemon cleanly (SIGTERM; SIGKILL after `grace`), lockd nodes first.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // As read back from the cluster file (key_file absolute).
  const ClusterConfig& config() const { return config_; }
  const LocalClusterOptions& options() const { return options_; }
  const std::string& cluster_file() const { return cluster_file_; }
  const std::string& key_file() const { return config_.key_file; }
  // A secure cluster's: what its admin connects with (dir/keys/admin.key); else nullopt.
  const std::optional<Credentials>& credentials() const { return credentials_; }
  ClusterAccess access() const { return {config_, credentials_}; }
  // A secure cluster's admin key file (dir/keys/admin.key); else empty.
  std::string admin_key_file() const;
  std::vector<std::string> lockd_endpoints() const;
  std::vector<std::string> replica_endpoints() const;

  // Lock group node `id` (of the cluster file); throws std::out_of_range for another id.
  Daemon& lockd(uint32_t id);
  std::vector<uint32_t> lockd_ids() const;
  // Replica `index` (0..replicas-1); throws std::out_of_range for another index.
  Daemon& replica(size_t index);
  size_t replica_count() const { return replicas_.size(); }
  // A daemon by name: lockd-ID, or a replica's (local_replica_name), the
  // spares' too, which the cluster does not start; null when it has none.
  Daemon* daemon(std::string_view name);

  // Asks every running, unpaused lockd `find_master`: the id of the node that
  // answers as master, nullopt when none does within `timeout`. (Should two
  // answer, the one with the newer epoch.)
  std::optional<uint32_t> master_id(std::chrono::milliseconds timeout = std::chrono::milliseconds(500));
  // Every node that answers `find_master` as master within `timeout`, with its
  // epoch: never more than one in a healthy group.
  struct MasterAnswer {
    uint32_t id = 0;
    uint64_t epoch = 0;
  };
  std::vector<MasterAnswer> masters(std::chrono::milliseconds timeout = std::chrono::milliseconds(500));
  // Asks until a master is elected: its id, nullopt after `timeout`.
  std::optional<uint32_t> wait_for_master(std::chrono::milliseconds timeout);
  // Asks until a master other than `old_master` is elected (after killing or
  // pausing it): its id, nullopt after `timeout`.
  std::optional<uint32_t> wait_for_master_other_than(uint32_t old_master, std::chrono::milliseconds timeout);

  // Sends one request to lockd `id` and returns its reply; nullopt when none
  // comes within `timeout` (or the node is not running or paused).
  std::optional<wire::LockReply> call_lockd(uint32_t id, const wire::LockRequestBody& request,
                                            std::chrono::milliseconds timeout = std::chrono::milliseconds(500));
  // lock_status of node `id`: its role, applied slot, sessions and locks.
  std::optional<wire::LockReply> lock_status(uint32_t id,
                                             std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

  // The ids of lockd nodes that are running and not paused.
  std::vector<uint32_t> live_lockd_ids();
  // Every daemon's log, for failure messages; `tail_lines` > 0 keeps each one's last lines.
  std::string logs(size_t tail_lines = 0) const;

 private:
  explicit LocalCluster(LocalClusterOptions options);
  // The cluster file (written when new), credentials, and a Daemon for each
  // daemon it lists, adopted or not yet started.
  Status prepare();
  // prepare(), then starts every daemon not adopted and waits until healthy.
  Status launch();
  // A new key and a cluster file from the options.
  Status write_cluster_files();

  LocalClusterOptions options_;
  std::shared_ptr<zmq::context_t> ctx_;  // for probes and calls; shared with the daemons' probes
  std::string cluster_file_;
  ClusterConfig config_;
  std::optional<Credentials> credentials_;
  std::vector<std::unique_ptr<Daemon>> lockd_;  // as config_.lockd
  std::vector<std::unique_ptr<Daemon>> replicas_;  // as config_.replicas
  std::vector<std::unique_ptr<Daemon>> spares_;  // as config_.spare_replicas: never started by launch()
  bool released_ = false;
};

}  // namespace palisade::cli
