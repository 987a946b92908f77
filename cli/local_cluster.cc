#include "cli/local_cluster.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <zmq.hpp>

#include "client/replica_connection.h"
#include "auth/cluster_key.h"
#include "auth/sequencer_signer.h"
#include "transport/transport.h"
#include "cli/daemon_records.h"
#include "cli/files.h"
#include "cli/local_cluster_file.h"
#include "transport/lockd_call.h"
#include "config/cluster_keys.h"
#include "cli/replica_process.h"

namespace palisade::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, left));
}

// The last `lines` lines of a text (all of it when 0).
std::string tail(const std::string& text, size_t lines) {
  if (lines == 0) return text;
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (size_t n = 0; n < lines && pos > 0; ++n) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos + 1);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A name without a slash is looked up in PATH (Process uses execv, which does not).
std::optional<std::string> resolve_binary(const std::string& binary) {
  if (binary.find('/') != std::string::npos) {
    if (access(binary.c_str(), X_OK) == 0) return binary;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + binary;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

std::string admin_key_path(const std::string& dir) { return dir + "/keys/admin.key"; }

// A key pair for every daemon of `config` and for "admin", in dir/keys; each
// listed in `config` as an identity, with its role.
Status write_keys(const std::string& dir, ClusterConfig& config) {
  std::error_code ec;
  fs::create_directories(dir + "/keys", ec);
  if (ec) return Status(Code::kStorageError, "cannot create " + dir + "/keys: " + ec.message());
  fs::permissions(dir + "/keys", fs::perms::owner_all, ec);
  auto add = [&](const std::string& name, const std::string& role, const std::string& endpoint) {
    auto identity = write_daemon_key(dir, name, role);
    if (!identity.is_ok()) return identity.status();
    config.identities.push_back(std::move(identity).value());
    if (!endpoint.empty()) config.daemon_identity[endpoint] = name;
    return Status::ok();
  };
  for (const LockdNode& n : config.lockd) {
    if (Status s = add("lockd-" + std::to_string(n.id), "lockd", n.endpoint); !s.is_ok()) return s;
  }
  for (size_t i = 0; i < config.replicas.size(); ++i) {
    if (Status s = add("replica-" + std::to_string(i), "replica", config.replicas[i]); !s.is_ok()) return s;
  }
  return add("admin", "admin", "");
}

}  // namespace

std::string sibling_lockd_binary() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto candidate : {self.parent_path() / "palisade-lockd", self.parent_path() / "../lockgroup/palisade-lockd"}) {
      if (access(candidate.c_str(), X_OK) == 0) return fs::weakly_canonical(candidate).string();
    }
  }
  return "palisade-lockd";
}

ClusterTiming short_lease_timing() {
  ClusterTiming t;
  t.session_lease_ms = 3000;
  t.client_grace_ms = 10000;
  t.master_lease_ms = 1500;
  t.heartbeat_ms = 200;
  t.election_timeout_ms = 500;
  return t;
}

// ---- Daemon ----

Daemon::Daemon(std::string name, std::vector<std::string> argv, std::string endpoint, std::string data_dir,
               std::string log_path, std::function<bool(int)> probe)
    : name_(std::move(name)),
      argv_(std::move(argv)),
      endpoint_(std::move(endpoint)),
      data_dir_(std::move(data_dir)),
      log_path_(std::move(log_path)),
      probe_(std::move(probe)) {}

std::string Daemon::metrics_address() const {
  if (adopted_) return metrics_address_of(adopted_->pid);  // started by an earlier run, with its own flags
  auto flag = std::find(argv_.begin(), argv_.end(), "--metrics-listen");
  return flag != argv_.end() && flag + 1 != argv_.end() ? *(flag + 1) : std::string();
}

bool Daemon::running() {
  if (process_ != nullptr) return process_->running();
  return adopted_ && process_start_time(adopted_->pid) == adopted_->start_time;
}

void Daemon::adopt(pid_t pid, uint64_t start_time) {
  process_.reset();
  adopted_ = Adopted{pid, start_time};
  paused_ = is_paused({.name = name_, .pid = pid, .start_time = start_time, .endpoint = endpoint_});
}

void Daemon::signal(int sig) {
  if (!running()) return;
  if (process_ != nullptr) {
    process_->signal(sig);
  } else {
    ::kill(adopted_->pid, sig);
  }
}

std::string Daemon::log() const { return read_text(log_path_); }

void Daemon::start(bool detached) {
  if (running()) return;
  paused_ = false;
  adopted_.reset();
  process_ = std::make_unique<Process>(argv_, log_path_, detached);
}

Status Daemon::start_and_wait(milliseconds timeout) {
  start();
  return wait_ready(timeout);
}

Status Daemon::wait_ready(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (!running()) {
      std::string how = process_ != nullptr ? describe_exit(*process_->wait(0))
                        : adopted_          ? "exited"
                                            : "was never started";
      return Status(Code::kUnavailable, name_ + " " + how + "; its log ends:\n" + tail(log(), 30));
    }
    if (!paused_ && probe_(std::clamp(ms_left(deadline), 1, 200))) return Status::ok();
    if (Clock::now() >= deadline) {
      return Status(Code::kUnavailable, name_ + " did not answer on " + endpoint_ + " within " +
                                            std::to_string(timeout.count()) + " ms; its log ends:\n" +
                                            tail(log(), 30));
    }
    if (paused_) std::this_thread::sleep_for(milliseconds(20));
  }
}

namespace {

// An adopted daemon is not our child: we cannot reap it, only watch it go.
bool wait_gone(Daemon& d, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (d.running()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

}  // namespace

void Daemon::kill() {
  if (process_ != nullptr) {
    process_->kill();
  } else if (running()) {
    ::kill(adopted_->pid, SIGKILL);
    wait_gone(*this, milliseconds(5000));
  }
  paused_ = false;
}

void Daemon::stop(milliseconds grace) {
  if (!running()) return;
  if (paused_) resume();
  signal(SIGTERM);
  const bool gone = process_ != nullptr ? process_->wait(static_cast<int>(grace.count())).has_value()
                                        : wait_gone(*this, grace);
  if (!gone) kill();
  paused_ = false;
}

void Daemon::pause() {
  if (!running()) return;
  signal(SIGSTOP);
  paused_ = true;
}

void Daemon::resume() {
  if (!running()) return;
  signal(SIGCONT);
  paused_ = false;
}

Status Daemon::restart(milliseconds timeout) {
  kill();
  return start_and_wait(timeout);
}

// ---- LocalCluster ----

LocalCluster::LocalCluster(LocalClusterOptions options)
    : options_(std::move(options)), ctx_(std::make_shared<zmq::context_t>(1)) {}

LocalCluster::~LocalCluster() {
  if (released_) return;
  for (const auto* list : {&lockd_, &replicas_, &spares_}) {
    for (const auto& d : *list) {
      if (!d->adopted()) d->kill();
    }
  }
}

void LocalCluster::release() {
  if (!options_.detached) return;
  released_ = true;
  for (const auto* list : {&lockd_, &replicas_, &spares_}) {
    for (const auto& d : *list) {
      if (d->process() != nullptr) d->process()->release();
    }
  }
}

void LocalCluster::stop(milliseconds grace) {
  for (const auto* list : {&lockd_, &replicas_, &spares_}) {
    for (const auto& d : *list) {
      if (!d->running()) continue;
      if (d->paused()) d->resume();
      d->signal(SIGTERM);
    }
  }
  const auto deadline = Clock::now() + grace;
  for (const auto* list : {&lockd_, &replicas_, &spares_}) {
    for (const auto& d : *list) d->stop(milliseconds(ms_left(deadline)));
  }
}

namespace {

// The binaries found and the directory absolute; BadRequest when a binary is missing.
Status complete(LocalClusterOptions& options) {
  if (options.lockd_binary.empty()) options.lockd_binary = sibling_lockd_binary();
  if (options.replica_binary.empty()) options.replica_binary = sibling_replica_binary();
  for (std::string* binary : {&options.lockd_binary, &options.replica_binary}) {
    auto found = resolve_binary(*binary);
    if (!found) return Status(Code::kBadRequest, "cannot find the executable " + *binary);
    *binary = *found;
  }
  std::error_code ec;
  options.dir = fs::absolute(options.dir, ec).lexically_normal().string();
  if (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<LocalCluster>> LocalCluster::start(LocalClusterOptions options) {
  if (options.dir.empty()) return Status(Code::kBadRequest, "the cluster needs a directory");
  if (options.lockd < 1 || options.lockd > 7) {
    return Status(Code::kBadRequest, "a lock group has 1..7 nodes, not " + std::to_string(options.lockd));
  }
  if (options.replicas < 1) return Status(Code::kBadRequest, "the cluster needs at least one replica");
  const int ports = (options.lockd + options.replicas) * (options.metrics ? 2 : 1);
  if (options.base_port != 0 && (options.base_port < 1024 || options.base_port + ports > 65536)) {
    return Status(Code::kBadRequest, "the base port must leave room for every node in 1024..65535, not " +
                                         std::to_string(options.base_port));
  }
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) return Status(Code::kStorageError, "cannot create " + options.dir + ": " + ec.message());
  if (Status s = complete(options); !s.is_ok()) return s;

  std::unique_ptr<LocalCluster> cluster(new LocalCluster(std::move(options)));
  Status launched = cluster->launch();
  if (!launched.is_ok()) return launched;  // the destructor kills what started
  return cluster;
}

Result<std::unique_ptr<LocalCluster>> LocalCluster::open(LocalClusterOptions options) {
  if (!fs::exists(options.dir + "/cluster.toml")) {
    return Status(Code::kBadRequest, "no cluster file in " + options.dir);
  }
  options.reuse_cluster_file = true;
  if (Status s = complete(options); !s.is_ok()) return s;
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(std::move(options)));
  if (Status s = cluster->prepare(); !s.is_ok()) return s;
  return cluster;
}

Status LocalCluster::prepare() {
  const LocalClusterOptions& o = options_;
  cluster_file_ = o.dir + "/cluster.toml";
  if (!o.reuse_cluster_file || !fs::exists(cluster_file_)) {
    if (Status s = write_cluster_files(); !s.is_ok()) return s;
  }
  auto loaded = load_cluster_file(cluster_file_);
  if (!loaded.is_ok()) return Status(Code::kBadRequest, "bad cluster options: " + loaded.status().message());
  config_ = std::move(loaded).value();
  const bool secure = !config_.identities.empty();
  if (secure) {
    auto credentials = load_client_credentials(config_, admin_key_path(o.dir));
    if (!credentials.is_ok()) return credentials.status();
    credentials_ = std::move(credentials).value();
  }
  // Each daemon's key pair; on a plaintext cluster, --insecure, which daemons
  // need to serve plaintext.
  auto key_args = [&](const std::string& name) {
    return secure ? std::vector<std::string>{"--key", o.dir + "/keys/" + name + ".key"}
                  : std::vector<std::string>{"--insecure"};
  };

  // --metrics-listen: with base_port, on the ports after the cluster's own
  // (lockd nodes first, as in the cluster file); else on ports free a moment
  // ago, apart from the cluster's own.
  const size_t daemons = config_.replicas.size() + config_.lockd.size() + config_.spare_replicas.size();
  std::vector<std::string> metrics_ports;
  if (o.metrics && o.base_port != 0) {
    for (size_t i = 0; i < daemons; ++i) {
      metrics_ports.push_back("127.0.0.1:" + std::to_string(o.base_port + static_cast<int>(daemons + i)));
    }
  } else if (o.metrics) {
    for (const std::string& ep : free_endpoints(static_cast<int>(2 * daemons))) {
      const bool taken = std::ranges::find(config_.replicas, ep) != config_.replicas.end() ||
                         std::ranges::any_of(config_.lockd, [&](const LockdNode& n) { return n.endpoint == ep; });
      if (!taken && metrics_ports.size() < daemons)
        metrics_ports.push_back(ep.substr(std::string_view("tcp://").size()));
    }
  }
  // The flags of the daemon at `index` in the cluster file's order.
  auto metrics_args = [&](size_t index) {
    if (index >= metrics_ports.size()) return std::vector<std::string>{};
    return std::vector<std::string>{"--metrics-listen", metrics_ports[index]};
  };
  auto log_args = [&] {
    std::vector<std::string> args = {"--log-level", o.log_level};
    if (!o.log_format.empty()) args.insert(args.end(), {"--log-format", o.log_format});
    return args;
  };

  std::shared_ptr<zmq::context_t> ctx = ctx_;
  // Replicas, then spares; metrics after the lockd nodes', in the file's order.
  auto make_replica = [&](const std::string& ep, size_t index) {
    const std::string name = local_replica_name(config_, ep, index);
    std::vector<std::string> argv = {o.replica_binary, "--data-dir", o.dir + "/" + name, "--listen", ep};
    if (o.verify_sequencers) {
      argv.insert(argv.end(), {"--cluster", cluster_file_});
    } else {
      if (!config_.cluster_id.empty()) argv.insert(argv.end(), {"--cluster-id", cluster_id_hex(config_.cluster_id)});
    }
    for (std::string& a : log_args()) argv.push_back(std::move(a));
    for (std::string& a : key_args(name)) argv.push_back(std::move(a));
    for (std::string& a : metrics_args(config_.lockd.size() + index)) argv.push_back(std::move(a));
    argv.insert(argv.end(), o.replica_args.begin(), o.replica_args.end());
    // Answering means answering as this cluster's: a daemon of another
    // cluster on the same port answers wrong_cluster.
    auto probe = [ctx, ep, id = config_.cluster_id, credentials = credentials_](int timeout_ms) {
      client::ReplicaConnection conn(*ctx, ep, credentials);
      auto reply = conn.call({.id = 0, .body = wire::PingRequest{}, .cluster = id}, timeout_ms);
      return reply.is_ok() && reply.value().status.is_ok();
    };
    return std::make_unique<Daemon>(name, std::move(argv), ep, o.dir + "/" + name, o.dir + "/" + name + ".log", probe);
  };
  for (const std::string& ep : config_.replicas) replicas_.push_back(make_replica(ep, replicas_.size()));
  for (const std::string& ep : config_.spare_replicas) {
    spares_.push_back(make_replica(ep, replicas_.size() + spares_.size()));
  }
  // A node with no data of its own in a group that has run was added since
  // (`cluster add`): it joins, and becomes a member by a change of the
  // members. Without --join its first start would make it one of the
  // group's first members, beside the group that has them already.
  auto has_data = [&](const LockdNode& n) {
    return fs::exists(o.dir + "/lockd-" + std::to_string(n.id) + "/data.mdb");
  };
  const bool group_has_run = std::ranges::any_of(config_.lockd, has_data);
  for (const LockdNode& node : config_.lockd) {
    const std::string name = "lockd-" + std::to_string(node.id);
    std::vector<std::string> argv = {o.lockd_binary, "--id",       std::to_string(node.id), "--cluster",
                                     cluster_file_,  "--data-dir", o.dir + "/" + name};
    if (group_has_run && !has_data(node)) argv.push_back("--join");
    for (std::string& a : log_args()) argv.push_back(std::move(a));
    for (std::string& a : key_args(name)) argv.push_back(std::move(a));
    for (std::string& a : metrics_args(lockd_.size())) argv.push_back(std::move(a));
    argv.insert(argv.end(), o.lockd_args.begin(), o.lockd_args.end());
    const std::string ep = node.endpoint;
    auto probe = [ctx, ep, id = config_.cluster_id, credentials = credentials_](int timeout_ms) {
      auto reply = transport::call_lockd_endpoint(*ctx, ep, wire::LockStatusRequest{}, milliseconds(timeout_ms), id,
                                                  credentials);
      return reply.has_value() && reply->status.is_ok();
    };
    lockd_.push_back(
        std::make_unique<Daemon>(name, std::move(argv), ep, o.dir + "/" + name, o.dir + "/" + name + ".log", probe));
  }

  for (const AdoptedDaemon& a : o.adopt) {
    Daemon* found = daemon(a.name);
    if (found == nullptr || found->endpoint() != a.endpoint) {
      return Status(Code::kBadRequest, a.name + " on " + a.endpoint + " (pid " + std::to_string(a.pid) +
                                           ") is not a daemon of " + cluster_file_);
    }
    found->adopt(a.pid, a.start_time);
  }
  return Status::ok();
}

Status LocalCluster::launch() {
  if (Status s = prepare(); !s.is_ok()) return s;
  const LocalClusterOptions& o = options_;

  // A daemon that cannot listen exits, but another process on its port would
  // answer for it, and the cluster file would lead clients there.
  for (const auto* list : {&lockd_, &replicas_}) {
    for (const auto& d : *list) {
      if (d->running()) continue;  // adopted
      if (listening_on(d->endpoint())) {
        return Status(Code::kBadRequest, d->name() + " cannot listen on " + d->endpoint() +
                                             ": another process listens there");
      }
    }
  }
  for (auto& d : replicas_) d->start(o.detached);
  for (auto& d : lockd_) d->start(o.detached);

  // A paused adopted daemon cannot answer until someone resumes it: not waited for.
  const auto deadline = Clock::now() + o.start_timeout;
  for (auto& d : replicas_) {
    if (d->adopted() && d->paused()) continue;
    if (Status s = d->wait_ready(milliseconds(ms_left(deadline))); !s.is_ok()) return s;
  }
  for (auto& d : lockd_) {
    if (d->adopted() && d->paused()) continue;
    if (Status s = d->wait_ready(milliseconds(ms_left(deadline))); !s.is_ok()) return s;
  }
  for (;;) {
    for (auto& d : lockd_) {
      if (!d->running()) return d->wait_ready(milliseconds(0));  // says how it exited
    }
    if (master_id(milliseconds(std::clamp(ms_left(deadline), 1, 300)))) break;
    if (Clock::now() >= deadline) {
      return Status(Code::kUnavailable, "no lockd master was elected within " +
                                            std::to_string(o.start_timeout.count()) + " ms; the logs end:\n" +
                                            logs(20));
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  // Each answered while alive; one that exited since (it could not listen, or
  // lock its data directory) must not be reported as started.
  for (const auto* list : {&replicas_, &lockd_}) {
    for (const auto& d : *list) {
      if (!d->running()) return d->wait_ready(milliseconds(0));  // says how it exited
    }
  }
  return Status::ok();
}

Status LocalCluster::write_cluster_files() {
  const LocalClusterOptions& o = options_;
  // Ports: consecutive from base_port, or free a moment ago and distinct.
  const std::vector<std::string> free =
      o.base_port != 0 ? std::vector<std::string>{} : free_endpoints(o.lockd + o.replicas);
  size_t next = 0;
  auto endpoint = [&] {
    const size_t i = next++;
    return o.base_port != 0 ? "tcp://127.0.0.1:" + std::to_string(o.base_port + static_cast<int>(i)) : free[i];
  };
  ClusterConfig config;
  config.cluster_id = new_cluster_id();
  config.group = o.group;
  config.key_file = "cluster.key";  // relative to the cluster file: the directory can be moved
  for (int i = 1; i <= o.lockd; ++i) config.lockd.push_back({static_cast<uint32_t>(i), endpoint()});
  for (int i = 0; i < o.replicas; ++i) config.replicas.push_back(endpoint());
  config.read_quorum = o.read_quorum;
  config.write_quorum = o.write_quorum;
  config.timing = o.timing;
  const ClusterKey key = ClusterKey::generate();
  config.sequencer_public_key = SequencerSigner(key, config.group).public_key();
  // Two secrets: the lock group's, and the replicas' (receipts, repair seals),
  // so that no replica host holds what signs sequencers.
  config.replica_key_file = "replica.key";
  if (Status s = write_file(o.dir + "/cluster.key", key.to_hex() + "\n", 0600); !s.is_ok()) return s;
  if (Status s = write_file(o.dir + "/replica.key", ClusterKey::generate().to_hex() + "\n", 0600); !s.is_ok()) {
    return s;
  }
  if (o.secure) {
    if (Status s = write_keys(o.dir, config); !s.is_ok()) return s;
  }
  return write_file(cluster_file_, format_cluster_config(config), 0644);
}

std::string LocalCluster::admin_key_file() const { return credentials_ ? admin_key_path(options_.dir) : ""; }

std::vector<std::string> LocalCluster::lockd_endpoints() const {
  std::vector<std::string> out;
  for (const LockdNode& n : config_.lockd) out.push_back(n.endpoint);
  return out;
}

std::vector<std::string> LocalCluster::replica_endpoints() const { return config_.replicas; }

Daemon& LocalCluster::lockd(uint32_t id) {
  for (size_t i = 0; i < config_.lockd.size(); ++i) {
    if (config_.lockd[i].id == id) return *lockd_[i];
  }
  throw std::out_of_range("no lockd node " + std::to_string(id));
}

std::vector<uint32_t> LocalCluster::lockd_ids() const {
  std::vector<uint32_t> ids;
  for (const LockdNode& n : config_.lockd) ids.push_back(n.id);
  return ids;
}

Daemon* LocalCluster::daemon(std::string_view name) {
  for (const auto* list : {&lockd_, &replicas_, &spares_}) {
    for (const auto& d : *list) {
      if (d->name() == name) return d.get();
    }
  }
  return nullptr;
}

std::string local_replica_name(const ClusterConfig& config, const std::string& endpoint, size_t index) {
  auto identity = config.daemon_identity.find(endpoint);
  return identity != config.daemon_identity.end() ? identity->second : "replica-" + std::to_string(index);
}

Daemon& LocalCluster::replica(size_t index) {
  if (index >= replicas_.size()) throw std::out_of_range("no replica " + std::to_string(index));
  return *replicas_[index];
}

std::vector<uint32_t> LocalCluster::live_lockd_ids() {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < lockd_.size(); ++i) {
    if (lockd_[i]->running() && !lockd_[i]->paused()) ids.push_back(config_.lockd[i].id);
  }
  return ids;
}

std::optional<wire::LockReply> LocalCluster::call_lockd(uint32_t id, const wire::LockRequestBody& request,
                                                        milliseconds timeout) {
  Daemon& d = lockd(id);
  if (!d.running() || d.paused()) return std::nullopt;
  return transport::call_lockd_endpoint(*ctx_, d.endpoint(), request, timeout, config_.cluster_id, credentials_);
}

std::optional<wire::LockReply> LocalCluster::lock_status(uint32_t id, milliseconds timeout) {
  return call_lockd(id, wire::LockStatusRequest{}, timeout);
}

std::vector<LocalCluster::MasterAnswer> LocalCluster::masters(milliseconds timeout) {
  // Asks every live node at once; the master answers ok, the others not_master.
  struct Asked {
    uint32_t id;
    uint64_t request_id;
    zmq::socket_t socket;
    bool answered = false;
  };
  std::deque<Asked> asked;
  std::vector<MasterAnswer> found;
  try {
    for (uint32_t id : live_lockd_ids()) {
      const std::string& endpoint = lockd(id).endpoint();
      Asked a{id, transport::next_lock_request_id(),
              transport::make_dealer(
                  *ctx_, endpoint, transport::dealer_options({.queue_until_connected = true}, credentials_, endpoint))};
      const std::string bytes = wire::encode_lock_request({.id = a.request_id, .body = wire::FindMasterRequest{}});
      if (transport::send(a.socket, zmq::buffer(bytes))) asked.push_back(std::move(a));
    }
    const auto deadline = Clock::now() + timeout;
    size_t waiting = asked.size();
    while (waiting > 0) {
      std::vector<zmq::pollitem_t> items;
      std::vector<Asked*> who;
      for (Asked& a : asked) {
        if (a.answered) continue;
        items.push_back({a.socket.handle(), 0, ZMQ_POLLIN, 0});
        who.push_back(&a);
      }
      // 0 early: a signal the CLI relays to a child; wait on until the deadline.
      if (transport::poll(items, milliseconds(ms_left(deadline))) == 0) {
        if (ms_left(deadline) == 0) break;
        continue;
      }
      for (size_t i = 0; i < items.size(); ++i) {
        if (!(items[i].revents & ZMQ_POLLIN)) continue;
        zmq::message_t msg;
        if (!transport::recv(who[i]->socket, msg)) continue;
        auto reply =
            wire::decode_lock_reply({static_cast<const char*>(msg.data()), msg.size()}, transport::kMaxLockReplyBytes);
        if (!reply.is_ok() || reply.value().id != who[i]->request_id) continue;
        who[i]->answered = true;
        --waiting;
        if (reply.value().status.is_ok()) found.push_back({who[i]->id, reply.value().epoch});
      }
    }
  } catch (const zmq::error_t&) {
  }
  return found;
}

std::optional<uint32_t> LocalCluster::master_id(milliseconds timeout) {
  std::optional<MasterAnswer> newest;
  for (const MasterAnswer& m : masters(timeout)) {
    if (!newest || m.epoch > newest->epoch) newest = m;
  }
  if (!newest) return std::nullopt;
  return newest->id;
}

std::optional<uint32_t> LocalCluster::wait_for_master(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto m = master_id(milliseconds(std::clamp(ms_left(deadline), 1, 300)))) return m;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

std::optional<uint32_t> LocalCluster::wait_for_master_other_than(uint32_t old_master, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto m = master_id(milliseconds(std::clamp(ms_left(deadline), 1, 300)));
    if (m && *m != old_master) return m;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

std::string LocalCluster::logs(size_t tail_lines) const {
  std::string all;
  for (const auto* list : {&lockd_, &replicas_}) {
    for (const auto& d : *list) {
      all += "---- " + d->name() + " (" + d->log_path() + ")\n" + tail(d->log(), tail_lines);
      if (!all.empty() && all.back() != '\n') all += "\n";
    }
  }
  return all;
}

}  // namespace palisade::cli
