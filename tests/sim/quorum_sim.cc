#include "tests/sim/quorum_sim.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "client/coordinator.h"
#include "client/replica_view.h"
#include "client/watch_state.h"
#include "tests/sim/replacer.h"
#include "tests/sim/replica_set.h"
#include "tests/sim/sim_links.h"
#include "tests/sim/watch_checker.h"

namespace palisade::sim {
namespace {

constexpr const char* kLock = "L";

// A prefix read a client made (a few keys a page, of a prefix of the keys).
struct Scan {
  std::string prefix;
  size_t limit = 0;
  uint64_t start_ms = 0;
};

struct Client {
  int node;  // its lane's: a new one for each replica set it moves to, as new sockets
  int index;
  std::unique_ptr<SkewedClock> physical;
  std::unique_ptr<HybridClock> clock;
  client::ReplicaView view;
  std::unique_ptr<SimLinks> links;
  std::unique_ptr<client::Lane> lane;  // the client's own, as QuorumStore drives it
  client::Coordinator& coordinator() { return lane->coordinator(); }
  uint64_t token = 0;  // the lock this client believes it holds, 0 for none
  int ops_left = 0;
  uint64_t tick_at = UINT64_MAX;
  // Operations in flight and where their records go.
  enum class Kind { kWrite, kFence, kRead, kScan, kWatchPage, kWatchFeed };
  std::map<client::OpId, std::pair<Kind, size_t>> ops;
  std::set<size_t> resent;  // write records sent again on a newer replica set
  int counter = 0;
  // broken_literal_fenced_rule: the client's write requests (by request id) and
  // the write records they are for, while the write is in flight.
  std::map<uint64_t, size_t> write_requests;
  size_t writing = SIZE_MAX;
};

// A watcher (watchers): rounds of prefix reads of every key ("key"), a few
// keys a page, through client::WatchState, as palisade::Watcher runs them.
struct SimWatcher {
  int client = 0;  // the Client whose lane it reads through
  client::WatchState state;
  std::map<std::string, client::KeyRead> now;  // what the round read so far
  std::string after;  // where the page in flight starts
  size_t limit = 1;
  uint64_t round_start = 0, page_start = 0;
  bool first = true;
  // watcher_feeds: the round's feed reads so far, and the versions they told.
  std::vector<bool> caught_up{};
  int feed_pages = 0;
  bool reread = false;  // the feeds were read again after a gap
  std::vector<WatchEvent> decided{};
};

class QuorumSim {
 public:
  explicit QuorumSim(const QuorumSimOptions& o)
      : o_(o),
        world_(o.seed, o.keep_trace),
        replicas_(world_, {.replicas = o.replicas + o.replacements,
                           .max_clock_offset_ms = o.max_clock_offset_ms,
                           .skip_fence_floor = o.broken_replicas_skip_fence_floor,
                           .writes_keep_floor = o.broken_writes_keep_floor,
                           .auth = std::nullopt,
                           .pending_as_committed = o.broken_replicas_pending_as_committed,
                           .hide_pending = o.broken_replicas_hide_pending,
                           .first_acks_without_storing = o.broken_replica_acks_without_storing,
                           .skip_checksum = o.broken_replicas_skip_checksum,
                           .forget_dropped = o.broken_replicas_forget_dropped,
                           .lmdb = o.lmdb_stores,
                           .lying_journal_sync = o.broken_lying_journal_sync,
                           .crashed_in_commit = [this](int i) { went_down(i); }}) {
    world_.faults() = o.faults;
    int quorum = o.replicas / 2 + 1;
    r_ = o.read_quorum != 0 ? o.read_quorum : quorum;
    w_ = o.write_quorum != 0 ? o.write_quorum : quorum;
    if (o.broken_quorums_do_not_intersect) r_ = std::max(1, o.replicas - w_);
    if (o.replacements > 0 && o.broken_quorums_do_not_intersect) {
      throw std::invalid_argument("replacements need quorums that intersect: a replica set record has them");
    }
    Status valid = client::validate(
        coordinator_options({.endpoints = sim_endpoints(o.replicas), .read_quorum = r_, .write_quorum = w_}));
    if (!valid.is_ok() && !o.broken_quorums_do_not_intersect) throw std::invalid_argument(valid.to_string());
    // World nodes: the replicas and spares, the clients, the replacer, then
    // the clients' lanes to later replica sets.
    const int replica_nodes = o.replicas + o.replacements;
    next_node_ = replica_nodes + o.clients + 1;
    for (int c = 0; c < o.clients + o.watchers; ++c) {
      Client cl;
      cl.index = c;
      cl.physical = std::make_unique<SkewedClock>(world_, offset());
      cl.clock = std::make_unique<HybridClock>(*cl.physical);
      cl.view = {.endpoints = sim_endpoints(o.replicas), .read_quorum = r_, .write_quorum = w_};
      cl.ops_left = c < o.clients ? o.ops_per_client : 0;
      clients_.push_back(std::move(cl));
      // Watchers' lanes take nodes after the ones every run has.
      wire_lane(c, c < o.clients ? replica_nodes + c : next_node_++);
    }
    for (int w = 0; w < o.watchers; ++w) {
      SimWatcher watcher;
      watcher.client = o.clients + w;
      watcher.state.broken_tells_new_keys_only = o.broken_watcher_tells_new_keys_only;
      watcher.state.broken_trusts_one_feed = o.broken_watcher_trusts_one_feed;
      watchers_.push_back(std::move(watcher));
    }
    if (o.replacements > 0) {
      replacer_ = std::make_unique<Replacer>(
          world_, replicas_, record_,
          Replacer::Options{.node = replica_nodes + o.clients,
                            .members = o.replicas,
                            .spares = o.replacements,
                            .read_quorum = r_,
                            .write_quorum = w_,
                            .adds_and_removes = o.adds_and_removes,
                            .broken_skip_paused_fill = o.broken_replacement_skips_paused_fill,
                            .broken_skip_pause = o.broken_replacement_skips_pause,
                            .broken_targets_skip_floors = o.broken_targets_skip_floors});
      replacer_->ended = [this] {
        if (!healed_) replacer_->change_later(world_.uniform(0, 3000));
      };
    }
  }

  QuorumSimResult run() {
    for (int c = 0; c < o_.clients; ++c) schedule_next_op(c, world_.uniform(0, 50));
    for (int w = 0; w < o_.watchers; ++w) schedule_watch_round(w);
    schedule_crash();
    if (replacer_) replacer_->change_later(world_.uniform(0, 3000));
    // Phase 1: the workload under faults.
    // A second at a time, or up to the next event when none is due in a second
    // (no crash checks, every client waiting on a long delay): never in place.
    while (!world_.idle() && !workload_done()) {
      world_.run(std::max(world_.now_ms() + 1000, world_.next_event_ms()));
    }
    // Phase 2: heal, let every message in flight land, then read every key.
    world_.faults() = NetworkFaults{0, 0, world_.faults().max_delay_ms, 0, 0};
    healed_ = true;
    if (replacer_) replacer_->stop();
    if (!replicas_.restart_all()) store_failures_.push_back(replicas_.why());
    for (Downtime& d : downtimes_) d.end_ms = std::min(d.end_ms, world_.now_ms());
    world_.run(UINT64_MAX);
    for (int k = 0; k < o_.keys; ++k) {
      start_read(0, key(k));
      world_.run(UINT64_MAX);
    }
    // A last round of each watcher: it must tell every key's final version.
    for (int w = 0; w < o_.watchers; ++w) {
      start_watch_round(w);
      world_.run(UINT64_MAX);
    }

    QuorumSimResult result;
    result.violations = check(history_);
    std::vector<uint64_t> feed_losses;  // a replica's feed is lost when it crashes
    for (const Downtime& d : downtimes_) feed_losses.push_back(d.start_ms);
    for (std::string& v : check_watches(history_, watch_rounds_, feed_losses))
      result.violations.push_back(std::move(v));
    result.watch_rounds = watch_rounds_.size();
    result.watch_rounds_failed = watch_rounds_failed_;
    for (const WatchRound& r : watch_rounds_) result.watch_events += r.events.size();
    for (const std::string& why : store_failures_) result.violations.push_back("store does not open: " + why);
    for (const std::string& v : invariant_violations_) result.violations.push_back(v);
    result.trace_hash = world_.trace_hash();
    result.trace = world_.trace();
    result.events = world_.events();
    result.bit_flips = bit_flips_;
    result.bit_flips_to_w = bit_flips_to_w_;
    result.bit_flips_skipped = bit_flips_skipped_;
    result.power_losses = replicas_.power_losses();
    result.power_losses_in_commit = replicas_.power_losses_in_commit();
    result.unsynced_writes_lost = replicas_.unsynced_writes_lost();
    if (replacer_) {
      result.replaced = static_cast<uint64_t>(replacer_->changed());
      result.added = static_cast<uint64_t>(replacer_->added());
      result.removed = static_cast<uint64_t>(replacer_->removed());
      result.replacements_abandoned = static_cast<uint64_t>(replacer_->abandoned());
    }
    result.views_followed = views_followed_;
    result.scans_ok = scans_done_;
    result.scans_failed = scans_failed_;
    for (const auto& w : history_.writes) {
      if (w.result == Code::kOk) ++result.writes_ok;
      else if (w.result == Code::kFenced) ++result.writes_fenced;
      else ++result.writes_unknown;
    }
    for (const auto& r : history_.reads) {
      (r.result == Code::kOk ? result.reads_ok : result.reads_failed)++;
      if (r.result != Code::kOk && replicas_up_throughout(r.start_ms, r.end_ms) >= r_) ++result.reads_failed_quorum_up;
    }
    result.history = std::move(history_);
    return result;
  }

 private:
  int64_t offset() {
    return static_cast<int64_t>(world_.uniform(0, 2 * o_.max_clock_offset_ms)) -
           static_cast<int64_t>(o_.max_clock_offset_ms);
  }
  std::string key(int k) const { return "key" + std::to_string(k); }
  bool workload_done() const {
    for (const Client& c : clients_) {
      if (c.ops_left > 0 || !c.ops.empty()) return false;
    }
    return true;
  }

  // ---- faults ----

  void schedule_crash() {
    if (healed_ || o_.crash_per_second <= 0) return;
    world_.at(1000, "crash check", [this] {
      if (healed_) return;
      if (world_.chance(o_.crash_per_second)) {
        int i = static_cast<int>(world_.uniform(0, replicas_.size() - 1));
        if (!replicas_.up(i)) {
        } else if (o_.lmdb_stores && world_.chance(0.5)) {
          replicas_.crash_in_next_commit(i, world_.uniform(1, 8));  // somewhere in its next commit or two
        } else {
          crash(i);
        }
      }
      if (world_.chance(o_.corrupt_per_second)) {
        int i = static_cast<int>(world_.uniform(0, replicas_.size() - 1));
        std::string k = key(static_cast<int>(world_.uniform(0, o_.keys - 1)));
        // Copies of k that are corrupt after the flip (flipping a corrupt copy may heal it: count it as before).
        const int copies = replicas_.corrupt_copies(k) + (replicas_.holds_corrupt(i, k) ? 0 : 1);
        if (o_.max_corrupt_copies > 0 && copies > o_.max_corrupt_copies) {
          ++bit_flips_skipped_;
          world_.record("no bit flip in replica " + std::to_string(i) + " key " + k + ": " +
                        std::to_string(o_.max_corrupt_copies) + " corrupt copies already");
        } else if (replicas_.corrupt(i, k)) {
          ++bit_flips_;
          if (copies >= w_) ++bit_flips_to_w_;
          world_.record("bit flip in replica " + std::to_string(i) + " key " + k);
        }
      }
      schedule_crash();
    });
  }

  void crash(int i) {
    replicas_.crash(i);
    went_down(i);
  }

  // Replica i crashed: it is down until a restart, a little later.
  void went_down(int i) {
    downtimes_.push_back({i, world_.now_ms(), UINT64_MAX});
    world_.at(world_.uniform(100, 10000), "restart replica " + std::to_string(i), [this, i] {
      if (!replicas_.up(i)) restarted(i);
    });
  }

  void restarted(int i) {
    if (!replicas_.restart(i)) {
      store_failures_.push_back(replicas_.why());
      return;
    }
    for (Downtime& d : downtimes_) {
      if (d.replica == i && d.end_ms == UINT64_MAX) d.end_ms = world_.now_ms();
    }
  }

  // Replicas of the first set that were up from start_ms to end_ms (with
  // replacements, the set a read used may have been another).
  int replicas_up_throughout(uint64_t start_ms, uint64_t end_ms) const {
    std::vector<bool> down(static_cast<size_t>(replicas_.size()), false);
    for (const Downtime& d : downtimes_) {
      if (d.start_ms <= end_ms && d.end_ms >= start_ms) down[static_cast<size_t>(d.replica)] = true;
    }
    return static_cast<int>(std::count(down.begin(), down.begin() + o_.replicas, false));
  }

  // ---- clients ----

  void client_receive(int c, int from, const std::string& bytes) {
    // The lane's index of the replica (a lane's replicas are the view's).
    const std::vector<std::string>& endpoints = clients_[c].view.endpoints;
    auto named = std::find(endpoints.begin(), endpoints.end(), sim_endpoint(from));
    if (named == endpoints.end()) return;
    const size_t replica = static_cast<size_t>(named - endpoints.begin());
    auto reply = wire::decode_reply(bytes, wire::Limits{});
    if (!reply.is_ok()) return;
    world_.record("client " + std::to_string(c) + " <- " + std::to_string(from) + " " + describe(reply.value()));
    if (o_.broken_literal_fenced_rule) {
      // The starting design's rule (docs/design-changes.md 2) applied as replies arrive: a
      // refusal while fewer than W replicas acknowledged decides Fenced.
      Code code = reply.value().status.code();
      auto it = clients_[c].write_requests.find(reply.value().id);
      if (it != clients_[c].write_requests.end()) {
        LiteralRule& rule = literal_[it->second];
        if (code == Code::kOk) rule.acked.insert(from);
        if ((code == Code::kFenced || code == Code::kStale) && static_cast<int>(rule.acked.size()) < w_) {
          rule.fenced = true;
        }
      }
    }
    clients_[c].lane->on_frame(replica, bytes, world_.now_ms());
    pump(c);
  }

  // Notes which write record a write request sent is for
  // (broken_literal_fenced_rule), and the timestamps it goes with
  // (replacements: a write sent again on a new set has a new one).
  void note_write_request(int c, const std::string& frame) {
    Client& cl = clients_[c];
    if ((!o_.broken_literal_fenced_rule && !replacer_) || cl.writing == SIZE_MAX) return;
    auto request = wire::decode_request(frame, wire::Limits{});
    if (!request.is_ok()) return;
    auto* w = std::get_if<wire::WriteRequest>(&request.value().body);
    if (w == nullptr || w->committed) return;
    if (o_.broken_literal_fenced_rule) cl.write_requests[request.value().id] = cl.writing;
    std::vector<FencedTimestamp>& attempts = history_.writes[cl.writing].attempts;
    if (std::find(attempts.begin(), attempts.end(), w->ts) == attempts.end()) attempts.push_back(w->ts);
  }

  client::CoordinatorOptions coordinator_options(const client::ReplicaView& view) const {
    client::CoordinatorOptions co{static_cast<int>(view.endpoints.size()), view.read_quorum, view.write_quorum, 2000,
                                  50};
    co.config = view.version;
    co.config_certificate = view.certificate;
    co.paused = view.paused;
    co.broken_skip_read_repair = o_.broken_skip_read_repair;
    co.broken_scan_trusts_listing = o_.broken_scan_trusts_listing;
    return co;
  }

  // Gives client c a lane to the replicas of its view, from world node `node`.
  void wire_lane(int c, int node) {
    Client& cl = clients_[c];
    std::vector<int> nodes;
    for (const std::string& e : cl.view.endpoints) nodes.push_back(sim_replica_node(e));
    cl.node = node;
    cl.links = std::make_unique<SimLinks>(world_, replicas_, node, nodes);
    cl.links->observe = [this, c](size_t, const std::string& frame) { note_write_request(c, frame); };
    cl.lane = std::make_unique<client::Lane>(*cl.links, cl.view.endpoints, coordinator_options(cl.view), *cl.clock,
                                             wire::Limits{});
    cl.tick_at = UINT64_MAX;
    world_.attach(node, [this, c, node](int from, const std::string& bytes) {
      if (clients_[c].node == node) client_receive(c, from, bytes);  // an old lane's replies are lost with it
    });
  }

  // Moves client c to the newest replica set that the certificates its
  // replicas handed back give, and sends its calls in flight again there (as
  // QuorumStore's I/O thread does). False when it stays.
  bool follow_view(int c) {
    Client& cl = clients_[c];
    if (!take_newer_view(*cl.lane, cl.view)) return false;
    ++views_followed_;
    world_.record("client " + std::to_string(c) + " moves to replica set version " + std::to_string(cl.view.version));
    wire_lane(c, next_node_++);
    std::map<client::OpId, std::pair<Client::Kind, size_t>> moved_ops;
    const uint64_t now = world_.now_ms();
    for (const auto& [op, what] : cl.ops) {
      const auto [kind, record] = what;
      client::OpId again = 0;
      if (kind == Client::Kind::kWrite) {
        const WriteRecord& w = history_.writes[record];
        cl.resent.insert(record);
        again = cl.coordinator().start_write(w.key, w.value, w.tombstone, Fence{w.lock, w.token}, now);
      } else if (kind == Client::Kind::kFence) {
        const FenceRecord& f = history_.fences[record];
        again = cl.coordinator().start_fence(Fence{f.lock, f.token}, now);
      } else if (kind == Client::Kind::kScan) {
        const Scan& s = scans_[record];
        again = cl.coordinator().start_scan(s.prefix, "", s.limit, now);
      } else if (kind == Client::Kind::kWatchPage) {
        const SimWatcher& w = watchers_[record];
        again = cl.coordinator().start_scan(kWatchPrefix, w.after, w.limit, now);
      } else if (kind == Client::Kind::kWatchFeed) {
        again = cl.coordinator().start_feed(kWatchPrefix, feed_positions(static_cast<int>(record)), now,
                                            watchers_[record].state.gap() || !watchers_[record].state.held().empty());
      } else {
        again = cl.coordinator().start_read(history_.reads[record].key, now);
      }
      moved_ops[again] = what;
    }
    cl.ops = std::move(moved_ops);
    return true;
  }

  // Sends what the lane wants sent, records what completed, re-arms its timer.
  void pump(int c) {
    Client& cl = clients_[c];
    std::vector<client::Completion> completed = cl.lane->flush(world_.now_ms());
    // The coordinator's invariants (debug builds abort on them; here the seed
    // is reported), each once per run.
    if (std::string problem = cl.coordinator().check_invariants();
        !problem.empty() && invariants_broken_.insert(problem).second) {
      invariant_violations_.push_back("client " + std::to_string(c) + "'s coordinator breaks an invariant: " + problem);
      world_.record(invariant_violations_.back());
    }
    for (auto& done : completed) complete(c, done);
    if (replacer_ && follow_view(c)) return pump(c);
    auto next = cl.coordinator().next_deadline_ms();
    if (next && *next < cl.tick_at) {
      cl.tick_at = *next;
      world_.at(*next - std::min(*next, world_.now_ms()), "tick client " + std::to_string(c), [this, c] {
        Client& me = clients_[c];
        if (me.tick_at > world_.now_ms()) return;  // superseded by an earlier tick
        me.tick_at = UINT64_MAX;
        me.coordinator().on_tick(world_.now_ms());
        pump(c);
      });
    }
  }

  void complete(int c, const client::Completion& done) {
    Client& cl = clients_[c];
    auto it = cl.ops.find(done.op);
    if (it == cl.ops.end()) return;
    auto [kind, record] = it->second;
    cl.ops.erase(it);
    uint64_t now = world_.now_ms();
    if (kind == Client::Kind::kWatchPage) {
      return finish_watch_page(static_cast<int>(record), std::get<ScanResult>(done.result), now);
    }
    if (kind == Client::Kind::kWatchFeed) {
      return finish_watch_feed(static_cast<int>(record), std::get<client::FeedResult>(done.result));
    }
    if (kind == Client::Kind::kScan) {
      finish_scan(c, scans_[record], std::get<ScanResult>(done.result), now);
    } else if (kind == Client::Kind::kRead) {
      const auto& r = std::get<ReadResult>(done.result);
      ReadRecord& rec = history_.reads[record];
      finish_read(rec, r, now);
      world_.record("client " + std::to_string(c) + " read " + rec.key + " -> " + std::string(code_name(rec.result)) +
                    " " + r.ts.to_string());
    } else {
      const auto& w = std::get<WriteResult>(done.result);
      bool literal_fenced = false;
      if (kind == Client::Kind::kFence) {
        FenceRecord& rec = history_.fences[record];
        rec.end_ms = now;
        rec.result = w.status.code();
      } else {
        WriteRecord& rec = history_.writes[record];
        rec.end_ms = now;
        rec.result = (cl.resent.erase(record) > 0 ? client::answer_of_resent_write(w) : w).status.code();
        rec.ts = w.ts;
        cl.writing = SIZE_MAX;
        cl.write_requests.clear();
        literal_fenced = rec.result != Code::kFenced && literal_.count(record) != 0 && literal_[record].fenced;
        if (literal_fenced) rec.result = Code::kFenced;
      }
      world_.record("client " + std::to_string(c) + " write -> " + w.status.to_string() +
                    (literal_fenced ? ", fenced by the literal rule" : ""));
    }
    if (cl.ops_left > 0) schedule_next_op(c, world_.uniform(0, 30));
  }

  void schedule_next_op(int c, uint64_t delay) {
    if (world_.chance(o_.pause)) delay += world_.uniform(0, o_.pause_ms_max);  // a process pause
    world_.at(delay, "op client " + std::to_string(c), [this, c] { next_op(c); });
  }

  void next_op(int c) {
    Client& cl = clients_[c];
    if (cl.ops_left <= 0 || healed_) return;
    --cl.ops_left;
    uint64_t roll = world_.uniform(0, 99);
    std::string k = key(static_cast<int>(world_.uniform(0, o_.keys - 1)));
    if (roll < 10 || (cl.token == 0 && roll < 40)) return acquire(c);
    if (roll < 60) return start_write(c, k, false);
    if (roll < 65) return start_write(c, k, true);
    if (o_.scans > 0 && world_.chance(o_.scans)) return start_scan(c);
    start_read(c, k);
  }

  // A prefix read of every key, of the keys that start with "key", or of one
  // key and those its name starts (key1, key10, ...), a few keys a page.
  void start_scan(int c) {
    Client& cl = clients_[c];
    const uint64_t which = world_.uniform(0, 2);
    std::string prefix = which == 0 ? "" : which == 1 ? "key" : key(static_cast<int>(world_.uniform(0, o_.keys - 1)));
    scans_.push_back({std::move(prefix), static_cast<size_t>(world_.uniform(1, 3)), world_.now_ms()});
    client::OpId op = cl.coordinator().start_scan(scans_.back().prefix, "", scans_.back().limit, world_.now_ms());
    cl.ops[op] = {Client::Kind::kScan, scans_.size() - 1};
    world_.record("client " + std::to_string(c) + " scans '" + scans_.back().prefix + "'");
    pump(c);
  }

  // A scan is judged as gets of the keys of the range it covered, each
  // started and ended with it: the keys it returned as found, those it read
  // as deleted (their tombstone's timestamp), and every other key of the
  // workload in that range as having no version at all.
  void finish_scan(int c, const Scan& s, const ScanResult& r, uint64_t now) {
    world_.record("client " + std::to_string(c) + " scan '" + s.prefix + "' -> " + r.status.to_string() + ", " +
                  std::to_string(r.entries.size()) + " keys, next '" + r.next + "'");
    if (!r.status.is_ok()) return void(++scans_failed_);
    ++scans_done_;
    judge_scan(c, s.prefix, "", s.start_ms, r, now);
  }

  // A page of a prefix read that answered ok, from `after`, judged as gets.
  void judge_scan(int c, const std::string& prefix, const std::string& after, uint64_t start_ms, const ScanResult& r,
                  uint64_t now) {
    for (int k = 0; k < o_.keys; ++k) {
      const std::string name = key(k);
      if (!name.starts_with(prefix) || name <= after || (!r.next.empty() && name > r.next)) continue;
      ReadResult as_get{Status::ok(), false, "", {}, ""};
      for (const KeyValue& e : r.entries) {
        if (e.key == name) as_get = {Status::ok(), true, e.value, e.ts, e.lock};
      }
      for (const KeyValue& d : r.deleted) {
        if (d.key == name) as_get.ts = d.ts;
      }
      history_.reads.push_back({c, name, start_ms, 0, Code::kTimeout, false, "", {}});
      finish_read(history_.reads.back(), as_get, now);
    }
  }

  // ---- watchers ----

  static constexpr const char* kWatchPrefix = "key";

  void schedule_watch_round(int w) {
    if (healed_) return;  // the last round runs after the heal
    world_.at(world_.uniform(50, 2000), "watch round " + std::to_string(w), [this, w] { start_watch_round(w); });
  }

  void start_watch_round(int w) {
    SimWatcher& sw = watchers_[w];
    sw.now.clear();
    sw.after.clear();
    sw.round_start = world_.now_ms();
    if (!o_.watcher_feeds) return start_watch_page(w);
    const client::CoordinatorOptions& set = clients_[sw.client].coordinator().options();
    sw.state.use_feeds(set.config, set.n, set.w);
    sw.caught_up.assign(static_cast<size_t>(set.n), false);
    sw.feed_pages = 0;
    sw.reread = false;
    start_watch_feed(w);
  }

  // ---- watchers of the change feeds (watcher_feeds), as palisade::Watcher::poll runs them

  std::vector<uint64_t> feed_positions(int w) const {
    const SimWatcher& sw = watchers_[w];
    std::vector<uint64_t> after(sw.caught_up.size());
    for (size_t i = 0; i < after.size(); ++i) after[i] = sw.state.feed_after(static_cast<int>(i));
    return after;
  }

  void start_watch_feed(int w) {
    SimWatcher& sw = watchers_[w];
    Client& cl = clients_[sw.client];
    client::OpId op = cl.coordinator().start_feed(kWatchPrefix, feed_positions(w), world_.now_ms(),
                                                  sw.state.gap() || !sw.state.held().empty());
    cl.ops[op] = {Client::Kind::kWatchFeed, static_cast<size_t>(w)};
    pump(sw.client);
  }

  // Pages of every feed until each is read to its newest (or 16 pages), then
  // what they show acknowledged is told, then a round of prefix reads when
  // one is due.
  void finish_watch_feed(int w, const client::FeedResult& r) {
    SimWatcher& sw = watchers_[w];
    world_.record("watcher " + std::to_string(w) + " feeds -> " + r.status.to_string());
    if (!r.status.is_ok()) {
      ++watch_rounds_failed_;
      return schedule_watch_round(w);
    }
    bool more = false;
    if (r.n != static_cast<int>(sw.caught_up.size()) || r.config != sw.state.feeds_version()) {
      sw.state.use_feeds(r.config, r.n, r.w);  // moved to another set meanwhile
      sw.caught_up.assign(static_cast<size_t>(r.n), false);
    } else {
      for (size_t i = 0; i < r.pages.size(); ++i) {
        const auto& page = r.pages[i];
        if (!page) continue;
        const bool used = sw.state.feed_page(static_cast<int>(i), *page->feed, page->changes);
        sw.caught_up[i] = used && !page->more;
        more = more || page->more;
      }
    }
    if (more && ++sw.feed_pages < 16) return start_watch_feed(w);
    if (sw.state.gap() && !std::exchange(sw.reread, true)) {
      sw.caught_up.assign(sw.caught_up.size(), false);
      sw.feed_pages = 0;
      return start_watch_feed(w);  // read again from now, as palisade::Watcher::poll does
    }
    sw.decided = sw.state.decide(sw.caught_up);
    if (sw.state.round_due()) return start_watch_page(w);
    end_watch_round(w, {}, false);
  }

  void start_watch_page(int w) {
    SimWatcher& sw = watchers_[w];
    Client& cl = clients_[sw.client];
    sw.limit = static_cast<size_t>(world_.uniform(1, 3));
    sw.page_start = world_.now_ms();
    client::OpId op = cl.coordinator().start_scan(kWatchPrefix, sw.after, sw.limit, world_.now_ms());
    cl.ops[op] = {Client::Kind::kWatchPage, static_cast<size_t>(w)};
    pump(sw.client);
  }

  // A page read: judged as gets; the round goes on with the next page, or
  // ends and tells its changes. A page that fails ends the round, which
  // tells nothing (palisade::Watcher's way), and the next round reads again.
  void finish_watch_page(int w, const ScanResult& r, uint64_t now) {
    SimWatcher& sw = watchers_[w];
    world_.record("watcher " + std::to_string(w) + " page after '" + sw.after + "' -> " + r.status.to_string() + ", " +
                  std::to_string(r.entries.size()) + " keys, next '" + r.next + "'");
    if (!r.status.is_ok()) {
      ++watch_rounds_failed_;
      // What the feeds told stands: a round that fails is due again.
      if (o_.watcher_feeds) return end_watch_round(w, {}, false);
      return schedule_watch_round(w);
    }
    judge_scan(sw.client, kWatchPrefix, sw.after, sw.page_start, r, now);
    for (const KeyValue& e : r.entries) sw.now[e.key] = {false, e.value, e.ts, e.lock};
    for (const KeyValue& d : r.deleted) sw.now[d.key] = {true, "", d.ts, ""};
    if (!r.next.empty()) {
      sw.after = r.next;
      return start_watch_page(w);
    }
    end_watch_round(w, sw.state.round(sw.now), true);
  }

  // A round ends: what it told (the feeds' first, then the reads'), and
  // whether it is held to every promise: it read every key (`read_all`), or
  // every feed to its newest.
  void end_watch_round(int w, std::vector<WatchEvent> read, bool read_all) {
    SimWatcher& sw = watchers_[w];
    // Every feed read to its newest, and no round of reads due that failed.
    const bool feeds_read = o_.watcher_feeds && !sw.state.round_due() &&
                            std::all_of(sw.caught_up.begin(), sw.caught_up.end(), [](bool b) { return b; });
    std::vector<WatchEvent> events = std::exchange(sw.decided, {});
    events.insert(events.end(), read.begin(), read.end());
    std::stable_sort(events.begin(), events.end(),
                     [](const WatchEvent& a, const WatchEvent& b) { return a.key < b.key; });
    WatchRound round{w, sw.round_start, world_.now_ms(), sw.first && read_all, std::move(events), {}};
    if (read_all) sw.first = false;
    round.seen = sw.state.seen();
    round.complete = read_all || feeds_read;
    round.held = sw.state.held();
    round.every_version = feeds_read && !replacer_;
    for (const WatchEvent& e : round.events) {
      world_.record("watcher " + std::to_string(w) + " tells " + (e.kind == WatchEvent::Kind::kPut ? "put " : "del ") +
                    e.key + " " + e.ts.to_string());
    }
    watch_rounds_.push_back(std::move(round));
    schedule_watch_round(w);
  }

  // The lock service hands out the next token; the client makes the fence,
  // unless it is one of the unfenced holders (whose writes raise the floor).
  void acquire(int c) {
    Client& cl = clients_[c];
    cl.token = ++tokens_;
    if (o_.unfenced_holders > 0 && world_.chance(o_.unfenced_holders)) {
      world_.record("client " + std::to_string(c) + " holds token " + std::to_string(cl.token) + " without a fence");
      return schedule_next_op(c, world_.uniform(0, 30));
    }
    history_.fences.push_back({c, kLock, cl.token, world_.now_ms(), 0, Code::kTimeout});
    client::OpId op = cl.coordinator().start_fence(Fence{kLock, cl.token}, world_.now_ms());
    cl.ops[op] = {Client::Kind::kFence, history_.fences.size() - 1};
    world_.record("client " + std::to_string(c) + " fences token " + std::to_string(cl.token));
    pump(c);
  }

  void start_write(int c, const std::string& k, bool tombstone) {
    Client& cl = clients_[c];
    // Some writes go without a lock: plain last-writer-wins, losing to fenced ones.
    Fence fence = world_.chance(0.1) || cl.token == 0 ? Fence{} : Fence{kLock, cl.token};
    std::string value = tombstone ? "" : "c" + std::to_string(c) + "-" + std::to_string(++cl.counter);
    history_.writes.push_back({c, k, value, tombstone, fence.lock, fence.token, world_.now_ms(), 0, Code::kTimeout, {}});
    cl.writing = history_.writes.size() - 1;
    client::OpId op = cl.coordinator().start_write(k, value, tombstone, fence, world_.now_ms());
    cl.ops[op] = {Client::Kind::kWrite, history_.writes.size() - 1};
    world_.record("client " + std::to_string(c) + (tombstone ? " deletes " : " writes ") + k + " token " +
                  std::to_string(fence.token));
    pump(c);
  }

  void start_read(int c, const std::string& k) {
    Client& cl = clients_[c];
    history_.reads.push_back({c, k, world_.now_ms(), 0, Code::kTimeout, false, "", {}});
    client::OpId op = cl.coordinator().start_read(k, world_.now_ms());
    cl.ops[op] = {Client::Kind::kRead, history_.reads.size() - 1};
    pump(c);
  }

  QuorumSimOptions o_;
  World world_;
  ReplicaSet replicas_;
  std::vector<Client> clients_;
  SignedRecord record_;  // the replica set's, which the replacer keeps
  std::unique_ptr<Replacer> replacer_;  // replacements only
  int next_node_ = 0;  // the next client lane's world node
  uint64_t views_followed_ = 0;
  History history_;
  std::vector<Scan> scans_;
  uint64_t scans_done_ = 0, scans_failed_ = 0;
  std::vector<SimWatcher> watchers_;
  std::vector<WatchRound> watch_rounds_;
  uint64_t watch_rounds_failed_ = 0;
  uint64_t tokens_ = 0;
  bool healed_ = false;
  int r_ = 0, w_ = 0;
  struct Downtime {
    int replica;
    uint64_t start_ms, end_ms;  // end: UINT64_MAX while down
  };
  std::vector<Downtime> downtimes_;
  std::vector<std::string> store_failures_;  // lmdb: stores that did not open after a crash
  std::vector<std::string> invariant_violations_;
  std::set<std::string> invariants_broken_;  // each reported once per run
  uint64_t bit_flips_ = 0, bit_flips_to_w_ = 0, bit_flips_skipped_ = 0;
  // broken_literal_fenced_rule, by write record: the replicas that acknowledged
  // it, and whether a refusal came while they were fewer than W.
  struct LiteralRule {
    std::set<int> acked;
    bool fenced = false;
  };
  std::map<size_t, LiteralRule> literal_;
};

}  // namespace

QuorumSimResult run_quorum_sim(const QuorumSimOptions& options) { return QuorumSim(options).run(); }

QuorumSimOptions rough_network(QuorumSimOptions o) {
  o.keys = 1;
  o.clients = 5;
  o.pause = 0;
  o.corrupt_per_second = 0;
  o.faults.drop = 0.1;
  o.faults.duplicate = 0.3;
  o.faults.max_delay_ms = 300;
  o.faults.long_delay = 0.1;
  o.faults.long_delay_ms = 1800;
  return o;
}

}  // namespace palisade::sim
