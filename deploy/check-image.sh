#!/usr/bin/env bash
# deploy/check-image.sh — builds the mcp-gateway container image from the Dockerfile with
# `podman build --isolation chroot` (no Docker engine or container runtime needed) and checks
# the result without running a container:
#   1. the image's files hold the binary and the default config, and every shared library
#      the binary needs resolves inside the image;
#   2. `mcp-gateway version` and `mcp-gateway check` run in the image's root filesystem
#      (chroot, as the image's unprivileged user), the latter on the default config and on
#      the one in deploy/k8s.yaml's ConfigMap: both need an admin token file, which is not in
#      the image; one made at run time is bind-mounted read-only where each expects it (as a
#      Compose secret and a Kubernetes Secret would be), after checking that the default
#      config without it does not load;
#   3. the gateway started from that root filesystem, on 127.0.0.1 ports picked at run time,
#      with admin_auth on that token, answers /healthz and /readyz without a token, /metrics
#      with 401 without it and 200 with it, and the image's own HEALTHCHECK command passes
#      against it (and fails against a closed port);
#   4. the sidecar as deploy/docker-compose.yaml and deploy/k8s.yaml run it: the demo MCP
#      server image (deploy/demo-server.Dockerfile) is built too, its server started from its
#      root filesystem listens on 127.0.0.1 only, and an MCP tools/call sent to the gateway
#      (started from its own image) comes back from that server. Both share this machine's
#      network namespace, as the two containers share the pod's. GW_CHECK_DEMO=0 skips this;
#   5. the HTTPS variant (deploy/gateway-tls.yaml, which the image holds): a CA and a server
#      certificate are made at run time with the openssl CLI and bind-mounted read-only at
#      /run/secrets/tls (never in the image or the repo); the variant is refused without them
#      and checks with them (so does deploy/k8s-tls's ConfigMap config); the gateway started
#      on it answers the tools/call over HTTPS (curl verifies against the test CA) and a plain
#      request with 400; a second gateway from the image, with `upstreams[].tls` and no `ca`,
#      gets 502 -31010 from it while the image's CA bundle is Debian's, and the call goes
#      through once the test CA is bind-mounted over that bundle (the system store is the
#      file the image carries). Skipped with step 4.
#
# The base image is debian:bookworm-slim when it can be pulled; when it cannot (no registry
# but Debian's is reachable), an equivalent is made once with debootstrap from the Debian
# mirror this machine's apt uses, trimmed like the official slim image, and imported into
# podman as localhost/mcp-gateway-base:bookworm-slim. Its tarball is cached in
# ${GW_IMAGE_CACHE} so a later run, even after the podman store is wiped, skips debootstrap;
# podman's layer cache makes a second build of unchanged sources near-instant.
#
# Needs root (chroot, mounts). Installs podman, debootstrap, curl, iproute2 and openssl with apt
# when missing. Cleans up what it made (containers, mounts, temp dirs, the processes it started);
# keeps the images (the one each tag named before is removed when a build replaces it) and the
# base cache. Exits non-zero on the first failed check.
#
# Env:
#   GW_IMAGE_BINARY source (default): the image compiles the gateway (the Dockerfile's default,
#                   as a release build does); prebuilt: it takes build/mcp-gateway, which must
#                   exist (scripts/build.sh; CI passes this after running the suite on it)
#   GW_IMAGE        image name to build (default localhost/mcp-gateway:check)
#   GW_BUILD_IMAGE  tag for its build stage (default localhost/mcp-gateway-build:check)
#   GW_DEMO_IMAGE   demo MCP server image name (default localhost/mcp-demo-server:check)
#   GW_CHECK_DEMO=0 skip the demo server image and the sidecar check (step 4)
#   GW_IMAGE_CACHE  base-image cache dir (default /var/cache/mcp-gateway-image)
#   SKIP_APT=1      do not install anything
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
image="${GW_IMAGE:-localhost/mcp-gateway:check}"
build_image="${GW_BUILD_IMAGE:-localhost/mcp-gateway-build:check}"
demo_image="${GW_DEMO_IMAGE:-localhost/mcp-demo-server:check}"
cache="${GW_IMAGE_CACHE:-/var/cache/mcp-gateway-image}"
binary_from="${GW_IMAGE_BINARY:-source}"
official_base="docker.io/library/debian:bookworm-slim"
own_base="localhost/mcp-gateway-base:bookworm-slim"
base_tar="${cache}/bookworm-slim.tar"
start=${SECONDS}

say() { printf 'check-image: [%ss] %s\n' "$((SECONDS - start))" "$*"; }
pass() { say "ok: $*"; }
die() {
  printf 'check-image: FAIL: %s\n' "$*" >&2
  exit 1
}

# --- cleanup ----------------------------------------------------------------------------------
tmp=""
binds=()  # read-only bind mounts of the admin token into an image's root filesystem
ctrs=()  # containers created (never started) to mount images
pids=()  # processes started from the images' root filesystems, each led by `timeout`
rootfs_tmp=""
unmount_under() {  # every mount at or below $1, deepest first
  local m
  awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r |
    while IFS= read -r m; do
      umount -l "${m}" 2> /dev/null || true
    done
}
cleanup() {
  local rc=$?
  local p c b
  for p in "${pids[@]}"; do
    if kill -0 "${p}" 2> /dev/null; then
      # `timeout` leads its own process group: this reaches the process it runs too.
      kill -KILL -- "-${p}" 2> /dev/null || kill -KILL "${p}" 2> /dev/null || true
      wait "${p}" 2> /dev/null || true
    fi
  done
  for b in "${binds[@]}"; do
    umount -l "${b}" 2> /dev/null || true
  done
  for c in "${ctrs[@]}"; do
    podman umount "${c}" > /dev/null 2>&1 || true
    podman rm -f "${c}" > /dev/null 2>&1 || true
  done
  if [[ -n "${rootfs_tmp}" && -d "${rootfs_tmp}" ]]; then
    unmount_under "${rootfs_tmp}"
    rm -rf "${rootfs_tmp}"
  fi
  [[ -n "${tmp}" ]] && rm -rf "${tmp}"
  if [[ ${rc} -eq 0 ]]; then
    say "all checks passed in $((SECONDS - start))s"
  else
    say "failed after $((SECONDS - start))s"
  fi
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[[ ${EUID} -eq 0 ]] || die "run as root (podman's chroot build, chroot and mounts need it)"
tmp="$(mktemp -d /tmp/mcp-gateway-check.XXXXXX)"

# --- tools ------------------------------------------------------------------------------------
need=()
command -v podman > /dev/null || need+=(podman)
command -v debootstrap > /dev/null || need+=(debootstrap)
command -v curl > /dev/null || need+=(curl)
command -v ss > /dev/null || need+=(iproute2)
command -v openssl > /dev/null || need+=(openssl)
if [[ ${#need[@]} -gt 0 ]]; then
  [[ "${SKIP_APT:-0}" != 1 ]] || die "missing ${need[*]} and SKIP_APT=1"
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update -qq
  timeout 600 apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
fi
say "podman $(podman version --format '{{.Client.Version}}' 2> /dev/null || echo '?')"

# --- base image -------------------------------------------------------------------------------
# The Debian mirror (and security mirror) this machine's apt uses, e.g. http://deb.debian.org/debian.
apt_mirror() {  # $1: suite/component as apt-cache policy prints it
  apt-cache policy 2> /dev/null | awk -v s="$1" '$3 == s && $2 ~ /^https?:/ { print $2; exit }'
}

make_base() {
  local mirror security
  mirror="$(apt_mirror bookworm/main)"
  security="$(apt_mirror bookworm-security/main)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  mirror="${mirror%/}"
  say "debootstrap bookworm (minbase) from ${mirror}"
  mkdir -p "${cache}"
  rootfs_tmp="$(mktemp -d "${cache}/rootfs.XXXXXX")"
  if ! timeout 1200 debootstrap --variant=minbase bookworm "${rootfs_tmp}" "${mirror}" \
    > "${tmp}/debootstrap.log" 2>&1; then
    tail -20 "${tmp}/debootstrap.log" >&2
    die "debootstrap failed"
  fi
  unmount_under "${rootfs_tmp}"
  local r="${rootfs_tmp}"
  # Trim it like the official slim image (debuerreotype): no docs, man pages, locales or apt
  # lists, and dpkg told to keep it that way for packages installed later.
  cat > "${r}/etc/dpkg/dpkg.cfg.d/docker" << 'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  cat > "${r}/etc/apt/apt.conf.d/docker-clean" << 'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  printf 'Acquire::Languages "none";\n' > "${r}/etc/apt/apt.conf.d/docker-no-languages"
  printf 'Acquire::GzipIndexes "true";\n' > "${r}/etc/apt/apt.conf.d/docker-gzip-indexes"
  printf 'APT::AutoRemove::SuggestsImportant "false";\n' \
    > "${r}/etc/apt/apt.conf.d/docker-autoremove-suggests"
  {
    echo "deb ${mirror} bookworm main"
    echo "deb ${mirror} bookworm-updates main"
    if [[ -n "${security}" ]]; then
      echo "deb ${security%/} bookworm-security main"
    fi
  } > "${r}/etc/apt/sources.list"
  find "${r}/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "${r}/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "${r}"/usr/share/{man,groff,info,lintian,linda}/* "${r}"/var/lib/apt/lists/* \
    "${r}"/var/cache/apt/*.bin "${r}"/var/cache/apt/archives/*.deb "${r}"/var/log/*.log \
    "${r}"/var/cache/debconf/*-old "${r}"/var/lib/dpkg/*-old
  find "${r}/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias \
    -exec rm -rf {} +
  : > "${r}/etc/resolv.conf"
  : > "${r}/etc/hostname"
  : > "${r}/etc/machine-id"
  tar --numeric-owner --xattrs -C "${r}" -cf "${base_tar}.part" .
  mv "${base_tar}.part" "${base_tar}"
  rm -rf "${rootfs_tmp}"
  rootfs_tmp=""
  say "cached the base root filesystem: ${base_tar} ($(du -m "${base_tar}" | cut -f1) MB)"
}

base=""
if podman image exists "${official_base}"; then
  base="${official_base}"
elif podman image exists "${own_base}"; then
  base="${own_base}"  # made by an earlier run: no pull attempt each time
elif timeout 60 podman pull -q "${official_base}" > "${tmp}/pull.log" 2>&1; then
  base="${official_base}"
else
  say "cannot pull ${official_base} ($(tail -1 "${tmp}/pull.log" | cut -c1-120))"
  [[ -s "${base_tar}" ]] || make_base
  say "importing ${base_tar} as ${own_base}"
  timeout 300 podman import -q \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "${base_tar}" "${own_base}" > /dev/null
  base="${own_base}"
fi
pass "base image ${base} ($(podman image inspect --format '{{.Size}}' "${base}" |
  awk '{ printf "%.1f MB", $1 / 1e6 }'))"

# --- build ------------------------------------------------------------------------------------
# build_tagged TAG LOG ARGS...: podman build ARGS as TAG (layer cache on), output to LOG; then
# removes the image TAG named before, when the build replaced it, with the cached layers only
# it used: repeated runs on changing sources keep one image per tag, not one per run.
build_tagged() {
  local tag="$1" log="$2" old new
  shift 2
  old=$(podman image inspect --format '{{.Id}}' "${tag}" 2> /dev/null || true)
  timeout 1200 podman build --isolation chroot --format docker --layers --pull=never \
    --build-arg "BASE=${base}" -t "${tag}" "$@" > "${log}" 2>&1 || return 1
  new=$(podman image inspect --format '{{.Id}}' "${tag}")
  if [[ -n "${old}" && "${old}" != "${new}" ]]; then
    podman rmi "${old}" > /dev/null 2>&1 || true
  fi
}
case "${binary_from}" in
  source) ;;
  prebuilt)
    [[ -x "${root}/build/mcp-gateway" ]] ||
      die "GW_IMAGE_BINARY=prebuilt: no ${root}/build/mcp-gateway (run scripts/build.sh first)"
    ;;
  *) die "GW_IMAGE_BINARY must be source or prebuilt, not '${binary_from}'" ;;
esac
say "podman build --isolation chroot -t ${image}, binary from ${binary_from}" \
  "(log: build output below on failure)"
build_start=${SECONDS}
# The build stage gets a tag of its own (a cache hit right after), so that its layers are
# cleaned up as the runtime image's are.
if ! build_tagged "${build_image}" "${tmp}/build.log" --target build \
  --build-arg "GW_BINARY=${binary_from}" -f "${root}/Dockerfile" "${root}" ||
  ! build_tagged "${image}" "${tmp}/build.log" --build-arg "GW_BINARY=${binary_from}" \
    -f "${root}/Dockerfile" "${root}"; then
  tail -40 "${tmp}/build.log" >&2
  die "podman build failed"
fi
pass "image built in $((SECONDS - build_start))s"

# --- image metadata ---------------------------------------------------------------------------
size=$(podman image inspect --format '{{.Size}}' "${image}")
pass "image size: $(awk -v s="${size}" 'BEGIN { printf "%.1f MB", s / 1e6 }') uncompressed"
user=$(podman image inspect --format '{{.Config.User}}' "${image}")
[[ "${user}" == "10001:10001" ]] || die "image user is '${user}', expected 10001:10001"
pass "runs as ${user} (non-root)"
hc_json=$(podman image inspect --format '{{json .Config.Healthcheck.Test}}' "${image}")
[[ "${hc_json}" == '["CMD","/usr/local/bin/mcp-gateway","healthcheck"]' ]] ||
  die "unexpected HEALTHCHECK: ${hc_json}"
pass "HEALTHCHECK: ${hc_json}"

# --- the image's files ------------------------------------------------------------------------
mount_image() {  # sets $1 to the root filesystem of image $2 (a created, never started container)
  local c m
  c=$(podman create --name "mcp-gateway-check-$$-${#ctrs[@]}" "$2")
  ctrs+=("${c}")
  m=$(podman mount "${c}")
  [[ -d "${m}" ]] || die "podman mount gave no directory for $2"
  printf -v "$1" '%s' "${m}"
}
mnt=""
mount_image mnt "${image}"
bin="${mnt}/usr/local/bin/mcp-gateway"
[[ -x "${bin}" ]] || die "no executable /usr/local/bin/mcp-gateway in the image"
pass "binary present: /usr/local/bin/mcp-gateway ($(du -k "${bin}" | cut -f1) KiB)"
[[ -s "${mnt}/etc/mcp-gateway/gateway.yaml" ]] || die "no /etc/mcp-gateway/gateway.yaml"
pass "default config present: /etc/mcp-gateway/gateway.yaml"
# What weighs what: every regular file in the image, largest first (symlinks are free).
say "the image's files (bytes):"
(cd "${mnt}" && find . -xdev -type f -printf '%s %P\n' | sort -rn | grep -v ' usr/share/doc/' |
  awk '{ printf "check-image:   %9d  /%s\n", $1, $2 }')
say "  plus $(find "${mnt}/usr/share/doc" -type f 2> /dev/null | wc -l) copyright files" \
  "($(find "${mnt}/usr/share/doc" -type f -printf '%s\n' 2> /dev/null |
    awk '{ s += $1 } END { print s + 0 }') bytes)"
# The image has no shell: the dynamic loader itself lists what the binary loads.
loader=""
for ld in "${mnt}"/lib64/ld-linux-*.so.* "${mnt}"/lib/ld-linux-*.so.*; do
  if [[ -e "${ld}" ]]; then
    loader="${ld#"${mnt}"}"
    break
  fi
done
[[ -n "${loader}" ]] || die "no dynamic loader in the image"
libs=$(chroot "${mnt}" "${loader}" --list /usr/local/bin/mcp-gateway) ||
  die "cannot list the binary's libraries inside the image"
if grep -q 'not found' <<< "${libs}"; then
  grep 'not found' <<< "${libs}" >&2
  die "shared libraries missing from the image"
fi
pass "all $(grep -c '=>' <<< "${libs}") shared libraries resolve inside the image"

# --- commands in the image's root filesystem --------------------------------------------------
as_user=("$(command -v chroot)" --userspec=10001:10001 "${mnt}")  # env -i drops sbin from PATH
out=$(env -i PATH=/usr/bin:/bin timeout 10 "${as_user[@]}" /usr/local/bin/mcp-gateway version) ||
  die "mcp-gateway version failed in the chroot"
[[ "${out}" == mcp-gateway* ]] || die "unexpected version output: ${out}"
pass "chroot: ${out}"
# The default config binds admin off loopback, so it names a token file that the image does
# not hold: without one mounted, it must not load (and must say why).
if out=$(env -i PATH=/usr/bin:/bin timeout 10 "${as_user[@]}" /usr/local/bin/mcp-gateway \
  check -c /etc/mcp-gateway/gateway.yaml 2>&1); then
  die "the default config loads without an admin token mounted: ${out}"
fi
[[ "${out}" == *"admin token file '/run/secrets/admin_token' does not exist"* ]] ||
  die "the default config without a token fails, but not for the token: ${out}"
pass "chroot: the default config without a mounted admin token is refused: ${out%%$'\n'*}"
# A token made now (never in the image or the repo), bind-mounted read-only where the default
# config (a Compose secret) and the k8s ConfigMap (a Secret volume) expect it.
od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "${tmp}/admin_token"
chmod 444 "${tmp}/admin_token"
printf 'Authorization: Bearer %s\n' "$(cat "${tmp}/admin_token")" > "${tmp}/admin_auth_header"
mount_ro() {  # mount_ro FILE PATH: FILE, read-only, at PATH inside the image's root filesystem
  local target="${mnt}$2"
  mkdir -p "$(dirname "${target}")"
  [[ -e "${target}" ]] || : > "${target}"
  mount --bind "$1" "${target}"
  binds+=("${target}")
  mount -o remount,bind,ro "${target}"
}
mount_token() { mount_ro "${tmp}/admin_token" "$1"; }
mount_token /run/secrets/admin_token
mount_token /run/secrets/mcp-gateway/admin_token
out=$(env -i PATH=/usr/bin:/bin timeout 10 "${as_user[@]}" /usr/local/bin/mcp-gateway \
  check -c /etc/mcp-gateway/gateway.yaml 2>&1) || die "the default config does not check: ${out}"
pass "chroot: ${out} (admin token mounted at /run/secrets/admin_token)"
# The config deploy/k8s.yaml's ConfigMap holds (indented 4 under `gateway.yaml: |`).
awk '/^  gateway.yaml: [|]$/ { on = 1; next } on && /^(---|[^ ])/ { on = 0 }
     on { sub(/^    /, ""); print }' "${root}/deploy/k8s.yaml" > "${mnt}/tmp/k8s.yaml"
[[ -s "${mnt}/tmp/k8s.yaml" ]] || die "no gateway.yaml in deploy/k8s.yaml's ConfigMap"
chmod 644 "${mnt}/tmp/k8s.yaml"
out=$(env -i PATH=/usr/bin:/bin timeout 10 "${as_user[@]}" /usr/local/bin/mcp-gateway \
  check -c /tmp/k8s.yaml 2>&1) || die "deploy/k8s.yaml's ConfigMap config does not check: ${out}"
pass "chroot: deploy/k8s.yaml's ConfigMap config: ${out}"

# --- the gateway, started from the image's root filesystem ------------------------------------
chosen=" "
port="" admin="" closed=""
free_port() {  # sets $1 to a TCP port nothing listens on, outside the ephemeral range, new
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    if [[ "${chosen}" != *" ${p} "* && -z "$(ss -Hltn "sport = :${p}")" ]]; then
      chosen+="${p} "
      printf -v "$1" '%s' "${p}"
      return 0
    fi
  done
  die "no free port"
}
free_port port
free_port admin
free_port closed
cat > "${mnt}/tmp/check.yaml" << EOF
listen: 127.0.0.1:${port}
admin: 127.0.0.1:${admin}
admin_auth: { token_file: /run/secrets/admin_token }
workers: 1
upstreams:
  - name: none
    endpoints: [127.0.0.1:${closed}]
routes:
  - name: default
    upstream: none
access_log: { path: "off" }
drain_timeout: 1s
EOF
# start_gateway NAME PATH: runs the gateway from the image's root filesystem with
# /tmp/NAME.yaml (log: ${tmp}/NAME.log; pid: gw_pid) and waits up to 10 s until PATH on the
# admin port answers 200 (its body in ${tmp}/NAME.ready); dies with the log otherwise.
start_gateway() {
  local name="$1" path="$2" ok=0
  chmod 644 "${mnt}/tmp/${name}.yaml"
  env -i PATH=/usr/bin:/bin timeout 60 "${as_user[@]}" /usr/local/bin/mcp-gateway \
    run -c "/tmp/${name}.yaml" > "${tmp}/${name}.log" 2>&1 &
  gw_pid=$!
  pids+=("${gw_pid}")
  say "gateway started in the chroot (pid ${gw_pid}): listen 127.0.0.1:${port}," \
    "admin 127.0.0.1:${admin}"
  for _ in $(seq 1 100); do
    if curl -fsS --max-time 1 "http://127.0.0.1:${admin}${path}" > "${tmp}/${name}.ready" \
      2> /dev/null; then
      ok=1
      break
    fi
    kill -0 "${gw_pid}" 2> /dev/null || break
    sleep 0.1
  done
  if [[ ${ok} != 1 ]]; then
    cat "${tmp}/${name}.log" >&2
    die "${path} did not answer 200 within 10s"
  fi
}
start_gateway check /healthz
pass "/healthz: 200 $(head -c 40 "${tmp}/check.ready")"
code=$(curl -sS --max-time 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:${admin}/readyz")
[[ "${code}" == 200 ]] || die "/readyz answered ${code}"
pass "/readyz: 200"
code=$(curl -sS --max-time 2 -o "${tmp}/metrics.401" -w '%{http_code}' \
  "http://127.0.0.1:${admin}/metrics")
[[ "${code}" == 401 ]] || die "/metrics without the admin token answered ${code} (expected 401)"
pass "/metrics without the admin token: 401 $(head -c 60 "${tmp}/metrics.401")"
code=$(curl -sS --max-time 2 -o "${tmp}/metrics" -w '%{http_code}' \
  -H "@${tmp}/admin_auth_header" "http://127.0.0.1:${admin}/metrics")
[[ "${code}" == 200 ]] || die "/metrics with the admin token answered ${code} (expected 200)"
grep -q '^mcp_gateway_admin_auth_failures_total{reason="missing"} 1' "${tmp}/metrics" ||
  die "/metrics does not count the refused request"
pass "/metrics with the admin token: 200"
code=$(curl -sS --max-time 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:${port}/nope")
[[ "${code}" == 404 ]] || die "the data listener answered ${code} for /nope (expected 404)"
pass "data listener: 404 for an unknown path"
env -i PATH=/usr/bin:/bin GW_ADMIN_PORT="${admin}" timeout 10 "${as_user[@]}" \
  /usr/local/bin/mcp-gateway healthcheck || die "the image's HEALTHCHECK command failed"
pass "HEALTHCHECK command passes against the running gateway"
if env -i PATH=/usr/bin:/bin GW_ADMIN_PORT="${closed}" timeout 10 "${as_user[@]}" \
  /usr/local/bin/mcp-gateway healthcheck 2> /dev/null; then
  die "the HEALTHCHECK command passed against a closed port"
fi
pass "HEALTHCHECK command fails against a closed port"
kill -TERM "${gw_pid}"
rc=0
wait "${gw_pid}" || rc=$?
[[ ${rc} == 0 ]] || die "the gateway exited ${rc} on SIGTERM (log: $(tail -3 "${tmp}/check.log"))"
pass "SIGTERM: drained and exited 0"

# --- the sidecar: demo MCP server + gateway ---------------------------------------------------
if [[ "${GW_CHECK_DEMO:-1}" == 0 ]]; then
  say "GW_CHECK_DEMO=0: skipping the demo server image and the sidecar check"
  exit 0
fi
# npm inside the build trusts what this machine trusts (a TLS-inspecting proxy's CA included).
ca_args=()
host_ca=/etc/ssl/certs/ca-certificates.crt
if [[ -s "${host_ca}" ]]; then
  ca_args=(-v "${host_ca}:/run/host-ca.crt:ro" --build-arg npm_config_cafile=/run/host-ca.crt)
fi
say "podman build --isolation chroot -t ${demo_image} -f deploy/demo-server.Dockerfile"
build_start=${SECONDS}
if ! build_tagged "${demo_image}" "${tmp}/demo-build.log" "${ca_args[@]}" \
  -f "${root}/deploy/demo-server.Dockerfile" "${root}"; then
  tail -40 "${tmp}/demo-build.log" >&2
  die "podman build of the demo server failed"
fi
pass "demo server image built in $((SECONDS - build_start))s" \
  "($(podman image inspect --format '{{.Size}}' "${demo_image}" |
    awk '{ printf "%.1f MB", $1 / 1e6 }'))"
demo_mnt="" mcp_port=""
mount_image demo_mnt "${demo_image}"
free_port mcp_port
env -i PATH=/usr/bin:/bin MCP_PORT="${mcp_port}" timeout 60 "$(command -v chroot)" \
  --userspec=10002:10002 "${demo_mnt}" /usr/local/bin/node /app/mcp-server.mjs \
  > "${tmp}/demo.log" 2>&1 &
demo_pid=$!
pids+=("${demo_pid}")
ok=0
for _ in $(seq 1 150); do
  grep -q '^LISTENING' "${tmp}/demo.log" && ok=1 && break
  kill -0 "${demo_pid}" 2> /dev/null || break
  sleep 0.1
done
if [[ ${ok} != 1 ]]; then
  cat "${tmp}/demo.log" >&2
  die "the demo MCP server did not start within 15s"
fi
bound=$(ss -Hltn "sport = :${mcp_port}" | awk '{ print $4 }' | sort -u | tr '\n' ' ')
[[ "${bound}" == "127.0.0.1:${mcp_port} " ]] ||
  die "the demo MCP server listens on '${bound}', expected 127.0.0.1:${mcp_port} only"
pass "demo MCP server (node $(chroot "${demo_mnt}" /usr/local/bin/node -v)) listens on" \
  "127.0.0.1:${mcp_port} only"

free_port port
free_port admin
cat > "${mnt}/tmp/sidecar.yaml" << EOF
listen: 127.0.0.1:${port}
admin: 127.0.0.1:${admin}
workers: 1
upstreams:
  - name: mcp-server
    endpoints: [127.0.0.1:${mcp_port}]
    path: /mcp
routes:
  - name: default
    upstream: mcp-server
drain_timeout: 1s
EOF
start_gateway sidecar /readyz
body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
body+='"arguments":{"message":"through the sidecar"},"_meta":{'
body+='"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
body+='"io.modelcontextprotocol/clientCapabilities":{}}}}'
echo_call() {  # echo_call URL [CURL-ARGS...]: the echo tools/call; status in ${code}, body in
  local url="$1"  # ${tmp}/echo
  shift
  code=$(curl -sS --max-time 10 "$@" -o "${tmp}/echo" -w '%{http_code}' "${url}" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \
    -d "${body}") || code="curl failed"
}
echo_call "http://127.0.0.1:${port}/mcp"
if [[ "${code}" != 200 ]] || ! grep -q '"text":"through the sidecar"' "${tmp}/echo"; then
  cat "${tmp}/echo" "${tmp}/sidecar.log" "${tmp}/demo.log" >&2
  die "tools/call echo through the gateway: ${code}"
fi
pass "tools/call echo through the gateway: 200 $(head -c 100 "${tmp}/echo")"
stop_gateway() {  # stop_gateway PID WHAT: SIGTERM, and it must exit 0
  local rc=0
  kill -TERM "$1"
  wait "$1" || rc=$?
  [[ ${rc} == 0 ]] || die "$2 exited ${rc} on SIGTERM"
}
stop_gateway "${gw_pid}" "the sidecar gateway"

# --- the HTTPS variant: deploy/gateway-tls.yaml with certificates mounted ---------------------
# A CA and a server certificate for localhost / 127.0.0.1, made now (never in the image or the
# repo) and bind-mounted read-only where the TLS variant expects them (a Compose bind mount of
# deploy/tls/, a Kubernetes TLS Secret).
tls="${tmp}/tls"
mkdir -p "${tls}"
(
  cd "${tls}"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=check-image-ca \
    -keyout ca.key -out ca.crt
  openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout tls.key -out tls.csr
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
  openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile san.ext -out tls.crt
) > "${tmp}/openssl.log" 2>&1 || {
  cat "${tmp}/openssl.log" >&2
  die "cannot make the test certificates"
}
chmod 444 "${tls}/tls.key" "${tls}/tls.crt"
tls_cfg=/etc/mcp-gateway/gateway-tls.yaml
[[ -s "${mnt}${tls_cfg}" ]] || die "no ${tls_cfg} in the image"
if out=$(env -i PATH=/usr/bin:/bin timeout 10 "${as_user[@]}" /usr/local/bin/mcp-gateway \
  check -c "${tls_cfg}" 2>&1); then
  die "the TLS variant loads without a certificate mounted: ${out}"
fi
pass "chroot: the TLS variant without a mounted certificate is refused: ${out%%$'\n'*}"
mount_ro "${tls}/tls.crt" /run/secrets/tls/tls.crt
mount_ro "${tls}/tls.key" /run/secrets/tls/tls.key
out=$(env -i PATH=/usr/bin:/bin timeout 10 "${as_user[@]}" /usr/local/bin/mcp-gateway \
  check -c "${tls_cfg}" 2>&1) || die "${tls_cfg} does not check: ${out}"
pass "chroot: ${out} (certificate mounted at /run/secrets/tls)"
# The config deploy/k8s-tls/gateway.yaml's ConfigMap patch holds.
awk '/^  gateway.yaml: [|]$/ { on = 1; next } on && /^(---|[^ ])/ { on = 0 }
     on { sub(/^    /, ""); print }' "${root}/deploy/k8s-tls/gateway.yaml" > "${mnt}/tmp/k8s-tls.yaml"
grep -q '^tls:' "${mnt}/tmp/k8s-tls.yaml" || die "no TLS config in deploy/k8s-tls/gateway.yaml"
chmod 644 "${mnt}/tmp/k8s-tls.yaml"
out=$(env -i PATH=/usr/bin:/bin timeout 10 "${as_user[@]}" /usr/local/bin/mcp-gateway \
  check -c /tmp/k8s-tls.yaml 2>&1) || die "deploy/k8s-tls's ConfigMap config does not check: ${out}"
pass "chroot: deploy/k8s-tls's ConfigMap config: ${out}"

# The image's own TLS config, only its addresses moved to this run's ports.
free_port port
free_port admin
sed -e "s/0\.0\.0\.0:8443/127.0.0.1:${port}/" -e "s/0\.0\.0\.0:9901/127.0.0.1:${admin}/" \
  -e "s/127\.0\.0\.1:3000/127.0.0.1:${mcp_port}/" -e 's/^drain_timeout: .*/drain_timeout: 1s/' \
  "${mnt}${tls_cfg}" > "${mnt}/tmp/tls.yaml"
for want in "listen: 127.0.0.1:${port}" "admin: 127.0.0.1:${admin}" "127.0.0.1:${mcp_port}]"; do
  grep -qF "${want}" "${mnt}/tmp/tls.yaml" || die "${tls_cfg} changed shape: no '${want}'"
done
start_gateway tls /readyz
tls_pid=${gw_pid}
tls_port=${port}
echo_call "https://127.0.0.1:${tls_port}/mcp" --cacert "${tls}/ca.crt"
if [[ "${code}" != 200 ]] || ! grep -q '"text":"through the sidecar"' "${tmp}/echo"; then
  cat "${tmp}/echo" "${tmp}/tls.log" "${tmp}/demo.log" >&2
  die "tools/call echo over HTTPS through the gateway: ${code}"
fi
pass "HTTPS tools/call echo through the TLS variant: 200 (certificate verified by curl)"
code=$(curl -sS --max-time 5 -o "${tmp}/plain" -w '%{http_code}' \
  "http://127.0.0.1:${tls_port}/mcp") || code="curl failed"
[[ "${code}" == 400 ]] && grep -q 'this port speaks HTTPS' "${tmp}/plain" ||
  die "plain HTTP on the TLS port: ${code} $(head -c 100 "${tmp}/plain")"
pass "plain HTTP on the TLS port: 400 $(head -c 40 "${tmp}/plain")"

# Upstream TLS against the image's system store (the CA bundle the image carries): a second
# gateway from the image sends to the first over HTTPS with no `ca` of its own. With Debian's
# bundle the test CA is unknown (502, upstream_tls); with the test CA bind-mounted over the
# bundle the same config goes through: the system store is the file the image holds.
bundle=/etc/ssl/certs/ca-certificates.crt
[[ -s "${mnt}${bundle}" ]] || die "no CA bundle ${bundle} in the image"
[[ "$(readlink "${mnt}/usr/lib/ssl/cert.pem")" == "${bundle}" ]] ||
  die "/usr/lib/ssl/cert.pem (OpenSSL's default file) does not lead to ${bundle}"
relay_through() {  # relay_through NAME: a gateway whose upstream is the TLS one; sends the
  local name="$1"  # echo call through it: its status in ${code}, its body in ${tmp}/echo
  free_port port
  free_port admin
  cat > "${mnt}/tmp/${name}.yaml" << EOF
listen: 127.0.0.1:${port}
admin: 127.0.0.1:${admin}
workers: 1
upstreams:
  - name: tls-gateway
    endpoints: [127.0.0.1:${tls_port}]
    path: /mcp
    tls: { server_name: localhost }
routes:
  - name: default
    upstream: tls-gateway
drain_timeout: 1s
EOF
  start_gateway "${name}" /readyz
  echo_call "http://127.0.0.1:${port}/mcp"
  stop_gateway "${gw_pid}" "the ${name} gateway"
}
relay_through upstream-untrusted
if [[ "${code}" != 502 ]] || ! grep -q -- '-31010' "${tmp}/echo" ||
  ! grep -q 'certificate verify failed' "${tmp}/upstream-untrusted.log"; then
  cat "${tmp}/echo" "${tmp}/upstream-untrusted.log" >&2
  die "upstream TLS to an unknown CA: ${code} (expected 502 -31010, a log line naming the reason)"
fi
pass "upstream TLS, test CA not in the image's bundle: 502 -31010, logged: $(grep -o \
  'certificate verify failed[^"]*' "${tmp}/upstream-untrusted.log" | head -1 | cut -c1-80)"
mount_ro "${tls}/ca.crt" "${bundle}"
relay_through upstream-trusted
if [[ "${code}" != 200 ]] || ! grep -q '"text":"through the sidecar"' "${tmp}/echo"; then
  cat "${tmp}/echo" "${tmp}/upstream-trusted.log" "${tmp}/tls.log" >&2
  die "upstream TLS with the test CA as the system store: ${code}"
fi
pass "upstream TLS with the test CA as the image's system store: 200 through both gateways"
stop_gateway "${tls_pid}" "the TLS gateway"
rc=0
kill -TERM "${demo_pid}"
wait "${demo_pid}" || rc=$?
[[ ${rc} == 0 ]] || die "the demo MCP server exited ${rc} on SIGTERM"
pass "SIGTERM: gateways and demo server exited 0"
