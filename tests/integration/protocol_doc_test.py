#!/usr/bin/python3
"""docs/protocol.md is true: a client written only from that document, talking to a
real palisade-replica.

Usage: protocol_doc_test.py PATH/TO/palisade-replica

Needs python3-zmq and python3-msgpack (Debian packages). Starts the daemon on a
free loopback port with a temporary data directory, runs every exchange below,
and exits non-zero on the first reply that differs from what the document says.
"""

import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

import msgpack
import zmq

TIMEOUT_MS = 5000
ENVELOPE = {"v", "id", "type"}


def encode_ts(token, ms, logical=0):
    """Fenced timestamp: 16 bytes, token u64 big-endian then hlc u64 big-endian."""
    return struct.pack(">QQ", token, (ms << 16) | logical)


def decode_ts(raw):
    token, hlc = struct.unpack(">QQ", raw)
    return token, hlc >> 16, hlc & 0xFFFF


def human(raw):
    return "%d@%d.%d" % decode_ts(raw)


def version(ts, lock, state, value, tombstone=False):
    """One entry of a read reply's versions: exactly these five fields."""
    return {"ts": ts, "lock": lock, "state": state, "tombstone": tombstone, "value": value}


def now_ms():
    return int(time.time() * 1000)


class Replica:
    """A palisade-replica on a free loopback port, data in a temp dir."""

    def __init__(self, binary):
        self.dir = tempfile.mkdtemp(prefix="palisade-protocol-doc-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = "tcp://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, "replica.log"), "wb")
        self.proc = subprocess.Popen(
            [binary, "--data-dir", os.path.join(self.dir, "data"), "--listen", self.endpoint, "--insecure"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def log_text(self):
        with open(os.path.join(self.dir, "replica.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Client:
    """A DEALER socket: one frame per request, replies matched by id."""

    def __init__(self, ctx, endpoint, kind=zmq.DEALER):
        self.sock = ctx.socket(kind)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.next_id = 1

    def recv(self, timeout_ms=TIMEOUT_MS):
        replies = self.recv_message(timeout_ms)
        assert len(replies) == 1, "a reply to one request is one frame, got %d" % len(replies)
        return replies[0]

    def recv_message(self, timeout_ms=TIMEOUT_MS):
        """The replies of one message, a frame each."""
        if not self.sock.poll(timeout_ms):
            raise TimeoutError("no reply within %d ms" % timeout_ms)
        replies = [msgpack.unpackb(frame, raw=False) for frame in self.sock.recv_multipart()]
        for reply in replies:
            assert isinstance(reply, dict), reply
            assert reply["v"] == 1 and reply["type"] == "reply", reply
            assert isinstance(reply["code"], str) and isinstance(reply["clock"], int), reply
        return replies

    def call(self, type_, **fields):
        """Sends a request with a fresh id and returns its reply."""
        req = {"v": 1, "id": self.next_id, "type": type_}
        req.update(fields)
        self.next_id += 1
        return self.call_raw(msgpack.packb(req, use_bin_type=True), req["id"])

    def call_raw(self, payload, expect_id):
        self.sock.send(payload)
        while True:
            reply = self.recv()
            if reply["id"] == expect_id:
                return reply


class Checks:
    def __init__(self):
        self.count = 0

    def reply(self, what, reply, code, **expected):
        """The reply has `code` and exactly the optional fields in `expected`
        (besides message, which every error carries and ok never does)."""
        self.count += 1
        assert reply["code"] == code, "%s: expected %s, got %r" % (what, code, reply)
        if code == "ok":
            assert "message" not in reply, "%s: ok with a message: %r" % (what, reply)
        else:
            assert isinstance(reply.get("message"), str) and reply["message"], \
                "%s: error without a message: %r" % (what, reply)
        extra = set(reply) - ENVELOPE - {"code", "clock", "message"}
        assert extra == set(expected), "%s: fields %s, expected %s in %r" % (
            what, sorted(extra), sorted(expected), reply)
        for k, v in expected.items():
            assert reply[k] == v, "%s: %s = %r, expected %r" % (what, k, reply[k], v)
        print("ok   %-60s %s" % (what, code))


def xxh3_64(data, seed):
    """XXH3-64 from the system xxHash library, or None when it is not installed."""
    name = ctypes.util.find_library("xxhash")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    fn = lib.XXH3_64bits_withSeed
    fn.restype = ctypes.c_uint64
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return fn(data, len(data), seed)


def content_hash(lock, tombstone, value):
    inner = xxh3_64(lock, 1 if tombstone else 2)
    return None if inner is None else xxh3_64(value, inner)


def wait_ready(replica, client):
    deadline = time.time() + 10
    while time.time() < deadline:
        if replica.proc.poll() is not None:
            raise RuntimeError("palisade-replica exited:\n" + replica.log_text())
        client.sock.send(msgpack.packb({"v": 1, "id": 0, "type": "ping"}))
        if client.sock.poll(200):
            client.recv()
            return
    raise RuntimeError("palisade-replica did not answer:\n" + replica.log_text())


def run(replica):
    ctx = zmq.Context()
    try:
        c = Client(ctx, replica.endpoint)
        wait_ready(replica, c)
        check = Checks()
        ms = now_ms()

        # ping
        check.reply("ping", c.call("ping"), "ok")

        # fence, then a fenced write
        check.reply("fence L at 5", c.call("fence", lock="L", token=5), "ok", floor=5)
        check.reply("fence L at 3 never lowers the floor", c.call("fence", lock="L", token=3), "ok", floor=5)
        ts1 = encode_ts(5, ms, 4)
        check.reply("fenced write k1", c.call("write", key=b"k1", value=b"v1", ts=ts1, lock="L"), "ok")
        check.reply("same write again is idempotent",
                    c.call("write", key=b"k1", value=b"v1", ts=ts1, lock="L"), "ok")

        # read: every version, newest first, and the floors of their locks
        r = c.call("read", key=b"k1")
        check.reply("read k1", r, "ok", versions=[version(ts1, "L", "pending", b"v1")], floors={"L": 5})
        assert decode_ts(r["versions"][0]["ts"]) == (5, ms, 4)
        assert isinstance(r["versions"][0]["value"], bytes) and isinstance(r["versions"][0]["lock"], str)
        check.reply("read with key as str", c.call("read", key="k1"), "ok",
                    versions=[version(ts1, "L", "pending", b"v1")], floors={"L": 5})

        # an older write than a pending version is not stale: only a committed version settles that
        ts0 = encode_ts(5, ms, 1)
        check.reply("older write below a pending version",
                    c.call("write", key=b"k1", value=b"older", ts=ts0, lock="L"), "ok")
        check.reply("read k1: two pending versions", c.call("read", key=b"k1"), "ok",
                    versions=[version(ts1, "L", "pending", b"v1"), version(ts0, "L", "pending", b"older")],
                    floors={"L": 5})

        # a fenced-out write: token below the floor
        r = c.call("write", key=b"k1", value=b"late", ts=encode_ts(4, ms + 1), lock="L")
        check.reply("fenced-out write (token 4 < floor 5)", r, "fenced", floor=5)

        # floor_of: the floor of a lock no version names (0: never fenced), or of one they name
        check.reply("read with floor_of another lock", c.call("read", key=b"k1", floor_of="M"), "ok",
                    versions=[version(ts1, "L", "pending", b"v1"), version(ts0, "L", "pending", b"older")],
                    floors={"L": 5, "M": 0})
        check.reply("read of a key never written", c.call("read", key=b"nothing"), "ok")
        check.reply("read of a key never written, with floor_of", c.call("read", key=b"nothing", floor_of="L"),
                    "ok", floors={"L": 5})

        # commit: marks the version committed and drops the older ones
        check.reply("commit with another ts changes nothing", c.call("commit", key=b"k1", ts=encode_ts(5, ms, 3)), "ok")
        check.reply("commit k1", c.call("commit", key=b"k1", ts=ts1), "ok", applied=True)
        check.reply("commit k1 again", c.call("commit", key=b"k1", ts=ts1), "ok")
        check.reply("read committed k1: the older version is gone", c.call("read", key=b"k1"), "ok",
                    versions=[version(ts1, "L", "committed", b"v1")], floors={"L": 5})
        check.reply("commit of the dropped version changes nothing", c.call("commit", key=b"k1", ts=ts0), "ok")

        # stale: a write not newer than the COMMITTED version
        r = c.call("write", key=b"k1", value=b"old", ts=encode_ts(5, ms, 2), lock="L")
        check.reply("stale write (older than the committed version)", r, "stale", stored_ts=ts1)
        assert human(r["stored_ts"]) == "5@%d.4" % ms

        # purge: drops one pending version, never a committed one
        ts2 = encode_ts(5, ms, 6)
        check.reply("write k1 at .6", c.call("write", key=b"k1", value=b"x", ts=ts2, lock="L"), "ok")
        check.reply("purge k1 at .6", c.call("purge", key=b"k1", ts=ts2), "ok", applied=True)
        check.reply("purge k1 at .6 again", c.call("purge", key=b"k1", ts=ts2), "ok")
        check.reply("a committed version is never purged", c.call("purge", key=b"k1", ts=ts1), "ok")
        check.reply("read k1 after the purge", c.call("read", key=b"k1"), "ok",
                    versions=[version(ts1, "L", "committed", b"v1")], floors={"L": 5})
        ts3 = encode_ts(5, ms, 7)
        check.reply("write k2", c.call("write", key=b"k2", value=b"x", ts=ts3, lock="L"), "ok")
        check.reply("purge k2's only version", c.call("purge", key=b"k2", ts=ts3), "ok", applied=True)
        check.reply("k2 is gone", c.call("read", key=b"k2"), "ok")

        # a busy key: at most 4 pending versions besides the committed one
        pending = [encode_ts(5, ms, 10 + i) for i in range(4)]
        for i, ts in enumerate(pending):
            check.reply("pending write %d of k1" % (i + 1),
                        c.call("write", key=b"k1", value=b"p%d" % i, ts=ts, lock="L"), "ok")
        r = c.call("read", key=b"k1")
        assert len(r["versions"]) == 5, r
        assert [v["state"] for v in r["versions"]] == ["pending"] * 4 + ["committed"], r
        check.reply("a fifth pending write is refused as busy",
                    c.call("write", key=b"k1", value=b"p4", ts=encode_ts(5, ms, 20), lock="L"), "unavailable")
        check.reply("commit the second newest", c.call("commit", key=b"k1", ts=pending[2]), "ok", applied=True)
        check.reply("read k1: the newest pending and the new committed one", c.call("read", key=b"k1"), "ok",
                    versions=[version(pending[3], "L", "pending", b"p3"), version(pending[2], "L", "committed", b"p2")],
                    floors={"L": 5})
        check.reply("the key takes writes again",
                    c.call("write", key=b"k1", value=b"p4", ts=encode_ts(5, ms, 20), lock="L"), "ok")

        # a committed write (read repair): not refused by the floor, drops older versions
        tsr = encode_ts(3, ms, 30)
        check.reply("repair write of another key, token 3 below floor 5",
                    c.call("write", key=b"r", value=b"rv", ts=tsr, lock="L", committed=True), "ok")
        check.reply("read the repaired key", c.call("read", key=b"r"), "ok",
                    versions=[version(tsr, "L", "committed", b"rv")], floors={"L": 5})
        check.reply("the same write uncommitted is fenced",
                    c.call("write", key=b"r2", value=b"rv", ts=tsr, lock="L"), "fenced", floor=5)
        ts5 = encode_ts(5, ms, 40)
        check.reply("pending write of r", c.call("write", key=b"r", value=b"new", ts=ts5, lock="L"), "ok")
        check.reply("repair over its own pending copy commits it",
                    c.call("write", key=b"r", value=b"new", ts=ts5, lock="L", committed=True), "ok", applied=True)
        check.reply("read r: only the committed repair", c.call("read", key=b"r"), "ok",
                    versions=[version(ts5, "L", "committed", b"new")], floors={"L": 5})

        # tombstone
        ts6 = encode_ts(6, ms + 2)
        check.reply("delete k1 (tombstone) at token 6",
                    c.call("write", key=b"k1", tombstone=True, ts=ts6, lock="L"), "ok")
        check.reply("commit the tombstone", c.call("commit", key=b"k1", ts=ts6), "ok", applied=True)
        check.reply("read deleted k1", c.call("read", key=b"k1"), "ok",
                    versions=[version(ts6, "L", "committed", b"", tombstone=True)], floors={"L": 6})
        check.reply("tombstone with a value", c.call("write", key=b"k1", tombstone=True, value=b"x", ts=ts6,
                                                     lock="L"), "bad_request")

        # unfenced writes: token 0 and no lock; they are older than fenced versions
        tsu = encode_ts(0, ms)
        check.reply("unfenced write", c.call("write", key=b"u", value=b"1", ts=tsu), "ok")
        check.reply("read u: no lock, no floors", c.call("read", key=b"u"), "ok",
                    versions=[version(tsu, "", "pending", b"1")])
        check.reply("unfenced write over a committed fenced version",
                    c.call("write", key=b"k1", value=b"1", ts=encode_ts(0, ms + 100)), "stale", stored_ts=ts6)
        check.reply("lock without a token", c.call("write", key=b"u", value=b"1", ts=encode_ts(0, ms), lock="L"),
                    "bad_request")
        check.reply("token without a lock", c.call("write", key=b"u", value=b"1", ts=encode_ts(3, ms)),
                    "bad_request")

        # equal timestamps, different content: the larger content hash is newer
        ts4 = encode_ts(6, ms + 3)
        a, b = b"apple", b"banana"
        ha, hb = content_hash(b"L", False, a), content_hash(b"L", False, b)
        if ha is None:
            print("skip tie-break hash checks: libxxhash not found")
        else:
            lo, hi = (a, b) if ha < hb else (b, a)
            check.reply("tie: commit the smaller hash", c.call("write", key=b"tie1", value=lo, ts=ts4, lock="L",
                                                               committed=True), "ok")
            check.reply("tie: larger hash is newer", c.call("write", key=b"tie1", value=hi, ts=ts4, lock="L"), "ok")
            check.reply("tie: read orders by hash", c.call("read", key=b"tie1"), "ok",
                        versions=[version(ts4, "L", "pending", hi), version(ts4, "L", "committed", lo)],
                        floors={"L": 6})
            check.reply("tie: commit the larger hash", c.call("write", key=b"tie2", value=hi, ts=ts4, lock="L",
                                                              committed=True), "ok")
            check.reply("tie: smaller hash is stale", c.call("write", key=b"tie2", value=lo, ts=ts4, lock="L"),
                        "stale", stored_ts=ts4)

        # commits carried in a write: applied before it, whatever its answer
        def carried(key, ts, h):  # with no receipts (this replica asks for none)
            return struct.pack(">H", len(key)) + key + ts + struct.pack(">QB", h, 0)
        tsc, tsh = encode_ts(6, ms + 4), encode_ts(6, ms + 5)
        check.reply("pending write of c1", c.call("write", key=b"c1", value=b"cv", ts=tsc, lock="L"), "ok")
        hc = content_hash(b"L", False, b"cv")
        one = carried(b"c1", tsc, hc if hc is not None else 1)
        for what, commits, code in [("empty", b"", "bad_request"), ("truncated", one[:-1], "bad_request"),
                                    ("over 16384 bytes", one * (16384 // len(one) + 1), "too_large")]:
            check.reply("commits %s: the write is refused" % what,
                        c.call("write", key=b"host", value=b"h", ts=tsh, lock="L", commits=commits), code)
        check.reply("commits refused: none applied", c.call("read", key=b"c1"), "ok",
                    versions=[version(tsc, "L", "pending", b"cv")], floors={"L": 6})
        if hc is None:
            print("skip carried commits: libxxhash not found")
        else:
            check.reply("a write carrying c1's commit", c.call("write", key=b"host", value=b"h", ts=tsh, lock="L",
                                                               commits=one), "ok")
            check.reply("read c1: committed by the carried commit", c.call("read", key=b"c1"), "ok",
                        versions=[version(tsc, "L", "committed", b"cv")], floors={"L": 6})
            check.reply("pending write of c2", c.call("write", key=b"c2", value=b"cv", ts=tsc, lock="L"), "ok")
            check.reply("a fenced write still applies what it carries",
                        c.call("write", key=b"host2", value=b"h", ts=encode_ts(5, ms + 5), lock="L",
                               commits=carried(b"c2", tsc, hc)), "fenced", floor=6)
            check.reply("read c2: committed", c.call("read", key=b"c2"), "ok",
                        versions=[version(tsc, "L", "committed", b"cv")], floors={"L": 6})

        # a read returns up to five versions: its reply can be five times the largest value
        mib = 1 << 20
        for i in range(5):
            check.reply("1 MiB version %d of big" % (i + 1),
                        c.call("write", key=b"big", value=bytes([65 + i]) * mib, ts=encode_ts(6, ms, 50 + i),
                               lock="L", committed=(i == 0)), "ok")
        r = c.call("read", key=b"big")
        check.reply("read five 1 MiB versions", r, "ok",
                    versions=[version(encode_ts(6, ms, 50 + i), "L", "committed" if i == 0 else "pending",
                                      bytes([65 + i]) * mib) for i in reversed(range(5))],
                    floors={"L": 6})

        # clock skew: an hlc far ahead of the replica's wall clock
        check.reply("clock skew", c.call("write", key=b"s", value=b"1", ts=encode_ts(6, now_ms() + 60000), lock="L"),
                    "clock_skew")

        # anti-entropy: tree digests, leaf listings, dropping a tombstone
        r = c.call("tree", level=0, nodes=struct.pack(">Q", 0))
        check.reply("tree: the root", r, "ok", nodes=r.get("nodes"))
        assert isinstance(r["nodes"], bytes) and len(r["nodes"]) == 12 and r["nodes"][:8] != bytes(8), r
        r = c.call("tree", level=1, nodes=struct.pack(">16Q", *range(16)))
        check.reply("tree: the root's 16 children", r, "ok", nodes=r.get("nodes"))
        assert len(r["nodes"]) == 16 * 12, r
        check.reply("tree level beyond the leaves", c.call("tree", level=6, nodes=struct.pack(">Q", 0)),
                    "bad_request")
        check.reply("tree node out of range", c.call("tree", level=1, nodes=struct.pack(">Q", 16)), "bad_request")
        check.reply("tree nodes not 8-byte numbers", c.call("tree", level=1, nodes=b"\x00" * 7), "bad_request")
        r = c.call("leaf", leaves=struct.pack(">2Q", 0, (1 << 20) - 1))
        check.reply("leaf: two leaves", r, "ok", leaves_done=2, **({"entries": r["entries"]} if "entries" in r else {}))
        check.reply("leaf out of range", c.call("leaf", leaves=struct.pack(">Q", 1 << 20)), "bad_request")
        check.reply("drop_tombstone of a key whose version is no tombstone", c.call("drop_tombstone", key=b"u", ts=tsu),
                    "ok")
        check.reply("drop_tombstone of k1's committed tombstone", c.call("drop_tombstone", key=b"k1", ts=ts6), "ok",
                    applied=True)
        check.reply("k1 is forgotten", c.call("read", key=b"k1"), "ok")

        # stats: counts, and the floors by lock name as length-prefixed names and 8-byte floors
        r = c.call("stats")
        check.reply("stats", r, "ok", stats=r.get("stats"))
        s = r["stats"]
        assert set(s) == {"keys", "floor_count", "floors", "data_bytes", "format", "insecure"}, s
        assert s["insecure"] is True, s  # started --insecure: no cluster key
        keys_now = s["keys"]
        assert keys_now > 0 and s["floor_count"] == 1 and s["format"] == 4 and s["data_bytes"] > 0, s
        assert s["floors"] == struct.pack(">H", 1) + b"L" + struct.pack(">Q", 6), s
        check.reply("fence M at 3", c.call("fence", lock="M", token=3), "ok", floor=3)
        check.reply("write a new key", c.call("write", key=b"stats-new", value=b"1", ts=encode_ts(0, ms)), "ok")
        r = c.call("stats", max_floors=1)
        check.reply("stats with max_floors 1: the list is cut", r, "ok", stats={
            "keys": keys_now + 1, "floor_count": 2, "floors": struct.pack(">H", 1) + b"L" + struct.pack(">Q", 6),
            "data_bytes": r["stats"]["data_bytes"], "format": 4, "insecure": True})
        r = c.call("stats", max_floors=0)
        check.reply("stats with max_floors 0: counts alone", r, "ok", stats=dict(r["stats"], floors=b""))
        check.reply("stats max_floors over 1000", c.call("stats", max_floors=1001), "bad_request")
        check.reply("stats max_floors as text", c.call("stats", max_floors="5"), "bad_request")
        check.reply("stats with a key", c.call("stats", key=b"k1"), "bad_request")

        # a fenced read: the fence first (its floor), then the read
        check.reply("fenced read", c.call("read", key=b"nothing", lock="M", token=4), "ok",
                    floor=4, floors={"M": 4})
        check.reply("fenced read below the floor", c.call("read", key=b"nothing", lock="M", token=3), "ok",
                    floor=4, floors={"M": 4})
        check.reply("a write under the fenced read's lock below its token",
                    c.call("write", key=b"f", value=b"x", ts=encode_ts(3, ms), lock="M"), "fenced", floor=4)
        check.reply("fenced read of token 0", c.call("read", key=b"nothing", lock="M", token=0), "bad_request")
        check.reply("fenced read without its token", c.call("read", key=b"nothing", lock="M"), "bad_request")
        check.reply("a read's sequencer without a fence", c.call("read", key=b"nothing", sequencer="ps2.a.b"),
                    "bad_request")

        # read_many: length-prefixed keys in, one record per key out, in order
        def text(n, data):
            return struct.pack(">" + n, len(data)) + data

        r = c.call("read_many", keys=text("H", b"u") + text("H", b"nothing"))
        u_record = b"\x00\x01" + b"\x00" + tsu + text("H", b"") + text("I", b"1") + text("H", b"")
        check.reply("read_many of u and a key never written", r, "ok", keys_done=2, records=u_record + b"\x00\x00")
        check.reply("read_many without keys", c.call("read_many", keys=b""), "bad_request")
        check.reply("read_many with a key cut short", c.call("read_many", keys=b"\x00\x05abc"), "bad_request")

        # copy_many: committed copies; a refused one is counted, the others stored
        tsc = encode_ts(0, ms, 77)
        copy = text("H", b"cm") + b"\x01" + tsc + text("H", b"") + text("I", b"cv") + text("H", b"")
        check.reply("copy_many of one version", c.call("copy_many", copies=copy), "ok")
        check.reply("read the copy", c.call("read", key=b"cm"), "ok", versions=[version(tsc, "", "committed", b"cv")])
        stale = text("H", b"cm") + b"\x01" + encode_ts(0, ms, 70) + text("H", b"") + text("I", b"old") + text("H", b"")
        r = c.call("copy_many", copies=stale + copy)
        check.reply("copy_many with a stale copy", r, "ok", refused=1, first_refusal=r.get("first_refusal"))
        assert r["first_refusal"].startswith("key 'cm': stale"), r
        check.reply("copy_many cut short", c.call("copy_many", copies=copy[:-1]), "bad_request")

        # scan: the keys of a prefix in byte order, each as a read_many record with its key in front
        tsa, tsb = encode_ts(0, ms, 80), encode_ts(0, ms, 81)
        check.reply("write scan/b", c.call("write", key=b"scan/b", value=b"B", ts=tsb), "ok")
        check.reply("write scan/a", c.call("write", key=b"scan/a", value=b"A", ts=tsa), "ok")
        a_listed = text("H", b"scan/a") + b"\x00\x01" + b"\x00" + tsa + text("H", b"") + text("I", b"A") + text("H", b"")
        b_listed = text("H", b"scan/b") + b"\x00\x01" + b"\x00" + tsb + text("H", b"") + text("I", b"B") + text("H", b"")
        check.reply("scan of scan/", c.call("scan", prefix=b"scan/", limit=10), "ok", scanned=a_listed + b_listed)
        check.reply("scan of one key: more follow", c.call("scan", prefix=b"scan/", limit=1), "ok", scanned=a_listed,
                    more=True)
        check.reply("scan after scan/a", c.call("scan", prefix=b"scan/", after=b"scan/a", limit=1), "ok",
                    scanned=b_listed)
        check.reply("scan of a prefix with no key", c.call("scan", prefix=b"scan/none", limit=1), "ok")
        check.reply("scan of limit 0", c.call("scan", prefix=b"scan/", limit=0), "bad_request")
        check.reply("scan without a limit", c.call("scan", prefix=b"scan/"), "bad_request")

        # changes: the feed of what this replica stored by a write or committed, numbered in order
        r = c.call("changes", prefix=b"scan/", limit=10)
        log, first = r["log"], r["first"]
        assert log != 0 and first == 1, r
        seq_b, seq_a = r["next"] - 1, r["next"]
        b_change = struct.pack(">Q", seq_b) + text("H", b"scan/b") + b"\x00" + tsb + text("H", b"") + \
            text("I", b"B") + text("H", b"")
        a_change = struct.pack(">Q", seq_a) + text("H", b"scan/a") + b"\x00" + tsa + text("H", b"") + \
            text("I", b"A") + text("H", b"")
        check.reply("changes of scan/: its two writes, in the order stored", r, "ok", log=log, first=1, next=seq_a,
                    changes=b_change + a_change)
        check.reply("changes of scan/, one: more follow", c.call("changes", prefix=b"scan/", limit=1), "ok",
                    log=log, first=1, next=seq_b, changes=b_change, more=True)
        check.reply("commit scan/a", c.call("commit", key=b"scan/a", ts=tsa), "ok", applied=True)
        a_committed = struct.pack(">Q", seq_a + 1) + text("H", b"scan/a") + b"\x01" + tsa + text("H", b"") + \
            text("I", b"A") + text("H", b"")
        check.reply("changes after the last seen: the commit", c.call("changes", prefix=b"scan/", after=seq_a,
                                                                      limit=10), "ok", log=log, first=1,
                    next=seq_a + 1, changes=a_committed)
        check.reply("changes after the newest: none", c.call("changes", prefix=b"", after=seq_a + 1, limit=10), "ok",
                    log=log, first=1, next=seq_a + 1)
        check.reply("changes of limit 0", c.call("changes", prefix=b"", limit=0), "bad_request")
        check.reply("changes without a prefix", c.call("changes", limit=1), "bad_request")

        # errors
        check.reply("unknown type", c.call("frobnicate"), "unknown_type")
        check.reply("garbage", c.call_raw(b"\xc1\xff\x00garbage", 0), "malformed")
        check.reply("not a map", c.call_raw(msgpack.packb([1, 2, 3]), 0), "malformed")
        check.reply("trailing bytes", c.call_raw(msgpack.packb({"v": 1, "id": 90, "type": "ping"}) + b"\x00", 0),
                    "malformed")
        check.reply("missing id", c.call_raw(msgpack.packb({"v": 1, "type": "ping"}), 0), "bad_request")
        check.reply("wrong version", c.call_raw(msgpack.packb({"v": 2, "id": 91, "type": "ping"}), 91),
                    "unsupported_version")
        check.reply("unknown field", c.call("ping", color="red"), "bad_request")
        # cluster identity: this replica has no id, so it answers no request that names one
        other = c.call("write", key=b"kc", value=b"1", ts=encode_ts(0, ms), cluster=b"\xa1" * 16)
        check.reply("a write for a cluster, to a replica without an id", other, "wrong_cluster")
        assert other["message"] == "this daemon belongs to cluster none, the request is for cluster " + "a1" * 16, other
        check.reply("nothing of it was stored", c.call("read", key=b"kc"), "ok")
        check.reply("cluster of 15 bytes", c.call("ping", cluster=b"\x01" * 15), "bad_request")
        check.reply("cluster of 17 bytes", c.call("ping", cluster=b"\x01" * 17), "too_large")
        check.reply("missing key", c.call("read"), "bad_request")
        check.reply("mistyped token", c.call("fence", lock="L", token="7"), "bad_request")
        check.reply("fence token 0", c.call("fence", lock="L", token=0), "bad_request")
        check.reply("ts of 8 bytes", c.call("commit", key=b"k1", ts=b"\x00" * 8), "bad_request")
        check.reply("empty key", c.call("write", key=b"", value=b"1", ts=encode_ts(0, ms)), "bad_request")
        check.reply("key over 511 bytes", c.call("read", key=b"k" * 512), "too_large")
        check.reply("key of 511 bytes", c.call("write", key=b"k" * 511, value=b"1", ts=encode_ts(0, ms)), "ok")
        check.reply("lock over 256 bytes", c.call("fence", lock="L" * 257, token=1), "too_large")
        check.reply("floor_of over 256 bytes", c.call("read", key=b"k1", floor_of="L" * 257), "too_large")
        check.reply("value over 1 MiB", c.call("write", key=b"big", value=b"x" * (1 << 20) + b"x",
                                               ts=encode_ts(0, ms)), "too_large")
        big = msgpack.packb({"v": 1, "id": 94, "type": "write", "key": b"big", "value": b"x" * (2 << 20),
                             "ts": encode_ts(0, ms)})
        check.reply("message over the limit (id 0)", c.call_raw(big, 0), "too_large")
        many = {"v": 1, "id": 92, "type": "ping"}
        many.update({"f%d" % i: i for i in range(70)})
        check.reply("map of more than 64 entries", c.call_raw(msgpack.packb(many), 0), "too_large")
        check.reply("an ext value", c.call_raw(msgpack.packb({"v": 1, "id": 95, "type": "ping",
                                                              "x": msgpack.ExtType(1, b"ab")}), 0), "too_large")
        deep = {"v": 1, "id": 96, "type": "ping", "x": [[[[[1]]]]]}
        check.reply("nesting deeper than 4", c.call_raw(msgpack.packb(deep), 0), "too_large")
        check.reply("a field name that is bin", c.call_raw(msgpack.packb({"v": 1, "id": 97, "type": "ping",
                                                                          b"x": 1}), 0), "malformed")
        dup = b"\x84" + msgpack.packb("v") + b"\x01" + msgpack.packb("id") + b"\x62" + \
            msgpack.packb("type") + msgpack.packb("ping") + msgpack.packb("v") + b"\x01"
        check.reply("a field twice", c.call_raw(dup, 0), "malformed")
        check.reply("an empty frame", c.call_raw(b"", 0), "malformed")
        # a message of several requests, a frame each: one message back, a reply per frame, in order
        c.sock.send_multipart([msgpack.packb({"v": 1, "id": 93, "type": "ping"}), b"second",
                               msgpack.packb({"v": 1, "id": 94, "type": "read", "key": b"k1"}, use_bin_type=True)])
        replies = c.recv_message()
        assert [r["id"] for r in replies] == [93, 0, 94], replies
        check.reply("first of three frames", replies[0], "ok")
        check.reply("second of three frames", replies[1], "malformed")
        assert replies[2]["code"] == "ok", replies[2]
        # more than 64: refused whole, with one reply
        c.sock.send_multipart([msgpack.packb({"v": 1, "id": 200 + i, "type": "fence", "lock": "many", "token": 1})
                               for i in range(65)])
        check.reply("65 frames", c.recv(), "malformed")
        check.reply("none of the 65 was applied", c.call("read", key=b"nothing", floor_of="many"), "ok",
                    floors={"many": 0})

        # a REQ socket gets its reply through the mirrored delimiter
        req = Client(ctx, replica.endpoint, zmq.REQ)
        check.reply("ping over REQ", req.call("ping"), "ok")
        req.sock.close()

        # the clock field is the replica's HLC: it moved past what it observed
        r = c.call("ping")
        assert (r["clock"] >> 16) >= ms, r
        c.sock.close()
        print("%d checks passed" % check.count)
    finally:
        ctx.destroy(linger=0)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    replica = Replica(sys.argv[1])
    try:
        run(replica)
        return 0
    except (AssertionError, TimeoutError, RuntimeError) as e:
        print("FAIL: %s" % e)
        print("palisade-replica log:\n" + replica.log_text())
        return 1
    finally:
        replica.stop()
        replica.cleanup()


if __name__ == "__main__":
    sys.exit(main())
