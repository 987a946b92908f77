#include "tools/demo.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "client/replica_connection.h"
#include "palisade/quorum_store.h"
#include "tools/replica_process.h"
#include "tools/temp_dir.h"

namespace palisade::tools {
namespace {

using Clock = std::chrono::steady_clock;

// A private three-replica store and a timeline printer.
class Stage {
 public:
  explicit Stage(const DemoOptions& o) : options_(o), start_(Clock::now()) {
    for (int i = 0; i < 3; ++i) {
      replicas_.push_back(std::make_unique<ReplicaProcess>(o.replica_binary, dir_.sub("replica" + std::to_string(i + 1))));
      if (o.verbose) say("replica %d on %s, log %s", i + 1, replicas_[i]->endpoint().c_str(),
                         replicas_[i]->process().log_path().c_str());
    }
  }

  template <class... Args>
  void say(const char* format, Args... args) {
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
    std::printf("  %8.1f ms  ", ms);
    std::printf(format, args...);
    std::printf("\n");
    std::fflush(stdout);
  }

  // A client process's view of the store. read_quorum 3 asks every replica (so
  // a read also repairs every replica that answered older).
  std::unique_ptr<QuorumStore> client(int read_quorum = 2) {
    QuorumStoreOptions o;
    for (auto& r : replicas_) o.replicas.push_back(r->endpoint());
    o.read_quorum = read_quorum;
    o.timeout = std::chrono::milliseconds(2000);
    auto store = QuorumStore::open(o);
    if (!store.is_ok()) throw std::runtime_error(store.status().to_string());
    return std::move(store).value();
  }

  uint64_t grant(const char* who) {
    uint64_t token = ++tokens_;
    say("lock service grants lock 'ledger' to %s with fencing token %llu", who, static_cast<unsigned long long>(token));
    return token;
  }

  void stop(int i) {
    replicas_[i]->process().kill();
    say("replica %d is down", i + 1);
  }
  void start(int i) {
    replicas_[i]->restart();
    say("replica %d is back", i + 1);
  }

  // The newest value replica i stores for `key` ("(none)" when it has none).
  std::string stored(int i, const std::string& key) {
    client::ReplicaConnection conn(replicas_[i]->endpoint());
    auto reply = conn.call({0, wire::ReadRequest{key}}, 2000);
    if (!reply.is_ok() || !reply.value().status.is_ok()) return "(unreachable)";
    const wire::Version* v = reply.value().newest();
    return v == nullptr ? "(none)" : v->tombstone ? "(deleted)" : v->value;
  }

 private:
  DemoOptions options_;
  Clock::time_point start_;
  TempDir dir_;
  std::vector<std::unique_ptr<ReplicaProcess>> replicas_;
  uint64_t tokens_ = 0;
};

std::string describe(const WriteResult& w) { return w.status.is_ok() ? "ok" : w.status.to_string(); }

int verdict(Stage& s, bool held, const char* promise) {
  s.say("%s %s", held ? "VERDICT PASS:" : "VERDICT FAIL:", promise);
  return held ? 0 : 1;
}

// A client that lost its lock (a pause, a slow network) writes with its old token.
int late_write(Stage& s) {
  auto a = s.client(), b = s.client();
  Fence fa{"ledger", s.grant("client A")};
  a->fence(fa);
  s.say("A writes balance=100: %s", describe(a->put("balance", "100", fa)).c_str());
  s.say("A pauses (a GC pause, a SIGSTOP); its lease runs out");
  Fence fb{"ledger", s.grant("client B")};
  s.say("B makes its fence on the replicas: %s", describe(b->fence(fb)).c_str());
  s.say("B writes balance=70: %s", describe(b->put("balance", "70", fb)).c_str());
  WriteResult late = a->put("balance", "130", fa);
  s.say("A resumes and writes balance=130 with token %llu: %s", static_cast<unsigned long long>(fa.token),
        describe(late).c_str());
  ReadResult r = s.client()->get("balance");
  s.say("a reader gets balance=%s", r.value.c_str());
  return verdict(s, late.status.code() == Code::kFenced && r.value == "70",
                 "the superseded holder's write is refused and the store keeps B's value");
}

// DDIA figure 9-7: a replica misses the new holder's fence and write.
int replica_down(Stage& s) {
  auto a = s.client(3), b = s.client();
  Fence fa{"ledger", s.grant("client A")};
  a->fence(fa);
  s.say("A writes owner=A: %s", describe(a->put("owner", "A", fa)).c_str());
  s.stop(2);
  Fence fb{"ledger", s.grant("client B")};
  s.say("B makes its fence on replicas 1 and 2: %s", describe(b->fence(fb)).c_str());
  s.say("B writes owner=B: %s", describe(b->put("owner", "B", fb)).c_str());
  s.start(2);
  a->get("connect");  // at R=3: A's client has reconnected to replica 3
  WriteResult late = a->put("owner", "A again", fa);
  s.say("A's late write owner='A again': replicas 1 and 2 refuse it, replica 3 takes it: %s", describe(late).c_str());
  s.say("replica 3 now holds owner=%s", s.stored(2, "owner").c_str());
  ReadResult r = s.client(3)->get("owner");
  s.say("a reader gets owner=%s, and repairs the replicas that answered older", r.value.c_str());
  std::string all = s.stored(0, "owner") + "," + s.stored(1, "owner") + "," + s.stored(2, "owner");
  s.say("replicas hold owner = %s", all.c_str());
  return verdict(s, late.status.code() == Code::kFenced && r.value == "B" && all == "B,B,B",
                 "A is told Fenced, reads return B's value, and all three replicas end up with it");
}

// The superseded holder writes a key that the new holder never wrote.
int fresh_key(Stage& s) {
  auto a = s.client(3), b = s.client();
  Fence fa{"ledger", s.grant("client A")};
  a->fence(fa);
  s.stop(2);
  Fence fb{"ledger", s.grant("client B")};
  s.say("B makes its fence on replicas 1 and 2: %s", describe(b->fence(fb)).c_str());
  s.start(2);
  a->get("connect");
  WriteResult late = a->put("audit", "A was here", fa);
  s.say("A writes audit='A was here', a key B never wrote: %s", describe(late).c_str());
  s.say("replica 3 took it as pending: audit=%s", s.stored(2, "audit").c_str());
  ReadResult r = s.client(3)->get("audit");
  s.say("a reader asks every replica: %s", r.found ? ("audit=" + r.value).c_str() : "no such key");
  return verdict(s, late.status.code() == Code::kFenced && r.status.is_ok() && !r.found,
                 "the refused write is never visible, even where one replica stored it");
}

struct Scenario {
  const char* title;
  std::function<int(Stage&)> run;
};

}  // namespace

int run_demo(const DemoOptions& options) {
  const std::vector<Scenario> scenarios = {
      {"1. A paused lock holder writes after its lease ran out", late_write},
      {"2. A replica is down while the new holder writes (DDIA figure 9-7)", replica_down},
      {"3. The old holder writes a key the new holder never touched", fresh_key},
  };
  int failed = 0;
  for (const Scenario& sc : scenarios) {
    std::printf("\n%s\n", sc.title);
    try {
      Stage stage(options);
      failed += sc.run(stage);
    } catch (const std::exception& e) {
      std::printf("  VERDICT FAIL: the scenario could not run: %s\n", e.what());
      ++failed;
    }
  }
  std::printf("\n%d of %zu verdicts held.\n", static_cast<int>(scenarios.size()) - failed, scenarios.size());
  return failed;
}

}  // namespace palisade::tools
