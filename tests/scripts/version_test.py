#!/usr/bin/env python3
"""`--version` of every binary (docs/cli.md): exit 0 and print one line,
`NAME VERSION (commit COMMIT)`, before any flag the binary requires; all of
them name the same commit (cmake/git_commit.cmake).

Usage: version_test.py VERSION BINARY...
"""
import os
import re
import subprocess
import sys

version, binaries = sys.argv[1], sys.argv[2:]
# 12 hex digits, ", dirty" for a tree with changes; "unknown" outside a git
# checkout; -DPALISADE_GIT_COMMIT gives any text without parentheses.
LINE = re.compile(r"^(\S+) " + re.escape(version) + r" \(commit ([^()\n]+)\)\n$")

failures = []
commits = set()
for binary in binaries:
    name = os.path.basename(binary)
    run = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    match = LINE.match(run.stdout)
    if run.returncode != 0 or not match or match.group(1) != name:
        failures.append(f"{name} --version: exit {run.returncode}, stdout {run.stdout!r}, stderr {run.stderr!r}")
    else:
        commits.add(match.group(2))
if len(commits) > 1:
    failures.append(f"the binaries name different commits: {sorted(commits)}")
if not binaries:
    failures.append("no binaries given")
for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print(f"ok: {len(binaries)} binaries, commit {commits.pop()}")
