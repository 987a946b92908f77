"""One campaign: a private cluster in network namespaces, clients recording
their calls, the nemesis, then the judge (palisade-nemesis-check), the
availability figures, the summary and the plot. Everything it made is removed
at the end, also when it is interrupted (SIGINT, SIGTERM) or fails."""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import daemons
import network
import nemesis
import report

TAG_PREFIX = "palt"  # every namespace and link a campaign makes
CLIENT = "palisade-nemesis-client"


def client_pids():
    r = subprocess.run(["pgrep", "-f", f"/{CLIENT} "], capture_output=True, text=True)
    return r.stdout.split()


def leftovers():
    """What another campaign, running or killed, has: namespaces, links, clients."""
    return network.leftovers(TAG_PREFIX) + [f"client {pid}" for pid in client_pids()]


def sweep():
    """Removes what killed campaigns left: clients (in the host's namespace,
    perhaps stopped by the nemesis), namespaces with their daemons, links and
    the replicas' tmpfs disks. Returns what it removed."""
    removed = []
    for pid in client_pids():
        subprocess.run(["kill", "-KILL", pid], capture_output=True)
        removed.append(f"client {pid}")
    return removed + network.sweep(TAG_PREFIX) + daemons.sweep_mounts()


class Campaign:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.tag = f"{TAG_PREFIX}{os.getpid() % 100:02d}"
        self.net = None
        self.cluster = None
        self.clients = []

    def say(self, text):
        print(f"torture: {text}", flush=True)

    def setup(self):
        os.makedirs(os.path.join(self.out, "history"), exist_ok=True)
        names = [f"lockd-{i}" for i in range(1, 4)] + [f"replica-{i}" for i in range(3)]
        self.net = network.Network(self.tag, names)
        self.net.up()
        sync_lib = os.path.join(self.args.bin, "tests", "libpalisade_failing_sync.so")
        broken = {}
        if self.args.broken_replicas:
            broken = {"replica_binary": os.path.join(self.args.bin, "tests", "nemesis", "palisade-replica-broken"),
                      "replica_args": ["--broken-ack-writes-without-storing"]}
        self.cluster = daemons.Cluster(self.args.bin, self.out, self.net, failing_sync_lib=sync_lib, **broken)
        self.cluster.configure()
        self.set_timing()
        self.cluster.create(disk_mb=self.args.disk_mb)
        self.cluster.start_all()
        if not self.cluster.wait_healthy(90):
            raise RuntimeError("the cluster did not become healthy in 90 s: see " + self.cluster.logs)

    def set_timing(self):
        """Shorter sessions than the default 12 s, so that paused clients lose
        theirs within a short campaign."""
        with open(self.cluster.cluster_file) as f:
            text = f.read()
        text, n = re.subn(r"(?m)^session_lease_ms = \d+$", f"session_lease_ms = {self.args.session_lease_ms}", text)
        if n != 1:
            raise RuntimeError("the cluster file `palisade cluster up` wrote has no [timing] session_lease_ms")
        with open(self.cluster.cluster_file, "w") as f:
            f.write(text)

    def start_clients(self, seconds):
        bin_path = os.path.join(self.args.bin, "tests", "nemesis", CLIENT)
        roles = ["writer"] * self.args.writers + ["reader"] * self.args.readers
        for number, role in enumerate(roles, start=1):
            history = os.path.join(self.out, "history", f"client-{number}.jsonl")
            argv = [bin_path, "--cluster", self.cluster.cluster_file, "--key-file", self.cluster.admin_key, "--client",
                    str(number), "--role", role, "--history", history,
                    "--seconds", str(seconds), "--seed", str(self.args.seed * 100 + number)]
            log = open(os.path.join(self.out, "logs", f"client-{number}.log"), "ab")
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
            log.close()
            p.number, p.role, p.history = number, role, history
            self.clients.append(p)

    def stop_clients(self):
        for p in self.clients:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
        for p in self.clients:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def final_reads(self):
        """After every fault healed, every key read once: acknowledged writes must be there."""
        bin_path = os.path.join(self.args.bin, "tests", "nemesis", CLIENT)
        number = self.args.writers + self.args.readers + 1
        subprocess.run([bin_path, "--cluster", self.cluster.cluster_file, "--key-file", self.cluster.admin_key, "--client",
                        str(number), "--role", "final", "--history",
                        os.path.join(self.out, "history", f"client-{number}.jsonl")], timeout=120,
                       capture_output=True)

    def run(self):
        a = self.args
        rng = random.Random(a.seed)
        self.say(f"seed {a.seed}, {a.seconds:.0f} s of faults ({', '.join(a.faults)}), output in {self.out}")
        self.setup()
        origin = nemesis.now_us()
        self.start_clients(a.seconds + 5)
        time.sleep(2)
        nem = nemesis.Nemesis(rng, self.cluster, self.net, os.path.join(self.out, "nemesis.jsonl"), a.faults,
                              a.over_budget)
        writers = [p for p in self.clients if p.role == "writer"]
        pauser = nemesis.ClientPauser(random.Random(a.seed + 1), writers, nem, a.session_lease_ms / 1000)
        if a.client_pauses:
            pauser.thread.start()
        nem.run(time.monotonic() + a.seconds)
        pauser.stop.set()
        if pauser.thread.is_alive():
            pauser.thread.join()
        self.stop_clients()
        self.net.heal()
        self.cluster.wait_healthy(60)
        self.final_reads()
        return self.judge(origin, nem)

    def judge(self, origin, nem):
        check = os.path.join(self.args.bin, "tests", "nemesis", "palisade-nemesis-check")
        histories = sorted(os.path.join(self.out, "history", f) for f in os.listdir(os.path.join(self.out, "history")))
        r = subprocess.run([check, "--json", *histories], capture_output=True, text=True)
        if r.returncode == 2 or not r.stdout.strip():
            raise RuntimeError(f"palisade-nemesis-check could not judge the history: {r.stderr.strip()}")
        tally = json.loads(r.stdout)
        with open(os.path.join(self.out, "violations.txt"), "w") as f:
            f.write("".join(v + "\n" for v in tally["violations"]))
        calls = report.load_lines(os.path.join(self.out, "history", "*.jsonl"))
        faults = report.load_lines(os.path.join(self.out, "nemesis.jsonl"))
        avail = report.availability(calls, faults)
        table = report.summary_table(tally["safe"], tally, avail, nem.counts, self.args.seconds)
        plotted = report.plot(self.out, calls, faults, tally["zombies"], origin)
        with open(os.path.join(self.out, "summary.md"), "w") as f:
            f.write(table + "\n")
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump({"safe": tally["safe"], "tally": tally, "availability": avail, "faults": nem.counts}, f)
        print(table)
        for v in tally["violations"][:10]:
            self.say(f"violation: {v}")
        verdict = "SAFE" if tally["safe"] else f"UNSAFE ({len(tally['violations'])} violations)"
        self.say(f"verdict: {verdict}; zombie writes refused {tally['zombie_writes_refused']} of "
                 f"{tally['zombie_writes']}; history, logs{', timeline.png' if plotted else ''} in {self.out}")
        return tally["safe"]

    def cleanup(self):
        for p in self.clients:
            if p.poll() is None:
                p.kill()
        if self.cluster:
            self.cluster.stop_all()
        if self.net:
            self.net.down()


def main(args):
    if os.geteuid() != 0:
        print("torture: needs root (network namespaces, iptables, tmpfs)", file=sys.stderr)
        return 2
    for tool in ("ip", "iptables", "gnuplot"):
        if shutil.which(tool) is None:
            print(f"torture: {tool} is not installed (./dev setup installs it)", file=sys.stderr)
            return 2
    if not os.path.exists(daemons.FAKETIME_LIB):
        print(f"torture: {daemons.FAKETIME_LIB} is missing: install faketime", file=sys.stderr)
        return 2
    left = leftovers()
    if left:
        print(f"torture: another campaign runs, or one was killed: {', '.join(left)} "
              "(scripts/torture --sweep removes them)", file=sys.stderr)
        return 2
    campaign = Campaign(args)

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    try:
        safe = campaign.run()
    except KeyboardInterrupt:
        print("torture: interrupted; cleaning up", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"torture: {e}", file=sys.stderr)
        return 2
    finally:
        campaign.cleanup()
    return 0 if safe else 1
