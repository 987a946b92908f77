"""The run render-dashboard draws: a local cluster's life for a couple of
minutes, so that each row of the dashboard has something to show.

Traffic all along (lock cycles whose holders put under their lock, plain
puts and gets), and at set points of the run: zombies whose writes are fenced,
an identity whose writes are denied and a key the daemons do not know, a
replica stopped and started again (the replicas' anti-entropy then repairs
it), and the master killed and started again (a failover).
"""
import json
import shutil
import signal
import subprocess
import threading
import time

from metrics_cluster import append_to_file


class Workload:
    def __init__(self, cluster, tmp, seconds):
        self.cluster = cluster
        self.tmp = tmp
        self.seconds = seconds
        self.events = []  # (seconds since the start, what happened)
        self.stopping = threading.Event()
        self.start = None

    def run(self):
        """Runs it all; returns (start, end) as Unix times."""
        timeline = [
            (0.08, lambda: self.zombie(1)),
            (0.17, self.intruders),
            (0.25, lambda: self.stop_replica("replica-2")),
            (0.38, self.start_again),
            (0.46, lambda: self.zombie(3)),
            (0.54, self.kill_master),
            (0.67, self.start_again),
            (0.79, lambda: self.zombie(2)),
        ]
        wall_start, self.start = time.time(), time.monotonic()
        threads = [threading.Thread(target=self.lock_cycles, args=(f"jobs/{i}",)) for i in range(2)]
        threads.append(threading.Thread(target=self.puts_and_gets))
        for t in threads:
            t.start()
        try:
            for at, action in timeline:
                self.sleep_until(at * self.seconds)
                action()
            self.sleep_until(self.seconds)
        finally:
            self.stopping.set()
            for t in threads:
                t.join()
        return wall_start, wall_start + (time.monotonic() - self.start)

    def sleep_until(self, second):
        time.sleep(max(0.0, self.start + second - time.monotonic()))

    def event(self, what):
        at = time.monotonic() - self.start
        self.events.append((at, what))
        print(f"render-dashboard: {at:5.1f} s: {what}", flush=True)

    # Traffic, until stopped. Commands fail now and then (during the failover): that is part of the picture.

    def lock_cycles(self, lock):
        n = 0
        while not self.stopping.is_set():
            n += 1
            self.cluster.cli("lock", lock, "--wait", "10s", "--", self.cluster.palisade, "put", f"{lock}/count", n,
                             check=False)

    def puts_and_gets(self):
        n = 0
        while not self.stopping.is_set():
            n += 1
            self.cluster.cli("put", f"kv/{n % 50}", f"value {n}", check=False)
            self.cluster.cli("get", f"kv/{n * 7 % 50}", check=False)

    # Events.

    def zombie(self, newer_holders):
        """A holder keeps its sequencer, `newer_holders` take the lock after it, then it writes."""
        old = self.cluster.cli("lock", "ledger", "--", "sh", "-c", "echo $PALISADE_SEQUENCER").stdout.strip()
        for i in range(newer_holders):
            self.cluster.cli("lock", "ledger", "--", self.cluster.palisade, "put", "ledger/balance", i)
        fenced = sum(self.cluster.cli("put", "ledger/balance", "stale", "--sequencer", old, check=False).returncode == 3
                     for _ in range(3))
        self.event(f"a zombie's writes after {newer_holders} newer holder{'s' if newer_holders > 1 else ''}: "
                   f"{fenced} of 3 fenced")

    def intruders(self):
        """Identity reader may only read: its puts are denied. Key intruder is not in the daemons' file: refused."""
        reader = self.keygen("reader")
        append_to_file(self.cluster.cluster_file, f"\n[[role]]\nname = 'reader'\nread = ['*']\n\n"
                                                  f"[[identity]]\nname = 'reader'\nkeys = ['{reader}']\nroles = ['reader']\n")
        self.cluster.reload()
        # The daemons read the file between two batches: the first puts may still find reader unknown.
        denied = 0
        deadline = time.monotonic() + 10
        while denied < 5 and time.monotonic() < deadline:
            put = self.cluster.cli("--key", self.tmp / "reader.key", "put", "kv/1", "denied", "--timeout", "1s",
                                   check=False)
            denied += put.returncode == 9
        # Listed in a copy of the file only, so that the CLI connects, and the daemons refuse the handshake.
        intruder = self.keygen("intruder")
        other_file = self.tmp / "intruder.toml"
        shutil.copy(self.cluster.cluster_file, other_file)
        with open(other_file, "a") as f:
            f.write(f"\n[[identity]]\nname = 'intruder'\nkeys = ['{intruder}']\nroles = ['admin']\n")
        for _ in range(3):
            subprocess.run([self.cluster.palisade, "--cluster", other_file, "--key", self.tmp / "intruder.key",
                            "get", "kv/1", "--timeout", "1s"], capture_output=True, timeout=30)
        self.event(f"{denied} puts of a read-only identity denied; 3 gets with an unknown key")

    def keygen(self, name):
        out = self.cluster.cli("keygen", name, "--out", self.tmp / f"{name}.key", "-o", "json").stdout
        return json.loads(out)["public_key"]

    def stop_replica(self, name):
        self.cluster.kill(name, signal.SIGTERM)
        self.event(f"{name} stopped")

    def kill_master(self):
        master = self.cluster.master()
        if master:
            self.cluster.kill(master)
        self.event(f"master {master} killed")

    def start_again(self):
        self.event(f"{', '.join(self.cluster.start_missing())} started again")
