#!/usr/bin/env python3
"""The software switch's rate (issue 24, part 1), repeated, as a table.

Runs the `switch_rate` example of rust/zebra-hotpath (built here with cargo) --repeats
times. Each run measures, in one process and one run:

  model  the sans-I/O switch alone on one core (time inside its calls only), fed the HOT
         packets of real worker state machines over a perfect in-process network
  udp    the switch node (`zebra switch`'s: one socket, one thread) on 127.0.0.1 with the
         worker and server links of the library, rounds pipelined two deep as PS-lite
         workers push them
  echo   a trivial UDP echo thread on 127.0.0.1, as many senders as workers, each with the
         links' window of datagrams of the HOT packets' size in flight: the kernel's own
         packet rate here, the bound for udp

and checks every sum exactly. Reports the medians: model pairs/s (target >= 2 M per core),
udp datagrams/s against echo's (target >= 0.8x), both as wall-clock rates and per second
the datagram-handling thread was busy (its scheduler run time): a switch thread far from
busy means the end-to-end rate is bound elsewhere (the links, the rounds' pipeline, cores).

  scripts/bench-switch.py                    # 5 repetitions, 4 workers, 16384 hot keys
  scripts/bench-switch.py --repeats 3 --density 0.25 --out /tmp/switch

Writes runs.json and table.md to --out.
"""

import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = benchlib.ROOT
LINE = re.compile(r"^switch_rate: (\w+): (\d+) pairs, (\d+) datagrams in ([0-9.]+) s.*?"
                  r"(?:its thread busy ([0-9.]+) s|thread CPU unknown)", re.M)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--repeats", type=int, default=5, help="runs (default 5)")
    p.add_argument("--workers", type=int, default=4, help="workers (default 4)")
    p.add_argument("--hot-keys", type=int, default=16384, help="hot keys (default 16384)")
    p.add_argument("--density", type=float, default=1.0, help="share of the hot keys a worker pushes a round")
    p.add_argument("--rounds", type=int, default=200, help="rounds a worker pushes (default 200)")
    p.add_argument("--out", default=os.path.join(ROOT, ".build/bench-switch"), help="output directory")
    args = p.parse_args()
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    build = subprocess.run(["cargo", "build", "--release", "-q", "-p", "zebra-hotpath", "--example", "switch_rate"],
                           cwd=ROOT)
    if build.returncode != 0:
        print("bench-switch: building the switch_rate example failed", file=sys.stderr)
        return 1
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = os.path.join(target, "release", "examples", "switch_rate")
    cmd = [binary, "--workers", str(args.workers), "--hot-keys", str(args.hot_keys),
           "--density", str(args.density), "--rounds", str(args.rounds)]
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for rep in range(1, args.repeats + 1):
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            print(f"bench-switch: run {rep} failed:\n{res.stdout}{res.stderr}", file=sys.stderr)
            return 1
        run = {m.group(1): {"pairs": int(m.group(2)), "datagrams": int(m.group(3)), "seconds": float(m.group(4)),
                            "busy": float(m.group(5)) if m.group(5) else None}
               for m in LINE.finditer(res.stdout)}
        if sorted(run) != ["echo", "model", "udp"] or run["udp"]["busy"] is None or run["echo"]["busy"] is None:
            print(f"bench-switch: run {rep} printed no result for every mode:\n{res.stdout}", file=sys.stderr)
            return 1
        runs.append(run)
        print(f"[{rep}] " + "; ".join(f"{k} {v['datagrams'] / v['seconds']:.0f} datagrams/s" for k, v in run.items()),
              flush=True)
    with open(os.path.join(args.out, "runs.json"), "w") as f:
        json.dump(runs, f, indent=1)
    table = report(args, runs)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


def report(args, runs):
    def med(mode, what):
        return benchlib.median([r[mode][what] / r[mode]["seconds"] for r in runs])

    model_pairs, udp_pairs = med("model", "pairs"), med("udp", "pairs")
    model_dg, udp_dg, echo_dg = med("model", "datagrams"), med("udp", "datagrams"), med("echo", "datagrams")
    def per_busy(r, mode):
        return r[mode]["datagrams"] / r[mode]["busy"]

    udp_vs_echo = benchlib.median([(r["udp"]["datagrams"] / r["udp"]["seconds"]) /
                                   (r["echo"]["datagrams"] / r["echo"]["seconds"]) for r in runs])
    core_vs_echo = benchlib.median([per_busy(r, "udp") / per_busy(r, "echo") for r in runs])
    busy = benchlib.median([r["udp"]["busy"] / r["udp"]["seconds"] for r in runs])
    return "\n".join([
        f"{args.workers} workers, {args.hot_keys} hot keys, density {args.density}, {args.rounds} rounds; "
        f"medians of {len(runs)} runs",
        "",
        "| path | pairs/s | datagrams/s | datagrams per busy second of its thread | against the target |",
        "|---|---|---|---|---|",
        f"| model (one core, in process) | {model_pairs / 1e6:.2f} M | {model_dg / 1e3:.0f} k | "
        f"{model_dg / 1e3:.0f} k | {model_pairs / 2e6:.2f}x of 2 M pairs/s |",
        f"| udp (switch node, 127.0.0.1) | {udp_pairs / 1e6:.2f} M | {udp_dg / 1e3:.0f} k | "
        f"{benchlib.median([per_busy(r, 'udp') for r in runs]) / 1e3:.0f} k (thread {100 * busy:.0f} % busy) | "
        f"{udp_vs_echo:.2f}x of echo's datagrams/s, {core_vs_echo:.2f}x per busy second (target 0.8x) |",
        f"| echo (kernel UDP, same senders) | - | {echo_dg / 1e3:.0f} k | "
        f"{benchlib.median([per_busy(r, 'echo') for r in runs]) / 1e3:.0f} k | |",
    ]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
