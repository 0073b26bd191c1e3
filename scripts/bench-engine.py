#!/usr/bin/env python3
"""Zebra's ZeroMQ engine against the real libzmq, side by side in one run.

1. The perf pair (cpp-shim/perf/zmq_perf.c): DEALER -> ROUTER throughput and echo
   latency over tcp on loopback, messages of 64 B ... 4 MiB, once on the real libzmq and
   once with the shim preloaded and ZEBRA_ENABLE=1, alternating per repetition.
2. BytePS PS-lite test_benchmark goodput (PUSH_PULL), libzmq vs Zebra's engine.

Writes Markdown tables to results/engine.md (and prints them).
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from benchlib import test_benchmark_goodput  # noqa: E402

SIZES = [64, 1024, 65536, 1 << 20, 4 << 20]
# Messages a throughput run sends: about 1 GiB, within [50, 100000] (a 4 MiB run of 50
# messages lasted under 0.1 s, too short to measure on a shared 2-core machine).
RUN_BYTES = 1 << 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("ZEBRA_")}


def mode_env(mode, shim):
    env = base_env()
    if mode == "zebra":
        env.update(LD_PRELOAD=shim, ZEBRA_ENABLE="1")
    return env


def perf(binary, kind, size, count, mode, shim):
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    out = subprocess.run([binary, kind, endpoint, str(size), str(count)], env=mode_env(mode, shim),
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"zmq_perf {kind} {size} ({mode}) failed: {out.stderr.strip()}")
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
    p.add_argument("--no-pslite", action="store_true", help="skip the PS-lite test_benchmark part")
    p.add_argument("--out", default=os.path.join(ROOT, "results/engine.md"))
    args = p.parse_args()
    try:
        sizes = [int(x) for x in args.sizes.split(",") if x]
    except ValueError:
        p.error(f"--sizes: not a list of byte counts: {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        p.error("--sizes: give at least one positive size")
    if not os.path.exists(args.shim) or not os.path.exists(args.pslite_bin):
        p.error("run scripts/setup.sh --clients first")
    perf_bin = os.path.join(ROOT, ".build/perf/zmq_perf")
    os.makedirs(os.path.dirname(perf_bin), exist_ok=True)
    subprocess.run(["cc", "-O2", "-Wall", "-o", perf_bin, os.path.join(ROOT, "cpp-shim/perf/zmq_perf.c"), "-lzmq"],
                   check=True)

    header = ("| workload | real libzmq | Zebra engine | Zebra / libzmq (median) | range |\n"
              "|---|---|---|---|---|")
    rows = []
    for size in sizes:
        count = max(50, min(100000, RUN_BYTES // size))
        for kind, unit, better in (("thr", "msg/s", True), ("lat", "us", False)):
            n = count if kind == "thr" else max(200, min(5000, count // 10))
            got = {"libzmq": [], "zebra": []}
            for rep in range(args.reps):
                for mode in (["libzmq", "zebra"] if rep % 2 == 0 else ["zebra", "libzmq"]):
                    got[mode].append(perf(perf_bin, kind, size, n, mode, args.shim))
            label = f"{'throughput' if kind == 'thr' else 'latency (one way)'} {size} B"
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
