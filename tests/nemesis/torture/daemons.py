"""The campaign's cluster: real palisade-lockd and palisade-replica processes,
each in its own network namespace (network.py), each with a clock of its own
(libfaketime, realtime only: CLOCK_MONOTONIC stays true, as a kernel's does
when NTP steps the wall clock) and, for replicas, a disk that can fail its
syncs (tests/support/failing_sync.cc) or fill up (a small tmpfs).

The cluster file, keys and secrets are made by `palisade cluster up` on
loopback, as a user makes them; the campaign then moves every endpoint to the
daemon's namespace address and starts the daemons itself.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import tomllib

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


class Daemon:
    def __init__(self, name, argv, env, log_path, data_dir):
        self.name, self.argv, self.env, self.log_path, self.data_dir = name, argv, env, log_path, data_dir
        self.process = None
        self.stopped = False  # SIGSTOPped

    def start(self):
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(self.argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.stopped = False

    def running(self):
        return self.process is not None and self.process.poll() is None

    def signal(self, sig):
        if self.running():
            os.kill(self.process.pid, sig)
            if sig == signal.SIGSTOP:
                self.stopped = True
            elif sig == signal.SIGCONT:
                self.stopped = False

    def restart(self):
        """As an operator does once a disk is fixed: SIGTERM, then start again."""
        if self.running():
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.start()

    def kill(self):
        if self.running():
            self.process.kill()
            self.process.wait()
        self.stopped = False


class Cluster:
    def __init__(self, bin_dir, out_dir, network, lockd=3, replicas=3, failing_sync_lib=None, log_level="info",
                 replica_binary=None, replica_args=()):
        self.bin = bin_dir
        self.replica_binary = replica_binary or os.path.join(bin_dir, "replica", "palisade-replica")
        self.replica_args = list(replica_args)
        self.dir = os.path.join(out_dir, "cluster")
        self.logs = os.path.join(out_dir, "logs")
        self.network = network
        self.lockd_names = [f"lockd-{i}" for i in range(1, lockd + 1)]
        self.replica_names = [f"replica-{i}" for i in range(replicas)]  # as `cluster up` names them
        self.failing_sync_lib = failing_sync_lib
        self.log_level = log_level
        self.daemons = {}
        self.clock_files = {}
        self.sync_flags = {}
        self.mounts = []
        self.cluster_file = os.path.join(self.dir, "cluster.toml")
        self.admin_key = os.path.join(self.dir, "keys", "admin.key")

    def palisade(self, *args, timeout=30):
        return subprocess.run([os.path.join(self.bin, "cli", "palisade"), "--cluster", self.cluster_file, "--key",
                               self.admin_key, *args], capture_output=True, text=True, timeout=timeout)

    def configure(self):
        """Makes the cluster file and keys as `palisade cluster up` does, then
        moves each endpoint to its daemon's address."""
        os.makedirs(self.logs, exist_ok=True)
        cli = os.path.join(self.bin, "cli", "palisade")
        up = subprocess.run([cli, "cluster", "up", "--dir", self.dir, "--lockd", str(len(self.lockd_names)),
                             "--replicas", str(len(self.replica_names))], capture_output=True, text=True, timeout=120)
        subprocess.run([cli, "cluster", "down", "--dir", self.dir], capture_output=True, timeout=120)
        if up.returncode != 0:
            raise RuntimeError(f"palisade cluster up: {up.stderr.strip()}")
        with open(self.cluster_file, "rb") as f:
            config = tomllib.load(f)
        moves = {}
        for node in config["lockd"]:
            moves[node["endpoint"]] = self._moved(node["endpoint"], f"lockd-{node['id']}")
        for i, replica in enumerate(config["replica"]):
            moves[replica["endpoint"]] = self._moved(replica["endpoint"], self.replica_names[i])
        with open(self.cluster_file) as f:
            text = f.read()
        for old, new in moves.items():
            for quote in "'\"":
                text = text.replace(f"{quote}{old}{quote}", f"{quote}{new}{quote}")
        with open(self.cluster_file, "w") as f:
            f.write(text)
        # The daemons ran once on loopback: start them from nothing.
        for name in self.lockd_names + self.replica_names:
            shutil.rmtree(os.path.join(self.dir, name), ignore_errors=True)
        self.endpoints = {v: k for k, v in moves.items()}
        self.endpoint_of = {}
        for old, new in moves.items():
            for name in self.lockd_names + self.replica_names:
                if new.startswith(f"tcp://{self.network.addresses[name]}:"):
                    self.endpoint_of[name] = new

    def _moved(self, endpoint, name):
        port = re.fullmatch(r"tcp://127\.0\.0\.1:(\d+)", endpoint).group(1)
        return f"tcp://{self.network.addresses[name]}:{port}"

    def create(self, disk_mb=0):
        """Makes every daemon (not started). disk_mb > 0: each replica's data
        on a tmpfs of that size, so that it can fill up."""
        for name in self.lockd_names + self.replica_names:
            data = os.path.join(self.dir, name)
            os.makedirs(data, exist_ok=True)
            clock = os.path.join(self.dir, f"{name}.clock")
            with open(clock, "w") as f:
                f.write("+0\n")
            self.clock_files[name] = clock
            env = dict(os.environ)
            preload = [FAKETIME_LIB]
            env.update({"FAKETIME_TIMESTAMP_FILE": clock, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                        "FAKETIME_CACHE_DURATION": "1"})
            key = os.path.join(self.dir, "keys", f"{name}.key")
            common = ["--cluster", self.cluster_file, "--data-dir", data, "--key", key, "--log-level", self.log_level]
            if name.startswith("lockd-"):
                argv = [os.path.join(self.bin, "lockgroup", "palisade-lockd"), "--id", name.split("-")[1], *common]
            else:
                if disk_mb > 0:
                    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={disk_mb}m", "tmpfs", data], check=True)
                    self.mounts.append(data)
                argv = [self.replica_binary, "--listen", self.endpoint_of[name], *common, *self.replica_args]
                if self.failing_sync_lib:
                    preload.append(self.failing_sync_lib)
                    self.sync_flags[name] = os.path.join(self.dir, f"{name}.fail-syncs")
                    env["PALISADE_FAIL_SYNCS_WHILE"] = self.sync_flags[name]
            env["LD_PRELOAD"] = ":".join(preload)
            self.daemons[name] = Daemon(name, self.network.in_namespace(name) + argv, env,
                                        os.path.join(self.logs, f"{name}.log"), data)

    def start_all(self):
        for d in self.daemons.values():
            d.start()

    def status(self):
        """`palisade status -o json`, or None when it did not answer."""
        try:
            r = self.palisade("-o", "json", "status", timeout=15)
        except subprocess.TimeoutExpired:
            return None
        try:
            return json.loads(r.stdout)
        except json.JSONDecodeError:
            return None

    def master(self):
        """The name of the lockd node that is master now, or None."""
        s = self.status()
        master = ((s or {}).get("lock_group") or {}).get("master")
        return None if master is None else f"lockd-{master}"

    def wait_healthy(self, timeout_s=60):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = [d for d in self.daemons.values() if not d.running()]
            if dead:
                with open(dead[0].log_path, errors="replace") as f:
                    last = f.read().strip().splitlines()[-1:] or ["(no log)"]
                raise RuntimeError(f"{dead[0].name} exited: {last[0]}")
            s = self.status()
            if s and s.get("healthy"):
                return True
            time.sleep(0.5)
        return False

    def set_clock(self, name, offset_s):
        with open(self.clock_files[name], "w") as f:
            f.write(f"{offset_s:+.3f}\n")

    def fail_syncs(self, name, failing):
        flag = self.sync_flags[name]
        if failing:
            open(flag, "w").close()
        elif os.path.exists(flag):
            os.remove(flag)

    def fill_disk(self, name, full):
        filler = os.path.join(self.daemons[name].data_dir, "filler")
        if full:
            subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True)
        elif os.path.exists(filler):
            os.remove(filler)

    def stop_all(self):
        for d in self.daemons.values():
            if d.stopped:
                d.signal(signal.SIGCONT)
            d.kill()
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m], capture_output=True)
        self.mounts = []


def sweep_mounts():
    """Unmounts the replicas' tmpfs disks that killed campaigns left mounted."""
    removed = []
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[0] == "tmpfs" and re.search(r"/cluster/replica-\d+$", fields[1]):
                subprocess.run(["umount", "-l", fields[1]], capture_output=True)
                removed.append(f"mount {fields[1]}")
    return removed
