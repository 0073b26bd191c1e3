#!/usr/bin/env python3
"""Never slower: the job shapes that hurt in-network aggregation, on and beside the switch.

Runs tests/pslite-app/shapes (own keys, uneven push counts, asynchronous pushes) and
BytePS's test_benchmark as PS-lite jobs, each with Zebra's engine and no switch ("on") and
with the switch and zero configuration ("on+zero": ZEBRA_SWITCH alone, `zebra switch
--listen` alone), side by side in one run, the configurations alternating between
repetitions. Reports per shape the median
of the slowest worker's time in push+wait (shapes) or the workers' goodput
(test_benchmark), the ratio of on+zero's speed to on's, and what each server decided
(stepped aside, changed its keys, or none yet). Every shapes run checks every pulled value
exactly; a wrong value fails the run.

  scripts/bench-shapes.py                       # 3 repetitions, loopback, 2 servers, 3 workers
  scripts/bench-shapes.py --shapes own,async --repeats 5 --out /tmp/shapes

Writes results.json and a table (table.md) to --out.
"""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = benchlib.ROOT
SHAPES = ("own", "uneven", "async", "test_benchmark")
CONFIGS = ("on", "on+zero")
OK = re.compile(r"^shapes: OK worker rank \d+ shape \w+: .*; ([0-9.]+) s in push\+wait", re.M)
DECISION = re.compile(r"stepping aside|online hot keys: (kept|\d+ new keys)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--repeats", type=int, default=3, help="repetitions of every configuration (default 3)")
    p.add_argument("--workers", type=int, default=3, help="workers (default 3)")
    p.add_argument("--servers", type=int, default=2, help="servers (default 2)")
    p.add_argument("--rounds", type=int, default=1500,
                   help="shapes --rounds (default 1500, jobs of 4-10 s here; 150 gives jobs of half a second, "
                        "where the 10-20 pushes a server spends deciding weigh)")
    p.add_argument("--keys", type=int, default=256, help="shapes --keys per server (default 256)")
    p.add_argument("--val-len", type=int, default=16, help="shapes --val-len (default 16)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    p.add_argument("--out", default=os.path.join(ROOT, ".build/bench-shapes"), help="output directory")
    p.add_argument("--shim", default=os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--zebra", default=os.path.join(ROOT, "target/release/zebra"))
    p.add_argument("--bin-dir", default=os.path.join(ROOT, ".build/byteps-pslite/tests"))
    args = p.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    if not shapes or any(s not in SHAPES for s in shapes) or args.repeats < 1:
        p.error(f"bad --shapes/--repeats (shapes: {', '.join(SHAPES)})")
    for path in (args.shim, args.zebra, os.path.join(args.bin_dir, "shapes")):
        if not os.path.exists(path):
            p.error(f"{path} is missing; run scripts/setup.sh --clients")
    os.makedirs(args.out, exist_ok=True)

    runs = []
    for rep in range(1, args.repeats + 1):
        for shape in shapes:
            for config in benchlib.alternate(list(CONFIGS), rep):
                logdir = os.path.join(args.out, "logs", f"{shape}-{config}-{rep}")
                r = run(args, shape, config, logdir)
                r.update(shape=shape, config=config, repeat=rep)
                runs.append(r)
                print(f"[{shape} {config} {rep}] {describe(r)}", flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(runs, f, indent=1)
    table = report(shapes, runs, args)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    print(table)
    return 0 if all(r["ok"] for r in runs) else 1


def command(args, shape, config, logdir):
    cmd = [sys.executable, os.path.join(ROOT, "scripts/pslaunch.py"), "--servers", str(args.servers),
           "--workers", str(args.workers), "--timeout", str(args.timeout), "--quiet", "--logdir", logdir,
           "--preload", args.shim, "--env", "ZEBRA_ENABLE=1", "--env", "ZEBRA_LOG=info"]
    if shape == "test_benchmark":
        cmd += ["--retry-if", benchlib.STOCK_RACES, "--env", "LOG_DURATION=2"]
    if config == "on+zero":
        cmd += ["--env", "ZEBRA_SWITCH=127.0.0.1:{port:switch}",
                "--service", f"switch={args.zebra} switch --listen 127.0.0.1:{{port:switch}}"]
    if shape == "test_benchmark":
        return cmd + ["--", os.path.join(args.bin_dir, "test_benchmark"), "65536", "200", "1"]
    return cmd + ["--", os.path.join(args.bin_dir, "shapes"), f"--shape={shape}", f"--rounds={args.rounds}",
                  f"--keys={args.keys}", f"--val-len={args.val_len}"]


def run(args, shape, config, logdir):
    res = subprocess.run(command(args, shape, config, logdir), capture_output=True, text=True,
                         env=benchlib.clean_env())
    r = {"ok": res.returncode == 0, "decisions": decisions(logdir)}
    if shape == "test_benchmark":
        # Each worker's reports but its first (warm-up).
        goodput = []
        for path in sorted(glob.glob(os.path.join(logdir, "worker-*.log"))):
            with open(path, errors="replace") as f:
                goodput += [float(m.group(1)) for m in benchlib.GOODPUT.finditer(f.read())][1:]
        r["goodput"] = statistics.mean(goodput) if goodput else None
        r["ok"] = r["ok"] and r["goodput"] is not None
    else:
        times = [float(m.group(1)) for m in OK.finditer(benchlib.worker_logs(logdir))]
        r["ok"] = r["ok"] and len(times) == args.workers
        r["seconds"] = max(times) if r["ok"] else None
    if not r["ok"]:
        r["error"] = (res.stderr or res.stdout).strip().splitlines()[:3]
    return r


def decisions(logdir):
    """What each server's agent decided, from its log: aside, changed, kept or none."""
    out = []
    for path in sorted(glob.glob(os.path.join(logdir, "server-*.log"))):
        with open(path, errors="replace") as f:
            m = DECISION.search(f.read())
        out.append("none" if not m else "aside" if "aside" in m.group(0) else
                   "kept" if m.group(1) == "kept" else "changed")
    return out


def describe(r):
    if not r["ok"]:
        return f"FAILED: {r.get('error')}"
    speed = f"{r['goodput']:.3f} Gbps" if "goodput" in r else f"{r['seconds']:.3f} s in push+wait"
    return f"{speed}; servers: {', '.join(r['decisions']) or '-'}"


def report(shapes, runs, args):
    lines = [f"{args.workers} workers, {args.servers} servers, loopback, {args.repeats} repetitions "
             f"(medians); shapes --rounds={args.rounds} --keys={args.keys} --val-len={args.val_len}; "
             "on+zero: ZEBRA_SWITCH alone, `zebra switch --listen` alone", "",
             "| job | on | on+zero | speed of on+zero / on | servers decided |", "|---|---|---|---|---|"]
    for shape in shapes:
        metric = "goodput" if shape == "test_benchmark" else "seconds"
        med = {}
        for c in CONFIGS:
            values = [r[metric] for r in runs if r["shape"] == shape and r["config"] == c and r["ok"]]
            med[c] = benchlib.median(values) if values else None
        if med["on"] and med["on+zero"]:
            speed = med["on+zero"] / med["on"] if metric == "goodput" else med["on"] / med["on+zero"]
            ratio = f"{speed:.2f}x"
        else:
            ratio = "n/a (failed runs)"
        unit = " Gbps" if metric == "goodput" else " s"
        cells = [f"{med[c]:.3f}{unit}" if med[c] else "failed" for c in CONFIGS]
        decided = sorted({"/".join(r["decisions"]) for r in runs
                          if r["shape"] == shape and r["config"] == "on+zero"})
        lines.append(f"| {shape} | {cells[0]} | {cells[1]} | {ratio} | {'; '.join(decided)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
