#!/usr/bin/env bash
# Checks the monitoring files (issue #31) with promtool (Debian's `prometheus` package):
# deploy/prometheus/alerts.yaml loads (`promtool check rules`) and passes its unit tests
# (alerts_test.yaml), and every expression of deploy/grafana/mcp-gateway.json parses (each
# becomes a recording rule of a generated rules file that `promtool check rules` reads, with
# Grafana's $__rate_interval and $job put in). That the names they use are metrics the gateway
# exports is the integration test "monitoring: ..." (a real /metrics scrape).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v promtool > /dev/null || { echo "check-monitoring: promtool is missing (apt-get install prometheus)" >&2; exit 1; }
promtool check rules deploy/prometheus/alerts.yaml
(cd deploy/prometheus && promtool test rules alerts_test.yaml)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - deploy/grafana/mcp-gateway.json "$tmp/dashboard-rules.yaml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
rules = []
for p in dash["panels"]:
    for t in p.get("targets", []):
        e = t["expr"].replace("$__rate_interval", "5m").replace("$job", ".*")
        rules.append("      - record: dashboard:panel_%d_%s\n        expr: %s\n" % (p["id"], t["refId"], json.dumps(e)))
if not rules:
    sys.exit("check-monitoring: the dashboard has no expressions")
open(sys.argv[2], "w").write("groups:\n  - name: dashboard\n    rules:\n" + "".join(rules))
print("check-monitoring: %d dashboard expressions" % len(rules))
PY
promtool check rules "$tmp/dashboard-rules.yaml"
