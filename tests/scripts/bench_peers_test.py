#!/usr/bin/env python3
"""scripts/bench-peers: how the targets table prints a ratio, and that a ratio
just under its bound is a miss that reads as one."""
import importlib.machinery
import importlib.util
import os
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "bench-peers")


def load():
    loader = importlib.machinery.SourceFileLoader("bench_peers", SCRIPT)
    spec = importlib.util.spec_from_loader("bench_peers", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main():
    bp = load()
    assert bp.shown_ratio(2.561, 2) == "2.56x"
    assert bp.shown_ratio(1.997, 2) == "1.997x"  # 2.00x would read as met
    assert bp.shown_ratio(3.996, 4) == "3.996x"
    assert bp.shown_ratio(3.94, 4) == "3.94x"
    assert bp.shown_ratio(4.0, 4) == "4.00x"
    # The targets table, from results of two systems.
    def points(ops):
        return [{"workload": "lock", "clients": 1, "ops_per_s": ops, "p50_ms": 1.0, "p99_ms": 2.0, "errors": 0}]
    results = {"palisade": {"points": points(599.1)}, "etcd": {"points": points(300.0)}}
    targets = bp.targets(results)
    assert targets == [{"workload": "lock", "clients": 1, "peer": "etcd", "at_least": 2, "ratio": 1.997,
                        "met": False}], targets
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e!r}", file=sys.stderr)
        raise
