#!/usr/bin/env bash
# Build BytePS's PS-lite (from the PyPI sdist byteps==0.2.5.post15), its stock
# benchmarks and our own PS-lite apps (tests/pslite-app/), against the system libzmq;
# optionally relink the same test programs against another libzmq install prefix.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/build-pslite.sh [--relink DIST] [--asan] [--help]

Builds BytePS's PS-lite (binary meta, no protobuf) and PS-lite test programs.
Every step is skipped when its outputs are up to date, so a second run is fast.

  1. fetch   pip download --no-deps --no-binary :all: byteps==0.2.5.post15
             into .build/cache/ (sha256 checked; kept for later runs)
  2. extract its 3rdparty/ps-lite to .build/byteps-pslite/
  3. build   libps.a, tests/test_benchmark, tests/test_sparse_benchmark with
             DEPS_PATH=.build/deps-system (symlinks to the system zmq.h, libzmq.so)
  4. build   our apps from tests/pslite-app/ (exact_sums, mf_train, trace_replay, shapes)
             into the same tests/ dir

  --relink DIST   also link the same test programs and our apps against DIST
                  (DIST/lib/libzmq.so -> libzmq.so.5, e.g. our shim's dist/) into
                  .build/byteps-pslite-relinked/tests/, with rpath DIST/lib, and
                  check with ldd that they load DIST/lib/libzmq.so.5.
  --asan          build PS-lite (make ASAN=1), its benchmarks and our apps with
                  AddressSanitizer into .build/byteps-pslite-asan/ instead (steps 2-4;
                  against the system libzmq; scripts/asan.sh uses them)
  --help          this text

Needs: g++, make, tar, python3 with pip, libzmq3-dev (scripts/setup.sh installs them).
Binaries: .build/byteps-pslite/tests/          (system libzmq)
          .build/byteps-pslite-asan/tests/     (system libzmq, AddressSanitizer; --asan)
          .build/byteps-pslite-relinked/tests/ (DIST's libzmq, with --relink)
EOF
}

RELINK=""
ASAN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --relink)
      [ $# -ge 2 ] || { echo "build-pslite: --relink needs a DIST directory" >&2; exit 2; }
      RELINK="$2"; shift 2 ;;
    --relink=*) RELINK="${1#--relink=}"; shift ;;
    --asan) ASAN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-pslite: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/.build"
CACHE="$BUILD/cache"
SRC="$BUILD/byteps-pslite"
DEPS="$BUILD/deps-system"
RELINKED="$BUILD/byteps-pslite-relinked"
APP_DIR="$ROOT/tests/pslite-app"
APPS=(exact_sums mf_train trace_replay shapes)
STOCK_TESTS=(test_benchmark test_sparse_benchmark)

SDIST_SPEC="byteps==0.2.5.post15"
SDIST_FILE="byteps-0.2.5.post15.tar.gz"
SDIST_SHA256="9d6a3c5be4c4b5a172739744bb32725c433f9a9f63794e1885e7376ff4eea99f"
SDIST_PSLITE="byteps-0.2.5.post15/3rdparty/ps-lite"
JOBS="${PSLITE_BUILD_JOBS:-2}"

# Same flags as the PS-lite Makefile uses for its tests.
CXXFLAGS_PSLITE=(-std=c++14 -msse2 -fPIC -O3 -ggdb -Wall -finline-functions)
LIBS_PSLITE=(-pthread -lrt)
MAKE_ASAN=()
if [ "$ASAN" = 1 ]; then
  [ -z "$RELINK" ] || { echo "build-pslite: --asan and --relink do not go together" >&2; exit 2; }
  SRC="$BUILD/byteps-pslite-asan"
  # The flags PS-lite's Makefile adds with ASAN=1, for our apps too.
  CXXFLAGS_PSLITE+=(-fsanitize=address -fno-omit-frame-pointer -fno-optimize-sibling-calls)
  MAKE_ASAN=(ASAN=1)
fi

die() { echo "build-pslite: error: $*" >&2; exit 1; }
step() { echo "build-pslite: $*"; }

# Rebuild OUT when it is missing or older than any of the given inputs.
stale() {
  local out="$1"; shift
  [ -e "$out" ] || return 0
  local dep
  for dep in "$@"; do
    [ "$dep" -nt "$out" ] && return 0
  done
  return 1
}

check_tools() {
  local missing=()
  local t
  for t in g++ make tar python3 sha256sum readelf ldd; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    die "missing tools: ${missing[*]}; run scripts/setup.sh (apt packages g++ make tar python3 binutils libc-bin)"
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    die "python3 has no pip; run scripts/setup.sh (apt package python3-pip)"
  fi
  SYS_ZMQ_H=""
  local inc
  for inc in "$(pkg-config --variable=includedir libzmq 2>/dev/null || true)" /usr/include /usr/local/include; do
    if [ -n "$inc" ] && [ -f "$inc/zmq.h" ]; then SYS_ZMQ_H="$inc/zmq.h"; break; fi
  done
  [ -n "$SYS_ZMQ_H" ] || die "zmq.h not found; install libzmq3-dev (scripts/setup.sh does)"
  SYS_ZMQ_SO="$(g++ -print-file-name=libzmq.so)"
  case "$SYS_ZMQ_SO" in
    /*) [ -e "$SYS_ZMQ_SO" ] || SYS_ZMQ_SO="" ;;
    *) SYS_ZMQ_SO="" ;;
  esac
  [ -n "$SYS_ZMQ_SO" ] || die "libzmq.so (linker symlink) not found; install libzmq3-dev (scripts/setup.sh does)"
}

fetch_sdist() {
  mkdir -p "$CACHE"
  local tarball="$CACHE/$SDIST_FILE"
  if [ -f "$tarball" ] && echo "$SDIST_SHA256  $tarball" | sha256sum --check --status; then
    return
  fi
  rm -f "$tarball"
  step "fetching $SDIST_SPEC (sdist) with pip into $CACHE"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary :all: "$SDIST_SPEC" -d "$CACHE" \
    || die "pip download $SDIST_SPEC failed (is PyPI reachable?)"
  [ -f "$tarball" ] || die "pip did not produce $tarball"
  echo "$SDIST_SHA256  $tarball" | sha256sum --check --status \
    || die "$tarball does not have the expected sha256 $SDIST_SHA256"
}

extract_pslite() {
  local stamp="$SRC/.zebra-extracted"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$SDIST_SHA256" ]; then
    return
  fi
  step "extracting $SDIST_PSLITE to $SRC"
  local tmp="$SRC.tmp"
  rm -rf "$tmp" "$SRC"
  mkdir -p "$tmp"
  tar -xzf "$CACHE/$SDIST_FILE" -C "$tmp" --strip-components=3 "$SDIST_PSLITE" \
    || die "could not extract $SDIST_PSLITE from $SDIST_FILE"
  [ -f "$tmp/Makefile" ] && [ -f "$tmp/include/ps/kv_app.h" ] \
    || die "$SDIST_FILE does not hold the expected PS-lite tree"
  echo "$SDIST_SHA256" >"$tmp/.zebra-extracted"
  mv "$tmp" "$SRC"
}

make_deps_dir() {
  mkdir -p "$DEPS/include" "$DEPS/lib"
  [ "$(readlink "$DEPS/include/zmq.h" 2>/dev/null)" = "$SYS_ZMQ_H" ] || ln -sfn "$SYS_ZMQ_H" "$DEPS/include/zmq.h"
  [ "$(readlink "$DEPS/lib/libzmq.so" 2>/dev/null)" = "$SYS_ZMQ_SO" ] || ln -sfn "$SYS_ZMQ_SO" "$DEPS/lib/libzmq.so"
  # PS-lite's make/deps.mk downloads and builds zeromq when this file is missing.
  [ -e "$DEPS/include/zmq.h" ] || die "$DEPS/include/zmq.h is missing; refusing to run make (it would download zeromq)"
}

build_stock() {
  local targets=(build/libps.a)
  local t
  for t in "${STOCK_TESTS[@]}"; do targets+=("tests/$t"); done
  mkdir -p "$BUILD/logs"
  local log="$BUILD/logs/pslite$([ "$ASAN" = 1 ] && echo -asan)-make.log"
  local before
  before="$(stat -c %Y "$SRC/build/libps.a" 2>/dev/null || echo none)"
  # WGET=false: even if deps.mk's download rule fired, it could not fetch anything.
  if [ "$ASAN" = 1 ]; then
    # BytePS's tests/test_benchmark.cc (PUSH_PULL) pulls into `vals` and `lens`, variables of
    # its loop body, and waits for the pulls after the loop: the pull's callback reads them
    # after their scope (ASan: stack-use-after-scope in KVWorker::Pull_'s callback). That
    # check is off for this one program; every other check stays on.
    targets=(build/libps.a tests/test_sparse_benchmark)
    local stamp="$SRC/tests/.test_benchmark-no-use-after-scope"
    [ -f "$stamp" ] || rm -f "$SRC/tests/test_benchmark"
    if ! make -C "$SRC" -j"$JOBS" DEPS_PATH="$DEPS" WGET=false "${MAKE_ASAN[@]}" "${targets[@]}" >"$log" 2>&1 \
        || ! make -C "$SRC" DEPS_PATH="$DEPS" WGET=false "${MAKE_ASAN[@]}" \
          ADD_CFLAGS=-fno-sanitize-address-use-after-scope tests/test_benchmark >>"$log" 2>&1; then
      tail -n 30 "$log" >&2
      die "PS-lite make failed; full log: $log"
    fi
    touch "$stamp"
  elif ! make -C "$SRC" -j"$JOBS" DEPS_PATH="$DEPS" WGET=false "${targets[@]}" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "PS-lite make failed; full log: $log"
  fi
  if [ "$before" != "$(stat -c %Y "$SRC/build/libps.a")" ]; then
    step "built libps.a and ${STOCK_TESTS[*]} (log: $log)"
  fi
}

# An app's sources: its .cc and the headers the apps share (tests/pslite-app/*.h, e.g.
# app_options.h); #include "..." finds them next to the .cc, so no -I is needed.
app_sources() {
  local app="$1"
  echo "$APP_DIR/$app.cc"
  find "$APP_DIR" -maxdepth 1 -name '*.h' 2>/dev/null || true
}

build_apps() {
  local app out
  for app in "${APPS[@]}"; do
    [ -f "$APP_DIR/$app.cc" ] || die "missing $APP_DIR/$app.cc"
    out="$SRC/tests/$app"
    mapfile -t srcs < <(app_sources "$app")
    if stale "$out" "${srcs[@]}" "$SRC/build/libps.a" "${BASH_SOURCE[0]}"; then
      step "compiling $app"
      g++ "${CXXFLAGS_PSLITE[@]}" -Wextra -isystem "$SRC/include" -I"$DEPS/include" \
        -o "$out" "$APP_DIR/$app.cc" "$SRC/build/libps.a" \
        -Wl,-rpath,"$DEPS/lib" -L"$DEPS/lib" -lzmq "${LIBS_PSLITE[@]}" \
        || die "compiling $app failed"
    fi
  done
}

# Check that BIN needs libzmq.so.5 and that the loader resolves it inside DIST/lib.
check_loads_dist() {
  local bin="$1" dist="$2"
  local needed
  needed="$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(libzmq[^]]*\)\].*/\1/p')"
  [ "$needed" = "libzmq.so.5" ] \
    || die "$bin needs '${needed:-no libzmq}', not libzmq.so.5: is the soname of $dist/lib/libzmq.so libzmq.so.5?"
  local resolved
  resolved="$(ldd "$bin" | awk '$1 == "libzmq.so.5" { print $3 }')"
  [ -n "$resolved" ] && [ -e "$resolved" ] || die "ldd cannot resolve libzmq.so.5 for $bin"
  [ "$(readlink -f "$resolved")" = "$(readlink -f "$dist/lib/libzmq.so.5")" ] \
    || die "$bin loads $resolved, not $dist/lib/libzmq.so.5 (LD_LIBRARY_PATH set?)"
}

relink() {
  local dist
  [ -d "$RELINK" ] || die "--relink $RELINK: no such directory (build the shim first: it installs dist/)"
  dist="$(cd "$RELINK" && pwd)"
  [ -e "$dist/lib/libzmq.so" ] || die "--relink: $dist/lib/libzmq.so is missing (build/install the shim first)"
  [ -e "$dist/lib/libzmq.so.5" ] || die "--relink: $dist/lib/libzmq.so.5 is missing (the runtime name the binaries will load)"
  local lib
  lib="$(readlink -f "$dist/lib/libzmq.so")"
  local obj="$RELINKED/obj" out="$RELINKED/tests"
  mkdir -p "$obj" "$out"
  # Remember which DIST the binaries were linked against; relink all when it changes.
  if [ "$(cat "$RELINKED/.dist" 2>/dev/null)" != "$dist" ]; then
    rm -f "$out"/*
    echo "$dist" >"$RELINKED/.dist"
  fi
  local name src o bin
  for name in "${STOCK_TESTS[@]}" "${APPS[@]}"; do
    local flags=(-I"$SRC/src" -I"$SRC/include")
    if [ -f "$SRC/tests/$name.cc" ]; then
      src="$SRC/tests/$name.cc"
      mapfile -t deps < <(echo "$src")
    else
      src="$APP_DIR/$name.cc"
      flags=(-Wextra -isystem "$SRC/include")
      mapfile -t deps < <(app_sources "$name")
    fi
    o="$obj/$name.o"
    if stale "$o" "${deps[@]}" "$SRC/build/libps.a" "${BASH_SOURCE[0]}"; then
      step "compiling $name for relinking"
      g++ "${CXXFLAGS_PSLITE[@]}" "${flags[@]}" -I"$DEPS/include" \
        -c "$src" -o "$o" || die "compiling $name failed"
    fi
    bin="$out/$name"
    if stale "$bin" "$o" "$SRC/build/libps.a" "$lib"; then
      step "linking $name against $dist/lib/libzmq.so"
      g++ -o "$bin" "$o" "$SRC/build/libps.a" \
        -Wl,-rpath,"$dist/lib" -L"$dist/lib" -lzmq "${LIBS_PSLITE[@]}" \
        || die "linking $name against $dist/lib/libzmq.so failed"
    fi
    check_loads_dist "$bin" "$dist"
  done
  echo "build-pslite: relinked binaries (load $dist/lib/libzmq.so.5): $out/{$(IFS=,; echo "${STOCK_TESTS[*]},${APPS[*]}")}"
}

check_tools
fetch_sdist
extract_pslite
make_deps_dir
build_stock
build_apps
echo "build-pslite: binaries (system libzmq): $SRC/tests/{$(IFS=,; echo "${STOCK_TESTS[*]},${APPS[*]}")}"
if [ -n "$RELINK" ]; then
  relink
fi
