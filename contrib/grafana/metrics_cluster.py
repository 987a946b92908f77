"""A local palisade cluster whose daemons serve metrics (--metrics-listen on
127.0.0.1), for render-dashboard and tests/scripts/monitoring_test.py.

`palisade cluster up` makes the cluster (its file, keys and data directories)
and starts it; then every daemon is stopped and started again by this module
with the same command line plus `--metrics-listen` on a free port, as a child
of this process. (`cluster up --metrics` will do this itself: then start()
runs it, and reads the addresses from `cluster status -o json`.)

    with MetricsCluster(palisade, directory) as cluster:
        cluster.metrics["lockd-1"]   # "127.0.0.1:PORT"
        cluster.kill("lockd-2"); cluster.start_missing()
        cluster.cli("put", "greeting", "hello")
"""
import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(address, path, timeout=2):
    """(status, body) of http://ADDRESS/PATH; (None, why) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=timeout) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


class MetricsCluster:
    def __init__(self, palisade, directory, lockd=3, replicas=3):
        self.palisade = str(palisade)
        self.dir = Path(directory)
        self.size = (lockd, replicas)
        self.cluster_file = str(self.dir / "cluster.toml")
        self.argv = {}     # daemon name -> its command line, --metrics-listen included
        self.metrics = {}  # daemon name -> HOST:PORT of its metrics
        self.children = {}  # daemon name -> the running Popen
        self.logs = []

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def cli(self, *args, timeout=60, check=True):
        """Runs `palisade --cluster FILE ARGS...`; its CompletedProcess."""
        done = subprocess.run([self.palisade, "--cluster", self.cluster_file, *map(str, args)],
                              capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"palisade {' '.join(map(str, args))}: exit {done.returncode}: {done.stderr.strip()}")
        return done

    def start(self):
        up = self.cli("cluster", "up", "--dir", self.dir, "--lockd", self.size[0], "--replicas", self.size[1],
                      "-o", "json")
        daemons = json.loads(up.stdout)["daemons"]
        for d in daemons:
            argv = Path(f"/proc/{d['pid']}/cmdline").read_bytes().decode().split("\0")[:-1]
            self.metrics[d["name"]] = f"127.0.0.1:{free_port()}"
            self.argv[d["name"]] = argv + ["--metrics-listen", self.metrics[d["name"]]]
        self.cli("cluster", "down", "--dir", self.dir)
        self.start_missing()

    def start_missing(self, timeout=30):
        """Starts every daemon that is not running and returns their names once each is ready (/readyz)."""
        started = [name for name in self.argv if name not in self.children]
        for name in started:
            log = open(self.dir / f"{name}.metrics.log", "a")
            self.logs.append(log)
            self.children[name] = subprocess.Popen(self.argv[name], stdout=log, stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        for name in self.children:
            while http_get(self.metrics[name], "/readyz")[0] != 200:
                if self.children[name].poll() is not None:
                    raise RuntimeError(f"{name} exited {self.children[name].returncode}; see {self.dir}/{name}.*log")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} not ready within {timeout} s: {http_get(self.metrics[name], '/readyz')}")
                time.sleep(0.1)
        return started

    def master(self):
        """The name of the lockd whose palisade_lockd_is_master is 1, or None."""
        for name, address in self.metrics.items():
            status, body = http_get(address, "/metrics")
            if name.startswith("lockd") and status == 200 and "\npalisade_lockd_is_master 1\n" in body:
                return name
        return None

    def reload(self):
        """SIGHUP to every daemon: each reads the cluster file again (docs/security.md)."""
        for child in self.children.values():
            child.send_signal(signal.SIGHUP)

    def kill(self, name, sig=signal.SIGKILL):
        child = self.children.pop(name)
        child.send_signal(sig)
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def stop(self):
        for name in list(self.children):
            self.kill(name, signal.SIGTERM)
        for log in self.logs:
            log.close()
        # A daemon `cluster up` started and start() did not get to stop.
        if (self.dir / "daemons").exists():
            subprocess.run([self.palisade, "cluster", "down", "--dir", str(self.dir)], capture_output=True,
                           timeout=60)


def wait_until(what, condition, timeout=30):
    """Polls `condition` until it is true; RuntimeError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)

