"""What a campaign shows: availability from the histories and the nemesis
log, a summary table (Markdown), and a timeline plot (gnuplot, PNG) of the
faults, the grants and the refused writes."""
import glob
import json
import os
import subprocess

# Answers that are the system working, not failing: a lock held by another,
# a write refused for good because its holder was superseded.
REFUSALS = {"busy", "fenced", "stale", "bad_sequencer"}


def load_lines(pattern):
    out = []
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def availability(calls, faults):
    """Failed calls (not ok and not a refusal), overall and among calls that
    overlapped no daemon fault (the cluster whole); failover times of master
    kills and pauses."""
    windows = [(f["start"], f["end"]) for f in faults if f["kind"] != "client-pause"]

    def quiet(c):
        return not any(c["start"] < end and start < c["end"] for start, end in windows)

    failed = [c for c in calls if c["result"] != "ok" and c["result"] not in REFUSALS]
    quiet_calls = [c for c in calls if quiet(c)]
    quiet_failed = [c for c in quiet_calls if c["result"] != "ok" and c["result"] not in REFUSALS]
    failovers = [f["failover_ms"] for f in faults if f.get("failover_ms") is not None]
    no_master = sum(1 for f in faults if "failover_ms" in f and f["failover_ms"] is None)
    return {
        "calls": len(calls),
        "failed": len(failed),
        "quiet_calls": len(quiet_calls),
        "quiet_failed": len(quiet_failed),
        "failovers": len(failovers),
        "failovers_without_master": no_master,
        "failover_p50_ms": percentile(failovers, 50),
        "failover_p99_ms": percentile(failovers, 99),
        "failover_max_ms": max(failovers) if failovers else None,
    }


def summary_table(verdict, tally, avail, fault_counts, seconds):
    rows = [
        ("verdict", "SAFE" if verdict else "UNSAFE"),
        ("violations", len(tally["violations"])),
        ("campaign", f"{seconds:.0f} s"),
        ("calls", avail["calls"]),
        ("acquires (ok)", f"{tally['acquires']} ({tally['acquires_ok']})"),
        ("writes (ok, refused)", f"{tally['writes']} ({tally['writes_ok']}, {tally['writes_refused']})"),
        ("zombie writes refused (fenced)", f"{tally['zombie_writes_refused']} of {tally['zombie_writes']} "
                                           f"({tally['zombie_writes_fenced']})"),
        ("reads (ok)", f"{tally['reads']} ({tally['reads_ok']})"),
        ("failed calls", f"{avail['failed']} of {avail['calls']}"),
        ("failed calls, no daemon fault", f"{avail['quiet_failed']} of {avail['quiet_calls']}"),
        ("master failovers", avail["failovers"]),
        ("failover p50 / p99 / max", f"{avail['failover_p50_ms']} / {avail['failover_p99_ms']} / "
                                     f"{avail['failover_max_ms']} ms"),
    ]
    rows += [(f"faults: {kind}", n) for kind, n in sorted(fault_counts.items())]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"| {k.ljust(width)} | {v} |" for k, v in rows)


def plot(out_dir, calls, faults, zombies, origin_us):
    """timeline.png: a row per fault kind (bars); the grants by token; and the
    writes of superseded holders (the checker's zombies), none of which was
    acknowledged in a safe run, by how many grants of their lock they were
    behind."""
    data = os.path.join(out_dir, "plot")
    os.makedirs(data, exist_ok=True)
    kinds = sorted({f["kind"] for f in faults})

    def t(us):
        return (us - origin_us) / 1e6

    with open(os.path.join(data, "faults.dat"), "w") as f:
        for fault in faults:
            f.write(f"{t(fault['start']):.3f} {t(fault['end']):.3f} {kinds.index(fault['kind'])}\n")
    grants = sorted((c["end"], c["lock"], c["token"]) for c in calls if c["op"] == "acquire" and c["result"] == "ok")
    with open(os.path.join(data, "grants.dat"), "w") as f:
        for end, _, token in grants:
            f.write(f"{t(end):.3f} {token}\n")

    def behind(z):
        """How many grants of its lock had returned by the time the write did."""
        return sum(1 for end, lock, token in grants if lock == z["lock"] and token > z["token"] and end <= z["end"])

    series = []  # gnuplot can plot no file without points
    for name, final, style in (("refused", True, "pt 2 ps 1.5 title 'refused (fenced, stale, bad sequencer)'"),
                               ("unanswered", False, "pt 6 ps 1.5 title 'unavailable or timeout'")):
        points = [z for z in zombies if z["result"] != "ok" and (z["result"] in REFUSALS) == final]
        with open(os.path.join(data, f"zombies-{name}.dat"), "w") as f:
            f.writelines(f"{t(z['end']):.3f} {behind(z)}\n" for z in points)
        if points:
            series.append(f"'{data}/zombies-{name}.dat' using 1:2 with points {style}")
    labels = ", ".join(f'"{k}" {i}' for i, k in enumerate(kinds))
    end_s = max([t(c["end"]) for c in calls] + [1])
    script = f"""
set terminal pngcairo size 1400,1000
set output '{os.path.join(out_dir, "timeline.png")}'
set multiplot layout 3,1
set xrange [0:{end_s:.0f}]
set title 'faults'
set ytics ({labels or '"" 0'})
set yrange [-1:{max(1, len(kinds))}]
plot '{data}/faults.dat' using 1:3:($2-$1):(0) with vectors nohead lw 8 title ''
set title 'grants (token)'
set ytics auto
set yrange [0:*]
plot '{data}/grants.dat' using 1:2 with points pt 7 ps 0.3 title ''
set title "superseded holders' writes (none acknowledged): grants of their lock since theirs"
set xlabel 'seconds'
set key left top
set offsets 0, 0, graph 0.5, 0
set yrange [0:{'*' if series else 1}]
plot {", ".join(series) or "NaN title 'none'"}
unset multiplot
"""
    with open(os.path.join(data, "timeline.gp"), "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", os.path.join(data, "timeline.gp")], capture_output=True, text=True)
    return r.returncode == 0
