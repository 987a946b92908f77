"""Draws a Grafana dashboard's panels with gnuplot, laid out by their gridPos:
rows as title bars, each timeseries panel a plot of its queries' results.

    draw(dashboard, results, seconds, events, title, "out.png")

`results` maps a panel id to its series [(legend, [(second, value), ...])];
`events` are (second, what) pairs, drawn as numbered dashed lines.
"""
import math
import subprocess
import tempfile
import textwrap
from pathlib import Path

WIDTH = 1500        # pixels; a grid column is WIDTH / 24
UNIT = 32           # pixels per grid row (Grafana's are 30)
TITLE = 30          # pixels above the grid for the title, and LINE more per line of events
LINE = 15
MOST_SERIES = 8     # a panel with more draws its largest ones
COLORS = ["#1f78c1", "#e24d42", "#629e51", "#e5a000", "#6ed0e0", "#ba43a9", "#705da0", "#890f02"]
# y axis labels by the panel's unit; gnuplot's %s%c is the mantissa and an SI prefix.
Y_FORMATS = {"s": "%.0s%cs", "bytes": "%.0s%cB", "Bps": "%.0s%cB/s", "reqps": "%g/s", "ops": "%g/s"}


def quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_series(path, series):
    """One block per series; a blank line where a series has a gap (NaN, or no sample)."""
    with open(path, "w") as f:
        for _, points in series:
            last = None
            for t, v in points:
                if math.isnan(v) or (last is not None and t - last > 5):
                    f.write("\n")
                if not math.isnan(v):
                    f.write(f"{t:.3f} {v:.9g}\n")
                last = t
            f.write("\n\n")


def tick_step(top):
    """1, 2 or 5 times a power of ten, so that at most 4 steps reach `top`: a short panel stays legible."""
    if top <= 0:
        return 1
    step = 10 ** math.floor(math.log10(top / 4))
    for factor in (1, 2, 5, 10):
        if top / (step * factor) <= 4:
            return step * factor


def largest(series):
    """The MOST_SERIES series of the highest peaks, in the order of their legends; none that is all NaN."""
    def peak(s):
        return max((abs(v) for _, v in s[1] if not math.isnan(v)), default=None)
    drawn = [s for s in series if peak(s) is not None]
    return sorted(sorted(drawn, key=peak, reverse=True)[:MOST_SERIES])


def panel_script(panel, series, data, seconds, events, header, height):
    grid = panel["gridPos"]
    x, y, w, h = grid["x"] / 24, grid["y"] * UNIT, grid["w"] / 24, grid["h"] * UNIT
    title = panel["title"] + (f" (largest {MOST_SERIES} of {len(series)})" if len(series) > MOST_SERIES else "")
    lines = [
        f"set origin {x:.5f}, {1 - (header + y + h) / height:.5f}",
        f"set size {w:.5f}, {h / height:.5f}",
        f"set title {quote(title)} font ',9'",
        f"set xrange [0:{seconds:.1f}]",
        "set xtics 30 format '%.0fs' font ',7'; unset mxtics",
        f"set format y '{Y_FORMATS.get(panel['fieldConfig']['defaults'].get('unit'), '%g')}'",
        "set ytics font ',7'",
        "set key below horizontal font ',7' samplen 1.5 spacing 0.9 maxrows 2 height 1.5",
        "unset label; unset arrow",
    ]
    for n, (t, _) in enumerate(events, 1):
        lines.append(f"set arrow from {t:.1f}, graph 0 to {t:.1f}, graph 1 nohead lc rgb '#d0d0d0'")
        lines.append(f"set label '{n}' at {t:.1f}, graph 0.96 offset 0.3, 0 font ',7' tc rgb '#999999'")
    shown = largest(series)
    values = [v for _, points in shown for _, v in points if not math.isnan(v)]
    if not values:
        lines += ["set yrange [0:1]", "set ytics 0.5",
                  "set label 'no data' at graph 0.5, 0.5 center font ',9' tc rgb '#888888'", "plot NaN notitle"]
        return lines
    plots = [f"{quote(str(data))} index {i} using 1:2 with lines lw 1.5 lc rgb '{COLORS[i % len(COLORS)]}' "
             f"title {quote(legend)}" for i, (legend, _) in enumerate(shown)]
    write_series(data, shown)
    lines += ["set yrange [0:*]" if min(values) >= 0 else "set yrange [*:*]",
              f"set ytics {tick_step(max(abs(v) for v in values)):g}", "plot " + ", \\\n  ".join(plots)]
    return lines


def draw(dashboard, results, seconds, events, title, out):
    panels = dashboard["panels"]
    listed = textwrap.wrap("Events: " + "   ".join(f"{n} {what}" for n, (_, what) in enumerate(events, 1)), 200)
    header = TITLE + LINE * len(listed) + 6
    height = header + max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels) * UNIT
    script = [
        # libgd's png: a palette of few colours keeps the file small (pngcairo's is twice the size).
        f"set terminal png size {WIDTH}, {height} font 'DejaVuSans,8' noenhanced",
        f"set output {quote(str(out))}",
        "set multiplot",
        "set lmargin 8; set rmargin 2; set tmargin 1.6",
        "set border 3 lc rgb '#888888'; set xtics nomirror out; set ytics nomirror out; set grid lc rgb '#eeeeee'",
    ]
    # Page title, the list of events, and the rows' title bars: labels of one empty plot over the whole page.
    header_plot = ["set origin 0, 0", "set size 1, 1", "unset border; unset tics; unset grid",
                   f"set label {quote(title)} at screen 0.01, screen {1 - 20 / height:.5f} font ',12'"]
    for n, line in enumerate(listed):
        header_plot.append(f"set label {quote(line)} at screen 0.01, screen {1 - (TITLE + 8 + LINE * n) / height:.5f}")
    for p in panels:
        if p["type"] == "row":
            top = 1 - (header + p["gridPos"]["y"] * UNIT) / height
            header_plot.append(f"set object rect from screen 0, screen {top - UNIT / height:.5f} to screen 1, "
                          f"screen {top:.5f} fc rgb '#e8eef5' fs solid noborder behind")
            header_plot.append(f"set label {quote(p['title'])} at screen 0.01, screen {top - UNIT / height * 0.6:.5f} "
                          "font ',10'")
    header_plot += ["set xrange [0:1]; set yrange [0:1]", "plot NaN notitle", "unset label; unset object",
               "set border 3; set xtics nomirror out; set ytics nomirror out; set grid"]
    script += header_plot
    with tempfile.TemporaryDirectory(prefix="palisade-render-") as tmp:
        for p in panels:
            if p["type"] != "row":
                script += panel_script(p, results.get(p["id"], []), Path(tmp) / f"panel-{p['id']}.dat", seconds,
                                       events, header, height)
        script.append("unset multiplot")
        done = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"gnuplot: exit {done.returncode}: {done.stderr[-2000:]}")
