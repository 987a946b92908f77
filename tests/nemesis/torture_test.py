#!/usr/bin/python3
"""scripts/torture as a user runs it (ctest label `nemesis`): a short seeded
campaign must be SAFE with faults injected, zombie writes tried and refused,
and failovers measured; the negative control (replicas that acknowledge
writes without storing or checking them) must be UNSAFE; an interrupted
campaign must leave no namespace, process or mount behind; a campaign over
the fault budget must be SAFE; --sweep must remove what a killed one left.
A campaign whose checks fail is copied to BUILD_DIR/torture-failed/ (and its
violations printed), to be read after the temporary directory is gone.

    torture_test.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

source, build = sys.argv[1:3]
if os.geteuid() != 0:
    print("torture: skipped: the campaign needs root (network namespaces)")
    sys.exit(77)
torture = os.path.join(source, "scripts", "torture")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAILED: {what}", flush=True)


def leftovers():
    """What a campaign of this test left: namespaces, tmpfs mounts, and
    processes that name its directory (daemons and clients of other tests,
    running beside it under ctest -j, do not)."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left = [line.split()[0] for line in namespaces.splitlines() if line.startswith("palt")]
    with open("/proc/mounts") as f:
        left += [line.split()[1] for line in f if "/cluster/replica-" in line]
    daemons = subprocess.run(["pgrep", "-f", tmp], capture_output=True, text=True).stdout.split()
    return left + [f"process {p}" for p in daemons]


def keep_if_failed(out, failures_before):
    """Copies a campaign's directory out of the temporary one when a check of it failed."""
    if len(failures) == failures_before or not os.path.isdir(out):
        return
    kept = os.path.join(build, "torture-failed", os.path.basename(out))
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(out, kept, symlinks=True)
    print(f"torture: kept the failed campaign's directory as {kept}", flush=True)
    violations = os.path.join(out, "violations.txt")
    if os.path.exists(violations):
        print(open(violations).read()[-3000:], flush=True)


def campaign(out, *args, timeout=600):
    r = subprocess.run([torture, "--bin", build, "--out", out, *args], capture_output=True, text=True,
                       timeout=timeout)
    print(r.stdout[-3000:], r.stderr[-2000:], sep="\n", flush=True)
    return r


with tempfile.TemporaryDirectory(prefix="torture-test-") as tmp:
    check(leftovers() == [], f"something was left before the test: {leftovers()}")

    # A short campaign: every fault kind, paused clients.
    out, before = os.path.join(tmp, "safe"), len(failures)
    r = campaign(out, "--seed", "3", "--seconds", "90")
    check(r.returncode == 0, f"a campaign on the real daemons exits 0 (SAFE), not {r.returncode}")
    check("torture: verdict: SAFE" in r.stdout, "the verdict line says SAFE")
    summary = json.load(open(os.path.join(out, "summary.json"))) if os.path.exists(
        os.path.join(out, "summary.json")) else {}
    tally = summary.get("tally", {})
    kinds = summary.get("faults", {})
    check(len(kinds) >= 9, f"faults of most kinds were injected (each kind once before any twice): {kinds}")
    faults = [json.loads(line) for line in open(os.path.join(out, "nemesis.jsonl"))] if os.path.exists(
        os.path.join(out, "nemesis.jsonl")) else []
    check(any(f["kind"] == "client-pause" and f.get("superseded") for f in faults),
          "a writer holding a lock was paused until another writer was granted it")
    check(tally.get("writes_ok", 0) > 50 and tally.get("reads_ok", 0) > 50, f"clients worked: {tally}")
    check(tally.get("zombie_writes", 0) >= 1 and tally.get("zombie_writes_refused") == tally.get("zombie_writes"),
          f"paused holders woke and wrote, and no such write was acknowledged: {tally}")
    check(summary.get("availability", {}).get("failovers", 0) >= 1, "a master was killed or paused, and replaced")
    for kept in ("nemesis.jsonl", "summary.md", "timeline.png", "logs/lockd-1.log", "logs/replica-0.log"):
        check(os.path.exists(os.path.join(out, kept)), f"the campaign keeps {kept}")
    check(leftovers() == [], f"the campaign removed what it made: {leftovers()}")
    keep_if_failed(out, before)

    # The negative control: its checker must catch replicas that ack without storing.
    out, before = os.path.join(tmp, "broken"), len(failures)
    r = campaign(out, "--seed", "3", "--seconds", "30", "--broken-replicas")
    check(r.returncode == 1, f"the negative control exits 1 (UNSAFE), not {r.returncode}")
    check("torture: verdict: UNSAFE" in r.stdout, "the negative control's verdict says UNSAFE")
    violations = open(os.path.join(out, "violations.txt")).read() if os.path.exists(
        os.path.join(out, "violations.txt")) else ""
    check("acknowledged write lost" in violations or "superseded holder acknowledged" in violations,
          "the negative control's violations name lost or superseded acknowledged writes")
    check(leftovers() == [], f"the negative control removed what it made: {leftovers()}")
    keep_if_failed(out, before)

    # Over the budget: two nodes of a group broken at once. palisade may
    # refuse (calls fail) but must not answer wrongly.
    out, before = os.path.join(tmp, "over-budget"), len(failures)
    r = campaign(out, "--seed", "5", "--seconds", "40", "--over-budget", "--faults", "kill,kill-master,pause,partition")
    check(r.returncode == 0, f"a campaign over the fault budget exits 0 (SAFE), not {r.returncode}")
    summary = json.load(open(os.path.join(out, "summary.json"))) if os.path.exists(
        os.path.join(out, "summary.json")) else {}
    avail = summary.get("availability", {})
    check(avail.get("failed", 0) > 0, f"with two of a group down at once, calls failed: {avail}")
    check(leftovers() == [], f"the over-budget campaign removed what it made: {leftovers()}")
    keep_if_failed(out, before)

    # Interrupted once its cluster runs: it cleans up and says so.
    out = os.path.join(tmp, "interrupted")
    p = subprocess.Popen([torture, "--bin", build, "--out", out, "--seconds", "300"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not os.path.exists(os.path.join(out, "nemesis.jsonl")):
        time.sleep(0.5)
    check(os.path.exists(os.path.join(out, "nemesis.jsonl")), "the interrupted campaign got as far as its nemesis")
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    check(p.returncode == 130, f"an interrupted campaign exits 130, not {p.returncode}: {stderr[-500:]}")
    check(leftovers() == [], f"the interrupted campaign removed what it made: {leftovers()}")

    # Killed outright (SIGKILL: no cleanup), it leaves its cluster running;
    # the next campaign refuses to start beside it, and --sweep removes it.
    out = os.path.join(tmp, "killed")
    p = subprocess.Popen([torture, "--bin", build, "--out", out, "--seconds", "300"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not os.path.exists(os.path.join(out, "nemesis.jsonl")):
        time.sleep(0.5)
    p.kill()
    p.wait()
    left = leftovers()
    check(any(x.startswith("palt") for x in left) and any(x.startswith("process") for x in left),
          f"a killed campaign leaves its namespaces and processes: {left}")
    r = campaign(os.path.join(tmp, "refused"), "--seconds", "5")
    check(r.returncode == 2 and "--sweep removes them" in r.stderr,
          f"a campaign refuses to start beside another's leftovers (exit 2), not {r.returncode}")
    r = subprocess.run([torture, "--sweep"], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "torture: removed client" in r.stdout, f"--sweep says what it removed: {r.stdout}")
    check(leftovers() == [], f"--sweep removed what the killed campaign left: {leftovers()}")

if failures:
    print(f"{len(failures)} failed", file=sys.stderr)
    sys.exit(1)
print("torture: all checks passed")
