#!/usr/bin/env python3
"""Passthrough overhead of the shim: BytePS PS-lite test_benchmark goodput with the shim
preloaded and off ("off") against the real libzmq alone ("libzmq"), in the same run.

The two modes alternate within every repetition (ABBA order) so drift on this shared
2-core machine hits both alike. Goodput is what test_benchmark itself prints every
LOG_DURATION rounds; the first report of each worker (warm-up) is dropped.

Writes a Markdown table to results/passthrough.md (and prints it).
"""

import argparse
import os
import statistics
import time

from benchlib import ROOT, test_benchmark_goodput

# (label, message bytes, rounds, LOG_DURATION): one small-message and one bulk workload.
WORKLOADS = [
    ("1 KiB x 40 keys", 1024, 100, 25),
    ("256 KiB x 40 keys", 262144, 24, 4),
]


def run_once(binary, mode, size, rounds, log_every, logdir, shim):
    extra = ["--preload", shim, "--env", "ZEBRA_ENABLE=0"] if mode == "off" else []
    started = time.monotonic()
    goodput, output = test_benchmark_goodput(binary, logdir, size, rounds, extra, log_every)
    if goodput is None:
        raise RuntimeError(f"test_benchmark {size} ({mode}) failed or reported no goodput in {logdir}: "
                           f"{output.strip()[-500:]}")
    return goodput, time.monotonic() - started


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5, help="repetitions of each mode per workload (default 5)")
    p.add_argument("--bin", default=os.path.join(ROOT, ".build/byteps-pslite/tests/test_benchmark"))
    p.add_argument("--shim", default=os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--out", default=os.path.join(ROOT, "results/passthrough.md"))
    args = p.parse_args()
    for path in (args.bin, args.shim):
        if not os.path.exists(path):
            p.error(f"{path} is missing: run scripts/setup.sh --clients first")

    lines = [
        "| workload | libzmq goodput (Gbps) | shim off goodput (Gbps) | off / libzmq (median of per-rep ratios) | range of ratios |",
        "|---|---|---|---|---|",
    ]
    for label, size, rounds, log_every in WORKLOADS:
        results = {"libzmq": [], "off": []}
        ratios = []
        for rep in range(args.reps):
            order = ["libzmq", "off"] if rep % 2 == 0 else ["off", "libzmq"]
            got = {}
            for mode in order:
                logdir = os.path.join(ROOT, ".build/bench-passthrough", f"{size}-{rep}-{mode}")
                got[mode], wall = run_once(args.bin, mode, size, rounds, log_every, logdir, args.shim)
                results[mode].append(got[mode])
                print(f"  {label:>18}  rep {rep + 1}/{args.reps}  {mode:>6}: {got[mode]:.4f} Gbps ({wall:.1f}s)", flush=True)
            ratios.append(got["off"] / got["libzmq"])
        lines.append(
            f"| {label} | {statistics.median(results['libzmq']):.4f} | {statistics.median(results['off']):.4f} "
            f"| {statistics.median(ratios):.3f} | {min(ratios):.3f} – {max(ratios):.3f} |"
        )
    table = "\n".join(lines)
    header = (f"Passthrough overhead, BytePS PS-lite test_benchmark (PUSH_PULL, 1 server, 2 workers, "
              f"{args.reps} repetitions, ABBA order), measured {time.strftime('%Y-%m-%d')} "
              f"with `scripts/bench-passthrough.py --reps {args.reps}`:\n\n")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(header + table + "\n")
    print("\n" + header + table)


if __name__ == "__main__":
    main()
