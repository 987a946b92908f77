#!/usr/bin/env python3
"""The monitoring kit of contrib/ (docs/operations.md#monitoring) against the daemons.

1. contrib/grafana/palisade.json is a dashboard: ids unique, every panel has
   targets and every target an expr, and the template variables the exprs use
   (datasource, job, instance) are defined.
2. promtool accepts the alert rules and the example prometheus.yml, and
   `promtool test rules` passes palisade-alerts.test.yml.
3. Every expr of the dashboard parses as PromQL: promtool checks them as
   recording rules, with the template variables filled in.
4. Every palisade_* metric the dashboard and the alerts use is exported: a
   local cluster's daemons started with --metrics-listen, and one lockd's and
   one replica's /metrics list it on a `# TYPE` line (a histogram's _bucket,
   _sum and _count by its own name).

Usage: monitoring_test.py SOURCE_DIR PALISADE_BINARY
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

SOURCE = Path(sys.argv[1]).resolve()
PALISADE = Path(sys.argv[2]).resolve()
sys.path.insert(0, str(SOURCE / "contrib" / "grafana"))
from metrics_cluster import MetricsCluster, http_get  # noqa: E402

DASHBOARD = SOURCE / "contrib" / "grafana" / "palisade.json"
PROMETHEUS = SOURCE / "contrib" / "prometheus"
# What Grafana puts in for the variables: every job and instance, a window.
VARIABLES = {"$__rate_interval": "1m", "$job": ".+", "$instance": ".+"}
METRIC = re.compile(r"\bpalisade_[a-z0-9_]+")
HISTOGRAM_SERIES = re.compile(r"_(bucket|sum|count)$")


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def promtool(*args):
    print("+ promtool", " ".join(map(str, args)), flush=True)
    done = subprocess.run(["promtool", *map(str, args)], capture_output=True, text=True, timeout=60)
    check(done.returncode == 0, f"promtool {' '.join(map(str, args))}: exit {done.returncode}\n{done.stdout}{done.stderr}")


def dashboard_exprs():
    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    check(len(ids) == len(set(ids)), f"panel ids repeat: {sorted(ids)}")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    check(variables.get("datasource", {}).get("type") == "datasource"
          and variables["datasource"].get("query") == "prometheus", "no prometheus datasource variable")
    check({"job", "instance"} <= variables.keys(), f"no job and instance variables: {sorted(variables)}")
    exprs = []
    for panel in panels:
        if panel["type"] == "row":
            continue
        targets = panel.get("targets", [])
        check(targets, f"panel {panel['id']} ({panel['title']}) has no target")
        for target in targets:
            check(target.get("expr", "").strip(), f"panel {panel['id']} ({panel['title']}) has a target without expr")
            exprs.append(target["expr"])
    return exprs


def alert_exprs():
    groups = yaml.safe_load((PROMETHEUS / "palisade-alerts.yml").read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def check_promql(exprs, tmp):
    """Every expr, its variables filled in, as a recording rule promtool must accept."""
    rules = []
    for n, expr in enumerate(exprs):
        for variable, value in VARIABLES.items():
            expr = expr.replace(variable, value)
        check("$" not in expr, f"an unknown variable in {expr}")
        rules.append({"record": f"palisade:dashboard_expr_{n}", "expr": expr})
    path = tmp / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    promtool("check", "rules", path)


def exported(address):
    """{name: type} of every `# TYPE` line of http://ADDRESS/metrics."""
    status, body = http_get(address, "/metrics")
    check(status == 200, f"GET http://{address}/metrics: {status} {body}")
    return dict(line.split()[2:4] for line in body.splitlines() if line.startswith("# TYPE "))


def missing_metrics(used, types):
    missing = []
    for name in sorted(used):
        base = HISTOGRAM_SERIES.sub("", name)
        if types.get(name) is None and not (base != name and types.get(base) == "histogram"):
            missing.append(name)
    return missing


def main():
    panel_exprs = dashboard_exprs()
    promtool("check", "rules", PROMETHEUS / "palisade-alerts.yml")
    promtool("test", "rules", PROMETHEUS / "palisade-alerts.test.yml")
    promtool("check", "config", PROMETHEUS / "prometheus.yml")
    with tempfile.TemporaryDirectory(prefix="palisade-monitoring-") as tmp:
        tmp = Path(tmp)
        check_promql(panel_exprs, tmp)
        used = {m for expr in panel_exprs + alert_exprs() for m in METRIC.findall(expr)}
        with MetricsCluster(PALISADE, tmp / "cluster") as cluster:
            types = exported(cluster.metrics["lockd-1"]) | exported(cluster.metrics["replica-0"])
    missing = missing_metrics(used, types)
    check(not missing, f"{len(missing)} of the {len(used)} metrics the dashboard and the alerts use are not "
                       f"exported by palisade-lockd or palisade-replica: {', '.join(missing)}")
    print(f"ok: {len(panel_exprs)} dashboard exprs parse, the alerts pass their tests, "
          f"and all {len(used)} metrics they use are exported")


if __name__ == "__main__":
    main()
