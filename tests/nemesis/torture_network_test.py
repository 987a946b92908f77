#!/usr/bin/python3
"""The campaign's network faults on real namespaces (ctest label `nemesis`):
`slow` holds a node's messages to the rate it names, and the heal takes
the shaping off again; `cut` drops, and the heal lets through.

    torture_network_test.py SOURCE_DIR
"""
import os
import socket
import subprocess
import sys
import time

if os.geteuid() != 0:
    print("torture_network: skipped: needs root (network namespaces)")
    sys.exit(77)
sys.path.insert(0, os.path.join(sys.argv[1], "tests", "nemesis", "torture"))
import network  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAILED: {what}", flush=True)


ECHO = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 9999)); s.listen()
while True:
    c, _ = s.accept()
    while True:
        d = c.recv(65536)
        if not d: break
        c.sendall(d)
"""
# 30 round trips of 300 bytes from the clients' side; prints the seconds they took.
ROUND_TRIPS = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], 9999), timeout=20)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
start = time.monotonic()
for _ in range(30):
    c.sendall(b"x" * 300)
    got = 0
    while got < 300:
        got += len(c.recv(65536))
print(time.monotonic() - start)
"""


def round_trips(net, to):
    r = subprocess.run([sys.executable, "-c", ROUND_TRIPS, net.addresses[to]], capture_output=True, text=True,
                       timeout=60)
    return float(r.stdout) if r.returncode == 0 else None


def shaped(net, name):
    inside = subprocess.run([*net.in_namespace(name), "tc", "qdisc", "show", "dev", "eth0"], capture_output=True,
                            text=True).stdout
    outside = subprocess.run(["tc", "qdisc", "show", "dev", f"{net.tag}v{net.names.index(name)}"],
                             capture_output=True, text=True).stdout
    return "tbf" in inside, "tbf" in outside


net = network.Network("pnt", ["a"], subnet="10.98.0.0/24")
net.up()
try:
    server = subprocess.Popen([*net.in_namespace("a"), sys.executable, "-c", ECHO, net.addresses["a"]])
    time.sleep(0.5)
    check(round_trips(net, "a") is not None, "the echo answers before any fault")

    # 32 kbit/s (4,000 bytes a second) each way, 4 KB of burst: 30 segments
    # of 300 bytes and 40 of headers or more each way are over 10 KB, so the
    # link needs 1.5 s at least, however fast the machine (a lower bound: load
    # only slows it more; unshaped, it takes milliseconds). Checked with margin.
    net.slow("a", 32)
    check(shaped(net, "a") == (True, True), f"slow shapes both ends of the link: {shaped(net, 'a')}")
    took = round_trips(net, "a")
    print(f"30 round trips over 32 kbit/s: {took:.2f} s" if took else "no answer", flush=True)
    check(took is not None and took >= 1.2, f"30 round trips over a 32 kbit/s link take 1.2 s or more: {took}")
    net.heal("a")
    check(shaped(net, "a") == (False, False), f"the heal takes the shaping off: {shaped(net, 'a')}")
    check(round_trips(net, "a") is not None, "the echo answers after the heal")

    net.cut("a", network.HOST)
    try:
        socket.create_connection((net.addresses["a"], 9999), timeout=2).close()
        check(False, "a node cut from the clients does not answer them")
    except OSError:
        pass
    net.heal("a")
    check(round_trips(net, "a") is not None, "the echo answers after the cut heals")
    server.kill()
finally:
    net.down()
left = [line for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
        if line.startswith("pnt-")]
check(left == [], f"down() removes the namespaces: {left}")
if failures:
    print(f"{len(failures)} failed", file=sys.stderr)
    sys.exit(1)
print("torture_network: all checks passed")
