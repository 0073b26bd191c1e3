#!/usr/bin/env python3
"""End-to-end training benchmark: mf_train on MovieLens-100k on the emulated testbed.

Runs tests/pslite-app/mf_train through scripts/pslaunch.py --net netns (one namespace
per node, the servers' links rate-limited so that they are the bottleneck) in several
configurations, alternating them within each repetition so that a slow spell of the
machine hits every configuration alike:

  libzmq     the real libzmq (nothing preloaded)
  off        the shim preloaded, ZEBRA_ENABLE=0 (every call forwarded)
  on         the shim preloaded, ZEBRA_ENABLE=1 (Zebra's engine, no switch)
  on+switch  ZEBRA_ENABLE=1, ZEBRA_SWITCH and ZEBRA_HOT_KEYS (mf_train --write-hot-keys),
             `zebra switch` running as a service in its own namespace; skipped, with
             the reason, when this build's `zebra switch` or `zebra config` does not
             accept them
  on+online  on+switch without a hot-keys file: ZEBRA_HOT=online:T (--online-rounds),
             the server's job sized for the profiled rows' values; the keys are found
             during the job (its decision in logs/<run>/online-0.keys)
  on+zero    zero configuration: ZEBRA_SWITCH alone and `zebra switch --listen` alone
             (online hot keys after the protocol's 10 counted pushes, each server's job
             admitted by the switch with an equal share of its memory)
  C/SYNC[/RANK]  a configuration with the switch and ZEBRA_SYNC=SYNC (docs/OSP.md), e.g.
             on+switch/two-stage (Wait on a push returns once its hot part settled) or
             on+switch/two-stage:2 (and a pull may miss up to 2 of its worker's pushes);
             /RANK sets ZEBRA_SYNC_RANK, how a census ranks the keys: on+online/two-stage/pgp
  C~P%       a configuration with the switch, P % of every hot-path datagram dropped
             (ZEBRA_HOT_LOSS on every worker and server, --loss on the switch, seeded with
             the repetition), e.g. on+switch~0.1%; table.md then also shows its time to
             target over the same configuration's without loss, repetition by repetition

for each worker count N. Metrics per run: time to the target test RMSE (worker 0's
evaluations), training steps per second (all workers), server ingress bytes (the
servers' veth counters, which count libzmq's traffic as well as Zebra's) in all and per
step. Writes under --out: table.md (medians over the repetitions), runs.json (every
run), rmse_N<n>.png (test RMSE against time, one line per configuration and repetition)
and logs/ (every process's log and pslaunch.json).

  scripts/bench-train.py [--workers 2,4,8] [--configs libzmq,off,on,on+switch] [--repeats 2]
  scripts/bench-train.py --workers 4 --configs on+switch,on+switch~0.1%,on+switch~1% --repeats 4
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time

from benchlib import (ROOT, base_config, bound, fmt, launch_cmd, median, medians, online_precision, parse_configs, parser,
                      pyplot, ratio, run_plan, run_report, split_config, switch_unavailable, worker_counts, worker_logs)

EVAL = re.compile(r"^mf: epoch=(\d+) step=(\d+) time_s=([0-9.]+) test_rmse=([0-9.]+|nan)", re.M)
WORKER = re.compile(r"^mf: worker rank=(\d+) steps=(\d+) .* time_s=([0-9.]+)", re.M)
SUMMARY = re.compile(r"^mf: summary (.*)$", re.M)
HOT = re.compile(r"hot_share=([0-9.]+)")


def log(msg):
    print(f"bench-train: {msg}", flush=True)


def write_hot_keys(args, path):
    res = subprocess.run([args.binary, f"--data={args.data}", f"--write-hot-keys={path}",
                          f"--hot-count={args.hot_count}", f"--hot-servers={args.servers}",
                          f"--seed={args.seed}", f"--dim={args.dim}"], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"bench-train: mf_train --write-hot-keys failed: {res.stderr.strip()}")
    m = HOT.search(res.stdout)
    return float(m.group(1)) if m else None


def mf_cmd(args, config, workers, logdir, hot_keys, seed=1):
    return launch_cmd(args, config, workers, logdir, hot_keys, seed) + [
        args.binary, f"--data={args.data}", f"--epochs={args.epochs}", f"--batch={args.batch}",
        f"--dim={args.dim}", f"--seed={args.seed}", f"--target-rmse={args.target_rmse}",
        f"--eval-every={args.eval_every}", f"--sync={1 if args.sync else 0}"]


def parse_run(logdir, _workers=None):
    """The run's metrics from the worker logs and pslaunch.json."""
    text = worker_logs(logdir)
    curve = [(float(t), float(r)) for _, _, t, r in EVAL.findall(text)]
    steps = [(int(s), float(t)) for _, s, t in WORKER.findall(text)]
    m = SUMMARY.search(text)
    summary = dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}
    out = run_report(logdir)
    ingress, egress = out["server_ingress_bytes"], out["server_egress_bytes"]
    total_steps = sum(s for s, _ in steps)
    ttt = summary.get("time_to_target_s", "none")
    out.update(
        curve=curve,
        time_to_target_s=None if ttt == "none" else float(ttt),
        final_rmse=float(summary["final_rmse"]) if "final_rmse" in summary else None,
        steps=total_steps,
        steps_per_s=sum(s / t for s, t in steps if t > 0),
        ingress_per_step=per(ingress, total_steps),
        egress_per_step=per(egress, total_steps),
    )
    return out


def per(total, count):
    """total / count, or None when either is missing or zero."""
    return total / count if total and count else None


def summarise(rs):
    """Medians over the successful runs of one (N, config)."""
    return medians(rs, ttt="time_to_target_s", steps_per_s="steps_per_s", ingress="server_ingress_bytes",
                   per_step="ingress_per_step", egress_per_step="egress_per_step", rmse="final_rmse", pairs="switch_pairs",
                   completed="rounds_completed", flushed="rounds_flushed")


def table(runs, configs, counts, hot_share, args):
    lines = [
        f"mf_train ({'synchronous' if args.sync else 'asynchronous'} SGD) on MovieLens-100k, {args.servers} "
        f"server(s), testbed --net {args.net}, servers' links "
        f"{args.server_rate or 'unshaped'}"
        f"{' (what they receive only)' if args.server_rate and args.shape == 'ingress' else ' (each direction)'}, "
        f"target test RMSE {args.target_rmse}, medians of {args.repeats} repetition(s).",
        "",
        "| N | config | runs ok | time to target (s) | speed-up vs libzmq | steps/s | server ingress (MB) "
        "| ingress/step (KB) | ingress/step vs libzmq | egress/step (KB) | egress/step vs libzmq "
        "| switch: pairs summed, rounds completed/flushed | final RMSE |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in counts:
        base = summarise([r for r in runs if r["workers"] == n and r["config"] == "libzmq"])
        for c in configs:
            rs = [r for r in runs if r["workers"] == n and r["config"] == c]
            if not rs:
                continue
            m = summarise(rs)
            speedup = ratio(base["ttt"], m["ttt"])
            bytes_ratio = ratio(m["per_step"], base["per_step"])
            egress_ratio = ratio(m["egress_per_step"], base["egress_per_step"])
            switch = "-" if m["pairs"] is None else f"{m['pairs']:,.0f}, {m['completed']:.0f}/{m['flushed']:.0f}"
            lines.append(
                f"| {n} | {c} | {m['ok']}/{len(rs)} | {fmt(m['ttt'], '.2f')} | {fmt(speedup, '.2f')}x | "
                f"{fmt(m['steps_per_s'], '.1f')} | {fmt(None if m['ingress'] is None else m['ingress'] / 1e6, '.1f')} | "
                f"{fmt(None if m['per_step'] is None else m['per_step'] / 1e3, '.1f')} | {fmt(bytes_ratio, '.2f')}x | "
                f"{fmt(None if m['egress_per_step'] is None else m['egress_per_step'] / 1e3, '.1f')} | "
                f"{fmt(egress_ratio, '.2f')}x | {switch} | {fmt(m['rmse'], '.4f')} |")
    if hot_share is not None:
        lines += ["", f"Profiled hot share h = {hot_share:.4f} ({args.hot_count} hottest rows of the training "
                  "split); bound on the speed-up N/(N(1-h)+h): "
                  + ", ".join(f"N={n}: {bound(n, hot_share):.2f}" for n in counts)]
    return "\n".join(lines) + "\n"


def what_changed(runs, counts, hot_share, args):
    """One paragraph per N: on+switch against libzmq, in words."""
    lines = []
    for n in counts:
        base = summarise([r for r in runs if r["workers"] == n and r["config"] == "libzmq"])
        zebra = summarise([r for r in runs if r["workers"] == n and r["config"] == "on+switch"])
        if not base["ok"] or not zebra["ok"]:
            continue
        limit = bound(n, hot_share)
        speedup = ratio(base["ttt"], zebra["ttt"])
        lines.append(
            f"N={n}: to test RMSE {args.target_rmse}, libzmq took {fmt(base['ttt'], '.1f')} s and Zebra with the "
            f"switch {fmt(zebra['ttt'], '.1f')} s: {fmt(speedup, '.2f')}x (bound {fmt(limit, '.2f')}x"
            f"{'' if speedup is None or limit is None else f', {speedup / limit:.0%} of it'}). "
            f"Server ingress per training step: {fmt(base['per_step'] and base['per_step'] / 1e3, '.1f')} KB "
            f"-> {fmt(zebra['per_step'] and zebra['per_step'] / 1e3, '.1f')} KB "
            f"({fmt(ratio(zebra['per_step'], base['per_step']), '.2f')}x); egress "
            f"{fmt(base['egress_per_step'] and base['egress_per_step'] / 1e3, '.1f')} KB -> "
            f"{fmt(zebra['egress_per_step'] and zebra['egress_per_step'] / 1e3, '.1f')} KB "
            f"({fmt(ratio(zebra['egress_per_step'], base['egress_per_step']), '.2f')}x). The switch summed "
            f"{fmt(zebra['pairs'], ',.0f')} (hot index, value) pairs in {fmt(zebra['completed'], '.0f')} complete "
            f"and {fmt(zebra['flushed'], '.0f')} flushed rounds.")
    return "\n".join(lines)


def loss_cost(runs, configs, counts):
    """A table of what hot-path loss costs: each configuration with loss (~P%) against the
    same configuration without, time to target as a ratio within each repetition (the two
    ran next to each other), and what the workers resent."""
    lines = []
    by = {(r["workers"], r["config"], r["repeat"]): r for r in runs}
    for n in counts:
        for c in configs:
            loss = split_config(c)[2]
            clean = c.rpartition("~")[0]
            if loss is None or clean not in configs:
                continue
            reps = sorted({r["repeat"] for r in runs})
            ratios = [ratio(by[(n, c, k)].get("time_to_target_s"), by[(n, clean, k)].get("time_to_target_s"))
                      for k in reps if (n, c, k) in by and (n, clean, k) in by]
            ok = [x for x in ratios if x is not None]

            def resent(config):
                rs = [r for r in runs if r["workers"] == n and r["config"] == config and r.get("hot_packets")]
                if not rs:
                    return "-"
                pk, rt = sum(r["hot_packets"] for r in rs), sum(r["retransmits"] for r in rs)
                gu, dr = sum(r["given_up"] for r in rs), sum(r["hot_dropped"] for r in rs)
                sent = sum(r["hot_sent"] for r in rs)
                srtt = median([r.get("srtt_ms") for r in rs])
                dropped = f"{dr:,} of {sent:,} datagrams dropped" if sent else "no loss injected"
                return f"{rt / pk:.1%} ({rt:,} of {pk:,}, {gu:,} given up; {dropped}; srtt {fmt(srtt, '.0f')} ms)"

            lines.append(f"| {n} | {c} | {clean} | {', '.join(fmt(x, '.3f') for x in ratios) or '-'} | "
                         f"{fmt(median(ok), '.3f')}x | {fmt(statistics.mean(ok) if ok else None, '.3f')}x | "
                         f"{resent(c)} | {resent(clean)} |")
    if not lines:
        return ""
    return "\n".join([
        "Cost of hot-path loss: time to the target RMSE with loss over the same configuration without it, "
        "per repetition (each pair ran one after the other), its median and mean; the workers' hot-path "
        "packets resent on a timeout, with loss and without (all repetitions).", "",
        "| N | config | against | ratio per repetition | median | mean | resent with loss | resent without |",
        "|---|---|---|---|---|---|---|---|"] + lines) + "\n"


def plots(runs, counts, out):
    plt = pyplot(log)
    if plt is None:
        return []
    written = []
    for n in counts:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for r in runs:
            if r["workers"] != n or not r["curve"]:
                continue
            t, rmse = zip(*r["curve"])
            ax.plot(t, rmse, marker=".", label=f"{r['config']} #{r['repeat']}")
        ax.set_xlabel("time (s, worker 0)")
        ax.set_ylabel("test RMSE")
        ax.set_title(f"mf_train, MovieLens-100k, N = {n} workers")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        path = os.path.join(out, f"rmse_N{n}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main():
    p = parser(__doc__, servers=1)
    p.add_argument("--target-rmse", type=float, default=0.93, help="stop when reached (default 0.93)")
    p.add_argument("--epochs", type=int, default=10, help="mf_train --epochs, the bound if the target is "
                   "never reached (default 10)")
    p.add_argument("--batch", type=int, default=1024, help="mf_train --batch (default 1024)")
    p.add_argument("--dim", type=int, default=16, help="mf_train --dim (default 16)")
    p.add_argument("--seed", type=int, default=1, help="mf_train --seed (default 1)")
    p.add_argument("--eval-every", type=int, default=5, help="worker 0 evaluates every N steps (default 5)")
    p.add_argument("--sync", action="store_true",
                   help="mf_train --sync=1: synchronous SGD (every worker waits for all after each step, "
                   "as MXNet dist_sync); default asynchronous")
    p.add_argument("--hot-count", type=int, default=1000, help="hot rows for on+switch (default 1000)")
    p.add_argument("--data", default=os.path.join(ROOT, ".build/data/ml-100k.inter"))
    p.add_argument("--binary", default=os.path.join(ROOT, ".build/byteps-pslite/tests/mf_train"))
    p.add_argument("--out", default=None, help="output directory (default results/bench-train/<time>)")
    args = p.parse_args()

    counts = worker_counts(p, args)
    configs = parse_configs(p, args)
    for path, what in ((args.data, "scripts/setup.sh --clients"), (args.binary, "scripts/build-pslite.sh")):
        if not os.path.exists(path):
            p.error(f"{path} is missing; run {what}")
    out = args.out or os.path.join(ROOT, "results", "bench-train", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)

    hot_keys = os.path.abspath(os.path.join(out, "hot.keys"))
    hot_share = write_hot_keys(args, hot_keys)
    log(f"hot keys: {args.hot_count} rows, profiled hot share {hot_share} ({hot_keys})")
    if any(base_config(c) == "on+switch" for c in configs):
        why = switch_unavailable(args.zebra, hot_keys, args.servers)
        if why:
            log(f"SKIP on+switch: {why}")
            configs = [c for c in configs if base_config(c) != "on+switch"]
    if not configs:
        raise SystemExit("bench-train: no configuration left to run")

    def describe(r):
        return (f"time to target {fmt(r['time_to_target_s'], '.2f')} s, {r['steps_per_s']:.1f} steps/s, server "
                f"ingress {fmt(r['server_ingress_bytes'] and r['server_ingress_bytes'] / 1e6, '.1f')} MB, "
                f"final RMSE {fmt(r['final_rmse'], '.4f')}")

    runs = run_plan(configs, counts, args.repeats, out,
                    lambda c, n, logdir, rep: mf_cmd(args, c, n, logdir, hot_keys, seed=rep), parse_run, describe, log)
    for r in runs:
        if r["config"].startswith("on+online"):
            logdir = os.path.join(out, "logs", f"N{r['workers']}-{r['config'].replace('/', '_')}-{r['repeat']}")
            r["online_precision"] = online_precision(logdir, hot_keys, args.servers)
            shown = ", ".join("-" if p is None else f"{100 * p:.1f} %" for p in r["online_precision"])
            log(f"N={r['workers']} {r['config']} repetition {r['repeat']}: the online keys hold {shown} of the "
                f"profiled hot rows (after {args.online_rounds} pushes of each worker)")

    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump({"args": vars(args), "hot_share": hot_share, "runs": runs}, f, indent=1)
    md = table(runs, configs, counts, hot_share, args)
    changed = what_changed(runs, counts, hot_share, args)
    if changed:
        md += "\n" + changed + "\n"
    cost = loss_cost(runs, configs, counts)
    if cost:
        md += "\n" + cost
    print("\n" + md)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(md)
    for path in plots(runs, counts, out):
        log(f"plot: {path}")
    log(f"results in {out}")
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
