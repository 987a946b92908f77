// palisade._palisade: the C++ client (include/palisade/) for Python, with
// pybind11. Every rule (reads, fencing, sessions, elections) is the C++
// library's; this file only converts. Blocking calls release the GIL, so
// other Python threads run meanwhile; callbacks from the client's threads
// (session events, an election's changes) take it. Errors are raised as
// palisade.Error subclasses named after their code (palisade/_errors.py).
#include <pybind11/functional.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include "palisade/cluster_file.h"
#include "palisade/conditional.h"
#include "palisade/election.h"
#include "palisade/lock_client.h"
#include "palisade/quorum_store.h"
#include "palisade/watch.h"

namespace py = pybind11;

namespace palisade {
namespace {

// Raises the palisade.Error subclass of the status's code; the GIL must be held.
[[noreturn]] void raise(const Status& status) {
  py::module_::import("palisade._errors").attr("raise_error")(std::string(code_name(status.code())), status.message());
  throw py::error_already_set();  // raise_error always raises
}
void check(const Status& status) {
  if (!status.is_ok()) raise(status);
}
template <class T>
T take(Result<T> result) {
  if (!result.is_ok()) raise(result.status());
  return std::move(result).value();
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// Keys are str; palisade keys are bytes, so ones that are not UTF-8 come back
// with surrogate escapes (as os.fsdecode gives file names).
py::str key_text(const std::string& key) {
  PyObject* text = PyUnicode_DecodeUTF8(key.data(), static_cast<Py_ssize_t>(key.size()), "surrogateescape");
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

// A version as get and scan return it.
struct Version {
  py::str key;
  py::bytes value;
  FencedTimestamp ts;
  std::string lock;
};

Version version_of(const std::string& key, const std::string& value, FencedTimestamp ts, const std::string& lock) {
  return {key_text(key), py::bytes(value), ts, lock};
}

// The store, closed (its engine stopped) without the GIL: a close waits for
// the calls in flight.
struct Store {
  std::unique_ptr<QuorumStore> store;
  ~Store() { close(); }
  void close() {
    py::gil_scoped_release unlocked;
    store.reset();
  }
  QuorumStore& get() {
    if (!store) raise(Status(Code::kBadRequest, "the store is closed"));
    return *store;
  }
};

// A session with the lock group. It keeps its store alive (acquires fence
// it), and is closed without the GIL: the close waits for the background
// thread, which may be waiting for the GIL to tell an event.
struct Locks {
  std::unique_ptr<LockClient> client;
  py::object store;  // a Store, or None
  ~Locks() { close(); }
  void close() {
    py::gil_scoped_release unlocked;
    client.reset();
  }
  LockClient& get() {
    if (!client) raise(Status(Code::kNoSession, "the lock client is closed"));
    return *client;
  }
};

struct PyElection {
  py::object locks;  // keeps the Locks and Store alive
  py::object store;
  std::unique_ptr<Election> election;

  // The election, while its client and store are open (raises otherwise);
  // with the GIL.
  Election& get() {
    locks.cast<Locks&>().get();
    store.cast<Store&>().get();
    return *election;
  }
};

py::object leader_object(const std::optional<Leader>& leader) {
  if (!leader) return py::none();
  return py::cast(*leader);
}

void bind_types(py::module_& m) {
  py::class_<FencedTimestamp>(m, "Timestamp", "A fenced hybrid timestamp: the token first, then the HLC value")
      .def(py::init<uint64_t, uint64_t>(), py::arg("token") = 0, py::arg("hlc") = 0)
      .def_readonly("token", &FencedTimestamp::token)
      .def_readonly("hlc", &FencedTimestamp::hlc)
      .def("__str__", &FencedTimestamp::to_string)
      .def("__repr__", [](const FencedTimestamp& t) { return "Timestamp('" + t.to_string() + "')"; })
      .def(py::self == py::self)
      .def(py::self < py::self)
      .def(py::self <= py::self)
      .def("__hash__", [](const FencedTimestamp& t) { return py::hash(py::make_tuple(t.token, t.hlc)); });

  py::class_<Version>(m, "Version", "A key's value as a read returned it")
      .def_readonly("key", &Version::key)
      .def_readonly("value", &Version::value)
      .def_readonly("ts", &Version::ts)
      .def_readonly("lock", &Version::lock, "the lock it was written under, empty when none")
      .def("__repr__", [](const Version& v) {
        return "Version(key=" + std::string(py::repr(v.key)) + ", ts='" + v.ts.to_string() + "')";
      });

  py::class_<Lease>(m, "Lease", "A grant of a lock: its token and sequencer, valid while the session is safe")
      .def_property_readonly("name", &Lease::name)
      .def_property_readonly("token", &Lease::token)
      .def_property_readonly("shared", [](const Lease& l) { return l.mode() == LockMode::kShared; })
      .def_property_readonly("sequencer", &Lease::sequencer)
      .def_property_readonly("valid", &Lease::valid)
      .def_property_readonly(
          "remaining", [](const Lease& l) { return l.remaining().count() / 1000.0; },
          "seconds before its local deadline")
      .def("__repr__",
           [](const Lease& l) { return "Lease('" + l.name() + "', token=" + std::to_string(l.token()) + ")"; });

  py::class_<Leader>(m, "Leader", "Who leads an election: its token, and the value it stored (None: not yet)")
      .def_readonly("token", &Leader::token)
      .def_property_readonly("value",
                             [](const Leader& l) -> py::object {
                               if (!l.value) return py::none();
                               return py::bytes(*l.value);
                             })
      .def_readonly("ts", &Leader::ts)
      .def(py::self == py::self)
      .def("__repr__", [](const Leader& l) { return "Leader(token=" + std::to_string(l.token) + ")"; });

  py::class_<ClusterFile>(m, "ClusterFile", "A cluster file: where the lock group and the replicas listen, and keys")
      .def(py::init([](const std::string& path, const std::string& key) { return take(ClusterFile::load(path, key)); }),
           py::arg("path"), py::arg("key") = "",
           "Reads and checks a cluster file; `key`: a key file of an identity it lists (a secure cluster)")
      .def_readonly("path", &ClusterFile::path)
      .def_readonly("cluster_id", &ClusterFile::cluster_id)
      .def_readonly("lock_group", &ClusterFile::lock_group)
      .def_readonly("replicas", &ClusterFile::replicas)
      .def_property_readonly("secure", [](const ClusterFile& c) { return c.credentials.has_value(); });
}

void bind_store(py::module_& m) {
  py::class_<Store>(m, "QuorumStore", "Fenced puts, deletes and reads through quorums of replicas")
      .def(py::init([](const ClusterFile& cluster, double timeout) {
             QuorumStoreOptions options = cluster.store_options();
             if (timeout > 0) options.timeout = millis(timeout);
             Result<std::unique_ptr<QuorumStore>> opened = Status(Code::kInternal, "not opened");
             {
               py::gil_scoped_release unlocked;
               opened = QuorumStore::open(std::move(options));
             }
             auto store = std::make_unique<Store>();
             store->store = take(std::move(opened));
             return store;
           }),
           py::arg("cluster"), py::arg("timeout") = 0.0, "timeout: seconds per call (0: the default, 2 s)")
      .def(
          "put",
          [](Store& s, const std::string& key, const std::string& value, const Lease* lease) {
            QuorumStore& store = s.get();  // with the GIL: it may raise
            WriteResult w;
            {
              py::gil_scoped_release unlocked;
              w = lease ? store.put(key, value, *lease) : store.put(key, value);
            }
            check(w.status);
            return w.ts;
          },
          py::arg("key"), py::arg("value"), py::arg("lease") = nullptr,
          "Writes through a write quorum, fenced by `lease` when given; the write's timestamp. Raises Fenced "
          "when a later holder superseded the lease, NoSession when the lease is no longer valid")
      .def(
          "delete",
          [](Store& s, const std::string& key, const Lease* lease) {
            QuorumStore& store = s.get();
            WriteResult w;
            {
              py::gil_scoped_release unlocked;
              w = lease ? store.del(key, *lease) : store.del(key);
            }
            check(w.status);
            return w.ts;
          },
          py::arg("key"), py::arg("lease") = nullptr, "Writes a tombstone, fenced as put")
      .def(
          "get",
          [](Store& s, const std::string& key, const Lease* lease) -> py::object {
            QuorumStore& store = s.get();
            ReadResult r;
            {
              py::gil_scoped_release unlocked;
              r = lease ? store.get(key, *lease) : store.get(key);
            }
            check(r.status);
            if (!r.found) return py::none();
            return py::cast(version_of(key, r.value, r.ts, r.lock));
          },
          py::arg("key"), py::arg("lease") = nullptr,
          "The key's version by the read rules, or None. With `lease`, a fenced read: the replicas that answer "
          "take the lease's fence first, so an earlier holder's write it did not return can no longer be "
          "acknowledged (a read-modify-write under the lock)")
      .def(
          "scan",
          [](Store& s, const std::string& prefix, const std::string& after, size_t limit) {
            QuorumStore& store = s.get();
            ScanResult r;
            {
              py::gil_scoped_release unlocked;
              r = store.scan(prefix, after, limit);
            }
            check(r.status);
            py::list entries;
            for (const KeyValue& kv : r.entries) entries.append(version_of(kv.key, kv.value, kv.ts, kv.lock));
            return py::make_tuple(entries, r.next.empty() ? py::object(py::none()) : py::object(key_text(r.next)));
          },
          py::arg("prefix"), py::arg("after") = "", py::arg("limit") = 1000,
          "(versions, next): the keys under `prefix` after `after`, each read as get reads it; next is the key "
          "to scan on after, None when none follows")
      .def("close", &Store::close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Store& s, const py::args&) { s.close(); });
}

void bind_locks(py::module_& m) {
  py::class_<Locks>(m, "LockClient", "A session with the lock group, kept alive from a background thread")
      .def(py::init([](const ClusterFile& cluster, py::object store, double session_ttl,
                       std::function<void(std::string)> on_event) {
             LockClientOptions options = cluster.lock_client_options();
             if (!store.is_none()) options.store = &store.cast<Store&>().get();
             if (session_ttl > 0) options.session_ttl = millis(session_ttl);
             if (on_event) {
               options.on_event = [on_event](SessionEvent e) {
                 py::gil_scoped_acquire locked;
                 const char* name = e == SessionEvent::kJeopardy ? "jeopardy"
                                    : e == SessionEvent::kSafe   ? "safe"
                                                                 : "expired";
                 try {
                   on_event(name);
                 } catch (py::error_already_set& error) {
                   error.discard_as_unraisable("palisade LockClient on_event");
                 }
               };
             }
             Result<std::unique_ptr<LockClient>> connected = Status(Code::kInternal, "not connected");
             {
               py::gil_scoped_release unlocked;
               connected = LockClient::connect(std::move(options));
             }
             auto locks = std::make_unique<Locks>();
             locks->client = take(std::move(connected));
             locks->store = std::move(store);
             return locks;
           }),
           py::arg("cluster"), py::arg("store") = py::none(), py::arg("session_ttl") = 0.0,
           py::arg("on_event") = nullptr,
           "store: a QuorumStore each exclusive grant fences before acquire returns; session_ttl: seconds (0: "
           "the cluster's); on_event(name) is called with 'jeopardy', 'safe' and 'expired'")
      .def(
          "acquire",
          [](Locks& l, const std::string& name, double wait, bool shared, double lock_delay) {
            AcquireOptions options{.mode = shared ? LockMode::kShared : LockMode::kExclusive,
                                   .wait = millis(wait),
                                   .lock_delay = millis(lock_delay),
                                   .cancel = {}};
            LockClient& client = l.get();  // with the GIL: it may raise
            Result<Lease> lease = Status(Code::kInternal, "not acquired");
            {
              py::gil_scoped_release unlocked;
              lease = client.acquire(name, options);
            }
            return take(std::move(lease));
          },
          py::arg("name"), py::arg("wait") = 0.0, py::arg("shared") = false, py::arg("lock_delay") = 0.0,
          "Waits up to `wait` seconds for the lock (0: Busy at once when held)")
      .def(
          "release",
          [](Locks& l, Lease& lease) {
            LockClient& client = l.get();
            Status s;
            {
              py::gil_scoped_release unlocked;
              s = client.release(lease);
            }
            check(s);
          },
          py::arg("lease"))
      .def(
          "check_sequencer",
          [](Locks& l, const std::string& sequencer) {
            LockClient& client = l.get();
            Result<bool> current = Status(Code::kInternal, "not asked");
            {
              py::gil_scoped_release unlocked;
              current = client.check_sequencer(sequencer);
            }
            return take(std::move(current));
          },
          py::arg("sequencer"), "Whether the sequencer names its lock's current grant")
      .def_property_readonly("session", [](Locks& l) { return l.get().session(); })
      .def_property_readonly("safe", [](Locks& l) { return l.get().safe(); })
      .def("close", &Locks::close, "Closes the session: its locks are released at once")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Locks& l, const py::args&) { l.close(); });
}

struct PyConditional {
  py::object locks;  // keeps the Locks and Store alive
  py::object store;
  std::unique_ptr<ConditionalStore> conditional;

  ConditionalStore& get() {  // with the GIL: it may raise
    locks.cast<Locks&>().get();
    store.cast<Store&>().get();
    return *conditional;
  }
};

// Expect from Python: None for absent, else the version (a Timestamp) a read returned.
Expect expect_of(const std::optional<FencedTimestamp>& version) {
  return version ? Expect::at(*version) : Expect::absent();
}

// A conditional write's answer: its timestamp; palisade.Stale when the key is
// not as expected (the message says what it is).
FencedTimestamp conditional_answer(const ConditionalResult& r) {
  if (r.status.code() == Code::kStale) {
    raise(Status(Code::kStale, r.status.message() + (r.current.found ? ": it is at version " + r.current.ts.to_string()
                                                                     : ": it has no value")));
  }
  check(r.status);
  return r.ts;
}

void bind_conditional(py::module_& m) {
  py::class_<PyConditional>(m, "ConditionalStore",
                            "Put-if-absent and compare-and-set, under a lock of the key's own (docs/recipes.md)")
      .def(py::init([](py::object locks, py::object store, double wait) {
             auto c = std::make_unique<PyConditional>();
             c->conditional = std::make_unique<ConditionalStore>(locks.cast<Locks&>().get(), store.cast<Store&>().get(),
                                                                 ConditionalOptions{.wait = millis(wait)});
             c->locks = std::move(locks);
             c->store = std::move(store);
             return c;
           }),
           py::arg("locks"), py::arg("store"), py::arg("wait") = 10.0,
           "wait: seconds to wait for the key's lock behind other conditional writes")
      .def(
          "put",
          [](PyConditional& c, const std::string& key, const std::string& value,
             const std::optional<FencedTimestamp>& expect) {
            ConditionalStore& conditional = c.get();
            ConditionalResult r;
            {
              py::gil_scoped_release unlocked;
              r = conditional.put(key, value, expect_of(expect));
            }
            return conditional_answer(r);
          },
          py::arg("key"), py::arg("value"), py::arg("expect"),
          "Writes if the key is at version `expect` (None: has no value); the write's timestamp. Raises Stale "
          "when it is not")
      .def(
          "delete",
          [](PyConditional& c, const std::string& key, const FencedTimestamp& expect) {
            ConditionalStore& conditional = c.get();
            ConditionalResult r;
            {
              py::gil_scoped_release unlocked;
              r = conditional.del(key, Expect::at(expect));
            }
            return conditional_answer(r);
          },
          py::arg("key"), py::arg("expect"), "Deletes if the key is at version `expect`");
}

// Election::observe runs on a thread of its own; the caller's thread calls
// on_change with each change it tells, and between changes looks at signals
// (Ctrl-C raises KeyboardInterrupt). Until on_change returns False or raises.
void observe(PyElection& e, const py::function& on_change, double every) {
  Election& election = e.get();
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::optional<Leader>> told;
  std::optional<Status> ended;
  std::stop_source stop;
  std::thread observer([&] {
    Status s = election.observe(
        [&](const std::optional<Leader>& leader) {
          std::lock_guard lock(mu);
          told.push_back(leader);
          changed.notify_all();
        },
        stop.get_token(), millis(every));
    std::lock_guard lock(mu);
    ended = std::move(s);
    changed.notify_all();
  });
  auto finish = [&] {
    stop.request_stop();
    py::gil_scoped_release unlocked;
    observer.join();
  };
  try {
    while (true) {
      std::deque<std::optional<Leader>> now;
      std::optional<Status> over;
      {
        py::gil_scoped_release unlocked;
        std::unique_lock lock(mu);
        changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return !told.empty() || ended; });
        now.swap(told);
        over = ended;
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      for (const std::optional<Leader>& leader : now) {
        py::object go_on = on_change(leader_object(leader));
        if (!go_on.is_none() && !go_on.cast<bool>()) return finish();
      }
      if (over) {
        finish();
        return check(*over);
      }
    }
  } catch (...) {
    finish();
    throw;
  }
}

void bind_election(py::module_& m) {
  py::class_<PyElection>(m, "Election", "Leader election on a lock; the leader's value fenced by its grant")
      .def(py::init([](py::object locks, py::object store, const std::string& name, const std::string& key,
                       double lock_delay) {
             auto e = std::make_unique<PyElection>();
             e->election = std::make_unique<Election>(
                 locks.cast<Locks&>().get(), store.cast<Store&>().get(),
                 ElectionOptions{.name = name, .key = key, .lock_delay = millis(lock_delay)});
             e->locks = std::move(locks);
             e->store = std::move(store);
             return e;
           }),
           py::arg("locks"), py::arg("store"), py::arg("name"), py::arg("key") = "", py::arg("lock_delay") = 0.0)
      .def_property_readonly("name", [](const PyElection& e) { return e.election->name(); })
      .def_property_readonly("key", [](const PyElection& e) { return e.election->key(); })
      .def(
          "campaign",
          [](PyElection& e, const std::string& value, double wait) {
            Election& election = e.get();
            Result<Lease> lease = Status(Code::kInternal, "no campaign");
            {
              py::gil_scoped_release unlocked;
              lease = election.campaign(value, millis(wait));
            }
            return take(std::move(lease));
          },
          py::arg("value"), py::arg("wait"), "Blocks until leading (up to `wait` seconds); the lease of leadership")
      .def(
          "proclaim",
          [](PyElection& e, const Lease& lease, const std::string& value) {
            Election& election = e.get();
            WriteResult w;
            {
              py::gil_scoped_release unlocked;
              w = election.proclaim(lease, value);
            }
            check(w.status);
          },
          py::arg("lease"), py::arg("value"))
      .def(
          "resign",
          [](PyElection& e, Lease& lease) {
            Election& election = e.get();
            Status s;
            {
              py::gil_scoped_release unlocked;
              s = election.resign(lease);
            }
            check(s);
          },
          py::arg("lease"))
      .def(
          "leader",
          [](PyElection& e) {
            Election& election = e.get();
            Result<std::optional<Leader>> now = Status(Code::kInternal, "not asked");
            {
              py::gil_scoped_release unlocked;
              now = election.leader();
            }
            return leader_object(take(std::move(now)));
          },
          "Who leads now (a Leader), or None")
      .def("observe", &observe, py::arg("on_change"), py::arg("every") = 0.2,
           "Calls on_change(leader or None) now and on every change, until it returns False");
}

// A change a watcher told: kind "put" or "delete", the key, the value (b""
// for a delete), the version's timestamp (Timestamp(0, 0) for a delete whose
// version is no longer known), the lock it was written under.
struct PyWatchEvent {
  std::string kind;
  py::str key;
  py::bytes value;
  FencedTimestamp ts;
  std::string lock;
};

struct PyWatcher {
  py::object store;  // keeps the Store alive
  std::unique_ptr<Watcher> watcher;
};

struct PyLockWatcher {
  py::object locks;  // keeps the Locks alive
  std::unique_ptr<LockWatcher> watcher;
};

void bind_watch(py::module_& m) {
  py::class_<PyWatchEvent>(m, "WatchEvent", "A change a Watcher told")
      .def_readonly("kind", &PyWatchEvent::kind, "'put' or 'delete'")
      .def_readonly("key", &PyWatchEvent::key)
      .def_readonly("value", &PyWatchEvent::value)
      .def_readonly("ts", &PyWatchEvent::ts)
      .def_readonly("lock", &PyWatchEvent::lock)
      .def("__repr__", [](const PyWatchEvent& e) {
        return "WatchEvent(" + e.kind + ", " + std::string(py::repr(e.key)) + ", " + e.ts.to_string() + ")";
      });
  py::class_<PyWatcher>(m, "Watcher",
                        "The changes of a key, or of the keys under a prefix, a round at a time (docs/recipes.md)")
      .def(py::init([](py::object store, const std::string& key, bool prefix, bool initial, bool every_version) {
             auto w = std::make_unique<PyWatcher>();
             w->watcher = std::make_unique<Watcher>(
                 store.cast<Store&>().get(),
                 WatchOptions{.key = key, .prefix = prefix, .initial = initial, .every_version = every_version});
             w->store = std::move(store);
             return w;
           }),
           py::arg("store"), py::arg("key"), py::arg("prefix") = false, py::arg("initial") = true,
           py::arg("every_version") = true,
           "prefix: watch every key that starts with `key`; initial: the first round tells the keys' values now; "
           "every_version: tell every version from the replicas' change feeds (False: each round's newest only)")
      .def(
          "poll",
          [](PyWatcher& w) {
            w.store.cast<Store&>().get();  // raises when the store is closed
            Result<std::vector<WatchEvent>> events = Status(Code::kInternal, "not read");
            {
              py::gil_scoped_release unlocked;
              events = w.watcher->poll();
            }
            py::list out;
            for (const WatchEvent& e : take(std::move(events))) {
              out.append(PyWatchEvent{e.kind == WatchEvent::Kind::kPut ? "put" : "delete", key_text(e.key),
                                      py::bytes(e.value), e.ts, e.lock});
            }
            return out;
          },
          "One round: the changes since the last, a list of WatchEvent (each key's in timestamp order)")
      .def_property_readonly(
          "seen", [](const PyWatcher& w) { return w.watcher->seen(); },
          "The version last told of each key: give it to resume() to go on from there")
      .def(
          "resume", [](PyWatcher& w, const std::map<std::string, FencedTimestamp>& seen) { w.watcher->resume(seen); },
          py::arg("seen"));
  py::class_<PyLockWatcher>(m, "LockWatcher", "Who holds a lock, a round at a time")
      .def(py::init([](py::object locks, const std::string& lock) {
             auto w = std::make_unique<PyLockWatcher>();
             w->watcher = std::make_unique<LockWatcher>(locks.cast<Locks&>().get(), lock);
             w->locks = std::move(locks);
             return w;
           }),
           py::arg("locks"), py::arg("lock"))
      .def(
          "poll",
          [](PyLockWatcher& w) -> py::object {
            w.locks.cast<Locks&>().get();  // raises when the session is closed
            Result<std::optional<LockWatchEvent>> event = Status(Code::kInternal, "not asked");
            {
              py::gil_scoped_release unlocked;
              event = w.watcher->poll();
            }
            std::optional<LockWatchEvent> changed = take(std::move(event));
            if (!changed) return py::none();  // no change since the last round
            if (!changed->grant) return py::make_tuple("free", py::none());
            return py::make_tuple(std::string(mode_name(changed->grant->mode)), changed->grant->token);
          },
          "One round: None when the holder did not change; else ('free', None) or (mode, token), mode "
          "'exclusive' or 'shared'");
}

}  // namespace
}  // namespace palisade

PYBIND11_MODULE(_palisade, m) {
  m.doc() = "palisade's C++ client: fenced quorum reads and writes, locks with sessions, elections";
  py::list codes;  // every error code's wire name: palisade/_errors.py makes a class of each
  for (size_t i = 1; i < palisade::kCodeCount; ++i) {
    codes.append(std::string(palisade::code_name(static_cast<palisade::Code>(i))));
  }
  m.attr("CODES") = codes;
  palisade::bind_types(m);
  palisade::bind_store(m);
  palisade::bind_locks(m);
  palisade::bind_election(m);
  palisade::bind_conditional(m);
  palisade::bind_watch(m);
}
