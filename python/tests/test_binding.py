"""The Python binding against a real local cluster: the store, locks with
sessions, fencing, elections, errors, and examples/elected_worker.py."""
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

import palisade

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "elected_worker.py"


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_errors_are_classes_by_code():
    assert issubclass(palisade.Fenced, palisade.Error)
    assert palisade.Fenced.code == "fenced"
    assert palisade.PermissionDenied.code == "permission_denied"
    with pytest.raises(palisade.StorageError) as missing:
        palisade.ClusterFile("/nonexistent/cluster.toml")
    assert missing.value.code == "storage_error"


def test_put_get_delete_and_scan(cluster):
    c = cluster.connect()
    assert c.secure
    with palisade.QuorumStore(c) as store:
        prefix = unique("py") + "/"
        ts = store.put(prefix + "a", b"1")
        assert ts.token == 0
        store.put(prefix + "b", "two")  # str values are UTF-8
        got = store.get(prefix + "a")
        assert got.value == b"1" and got.key == prefix + "a" and got.ts == ts and got.lock == ""
        assert store.get(prefix + "missing") is None
        versions, after = store.scan(prefix)
        assert [(v.key, v.value) for v in versions] == [(prefix + "a", b"1"), (prefix + "b", b"two")]
        assert after is None
        first, after = store.scan(prefix, limit=1)
        assert [v.key for v in first] == [prefix + "a"] and after == prefix + "a"
        rest, after = store.scan(prefix, after=after)
        assert [v.key for v in rest] == [prefix + "b"] and after is None
        store.delete(prefix + "a")
        assert store.get(prefix + "a") is None
        with pytest.raises(palisade.BadRequest):
            store.put("", b"no key")


def test_watch_a_prefix_and_a_lock(cluster):
    c = cluster.connect()
    store = palisade.QuorumStore(c)
    locks = palisade.LockClient(c, store=store)
    prefix = unique("watched") + "/"
    first = store.put(prefix + "a", b"1")
    watcher = palisade.Watcher(store, prefix, prefix=True)
    [now] = watcher.poll()
    assert (now.kind, now.key, now.value, now.ts) == ("put", prefix + "a", b"1", first)
    assert watcher.poll() == []
    second = store.put(prefix + "a", b"2")
    newest = store.put(prefix + "a", b"3")
    gone = store.put(prefix + "b", b"x")
    store.delete(prefix + "b")
    # Every version, from the replicas' change feeds, in order.
    changes = watcher.poll()
    assert [(e.kind, e.key, e.value) for e in changes] == [("put", prefix + "a", b"2"), ("put", prefix + "a", b"3"),
                                                           ("put", prefix + "b", b"x"), ("delete", prefix + "b", b"")]
    assert [e.ts for e in changes[:3]] == [second, newest, gone] and changes[3].ts > gone
    # Without the feeds, a round tells each key's newest.
    rounds = palisade.Watcher(store, prefix, prefix=True, every_version=False)
    assert [e.value for e in rounds.poll()] == [b"3"]
    store.put(prefix + "a", b"4")
    store.put(prefix + "a", b"5")
    assert [e.value for e in rounds.poll()] == [b"5"]
    assert [e.value for e in watcher.poll()] == [b"4", b"5"]
    # Resumed elsewhere from what it saw: only what is newer.
    again = palisade.Watcher(store, prefix, prefix=True)
    again.resume(watcher.seen)
    assert again.poll() == []
    events = again.events(every=0.05)
    store.put(prefix + "c", b"4")
    assert next(events).key == prefix + "c"

    held = palisade.LockWatcher(locks, prefix + "lock")
    assert held.poll() == ("free", None)
    assert held.poll() is None
    lease = locks.acquire(prefix + "lock")
    assert held.poll() == ("exclusive", lease.token)
    locks.release(lease)
    assert held.poll() == ("free", None)
    locks.close()
    with pytest.raises(palisade.NoSession):
        held.poll()


def test_locks_fence_writes(cluster):
    c = cluster.connect()
    store = palisade.QuorumStore(c)
    a = palisade.LockClient(c, store=store)
    b = palisade.LockClient(c, store=store)
    lock, key = unique("ledger"), unique("balance")
    held = a.acquire(lock)
    assert held.valid and held.token > 0 and held.name == lock and not held.shared
    with pytest.raises(palisade.Busy):
        b.acquire(lock)
    with pytest.raises(palisade.Timeout):
        b.acquire(lock, wait=0.3)
    written = store.put(key, b"100", lease=held)
    assert written.token == held.token
    assert store.get(key).lock == lock
    # An unfenced write over a key written under a lock is refused.
    with pytest.raises(palisade.Fenced):
        store.put(key, b"0")
    assert a.check_sequencer(held.sequencer)
    a.release(held)
    assert not held.valid
    with pytest.raises(palisade.NoSession):
        store.put(key, b"90", lease=held)
    taken = b.acquire(lock, wait=5)
    assert taken.token > held.token
    assert not b.check_sequencer(held.sequencer)
    store.put(key, b"200", lease=taken)
    assert store.get(key).value == b"200"
    # A fenced read under the lease reads the same; a released lease reads nothing.
    assert store.get(key, lease=taken).value == b"200"
    with pytest.raises(palisade.NoSession):
        store.get(key, lease=held)
    b.close()
    with pytest.raises(palisade.NoSession):
        b.acquire(lock)
    a.close()
    store.close()


def test_session_events_reach_python(cluster):
    c = cluster.connect()
    events = []
    with palisade.LockClient(c, on_event=events.append) as locks:
        assert locks.safe and locks.session > 0
    # A clean close tells nothing: the session was never in jeopardy.
    assert events == []


def test_election_leader_observe_resign(cluster):
    c = cluster.connect()
    store = palisade.QuorumStore(c)
    a = palisade.LockClient(c, store=store)
    watcher = palisade.LockClient(c)
    name = unique("scheduler")
    election = palisade.Election(a, store, name)
    observer = palisade.Election(watcher, store, name)
    assert election.key == name and observer.leader() is None

    lease = election.campaign(b"node-a", wait=5)
    leader = observer.leader()
    assert leader.token == lease.token and leader.value == b"node-a" and leader.ts.token == lease.token
    election.proclaim(lease, b"node-a:2")

    seen = []

    def on_change(now):
        seen.append(now)
        return not (now is not None and now.value == b"node-a:2")  # stop once told

    observer.observe(on_change, every=0.05)
    assert seen[-1].value == b"node-a:2"

    # Resigned: nobody leads; an observer in another thread is told.
    told_nobody = threading.Event()

    def watch():
        observer.observe(lambda now: not (now is None and told_nobody.set() is None), every=0.05)

    thread = threading.Thread(target=watch)
    thread.start()
    election.resign(lease)
    assert told_nobody.wait(10)
    thread.join(10)
    assert observer.leader() is None
    assert store.get(name) is None


def test_conditional_writes(cluster):
    c = cluster.connect()
    store = palisade.QuorumStore(c)
    cas = palisade.ConditionalStore(palisade.LockClient(c, store=store), store)
    key = unique("config")
    first = cas.put(key, b"v1", None)
    with pytest.raises(palisade.Stale) as taken:
        cas.put(key, b"v1'", None)
    assert str(first) in taken.value.message
    read = store.get(key)
    assert read.ts == first and read.value == b"v1"
    second = cas.put(key, b"v2", read.ts)
    with pytest.raises(palisade.Stale):
        cas.put(key, b"v2'", read.ts)  # the version it read is gone
    assert store.get(key).value == b"v2"
    cas.delete(key, second)
    assert store.get(key) is None


def test_observe_stops_on_a_raised_exception(cluster):
    c = cluster.connect()
    store = palisade.QuorumStore(c)
    locks = palisade.LockClient(c)
    election = palisade.Election(locks, store, unique("quiet"))

    def fail(now):
        raise RuntimeError("stop observing")

    with pytest.raises(RuntimeError, match="stop observing"):
        election.observe(fail)


def run_worker(cluster, name, log):
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), cluster.file, cluster.key, name, "--ttl", "4", "--steps", "100000"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT, env=os.environ.copy())


def wait_for(what, done, timeout=30):
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"waiting for {what}"
        time.sleep(0.05)


def test_elected_worker_example_is_deposed_and_refused(cluster, tmp_path):
    """Two workers; the leader paused past its lease: the other is elected,
    and the paused one's next write is refused when it wakes."""
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = run_worker(cluster, "first", first_log)
    try:
        wait_for("the first to write", lambda: "wrote 3" in first_log.read_text())
        second = run_worker(cluster, "second", second_log)
        try:
            time.sleep(0.5)
            assert "leading" not in second_log.read_text()  # it waits while the first leads
            first.send_signal(signal.SIGSTOP)
            wait_for("the second to lead and write", lambda: "wrote" in second_log.read_text())
            first.send_signal(signal.SIGCONT)
            assert first.wait(30) == 3
            assert "deposed: " in first_log.read_text()
            c = cluster.connect()
            store = palisade.QuorumStore(c)
            observer = palisade.Election(palisade.LockClient(c), store, "workers", key="workers/leader")
            assert observer.leader().value == b"second"
            # The first wrote nothing after the second was elected: the
            # second's count runs on from the first's last.
            first_counts = [int(line.split()[1]) for line in first_log.read_text().splitlines()
                            if line.startswith("wrote")]
            second_counts = [int(line.split()[1]) for line in second_log.read_text().splitlines()
                             if line.startswith("wrote")]
            assert second_counts[0] == first_counts[-1] + 1
        finally:
            second.kill()
            second.wait()
    finally:
        first.kill()
        first.wait()
