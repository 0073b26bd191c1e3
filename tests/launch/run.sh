#!/usr/bin/env bash
# The documented ways to start a job on Zebra (docs/LAUNCH.md), each run as a user types it,
# in a network namespace of its own (root; skipped otherwise) whose only addresses are its
# loopback and one test address behind its default route: MXNet's launcher and PS-lite's
# tests/local.sh pick the scheduler's address and port themselves (the machine's address,
# port 8000), and so they stay inside the namespace.
#
#   tests/launch/run.sh [--break preload] [TEST...]
#
# Tests (default: all):
#   mxnet-launch-local  `zebra run --switch` around `python -m mxnet.tools.launch -n 2 -s 1
#                       --launcher local` (launcher-compat on its PYTHONPATH) running
#                       tests/mxnet/dist_sync_kvstore.py, beside `zebra switch --listen`
#   mxnet-launch-ssh    docs/LAUNCH.md's checkout block for `--launcher ssh` (between
#                       <!-- ssh-launch: begin/end -->) as written but for the switch's
#                       address and the training script: `zebra run --switch` as the command
#                       each host runs, 2 servers and 2 workers on two hosts (two addresses
#                       of the namespace) reached through a private sshd (its own config,
#                       host key and authorized_keys under .build/, removed at the end) and
#                       an `ssh` wrapper first on PATH (-F its own ssh_config, so ~/.ssh is
#                       not touched); installs openssh-server/-client with apt if missing
#                       (SKIP when it cannot)
#   pslite-local-sh     `eval "$(zebra env --switch ...)"` then BytePS PS-lite's tests/local.sh
#                       running tests/pslite-app/exact_sums (2 servers, 2 workers)
#   readme-newcomer     the README's newcomer block, word for word but for the switch's
#                       port and the training script (tests/mxnet/dist_sync_kvstore.py):
#                       build the wheel, pip install it (no index) into a fresh venv that
#                       holds the MXNet wheels of the suite's venv, start the switch, run
#                       the job with zebra run and zebra-mxnet-launch
# Each passes when every worker and server printed its OK line (the sums checked exactly),
# no log holds a traceback, every node (scheduler, servers, workers) went through the shim
# in mode on (ZEBRA_STATS), and the switch admitted every server (its share of the job) and saw
# no bad datagram.
#
#   --break preload   run the jobs without LD_PRELOAD (the way a forgotten preload looks):
#                     every test must then FAIL; shows that the checks can fail
#   --break outside   mxnet-launch-ssh only (the others SKIP): `zebra run` in front of the
#                     launcher, as with --launcher local, instead of in front of the command
#                     each host runs; the ssh launcher does not pass the variables, so only
#                     the scheduler is on Zebra and the test must FAIL
#   LAUNCH_TIMEOUT    seconds before a job is killed (default 180; the newcomer block, which
#                     also builds, gets 600)
# Logs: .build/logs/launch/TEST/. Needs scripts/setup.sh --clients.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TESTS=(mxnet-launch-local mxnet-launch-ssh pslite-local-sh readme-newcomer)
BREAK=""
selected=()
while [ $# -gt 0 ]; do
  case $1 in
    --break) case ${2:-} in preload|outside) BREAK=$2 ;;
               *) echo "run.sh: --break takes 'preload' or 'outside'" >&2; exit 2 ;; esac; shift 2 ;;
    -h|--help) sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [[ " ${TESTS[*]} " == *" $1 "* ]] || { echo "run.sh: unknown test $1 (tests: ${TESTS[*]})" >&2; exit 2; }
       selected+=("$1"); shift ;;
  esac
done
[ ${#selected[@]} -gt 0 ] || selected=("${TESTS[@]}")
TIMEOUT=${LAUNCH_TIMEOUT:-180}
LOGROOT=$ROOT/.build/logs/launch
ZEBRA=$ROOT/dist/bin/zebra
SHIM=$ROOT/dist/lib/libzmq.so.5
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1 ($2)"; failed=$((failed + 1)); }

if [ "$(id -u)" != 0 ]; then
  for t in "${selected[@]}"; do echo "SKIP $t (needs root for a network namespace)"; done
  exit 0
fi
for f in "$ZEBRA" "$SHIM"; do
  if [ ! -x "$f" ]; then
    for t in "${selected[@]}"; do fail "$t" "$f is missing: run scripts/setup.sh --clients"; done
    exit 1
  fi
done
if ! PY=$("$ROOT/scripts/mxnet-env.sh" 2>/dev/null | tail -n 1) || [ ! -x "$PY" ]; then
  for t in "${selected[@]}"; do fail "$t" "scripts/mxnet-env.sh could not set up the MXNet venv"; done
  exit 1
fi
for v in $(env | grep -o '^ZEBRA_[A-Z_]*' || true); do unset "$v"; done
unset LD_PRELOAD PYTHONPATH PORT DMLC_ROLE DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT

# in_host NAME SECONDS SCRIPT [KEEP]: runs bash -c SCRIPT in a new network namespace (lo,
# and 198.51.100.1/24 on a veth with the default route), killed after SECONDS; then waits
# for the job's processes to end (all but the switch and the pids listed in the file KEEP),
# stops (SIGTERM, after 5 s SIGKILL) whatever is left there and removes the namespace.
# An interrupted run.sh does the same from its trap, and runs the CLEANUPS.
CURRENT_NS=""
CLEANUPS=()
stop_ns() {
  local ns=$1 i pids
  for i in 1 2 3 4 5 6 7 8 9 10 11; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -z "$pids" ] && break
    if [ "$i" = 1 ]; then kill -TERM $pids 2>/dev/null
    elif [ "$i" = 11 ]; then kill -KILL $pids 2>/dev/null; sleep 0.5
    else sleep 0.5; fi
  done
  ip netns del "$ns" 2>/dev/null
}
on_exit() {
  local c
  [ -n "$CURRENT_NS" ] && stop_ns "$CURRENT_NS"
  CURRENT_NS=""
  for c in "${CLEANUPS[@]}"; do eval "$c"; done
  CLEANUPS=()
}
trap on_exit EXIT
trap 'on_exit; exit 130' INT
trap 'on_exit; exit 143' TERM
in_host() {
  local name=$1 seconds=$2 script=$3 keep=${4:-} ns=zebra-launch-$$-$1 rc
  ip netns add "$ns" || return 1
  CURRENT_NS=$ns
  ip -n "$ns" link set lo up
  ip -n "$ns" link add va type veth peer name vb
  ip -n "$ns" addr add 198.51.100.1/24 dev va
  ip -n "$ns" link set va up
  ip -n "$ns" link set vb up
  ip -n "$ns" route add default dev va
  # in the background, so that a signal to run.sh reaches its trap at once
  timeout -k 5 "$seconds" ip netns exec "$ns" bash -c "$script" &
  wait $!
  rc=$?
  local p i others
  # MXNet's launcher returns when the scheduler ends, its workers and servers may still be
  # exiting (writing their ZEBRA_STATS reports): up to 15 s for all but the switch.
  for i in $(seq 30); do
    others=0
    for p in $(ip netns pids "$ns"); do
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = zebra ] && continue
      [ -n "$keep" ] && grep -q -x "$p" "$keep" 2>/dev/null && continue
      others=1
    done
    [ "$others" = 0 ] && break
    sleep 0.5
  done
  stop_ns "$ns"
  CURRENT_NS=""
  return $rc
}

# check NAME DIR LOG WORKERS SERVERS WORKER_OK SERVER_OK: the job's verdict.
check() {
  local name=$1 dir=$2 log=$3 workers=$4 servers=$5 worker_ok=$6 server_ok=$7
  local n
  n=$(grep -c -E "$worker_ok" "$log")
  [ "$n" = "$workers" ] || { fail "$name" "$n of $workers workers printed their OK line; log: $log"; return; }
  n=$(grep -c -E "$server_ok" "$log")
  [ "$n" = "$servers" ] || { fail "$name" "$n of $servers servers printed their OK line; log: $log"; return; }
  if grep -q -E 'Traceback \(most recent call last\)|Exception ignored|cannot be preloaded' "$log"; then
    fail "$name" "$(grep -m 1 -E 'Traceback|Exception ignored|cannot be preloaded' "$log"); log: $log"; return
  fi
  local nodes=$((1 + servers + workers)) reports on
  reports=$(find "$dir/stats" -type f | wc -l)
  on=$(grep -l -x 'mode on' "$dir"/stats/* 2>/dev/null | wc -l)
  [ "$reports" = "$nodes" ] && [ "$on" = "$nodes" ] \
    || { fail "$name" "$on of $nodes nodes went through the shim in mode on ($reports reports); log: $log"; return; }
  local accepted admitted bad
  accepted=$(grep -o -E 'registrations +[0-9]+ accepted' "$log" | grep -o -E '[0-9]+' | tail -n 1)
  admitted=$(grep -o -E '[0-9]+ jobs admitted' "$log" | grep -o -E '^[0-9]+' | tail -n 1)
  bad=$(grep -o -E '\(([0-9]+) bad\)' "$log" | grep -o -E '[0-9]+' | tail -n 1)
  [ "${admitted:-}" = "$servers" ] && [ "${accepted:-0}" -ge "$servers" ] && [ "${bad:-}" = 0 ] \
    || { fail "$name" "the switch admitted ${admitted:-no} servers' shares ($servers expected) with ${accepted:-no} registrations ($servers servers), ${bad:-?} bad datagrams; log: $log"; return; }
  pass "$name"
  echo "  $name: $workers workers, $servers servers, $nodes nodes on Zebra, the switch admitted every server ($accepted registrations); log: $log"
}

free_port='python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])"'

mxnet_launch_local() {
  local name=mxnet-launch-local dir=$LOGROOT/mxnet-launch-local
  rm -rf "$dir"; mkdir -p "$dir/stats"
  local wrap='"$ZEBRA" run --switch 127.0.0.1:$port --'
  [ "$BREAK" = preload ] && wrap='env ZEBRA_ENABLE=1 ZEBRA_SWITCH=127.0.0.1:$port'
  in_host mxnet "$TIMEOUT" "
    set -u; cd '$ROOT'; export ZEBRA_STATS='$dir/stats/%p' ZEBRA=$ZEBRA
    port=\$($free_port)
    \"\$ZEBRA\" switch --listen 127.0.0.1:\$port &
    $wrap env PYTHONPATH='$ROOT/scripts/launcher-compat' \\
      '$PY' -m mxnet.tools.launch -n 2 -s 1 --launcher local '$PY' tests/mxnet/dist_sync_kvstore.py
  " >"$dir/job.log" 2>&1
  check "$name" "$dir" "$dir/job.log" 2 1 '^mxnet dist_sync: OK checked' '^mxnet dist_sync server: OK'
}

# Installs the Debian packages given if missing (non-interactive; fails when it cannot).
apt_ensure() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} = 0 ] && return 0
  command -v apt-get >/dev/null || return 1
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=120)
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}" \
    || { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; }
}

# docs/LAUNCH.md's checkout block for --launcher ssh, with two "hosts" (127.0.0.1 and
# 198.51.100.1, both of the namespace) behind one private sshd: its config, host key, the
# client key, authorized_keys, known_hosts and ssh_config live in a temporary directory
# under .build/ that is removed at the end; an `ssh` wrapper first on PATH adds -F ssh_config.
# The sshd gives its sessions ZEBRA_STATS (SetEnv), since the launcher passes no variable of
# ours; the scheduler has it from the launching shell.
mxnet_launch_ssh() {
  local name=mxnet-launch-ssh dir=$LOGROOT/mxnet-launch-ssh
  rm -rf "$dir"; mkdir -p "$dir/stats"
  if ! apt_ensure openssh-server openssh-client >"$dir/apt.log" 2>&1 \
      || [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
    echo "SKIP $name (openssh-server/openssh-client are not installed and apt-get could not install them; log: $dir/apt.log)"
    return
  fi
  local block
  block=$(awk '/<!-- ssh-launch: begin -->/ { on = 1; next } /<!-- ssh-launch: end -->/ { on = 0 }
    on && !/^```/' "$ROOT/docs/LAUNCH.md")
  if [ -z "$block" ] || ! grep -q -- '--launcher ssh' <<<"$block" || ! grep -q '10.0.0.250:9950' <<<"$block" \
      || ! grep -q -E '(^| )train\.py( |$)' <<<"$block" || ! grep -q -- '-H hosts' <<<"$block"; then
    fail "$name" "docs/LAUNCH.md has no ssh-launch block (between <!-- ssh-launch: begin/end -->) with --launcher ssh, -H hosts, 10.0.0.250:9950 and train.py"; return
  fi
  block=${block//10.0.0.250:9950/198.51.100.1:\$port}
  block=$(sed -E 's#(^| )train\.py( |$)#\1tests/mxnet/dist_sync_kvstore.py\2#; s#-H hosts#-H "$HOSTS"#' <<<"$block")
  if [ "$BREAK" = preload ]; then
    block=$(sed -E 's#[^ ]*zebra run --switch ([^ ]+) -- #env ZEBRA_ENABLE=1 ZEBRA_SWITCH=\1 #' <<<"$block")
  elif [ "$BREAK" = outside ]; then
    local wrap
    wrap=$(grep -o -E '[^ ]*zebra run --switch [^ ]+ -- ' <<<"$block" | head -n 1)
    block=$(sed -E 's#[^ ]*zebra run --switch [^ ]+ -- ##; /mxnet\.tools\.launch/ s#^#'"$wrap"'env #' <<<"$block")
  fi
  printf '%s\n' "$block" >"$dir/block.sh"
  mkdir -p "$ROOT/.build"
  local tmp
  tmp=$(mktemp -d "$ROOT/.build/launch-ssh.XXXXXX") && [ -n "$tmp" ] && [ -d "$tmp" ] \
    || { fail "$name" "no temporary directory under .build"; return; }
  CLEANUPS+=("rm -rf '$tmp'")
  if [ ! -d /run/sshd ]; then
    # sshd's privilege separation directory (the package's service creates it at boot)
    mkdir -p /run/sshd && chmod 755 /run/sshd && CLEANUPS+=("rmdir /run/sshd 2>/dev/null")
  fi
  mkdir -p "$tmp/bin"
  ssh-keygen -q -t ed25519 -N '' -C zebra-launch-test-host -f "$tmp/host_key" \
    && ssh-keygen -q -t ed25519 -N '' -C zebra-launch-test-user -f "$tmp/id" \
    || { fail "$name" "ssh-keygen failed"; return; }
  cp "$tmp/id.pub" "$tmp/authorized_keys"
  local me
  me=$(id -un)
  printf '%s\n' \
    "ListenAddress 0.0.0.0" \
    "HostKey $tmp/host_key" \
    "PidFile none" \
    "AuthorizedKeysFile $tmp/authorized_keys" \
    "PubkeyAuthentication yes" \
    "PasswordAuthentication no" \
    "KbdInteractiveAuthentication no" \
    "PermitRootLogin prohibit-password" \
    "AllowUsers $me" \
    "UsePAM no" \
    "StrictModes no" \
    "PrintMotd no" \
    "SetEnv ZEBRA_STATS=$dir/stats/%p" >"$tmp/sshd_config"
  printf '%s\n' \
    "Host *" \
    "  User $me" \
    "  IdentityFile $tmp/id" \
    "  IdentitiesOnly yes" \
    "  IdentityAgent none" \
    "  BatchMode yes" \
    "  UserKnownHostsFile $tmp/known_hosts" \
    "  GlobalKnownHostsFile /dev/null" \
    "  StrictHostKeyChecking yes" \
    "  LogLevel ERROR" >"$tmp/ssh_config"
  printf '#!/bin/sh\nexec %s -F %s "$@"\n' "$(command -v ssh)" "$tmp/ssh_config" >"$tmp/bin/ssh"
  chmod 755 "$tmp/bin/ssh"
  : >"$tmp/keep"
  local t0=$SECONDS
  in_host ssh "$TIMEOUT" "
    set -u; cd '$ROOT'; export ZEBRA_STATS='$dir/stats/%p' VENV='${PY%/bin/python}' HOSTS='$dir/hosts'
    export PATH='$tmp/bin:$(dirname "$ZEBRA")':\$PATH
    sport=\$($free_port)
    echo \"[127.0.0.1]:\$sport,[198.51.100.1]:\$sport \$(cat '$tmp/host_key.pub')\" >'$tmp/known_hosts'
    printf '127.0.0.1:%s\n198.51.100.1:%s\n' \$sport \$sport >\"\$HOSTS\"
    /usr/sbin/sshd -D -e -f '$tmp/sshd_config' -o Port=\$sport 2>'$dir/sshd.log' &
    echo \$! >'$tmp/keep'
    for i in \$(seq 100); do
      (exec 3<>/dev/tcp/198.51.100.1/\$sport) 2>/dev/null && break
      sleep 0.1
    done
    ssh 198.51.100.1 -p \$sport true || echo 'launch-ssh: ssh to the private sshd failed'
    port=\$($free_port)
    set -x
    source '$dir/block.sh'
  " "$tmp/keep" >"$dir/job.log" 2>&1
  local took=$((SECONDS - t0))
  if grep -q 'launch-ssh: ssh to the private sshd failed' "$dir/job.log"; then
    fail "$name" "could not ssh to the test's sshd; logs: $dir/job.log, $dir/sshd.log"; on_exit; return
  fi
  check "$name" "$dir" "$dir/job.log" 2 2 '^mxnet dist_sync: OK checked' '^mxnet dist_sync server: OK'
  echo "  $name: ${took}s in the namespace; hosts $(tr '\n' ' ' <"$dir/hosts")"
  on_exit
}

pslite_local_sh() {
  local name=pslite-local-sh dir=$LOGROOT/pslite-local-sh
  local bin=$ROOT/.build/byteps-pslite/tests
  rm -rf "$dir"; mkdir -p "$dir/stats"
  if [ ! -x "$bin/local.sh" ] || [ ! -x "$bin/exact_sums" ]; then
    fail "$name" "$bin/local.sh or exact_sums is missing: run scripts/setup.sh --clients"; return
  fi
  local env_line='eval "$("$ZEBRA" env --switch 127.0.0.1:$port)"'
  [ "$BREAK" = preload ] && env_line='eval "$("$ZEBRA" env --switch 127.0.0.1:$port | grep -v LD_PRELOAD)"'
  # local.sh ends with a bare wait and exits 0 whatever its nodes did: the lines decide.
  in_host pslite "$TIMEOUT" "
    set -u; cd '$bin'; export ZEBRA_STATS='$dir/stats/%p' ZEBRA=$ZEBRA DMLC_NODE_HOST=127.0.0.1
    port=\$($free_port)
    \"\$ZEBRA\" switch --listen 127.0.0.1:\$port &
    $env_line
    ./local.sh 2 2 ./exact_sums
  " >"$dir/job.log" 2>&1
  check "$name" "$dir" "$dir/job.log" 2 2 '^exact_sums: OK checked [1-9][0-9]* values' \
    '^exact_sums: server rank [0-9]+ .* no errors$'
}

# The MXNet wheels of the suite's venv (pip freeze), downloaded once into .build/cache.
mxnet_wheels() {
  local cache=$ROOT/.build/cache/wheels-mxnet req=$1
  "$PY" -m pip freeze --disable-pip-version-check >"$req" || return 1
  mkdir -p "$cache"
  if ! "$PY" -m pip download --disable-pip-version-check --quiet --no-index --find-links "$cache" \
      --no-deps -r "$req" -d "$cache.check" >/dev/null 2>&1; then
    "$PY" -m pip download --disable-pip-version-check --quiet --only-binary :all: -r "$req" -d "$cache" || return 1
  fi
  rm -rf "$cache.check"
  echo "$cache"
}

readme_newcomer() {
  local name=readme-newcomer dir=$LOGROOT/readme-newcomer
  rm -rf "$dir"; mkdir -p "$dir/stats"
  local block
  block=$(awk '/<!-- newcomer: begin -->/ { on = 1; next } /<!-- newcomer: end -->/ { on = 0 }
    on && !/^```/' "$ROOT/README.md")
  if [ -z "$block" ] || ! grep -q 'my_train.py' <<<"$block" || ! grep -q '9950' <<<"$block"; then
    fail "$name" "README.md has no newcomer block (between <!-- newcomer: begin/end -->) naming my_train.py and port 9950"; return
  fi
  block=${block//my_train.py/$ROOT/tests/mxnet/dist_sync_kvstore.py}
  block=${block//9950/\$port}
  if [ "$BREAK" = preload ]; then
    block=$(sed -E 's/zebra run --switch [^ ]+ -- /env ZEBRA_ENABLE=1 /' <<<"$block")
  fi
  printf '%s\n' "$block" >"$dir/block.sh"
  local cache
  cache=$(mxnet_wheels "$dir/requirements.txt") || { fail "$name" "could not fetch the MXNet wheels of the suite's venv"; return; }
  local base venv=$dir/venv
  base=$("$PY" -c 'import sys; print(sys._base_executable)')
  if ! "$base" -m venv "$venv" >"$dir/venv.log" 2>&1 \
      || ! PIP_NO_INDEX=1 "$venv/bin/python" -m pip install --disable-pip-version-check --quiet \
        --find-links "$cache" -r "$dir/requirements.txt" >>"$dir/venv.log" 2>&1; then
    fail "$name" "could not make a fresh venv with MXNet from $cache; log: $dir/venv.log"; return
  fi
  in_host newcomer 600 "
    set -eu; cd '$ROOT'; export ZEBRA_STATS='$dir/stats/%p' PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
    export VIRTUAL_ENV='$venv' PATH='$venv/bin':\$PATH
    port=\$($free_port)
    set -x
    source '$dir/block.sh'
  " >"$dir/job.log" 2>&1
  if ! grep -q 'Successfully installed zebra.pslite' "$dir/job.log"; then
    fail "$name" "pip did not install the wheel; log: $dir/job.log"; return
  fi
  check "$name" "$dir" "$dir/job.log" 2 1 '^mxnet dist_sync: OK checked' '^mxnet dist_sync server: OK'
}

for t in "${selected[@]}"; do
  if [ "$BREAK" = outside ] && [ "$t" != mxnet-launch-ssh ]; then
    echo "SKIP $t (--break outside is for mxnet-launch-ssh)"; continue
  fi
  case $t in
    mxnet-launch-local) mxnet_launch_local ;;
    mxnet-launch-ssh) mxnet_launch_ssh ;;
    pslite-local-sh) pslite_local_sh ;;
    readme-newcomer) readme_newcomer ;;
  esac
done
[ "$failed" = 0 ]
