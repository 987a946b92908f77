#!/usr/bin/env python3
"""The layout as built (docs/design.md, "Layout"); cmake/layout.cmake checks the
targets' links at configure time, this checks what the build made of them:

- libpalisade's consumer (tests/public_headers_check.cc) compiles with include/
  as its only include directory, and its link line names no LMDB, libsodium or
  toml++;
- no object in a core library (base, lockgroup, replica) calls ZeroMQ, LMDB,
  toml++ or palisade_metrics (httplib), none in base calls any third-party library,
  and none in the client calls LMDB, libsodium, toml++ or palisade_metrics.

Usage: layout_check.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import re
import shlex
import subprocess
import sys

source, build = (os.path.realpath(p) for p in sys.argv[1:3])
failures = []

# The consumer's compile line: -I include/ and nothing else.
commands = json.load(open(os.path.join(build, "compile_commands.json")))
entry = [c for c in commands if c["file"].endswith("tests/public_headers_check.cc")]
if len(entry) != 1:
    failures.append(f"compile_commands.json holds {len(entry)} entries for public_headers_check.cc")
else:
    args = entry[0].get("arguments") or shlex.split(entry[0]["command"])
    dirs = []
    for i, a in enumerate(args):
        for flag in ("-I", "-isystem", "-iquote", "-idirafter"):
            if a == flag:
                dirs.append(args[i + 1])
            elif a.startswith(flag) and len(a) > len(flag):
                dirs.append(a[len(flag):])
    dirs = [os.path.realpath(d) for d in dirs]
    if dirs != [os.path.join(source, "include")]:
        failures.append(f"the consumer compiles with include directories {dirs}, not only {source}/include")

# The consumer's link line.
ninja = open(os.path.join(build, "build.ninja")).read()
block = re.search(r"^build tests/palisade_consumer_check: .*?(?=^build |\Z)", ninja, re.M | re.S)
if not block:
    failures.append("build.ninja has no link step for tests/palisade_consumer_check")
else:
    libs = re.search(r"^\s+LINK_LIBRARIES = (.*)$", block.group(0), re.M)
    libs = libs.group(1) if libs else ""
    if "libpalisade_client.a" not in libs:
        failures.append(f"the consumer does not link libpalisade_client.a: {libs}")
    for forbidden in ("lmdb", "sodium", "toml", "metrics", "httplib"):
        if forbidden in libs.lower():
            failures.append(f"the consumer links {forbidden}: {libs}")

# What the core libraries' objects call.
def undefined(archive):
    out = subprocess.run(["nm", "-u", "--format=posix", archive], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line and not line.endswith(":")}

metrics = r"_ZNK?\d*palisade7metrics|_ZNK?\d*httplib"
third_party = re.compile(r"^(zmq_|mdb_|sodium_|crypto_|randombytes_|XXH|_ZN\d*msgpack|_ZN\d*toml|_ZN3zmq|" + metrics + ")")
cores = {
    "base/libpalisade_base.a": third_party,
    "lockgroup/libpalisade_lockgroup.a": re.compile(r"^(zmq_|mdb_|_ZN3zmq|_ZN\d*toml|" + metrics + ")"),
    "replica/libpalisade_replica.a": re.compile(r"^(zmq_|mdb_|_ZN3zmq|_ZN\d*toml|" + metrics + ")"),
    "client/libpalisade_client.a": re.compile(r"^(mdb_|sodium_|crypto_|randombytes_|_ZN\d*toml|" + metrics + ")"),
}
for archive, pattern in cores.items():
    path = os.path.join(build, archive)
    if not os.path.exists(path):
        failures.append(f"{archive} was not built")
        continue
    bad = sorted(s for s in undefined(path) if pattern.search(s))
    if bad:
        failures.append(f"{archive} calls what it must not link: {', '.join(bad[:10])}")

for f in failures:
    print("FAIL:", f)
print("layout ok" if not failures else f"{len(failures)} layout failure(s)")
sys.exit(1 if failures else 0)
