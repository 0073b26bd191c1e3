#!/usr/bin/env python3
"""Aggregation-throughput benchmark: OA-like push traces replayed on the emulated testbed.

For each worker count N: `zebra trace gen --shape oa --workers N` writes a seeded trace
shaped like the paper's Figure 4 ("OA": the top 0.02 % of the keys take 50 % of the
updates), `zebra profile` picks its hot keys by Principle 1 and predicts the hot share h
of the pushed values, and tests/pslite-app/trace_replay replays it (every push waited
for, every round back to back, every sum checked at the end) through scripts/pslaunch.py
--net netns with the servers' links rate-limited, once per configuration, alternating
within each repetition:

  libzmq     the real libzmq (nothing preloaded)
  off        the shim preloaded, ZEBRA_ENABLE=0
  on         the shim preloaded, ZEBRA_ENABLE=1 (Zebra's engine, no switch)
  on+switch  Zebra's engine beside `zebra switch` with the profiled hot keys

Metric: pushed pairs per second, all workers together (their pairs over the slowest
worker's time in push and wait), as a speed-up against libzmq next to the bound
N/(N(1-h)+h) that summing the hot values once gives a server-bound job; also the servers'
ingress bytes, the switch's sums, and (on+switch, from the shim's ZEBRA_STATS) what the
pushes cost the servers against the same pushes whole (also without the aggregate parts the
switch sent twice), next to what `zebra profile` predicts for them. Writes table.md,
runs.json, throughput.png and logs/ under --out.

  scripts/bench-agg.py [--workers 2,4,8] [--configs libzmq,on+switch] [--repeats 2]
"""

import json
import os
import re
import subprocess
import sys
import time

from benchlib import (ROOT, base_config, bound, fmt, launch_cmd, medians, parse_configs, parser, profile, pyplot, ratio,
                      run_plan, run_report, switch_unavailable, trace_gen, worker_counts, worker_logs)

sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from hotpath import push_bytes  # noqa: E402

REPLAY = re.compile(r"^trace_replay: (OK|FAIL) worker rank (\d+) of \d+: \d+ rounds, (\d+) pairs \((\d+) values\) "
                    r"pushed, (\d+) values checked, (\d+) wrong; push [0-9.]+ pairs/s \(([0-9.]+) s in push\+wait\)",
                    re.M)
SHARE = re.compile(r"predicted hot share: ([0-9.]+) % of updates, ([0-9.]+) % of pushed values")
BYTES = re.compile(r"predicted server bytes with aggregation: ([0-9.]+) %")


def log(msg):
    print(f"bench-agg: {msg}", flush=True)


def make_trace(args, n, out):
    """The OA-like trace of n workers and its hot keys; returns (trace, keys, hot share of
    values, the profile's prediction of the servers' bytes with aggregation)."""
    trace, keys = os.path.join(out, f"oa-N{n}.trace"), os.path.join(out, f"oa-N{n}.keys")
    gen = [args.zebra, *trace_gen(trace, n, args.rounds, args.keys, args.keys_per_push, args.values),
           "--seed", str(args.seed)]
    prof = [args.zebra, *profile(keys, trace, args.servers, args.p, args.switch_mem)]
    for cmd in (gen, prof):
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"bench-agg: {' '.join(cmd[:3])} failed: {(res.stderr or res.stdout).strip()[-300:]}")
    m, b = SHARE.search(res.stdout + res.stderr), BYTES.search(res.stdout + res.stderr)
    return trace, keys, float(m.group(2)) / 100 if m else None, float(b.group(1)) / 100 if b else None


def parse_run(logdir, workers):
    out = run_report(logdir)
    rows = REPLAY.findall(worker_logs(logdir))
    ok = len(rows) == workers and all(r[0] == "OK" and r[5] == "0" for r in rows)
    pairs = sum(int(r[2]) for r in rows)
    slowest = max((float(r[6]) for r in rows), default=0.0)
    out.update(ok=out["ok"] and ok, pairs=pairs, values=sum(int(r[3]) for r in rows),
               checked=sum(int(r[4]) for r in rows), push_s=slowest,
               pairs_per_s=pairs / slowest if ok and slowest > 0 else None)
    if os.path.isdir(os.path.join(logdir, "stats")):
        b, problems = push_bytes(logdir)
        if problems:
            log(f"  {logdir}: {'; '.join(problems)}")
            out["ok"] = False
        out["push_bytes_ratio"] = ratio(b["split"] + b["udp"], b["whole"])
        out["push_bytes_first_ratio"] = ratio(b["split"] + b["udp_first"], b["whole"])
    return out


def summarise(rs):
    """Medians over the successful runs of one (N, config)."""
    return medians(rs, pps="pairs_per_s", ingress="server_ingress_bytes", push_ratio="push_bytes_ratio",
                   push_first="push_bytes_first_ratio", pairs="switch_pairs", completed="rounds_completed",
                   flushed="rounds_flushed")


def table(runs, configs, counts, shares, predicted, args):
    lines = [
        f"trace_replay of OA-like traces ({args.keys:,} keys, ~{args.keys_per_push} keys a push, {args.values} "
        f"values a key, {args.rounds} rounds), {args.servers} servers, testbed --net {args.net}, servers' links "
        f"{args.server_rate or 'unshaped'}"
        f"{' (what they receive only)' if args.server_rate and args.shape == 'ingress' else ' (each direction)'}, "
        f"medians of {args.repeats} repetition(s).",
        "",
        "| N | config | runs ok | pushed pairs/s | speed-up vs libzmq | bound N/(N(1-h)+h) | of the bound "
        "| server ingress (MB) | vs libzmq | push bytes vs whole (without resent parts) | profile's prediction "
        "| switch: pairs summed, rounds completed/flushed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in counts:
        base = summarise([r for r in runs if r["workers"] == n and r["config"] == "libzmq"])
        limit = bound(n, shares.get(n))
        for c in configs:
            rs = [r for r in runs if r["workers"] == n and r["config"] == c]
            if not rs:
                continue
            m = summarise(rs)
            speedup = ratio(m["pps"], base["pps"])
            of_bound = None if c == "libzmq" else ratio(speedup, limit)
            push = "-" if m["push_ratio"] is None else f"{m['push_ratio']:.3f} ({fmt(m['push_first'], '.3f')})"
            switch = "-" if m["pairs"] is None else f"{m['pairs']:,.0f}, {m['completed']:.0f}/{m['flushed']:.0f}"
            lines.append(
                f"| {n} | {c} | {m['ok']}/{len(rs)} | {fmt(m['pps'], ',.0f')} | {fmt(speedup, '.2f')}x | "
                f"{fmt(limit, '.2f')}x | {fmt(of_bound, '.0%')} | "
                f"{fmt(m['ingress'] and m['ingress'] / 1e6, '.1f')} | {fmt(ratio(m['ingress'], base['ingress']), '.2f')}x "
                f"| {push} "
                f"| {'-' if base_config(c) != 'on+switch' else fmt(predicted.get(n), '.3f')} | {switch} |")
    lines += ["", "Hot share h of the pushed values, as `zebra profile` predicts it for each trace: "
              + ", ".join(f"N={n}: {fmt(shares.get(n), '.3f')}" for n in counts) + "."]
    return "\n".join(lines) + "\n"


def plot(runs, configs, counts, shares, out):
    plt = pyplot(log)
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for c in configs:
        pts = [(n, summarise([r for r in runs if r["workers"] == n and r["config"] == c])["pps"])
               for n in counts]
        pts = [(n, v) for n, v in pts if v is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=c)
    base = [(n, summarise([r for r in runs if r["workers"] == n and r["config"] == "libzmq"])["pps"])
            for n in counts]
    upper = [(n, v * bound(n, shares[n])) for n, v in base if v is not None and shares.get(n) is not None]
    if upper:
        ax.plot(*zip(*upper), linestyle="--", color="grey", label="libzmq x bound N/(N(1-h)+h)")
    ax.set_xlabel("workers N")
    ax.set_ylabel("pushed pairs per second (all workers)")
    ax.set_xticks(counts)
    ax.set_title("Aggregation throughput, OA-like traces, server links shaped")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    path = os.path.join(out, "throughput.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    p = parser(__doc__, servers=2)
    p.add_argument("--keys", type=int, default=5_000_000, help="zebra trace gen --keys (default 5000000)")
    p.add_argument("--keys-per-push", type=int, default=1500,
                   help="zebra trace gen --keys-per-push (default 1500: a push holds about 3/4 of the 1000 hot "
                   "keys, as a large batch of a data-parallel job does)")
    p.add_argument("--values", type=int, default=8, help="f32 values a key (default 8, an embedding row)")
    p.add_argument("--rounds", type=int, default=20, help="rounds of every trace (default 20)")
    p.add_argument("--seed", type=int, default=1, help="trace seed (default 1)")
    p.add_argument("--p", type=float, default=0.5, help="zebra profile --p (default 0.5)")
    p.add_argument("--switch-mem", default="10M", help="zebra profile --switch-mem (default 10M)")
    p.add_argument("--binary", default=os.path.join(ROOT, ".build/byteps-pslite/tests/trace_replay"))
    p.add_argument("--out", default=None, help="output directory (default results/bench-agg/<time>)")
    args = p.parse_args()

    counts = worker_counts(p, args)
    configs = parse_configs(p, args)
    if not os.path.exists(args.binary):
        p.error(f"{args.binary} is missing; run scripts/setup.sh --clients")
    if not os.access(args.zebra, os.X_OK):
        p.error(f"{args.zebra} is missing; run scripts/setup.sh")
    out = os.path.abspath(args.out or os.path.join(ROOT, "results", "bench-agg", time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)

    traces, shares, predicted = {}, {}, {}
    for n in counts:
        trace, keys, share, bytes_ratio = make_trace(args, n, out)
        traces[n], shares[n], predicted[n] = (trace, keys), share, bytes_ratio
        log(f"N={n}: trace {trace}, hot keys {keys}, predicted hot share of values {fmt(share, '.3f')}")
    if any(base_config(c) == "on+switch" for c in configs):
        why = switch_unavailable(args.zebra, traces[counts[0]][1], args.servers)
        if why:
            log(f"SKIP on+switch: {why}")
            configs = [c for c in configs if base_config(c) != "on+switch"]
    if not configs:
        raise SystemExit("bench-agg: no configuration left to run")

    def command(c, n, logdir, rep):
        return launch_cmd(args, c, n, logdir, traces[n][1], seed=rep) + [
            args.binary, f"--trace={traces[n][0]}", "--check=end"]

    def describe(r):
        return (f"{'ok' if r['ok'] else 'FAILED'}: {fmt(r['pairs_per_s'], ',.0f')} pairs/s, {r['checked']:,} "
                f"values checked, server ingress "
                f"{fmt(r['server_ingress_bytes'] and r['server_ingress_bytes'] / 1e6, '.1f')} MB")

    runs = run_plan(configs, counts, args.repeats, out, command, parse_run, describe, log)

    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump({"args": vars(args), "hot_share": shares, "predicted_bytes": predicted, "runs": runs}, f, indent=1)
    md = table(runs, configs, counts, shares, predicted, args)
    print("\n" + md)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(md)
    path = plot(runs, configs, counts, shares, out)
    if path:
        log(f"plot: {path}")
    log(f"results in {out}")
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
