#!/usr/bin/env python3
"""scripts/soak as a user runs it: a small soak passes and writes its tally, a
second run resumes (runs no chunk again), an interrupted chunk is run again,
and a negative control is reported as unsafe with exit 1.

    soak_test.py PALISADE_SIM"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

SCRIPT = pathlib.Path(__file__).resolve().parent.parent.parent / "scripts" / "soak"


def soak(binary, out, *args):
    cmd = [sys.executable, str(SCRIPT), "--binary", binary, "--dir", str(out), "--jobs", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "soak"
        small = ["--quorum-seeds", "30", "--lock-seeds", "4", "--quorum-chunk", "10", "--lock-chunk", "2"]
        r = soak(binary, out, *small)
        assert r.returncode == 0, r.stdout + r.stderr
        tally = json.loads((out / "tally.json").read_text())
        assert tally["quorum"] == {"seeds": 30, "unsafe": 0, "unsafe_seeds": []}, tally
        assert tally["lock"]["seeds"] == 4 and tally["lock"]["unsafe"] == 0, tally
        assert "quorum: 30 seeds, 0 unsafe" in r.stdout, r.stdout

        # Resumed: every chunk is done, none runs again (its log stays as it was).
        logs = sorted(out.glob("*.log"))
        assert len(logs) == 5, logs
        before = {p: p.stat().st_mtime_ns for p in logs}
        r = soak(binary, out, *small)
        assert r.returncode == 0 and "5 chunks, 5 done before" in r.stdout, r.stdout
        assert {p: p.stat().st_mtime_ns for p in logs} == before

        # A chunk without its .done (interrupted) runs again; the tally still counts all.
        (out / "quorum-11-10.done").unlink()
        r = soak(binary, out, *small)
        assert r.returncode == 0 and "5 chunks, 4 done before" in r.stdout, r.stdout
        assert json.loads((out / "tally.json").read_text())["quorum"]["seeds"] == 30

        # A negative control: unsafe seeds are found, listed with their replay, and exit 1.
        bad = pathlib.Path(tmp) / "broken"
        r = soak(binary, bad, "--quorum-seeds", "10", "--lock-seeds", "0", "--", "--broken-fence-floor")
        assert r.returncode == 1, r.stdout + r.stderr
        tally = json.loads((bad / "tally.json").read_text())
        assert tally["quorum"]["unsafe"] > 0 and tally["sim_args"] == ["--broken-fence-floor"], tally
        assert "replay: palisade-sim --sim quorum --seed" in r.stdout, r.stdout

        # Bad input is refused with a clear message.
        r = soak(binary, bad, "--jobs", "0")
        assert r.returncode == 2 and "--jobs must be at least 1" in r.stderr, r.stderr
        r = soak(os.path.join(tmp, "missing"), bad)
        assert r.returncode == 2 and "build it first" in r.stderr, r.stderr
    print("soak script: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
