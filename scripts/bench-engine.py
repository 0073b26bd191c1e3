#!/usr/bin/env python3
"""Zebra's ZeroMQ engine against the real libzmq, side by side in one run.

1. The perf pair (cpp-shim/perf/zmq_perf.c): throughput and echo latency of DEALER ->
   ROUTER and of PAIR -> PAIR, over tcp on loopback and over ipc, messages of 64 B ...
   4 MiB, once on the real libzmq and once with the shim preloaded and ZEBRA_ENABLE=1,
   alternating per repetition.
2. BytePS PS-lite test_benchmark goodput (PUSH_PULL), libzmq vs Zebra's engine.

Writes Markdown tables to results/engine.md (and prints them).
"""

import argparse
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from benchlib import clean_env, test_benchmark_goodput  # noqa: E402

SIZES = [64, 1024, 65536, 1 << 20, 4 << 20]
PATTERNS = {"dealer-router": [], "pair": ["pair"]}
TRANSPORTS = ("tcp", "ipc")
_endpoints = itertools.count()
# Messages a throughput run sends: about 1 GiB, within [50, 100000] (a 4 MiB run of 50
# messages lasted under 0.1 s, too short to measure on a shared 2-core machine).
RUN_BYTES = 1 << 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mode_env(mode, shim):
    env = clean_env()
    if mode == "zebra":
        env.update(LD_PRELOAD=shim, ZEBRA_ENABLE="1")
    return env


def endpoint(transport, ipc_dir):
    if transport == "tcp":
        return f"tcp://127.0.0.1:{free_port()}"
    return f"ipc://{ipc_dir}/perf-{next(_endpoints)}.ipc"


def perf(binary, kind, size, count, mode, shim, pattern, where):
    out = subprocess.run([binary, kind, where, str(size), str(count)] + PATTERNS[pattern], env=mode_env(mode, shim),
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"zmq_perf {kind} {size} {pattern} {where} ({mode}) failed: {out.stderr.strip()}")
    fields = out.stdout.split()
    return float(fields[3])  # msg/s for thr, microseconds for lat


def pslite(binary, mode, shim, logdir, size, rounds):
    extra = ["--preload", shim, "--env", "ZEBRA_ENABLE=1"] if mode == "zebra" else []
    goodput, output = test_benchmark_goodput(binary, logdir, size, rounds, extra)
    if goodput is None:
        raise RuntimeError(f"test_benchmark {size} ({mode}) failed: {output.strip()[-500:]}")
    return goodput


def ratio_row(label, libzmq, zebra, unit, higher_is_better=True):
    ratios = [z / l for z, l in zip(zebra, libzmq)] if higher_is_better else [l / z for z, l in zip(zebra, libzmq)]
    return (f"| {label} | {statistics.median(libzmq):.4g} {unit} | {statistics.median(zebra):.4g} {unit} "
            f"| {statistics.median(ratios):.2f}x | {min(ratios):.2f} – {max(ratios):.2f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3, help="repetitions per configuration (default 3)")
    p.add_argument("--shim", default=os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--pslite-bin", default=os.path.join(ROOT, ".build/byteps-pslite/tests/test_benchmark"))
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="message sizes of the perf pair, bytes, comma-separated (default all five)")
    p.add_argument("--patterns", default=",".join(PATTERNS),
                   help=f"socket pairs of the perf pair, comma-separated, of {', '.join(PATTERNS)} (default both)")
    p.add_argument("--transports", default=",".join(TRANSPORTS),
                   help="transports of the perf pair, comma-separated, of tcp (loopback) and ipc (default both)")
    p.add_argument("--no-pslite", action="store_true", help="skip the PS-lite test_benchmark part")
    p.add_argument("--out", default=os.path.join(ROOT, "results/engine.md"))
    args = p.parse_args()
    try:
        sizes = [int(x) for x in args.sizes.split(",") if x]
    except ValueError:
        p.error(f"--sizes: not a list of byte counts: {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        p.error("--sizes: give at least one positive size")
    patterns = [x for x in args.patterns.split(",") if x]
    transports = [x for x in args.transports.split(",") if x]
    for what, given, known in (("--patterns", patterns, PATTERNS), ("--transports", transports, TRANSPORTS)):
        bad = [x for x in given if x not in known]
        if bad or not given:
            p.error(f"{what}: expected some of {', '.join(known)}, got {','.join(given) or 'nothing'}")
    if not os.path.exists(args.shim) or not os.path.exists(args.pslite_bin):
        p.error("run scripts/setup.sh --clients first")
    perf_bin = os.path.join(ROOT, ".build/perf/zmq_perf")
    os.makedirs(os.path.dirname(perf_bin), exist_ok=True)
    subprocess.run(["cc", "-O2", "-Wall", "-o", perf_bin, os.path.join(ROOT, "cpp-shim/perf/zmq_perf.c"), "-lzmq"],
                   check=True)

    header = ("| workload | real libzmq | Zebra engine | Zebra / libzmq (median) | range |\n"
              "|---|---|---|---|---|")
    rows = []
    ipc_dir = tempfile.mkdtemp(prefix="zebra-bench-engine-")
    for pattern, transport, size in itertools.product(patterns, transports, sizes):
        count = max(50, min(100000, RUN_BYTES // size))
        for kind, unit, better in (("thr", "msg/s", True), ("lat", "us", False)):
            n = count if kind == "thr" else max(200, min(5000, count // 10))
            got = {"libzmq": [], "zebra": []}
            for rep in range(args.reps):
                for mode in (["libzmq", "zebra"] if rep % 2 == 0 else ["zebra", "libzmq"]):
                    where = endpoint(transport, ipc_dir)
                    got[mode].append(perf(perf_bin, kind, size, n, mode, args.shim, pattern, where))
            label = (f"{'throughput' if kind == 'thr' else 'latency (one way)'} {size} B"
                     f"{'' if (pattern, transport) == ('dealer-router', 'tcp') else f', {pattern} {transport}'}")
            rows.append(ratio_row(label, got["libzmq"], got["zebra"], unit, better))
            print(rows[-1], flush=True)
    for size, rounds in () if args.no_pslite else ((1024, 40), (262144, 24)):
        got = {"libzmq": [], "zebra": []}
        for rep in range(args.reps):
            for mode in (["libzmq", "zebra"] if rep % 2 == 0 else ["zebra", "libzmq"]):
                logdir = os.path.join(ROOT, ".build/bench-engine", f"{size}-{rep}-{mode}")
                got[mode].append(pslite(args.pslite_bin, mode, args.shim, logdir, size, rounds))
        rows.append(ratio_row(f"PS-lite test_benchmark goodput, {size} B values", got["libzmq"], got["zebra"], "Gbps"))
        print(rows[-1], flush=True)
    text = (f"Zebra's engine vs the real libzmq 4.3.4, loopback, {args.reps} repetitions alternating, "
            f"measured {time.strftime('%Y-%m-%d')} with `{' '.join(['scripts/bench-engine.py'] + sys.argv[1:])}`:\n\n"
            + header + "\n" + "\n".join(rows) + "\n")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
