#!/usr/bin/env bash
# Runs MCP conformance scenarios through the gateway and compares them with the same upstream
# measured directly (tests/conformance/run.sh does the scoring). Two setups, each on loopback
# ports chosen at run time, with its own upstream fixture and gateway (workers 1, one default
# route, access log in the temp dir):
#   A. tests/fixtures/mcp-server.mjs (SDK v2, validates headers) behind the gateway in header
#      mode (mcp.verify_body false): http-header-validation,
#      http-custom-header-server-validation, server-stateless and server-sse-multiple-streams
#      must pass at least as many checks, and fail no more, through the gateway as directly.
#   B. tests/fixtures/raw-mcp-server.mjs (validates nothing) behind the gateway in verify mode
#      (mcp.verify_body true): http-header-validation and http-custom-header-server-validation
#      must pass in full through the gateway (0 failures); the direct score is only printed.
#   C. as A, but the route is federated with that one upstream (`upstreams: [fixture]`, issue
#      #15): every scenario must score as it does directly.
#   E. as A, but the upstream is one of several servers (`servers:`, issue #27) at a path that
#      is not /mcp (/team/mcp, host 127.0.0.1), beside a decoy server at /mcp: every scenario
#      must score as it does directly.
#   D. the era bridge (issue #26): a federated route of one 2025-only upstream
#      (tests/fixtures/mcp-server.mjs with MCP_LEGACY=only, `era: legacy`), the scenarios of A
#      through the gateway, compared with the same fixture in dual-era mode
#      (MCP_LEGACY=sessions) measured directly. A scenario listed in bridge_limits below cannot
#      pass through a bridge by design: its shortfall is printed as
#      `BRIDGE <scenario>: direct P/F, gateway P/F` with the failed checks and the reason, and
#      does not fail the run.
# Prints one line per setup and scenario: `OK|SHORT <setup> <scenario>: direct P/F, gateway P/F`
# (P passed, F failed checks), then exits 0 when there is no shortfall, 1 otherwise, 2 on setup
# errors.
#
# Usage: tests/conformance/through_gateway.sh [GATEWAY_BINARY]   (else env GW_BINARY)
# Env: GW_CONFORMANCE_KEEP=1  keep the temp dir (configs, access logs, checks.json) and print it.
#      GW_CONFORMANCE_SETUPS="A B C D"  the setups to run (default: all four).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixtures="$(cd "${here}/../fixtures" && pwd)"
run_sh="${here}/run.sh"
gw_binary="${1:-${GW_BINARY:-}}"
if [[ -z "${gw_binary}" || ! -x "${gw_binary}" ]]; then
  echo "through_gateway.sh: gateway binary not given or not executable: '${gw_binary}'" >&2
  exit 2
fi

work="$(mktemp -d /tmp/gw-conformance.XXXXXX)"
children=()

# Stops pid $1: SIGTERM, up to 5 s for it to exit, then SIGKILL; always reaps it.
stop_child() {
  local pid="$1"
  kill -TERM "${pid}" 2> /dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "${pid}" 2> /dev/null || break
    sleep 0.1
  done
  kill -KILL "${pid}" 2> /dev/null || true
  wait "${pid}" 2> /dev/null || true
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local pid
  for pid in "${children[@]}"; do
    stop_child "${pid}"
  done
  children=()
  if [[ "${GW_CONFORMANCE_KEEP:-0}" == "1" ]]; then
    echo "through_gateway.sh: kept ${work}"
  else
    rm -rf "${work}"
  fi
}
trap cleanup EXIT

# Starts fixture $1 (tests/fixtures/$1.mjs) with its output in $2 (files named $1, or $4 when
# given), MCP_LEGACY=$3 when given; sets upstream_pid and upstream_port.
start_upstream() {
  local script="$1" dir="$2" legacy="${3:-}" name="${4:-$1}"
  local env_args=()
  if [[ -n "${legacy}" ]]; then
    env_args=("MCP_LEGACY=${legacy}")
  fi
  env "${env_args[@]}" node "${fixtures}/${script}.mjs" 0 > "${dir}/${name}.stdout" \
    2> "${dir}/${name}.stderr" &
  upstream_pid=$!
  children+=("${upstream_pid}")
  upstream_port=""
  for _ in $(seq 1 100); do
    # The file may not exist yet: the shell that opens it runs in the background.
    upstream_port="$(sed -n 's/^LISTENING \([0-9][0-9]*\)$/\1/p' "${dir}/${name}.stdout" \
      2> /dev/null || true)"
    [[ -n "${upstream_port}" ]] && return 0
    kill -0 "${upstream_pid}" 2> /dev/null || break
    sleep 0.1
  done
  echo "through_gateway.sh: ${name} did not print LISTENING" >&2
  cat "${dir}/${name}.stderr" >&2
  exit 2
}

# Writes a gateway config to $1/gateway.yaml (verify_body $2) in front of upstream_port, starts
# the gateway on a port it chooses (listen port 0, read back from its --ports-file) and waits
# until it answers on its endpoint; sets gateway_pid and gateway_url. Exits 2 when the gateway
# exits or does not answer within 10 s.
start_gateway() {
  local dir="$1" verify="$2" route_kind="${3:-plain}" era="${4:-auto}" port="" route_line
  local path="/mcp" endpoint_block
  route_line="upstream: fixture"
  if [[ "${route_kind}" == "federated" ]]; then
    route_line="upstreams: [fixture]"
  fi
  endpoint_block="endpoint: /mcp
routes:
  - name: default
    ${route_line}"
  if [[ "${route_kind}" == "servers" ]]; then
    path="/team/mcp"
    endpoint_block="servers:
  - name: decoy
    endpoint: /mcp
    routes: [ { name: default, upstream: fixture } ]
    mcp: { verify_body: true, protocol_versions: [2099-01-01] }
  - name: team
    endpoint: /team/mcp
    hosts: [127.0.0.1]
    routes: [ { name: default, upstream: fixture } ]"
  fi
  cat > "${dir}/gateway.yaml" <<EOF
listen: 127.0.0.1:0
workers: 1
mcp:
  protocol_versions: [2026-07-28]
  verify_body: ${verify}
upstreams:
  - name: fixture
    endpoints: [127.0.0.1:${upstream_port}]
    path: /mcp
    era: ${era}
${endpoint_block}
access_log:
  path: ${dir}/access.log
log_level: info
drain_timeout: 1s
EOF
  rm -f "${dir}/gateway.ports"
  "${gw_binary}" run -c "${dir}/gateway.yaml" --ports-file "${dir}/gateway.ports" \
    > "${dir}/gateway.stdout" 2> "${dir}/gateway.stderr" &
  gateway_pid=$!
  children+=("${gateway_pid}")
  local code
  for _ in $(seq 1 100); do
    if ! kill -0 "${gateway_pid}" 2> /dev/null; then
      break
    fi
    if [[ -z "${port}" ]]; then
      port="$(sed -n 's/^listen \([0-9][0-9]*\)$/\1/p' "${dir}/gateway.ports" 2> /dev/null || true)"
    fi
    if [[ -n "${port}" ]]; then
      gateway_url="http://127.0.0.1:${port}${path}"
      # Any HTTP answer (a 400 for this bare POST) means the gateway serves.
      code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 -X POST "${gateway_url}" \
        || true)"
      if [[ -n "${code}" && "${code}" != "000" ]]; then
        return 0
      fi
    fi
    sleep 0.1
  done
  echo "through_gateway.sh: the gateway did not come up" >&2
  cat "${dir}/gateway.stderr" >&2
  exit 2
}

# Stops every child started so far (the current setup's upstream and gateway).
stop_all() {
  local pid
  for pid in "${children[@]}"; do
    stop_child "${pid}"
  done
  children=()
}

# Runs scenario $2 against URL $1 with results under $3; prints `PASSED FAILED` (-1 -1 when the
# CLI produced no checks).
score() {
  local url="$1" scenario="$2" out="$3" line
  line="$(CONFORMANCE_OUT="${out}" bash "${run_sh}" "${url}" "${scenario}" 2> /dev/null \
    | grep -E "^(PASS|FAIL) [^ ]+: [0-9]+ passed, [0-9]+ failed" | head -n 1 || true)"
  if [[ -z "${line}" ]]; then
    echo "-1 -1"
    return 0
  fi
  sed -E 's/^.*: ([0-9]+) passed, ([0-9]+) failed.*$/\1 \2/' <<< "${line}"
}

# Prints the ids and messages of the failed checks of a scenario run under $1.
show_failures() {
  local file
  for file in "$1"/*/checks.json; do
    [[ -f "${file}" ]] || continue
    # shellcheck disable=SC2016  # JavaScript, not shell
    node -e 'for (const c of JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")))
      if (c.status === "FAILURE") console.log(`    ${c.id}: ${c.errorMessage ?? c.description}`);' \
      "${file}"
  done
}

status=0

# Runs setup $1 (fixture $2, verify_body $3, mode $4 = compare|full, route $5 = plain|federated)
# over scenarios $6...
run_setup() {
  local setup="$1" fixture="$2" verify="$3" mode="$4" route_kind="$5"
  shift 5
  local dir="${work}/${setup}"
  mkdir -p "${dir}"
  start_upstream "${fixture}" "${dir}"
  start_gateway "${dir}" "${verify}" "${route_kind}"
  echo "== setup ${setup}: ${fixture} on 127.0.0.1:${upstream_port}, gateway" \
    "(verify_body ${verify}, ${route_kind} route) on ${gateway_url}"
  local scenario direct gateway dp df gp gf verdict
  for scenario in "$@"; do
    direct="$(score "http://127.0.0.1:${upstream_port}/mcp" "${scenario}" \
      "${dir}/direct/${scenario}")"
    gateway="$(score "${gateway_url}" "${scenario}" "${dir}/gateway/${scenario}")"
    read -r dp df <<< "${direct}"
    read -r gp gf <<< "${gateway}"
    verdict="OK"
    if [[ "${gp}" -lt 0 ]]; then
      verdict="SHORT"
    elif [[ "${mode}" == "compare" ]]; then
      if [[ "${dp}" -lt 0 || "${gp}" -lt "${dp}" || "${gf}" -gt "${df}" ]]; then
        verdict="SHORT"
      fi
    elif [[ "${gf}" -ne 0 || "${gp}" -eq 0 ]]; then
      verdict="SHORT"
    fi
    echo "${verdict} ${setup} ${scenario}: direct ${dp} passed/${df} failed," \
      "gateway ${gp} passed/${gf} failed"
    if [[ "${verdict}" != "OK" ]]; then
      status=1
      echo "  failed checks through the gateway:"
      show_failures "${dir}/gateway/${scenario}/${scenario}"
    fi
  done
  stop_all
}

# Prints the ids of the failed checks of a scenario run under $1, one per line, sorted (an id
# failed twice is printed twice).
failed_ids() {
  local file
  for file in "$1"/*/checks.json; do
    [[ -f "${file}" ]] || continue
    # shellcheck disable=SC2016  # JavaScript, not shell
    node -e 'for (const c of JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")))
      if (c.status === "FAILURE") console.log(c.id);' "${file}"
  done | LC_ALL=C sort
}

# Checks that cannot pass through the era bridge, and why (setup D). A scenario whose only
# failures beyond the direct run's are listed here is reported BRIDGE, not SHORT. None today:
# every scenario setup A runs scores through the bridge as it does directly.
declare -A bridge_limits=()

# Setup D: the gateway in front of mcp-server.mjs in 2025-only mode on a federated route,
# compared with mcp-server.mjs in dual-era mode measured directly; scenarios $@.
run_bridge_setup() {
  local setup="D" dir="${work}/D" direct_port
  mkdir -p "${dir}"
  start_upstream mcp-server "${dir}" sessions direct
  direct_port="${upstream_port}"
  start_upstream mcp-server "${dir}" only bridged
  start_gateway "${dir}" false federated legacy
  echo "== setup ${setup}: mcp-server (MCP_LEGACY=only) on 127.0.0.1:${upstream_port} behind" \
    "the gateway (federated route, era: legacy) on ${gateway_url}; direct: mcp-server" \
    "(MCP_LEGACY=sessions) on 127.0.0.1:${direct_port}"
  local scenario direct gateway dp df gp gf verdict
  for scenario in "$@"; do
    direct="$(score "http://127.0.0.1:${direct_port}/mcp" "${scenario}" \
      "${dir}/direct/${scenario}")"
    gateway="$(score "${gateway_url}" "${scenario}" "${dir}/gateway/${scenario}")"
    read -r dp df <<< "${direct}"
    read -r gp gf <<< "${gateway}"
    verdict="OK"
    local extra=() known=0 id
    if [[ "${gp}" -lt 0 || "${dp}" -lt 0 || "${gp}" -lt "${dp}" || "${gf}" -gt "${df}" ]]; then
      verdict="SHORT"
      # The checks failed through the gateway and not directly (as many times as they did).
      mapfile -t extra < <(LC_ALL=C comm -23 \
        <(failed_ids "${dir}/gateway/${scenario}/${scenario}") \
        <(failed_ids "${dir}/direct/${scenario}/${scenario}"))
      for id in "${extra[@]}"; do
        [[ -n "${bridge_limits[${id}]:-}" ]] && known=$((known + 1))
      done
      if [[ "${gp}" -ge 0 && "${dp}" -ge 0 && "${#extra[@]}" -gt 0 &&
        "${known}" -eq "${#extra[@]}" && $((gp + gf)) -eq $((dp + df)) ]]; then
        verdict="BRIDGE"
      fi
    fi
    if [[ "${verdict}" == "BRIDGE" ]]; then
      echo "BRIDGE ${scenario}: direct ${dp}/${df}, gateway ${gp}/${gf}"
    else
      echo "${verdict} ${setup} ${scenario}: direct ${dp} passed/${df} failed," \
        "gateway ${gp} passed/${gf} failed"
    fi
    if [[ "${verdict}" != "OK" ]]; then
      [[ "${verdict}" == "SHORT" ]] && status=1
      echo "  failed through the gateway, not directly:"
      for id in "${extra[@]}"; do
        echo "    ${id}: ${bridge_limits[${id}]:-NOT a bridge limit (a gateway shortfall)}"
      done
      echo "  failed checks through the gateway:"
      show_failures "${dir}/gateway/${scenario}/${scenario}"
    fi
  done
  stop_all
}

# Whether setup $1 is selected (GW_CONFORMANCE_SETUPS, default every setup).
selected() {
  [[ " ${GW_CONFORMANCE_SETUPS:-A B C D E} " == *" $1 "* ]]
}

if selected A; then
  run_setup A mcp-server false compare plain \
    http-header-validation http-custom-header-server-validation server-stateless \
    server-sse-multiple-streams
fi
if selected B; then
  run_setup B raw-mcp-server true full plain \
    http-header-validation http-custom-header-server-validation
fi
if selected C; then
  run_setup C mcp-server false compare federated \
    http-header-validation http-custom-header-server-validation server-stateless \
    server-sse-multiple-streams
fi
if selected E; then
  run_setup E mcp-server false compare servers \
    http-header-validation http-custom-header-server-validation server-stateless \
    server-sse-multiple-streams
fi
if selected D; then
  run_bridge_setup \
    http-header-validation http-custom-header-server-validation server-stateless \
    server-sse-multiple-streams
fi

if [[ "${status}" -eq 0 ]]; then
  echo "through_gateway.sh: all scenarios meet their bar"
else
  echo "through_gateway.sh: shortfall (see SHORT lines)"
fi
exit "${status}"
