"""A local palisade cluster whose daemons serve metrics, for render-dashboard
and tests/scripts/monitoring_test.py: `palisade cluster up --metrics` on a
--base-port, so that a daemon started again (after kill()) serves its
metrics on the same port as before, where Prometheus scrapes it.

    with MetricsCluster(palisade, directory) as cluster:
        cluster.metrics["lockd-1"]   # "127.0.0.1:PORT"
        cluster.kill("lockd-2"); cluster.start_missing()
        cluster.cli("put", "greeting", "hello")

If the process that started the cluster dies without stopping it (ctest
kills a test at its timeout with SIGKILL), a detached watcher stops its
daemons: `cluster up` detaches them, so nothing else would.

LockLoad runs a lock-and-put loop against it in a thread (the operations
and members tests keep it going while they change the cluster). HandStarted
keeps the daemons a test starts by hand, as an operator would.
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ports_free(first, count):
    for port in range(first, first + count):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def http_get(address, path, timeout=2):
    """(status, body) of http://ADDRESS/PATH; (None, why) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=timeout) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


def exited(pid):
    """Whether the process is gone (a zombie has exited too: nothing may reap it here)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


class MetricsCluster:
    def __init__(self, palisade, directory, lockd=3, replicas=3):
        self.palisade = str(palisade)
        self.dir = Path(directory)
        self.size = (lockd, replicas)
        self.cluster_file = str(self.dir / "cluster.toml")
        self.base_port = None
        self.metrics = {}  # daemon name -> HOST:PORT of its metrics
        self.pids = {}     # daemon name -> pid, of the daemons running
        self.watcher = None  # the write end of the watcher's stdin

    def __enter__(self):
        self.watch()
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def watch(self):
        """Starts the watcher: when its stdin closes without a word (this process
        died), it runs `cluster down`. setsid -f makes it no child of ours, so a
        kill of this process and its children spares it."""
        script = "import subprocess, sys\nif not sys.stdin.read():\n    subprocess.run(sys.argv[1:], timeout=120)"
        read, self.watcher = os.pipe()  # both ends not inherited: only the watcher holds the read end
        subprocess.run(["setsid", "-f", sys.executable, "-c", script, self.palisade, "cluster", "down", "--dir",
                        str(self.dir)], stdin=read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        os.close(read)

    def cli(self, *args, timeout=60, check=True):
        """Runs `palisade --cluster FILE ARGS...`; its CompletedProcess."""
        done = subprocess.run([self.palisade, "--cluster", self.cluster_file, *map(str, args)],
                              capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"palisade {' '.join(map(str, args))}: exit {done.returncode}: {done.stderr.strip()}")
        return done

    def member_list(self):
        """`palisade member list -o json`, parsed, once a master answers (a master that hands over, or a
        group reloading its cluster file, is without one for a moment)."""
        answers = []
        wait_until("a master to list the members",
                   lambda: answers.append(self.cli("member", "list", "-o", "json", check=False)) or
                   answers[-1].returncode == 0, timeout=30)
        return json.loads(answers[-1].stdout)

    def start(self):
        """A new cluster on 2N ports that were free (its daemons', then their metrics')."""
        count = 2 * sum(self.size)
        for _ in range(10):
            base = random.randrange(20000, 32768 - count)  # below the ephemeral ports other tests get
            if not ports_free(base, count):
                continue
            up = self.cli("cluster", "up", "--dir", self.dir, "--lockd", self.size[0], "--replicas", self.size[1],
                          "--base-port", base, "--metrics", "-o", "json", check=False)
            self.base_port = base
            if up.returncode != 2:  # 2: a port was taken meanwhile
                break
        if up.returncode != 0:
            raise RuntimeError(f"palisade cluster up: exit {up.returncode}: {up.stderr.strip()}")
        self.metrics = {d["name"]: d["metrics"] for d in json.loads(up.stdout)["daemons"]}
        self.wait_ready()

    def start_missing(self):
        """Starts every daemon that is not running; returns their names once all are ready (/readyz)."""
        # Without --base-port, up would give the metrics free ports.
        up = self.cli("cluster", "up", "--dir", self.dir, "--base-port", self.base_port, "--metrics", "-o", "json")
        self.wait_ready()
        return json.loads(up.stdout)["started"]

    def wait_ready(self, timeout=30):
        self.pids = {d["name"]: d["pid"] for d in self.status() if d["state"] == "running"}
        deadline = time.monotonic() + timeout
        for name in self.pids:
            while http_get(self.metrics[name], "/readyz")[0] != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} not ready within {timeout} s: {http_get(self.metrics[name], '/readyz')}")
                time.sleep(0.1)

    def status(self):
        return json.loads(self.cli("cluster", "status", "--dir", self.dir, "-o", "json", check=False).stdout)["daemons"]

    def master(self):
        """The name of the lockd that is master, or None."""
        return next((d["name"] for d in self.status() if d.get("role") == "master"), None)

    def reload(self):
        """SIGHUP to every daemon: each reads the cluster file again (docs/security.md)."""
        for pid in self.pids.values():
            os.kill(pid, signal.SIGHUP)

    def kill(self, name, sig=signal.SIGKILL):
        """Sends `sig` to the daemon and waits until it has exited."""
        pid = self.pids.pop(name)
        os.kill(pid, sig)
        try:
            wait_until(f"{name} to exit", lambda: exited(pid), timeout=15)
        except RuntimeError:
            os.kill(pid, signal.SIGKILL)
            wait_until(f"{name} to exit after SIGKILL", lambda: exited(pid), timeout=15)

    def stop(self):
        """Every daemon `cluster up` started: cluster down finds them in DIR/daemons."""
        if (self.dir / "daemons").exists():
            subprocess.run([self.palisade, "cluster", "down", "--dir", str(self.dir)], capture_output=True,
                           timeout=60)
        if self.watcher is not None:
            os.write(self.watcher, b"stopped")  # the watcher exits without a word to say
            os.close(self.watcher)
            self.watcher = None


class HandStarted:
    """Daemons started by hand beside the cluster, by name, each logging to DIR/NAME.log."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.procs = {}  # name -> Popen

    def start(self, name, argv):
        with open(self.dir / f"{name}.log", "a") as log:
            self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, name):
        proc = self.procs.pop(name)
        proc.terminate()
        proc.wait(timeout=15)

    def stop_all(self):
        for proc in self.procs.values():
            proc.kill()
            proc.wait()
        self.procs.clear()

    def pids(self):
        return {name: p.pid for name, p in self.procs.items()}


def replace_file(path, text):
    """Writes path through a renamed temporary file: clients that read the cluster file meanwhile (a load's
    `palisade` calls) see the old text or the new, never part of it."""
    tmp = f"{path}.tmp"
    Path(tmp).write_text(text)
    os.replace(tmp, path)


def append_to_file(path, text):
    replace_file(path, Path(path).read_text() + text)


def wait_until(what, condition, timeout=30):
    """Polls `condition` until it is true; RuntimeError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)


class LockLoad(threading.Thread):
    """`palisade lock roll -- sh -c 'echo $PALISADE_TOKEN; palisade put roll-N N'`, again and again."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.stopping = threading.Event()
        self.done = []     # (n, token) of each step that succeeded
        self.failed = []   # (n, exit code, output) of each that did not

    def run(self):
        n = 0
        while not self.stopping.is_set():
            step = self.cluster.cli("lock", "roll", "--", "sh", "-c",
                                    f'echo $PALISADE_TOKEN; "{self.cluster.palisade}" --cluster '
                                    f'"{self.cluster.cluster_file}" put roll-{n} {n}', timeout=120, check=False)
            lines = step.stdout.split()
            if step.returncode == 0 and len(lines) == 2 and lines[1] == "OK":
                self.done.append((n, int(lines[0])))
            else:
                self.failed.append((n, step.returncode, step.stdout + step.stderr))
            n += 1

    def steps(self):
        return len(self.done) + len(self.failed)

    def verify(self, may_fail=lambda output: False):
        """Once stopped: every step succeeded (but those whose output `may_fail` accepts), tokens strictly
        increased, and every key a step wrote reads back; the tokens. RuntimeError otherwise."""
        failed = [f for f in self.failed if not may_fail(f[2])]
        if failed:
            raise RuntimeError(f"{len(failed)} of {self.steps()} steps failed: {failed[:3]}")
        tokens = [token for _, token in self.done]
        if any(a >= b for a, b in zip(tokens, tokens[1:])):
            raise RuntimeError(f"tokens did not strictly increase: {tokens}")
        for n, _ in self.done:
            got = self.cluster.cli("get", f"roll-{n}").stdout.strip()
            if got != str(n):
                raise RuntimeError(f"roll-{n}, acknowledged, reads back {got!r}")
        return tokens

    def wait_for_steps(self, more, timeout=60):
        target = self.steps() + more
        wait_until(f"{more} more steps of the load", lambda: self.steps() >= target, timeout=timeout)
