#!/usr/bin/env python3
"""The perf pair of the user-level stack: the kernel's network against Zebra's stack
(smoltcp on DPDK's af_packet PMD), side by side in one run, on network namespaces joined
by veths (unshaped), the order alternating between repetitions.

1. Transport (rust/zebra-engine/examples/netns_perf.rs, one veth pair): ZMTP throughput
   of an engine DEALER to a libzmq ROUTER, and UDP datagrams of 192 bytes (the paper's
   hot-path packet size) sent as fast as the sender goes; and the same datagrams as
   prebuilt frames on the DPDK port alone (`pmd`, no stack): the PMD's raw rate, which
   the stack's rate is measured against in the same run.
2. PS-lite test_benchmark goodput (BytePS PS-lite, PUSH_PULL, 1 server, 2 workers), all on
   Zebra's engine: `on` (kernel TCP) against `on@dpdk` (every process on its own stack);
   the real libzmq (kernel) beside them as the reference.
3. The hot path: trace_replay of an OA-like trace beside `zebra switch` (scripts/bench-agg.py
   --configs on+switch,on+switch@dpdk, unshaped): pushed pairs per second.

Needs root (namespaces, packet sockets), libdpdk-dev and `scripts/setup.sh --clients`.
Writes table.md, runs.json and logs/ under --out (default results/bench-net/<time>).

  scripts/bench-net.py [--repeats 3] [--parts transport,pslite,hot]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from benchlib import alternate, clean_env, fmt, ratio, test_benchmark_goodput  # noqa: E402

ZMTP = re.compile(r"^(\w+): zmtp \d+ x \d+ B: ([0-9.]+) MB/s", re.M)
UDP = re.compile(r"^(\w+): udp \d+ x \d+ B: sent at ([0-9.]+) pkt/s, \d+ received \(([0-9.]+) %\)", re.M)
CLEAN = re.compile(r"^(\w+): shutdown clean", re.M)
PARTS = ("transport", "pslite", "hot")


def log(msg):
    print(f"bench-net: {msg}", flush=True)


def transport(args, out):
    """netns_perf over the kernel, over DPDK, and the PMD's raw rate (`pmd`: prebuilt UDP frames on the
    DPDK port alone, no stack), alternating; returns per-mode lists (`pmd`: UDP only)."""
    subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path", os.path.join(ROOT, "Cargo.toml"),
                    "-p", "zebra-engine", "--features", "dpdk", "--example", "netns_perf"], check=True)
    binary = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")),
                          "release", "examples", "netns_perf")
    modes = ["kernel", "dpdk", "pmd"]
    got = {m: {"zmtp_mb_s": [], "udp_pkt_s": [], "udp_received_pct": [], "clean": [], "rep": []} for m in modes}
    for rep in range(1, args.repeats + 1):
        for mode in alternate(modes, rep):
            res = subprocess.run([binary, mode, str(args.messages), str(args.size), str(args.datagrams)],
                                 capture_output=True, text=True, env=clean_env(), timeout=600)
            with open(os.path.join(out, "logs", f"transport-{mode}-{rep}.log"), "w") as f:
                f.write(res.stdout + res.stderr)
            z, u = ZMTP.search(res.stdout), UDP.search(res.stdout)
            if res.returncode != 0 or not u or (mode != "pmd" and not z):
                log(f"transport {mode} repetition {rep} failed: {(res.stderr or res.stdout).strip()[-300:]}")
                continue
            g = got[mode]
            if z:
                g["zmtp_mb_s"].append(float(z.group(2)))
            g["udp_pkt_s"].append(float(u.group(2)))
            g["udp_received_pct"].append(float(u.group(3)))
            g["clean"].append(bool(CLEAN.search(res.stdout)))
            g["rep"].append(rep)
            log(f"transport {mode} {rep}: " + (f"ZMTP {z.group(2)} MB/s, " if z else "")
                + f"UDP sent {float(u.group(2)):,.0f} pkt/s")
    return got


def against_pmd(t):
    """The stack's datagram rate over the PMD's raw rate, per repetition where both ran, and the text."""
    pmd = dict(zip(t["pmd"]["rep"], t["pmd"]["udp_pkt_s"]))
    per = [d / pmd[r] for r, d in zip(t["dpdk"]["rep"], t["dpdk"]["udp_pkt_s"]) if pmd.get(r)]
    return (f"The stack against the PMD's raw rate, same run (`pmd`: the same 192-byte datagrams as prebuilt "
            f"frames handed to the DPDK port's transmit path alone, no stack; sent rate): PMD "
            f"{fmt(median(t['pmd']['udp_pkt_s']), ',.0f')} pkt/s, stack {fmt(median(t['dpdk']['udp_pkt_s']), ',.0f')} "
            f"pkt/s; stack / PMD median {fmt(median(per), '.2f')}x (per repetition "
            f"{', '.join(f'{x:.2f}' for x in per) or '-'}); received by the kernel socket: PMD "
            f"{fmt(median(t['pmd']['udp_received_pct']), '.1f')} %, stack "
            f"{fmt(median(t['dpdk']['udp_received_pct']), '.1f')} %.\n")


def pslite(args, out):
    """test_benchmark goodput for libzmq, on and on@dpdk, alternating."""
    configs = ["libzmq", "on", "on@dpdk"]
    got = {c: [] for c in configs}
    for rep in range(1, args.repeats + 1):
        for c in alternate(configs, rep):
            logdir = os.path.join(out, "logs", f"pslite-{c}-{rep}")
            extra = ["--net", "netns", "--subnet", args.subnet]
            if c != "libzmq":
                extra += ["--preload", args.shim, "--env", "ZEBRA_ENABLE=1"]
            if c.endswith("@dpdk"):
                extra += ["--user-stack", "dpdk"]
            goodput, output = test_benchmark_goodput(args.pslite_bin, logdir, args.value_bytes, args.rounds, extra)
            if goodput is None:
                log(f"pslite {c} repetition {rep} failed: {output.strip()[-300:]}")
                continue
            got[c].append(goodput)
            log(f"pslite {c} {rep}: {goodput:.3f} Gbps")
    return got


def hot(args, out):
    """bench-agg's on+switch against on+switch@dpdk, unshaped; returns pairs/s per config."""
    agg_out = os.path.join(out, "hot")
    cmd = [sys.executable, os.path.join(ROOT, "scripts/bench-agg.py"), "--workers", "2",
           "--configs", "on+switch,on+switch@dpdk", "--server-rate", "", "--repeats", str(args.repeats),
           "--rounds", str(args.hot_rounds), "--subnet", args.subnet, "--out", agg_out]
    res = subprocess.run(cmd, capture_output=True, text=True, env=clean_env())
    with open(os.path.join(out, "logs", "hot.log"), "w") as f:
        f.write(res.stdout + res.stderr)
    try:
        with open(os.path.join(agg_out, "runs.json")) as f:
            runs = json.load(f)["runs"]
    except (OSError, ValueError, KeyError):
        log(f"hot path part failed: {(res.stderr or res.stdout).strip()[-300:]}")
        return {}
    got = {}
    for r in runs:
        if r.get("ok") and r.get("pairs_per_s"):
            got.setdefault(r["config"], []).append(r["pairs_per_s"])
    return got


def median(xs):
    return statistics.median(xs) if xs else None


def row(label, kernel, dpdk, unit, spec):
    k, d = median(kernel), median(dpdk)
    return (f"| {label} | {fmt(k, spec)} {unit} | {fmt(d, spec)} {unit} | {fmt(ratio(d, k), '.2f')}x "
            f"| {len(kernel)}/{len(dpdk)} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--repeats", type=int, default=3, help="repetitions of every measurement (default 3)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    p.add_argument("--messages", type=int, default=2000, help="transport: ZMTP messages (default 2000)")
    p.add_argument("--size", type=int, default=65536, help="transport: ZMTP message bytes (default 65536)")
    p.add_argument("--datagrams", type=int, default=200000, help="transport: UDP datagrams (default 200000)")
    p.add_argument("--value-bytes", type=int, default=262144,
                   help="pslite: test_benchmark value bytes per push (default 262144)")
    p.add_argument("--rounds", type=int, default=24, help="pslite: test_benchmark rounds (default 24)")
    p.add_argument("--hot-rounds", type=int, default=20, help="hot: rounds of the trace (default 20)")
    p.add_argument("--subnet", default="10.97.0.0/24", help="testbed addresses (default 10.97.0.0/24)")
    p.add_argument("--shim", default=os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--pslite-bin", default=os.path.join(ROOT, ".build/byteps-pslite/tests/test_benchmark"))
    p.add_argument("--out", default=None, help="output directory (default results/bench-net/<time>)")
    args = p.parse_args()
    parts = [x for x in args.parts.split(",") if x]
    if not parts or set(parts) - set(PARTS) or args.repeats < 1:
        p.error(f"bad --parts/--repeats (parts: {', '.join(PARTS)})")
    if os.geteuid() != 0:
        p.error("needs root (network namespaces, packet sockets)")
    if subprocess.run(["pkg-config", "--atleast-version=22.11", "libdpdk"]).returncode != 0:
        p.error("needs libdpdk-dev >= 22.11 (scripts/setup.sh installs it)")
    for path in (args.shim, args.pslite_bin):
        if not os.path.exists(path):
            p.error(f"{path} is missing; run scripts/setup.sh --clients")
    out = os.path.abspath(args.out or os.path.join(ROOT, "results", "bench-net", time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)

    results = {}
    rows = []
    after = ""
    if "transport" in parts:
        t = results["transport"] = transport(args, out)
        rows.append(row(f"ZMTP throughput, engine DEALER -> libzmq ROUTER, {args.size} B messages",
                        t["kernel"]["zmtp_mb_s"], t["dpdk"]["zmtp_mb_s"], "MB/s", ".1f"))
        rows.append(row("UDP datagrams of 192 B sent", t["kernel"]["udp_pkt_s"], t["dpdk"]["udp_pkt_s"],
                        "pkt/s", ",.0f"))
        rows.append(row("  of them received by a kernel socket", t["kernel"]["udp_received_pct"],
                        t["dpdk"]["udp_received_pct"], "%", ".1f"))
        after = "\n" + against_pmd(t)
    if "pslite" in parts:
        ps = results["pslite"] = pslite(args, out)
        rows.append(row(f"PS-lite test_benchmark goodput, {args.value_bytes} B values, Zebra's engine",
                        ps["on"], ps["on@dpdk"], "Gbps", ".3f"))
        lib = median(ps["libzmq"])
        rows.append(f"| (the real libzmq over the kernel, same run) | {fmt(lib, '.3f')} Gbps | | "
                    f"on: {fmt(ratio(median(ps['on']), lib), '.2f')}x, on@dpdk: "
                    f"{fmt(ratio(median(ps['on@dpdk']), lib), '.2f')}x of libzmq | {len(ps['libzmq'])} |")
    if "hot" in parts:
        h = results["hot"] = hot(args, out)
        rows.append(row(f"hot path: trace_replay beside zebra switch, 2 workers, {args.hot_rounds} rounds",
                        h.get("on+switch", []), h.get("on+switch@dpdk", []), "pairs/s", ",.0f"))
    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=1)
    text = (f"Kernel network vs Zebra's user-level stack on DPDK (af_packet PMD), netns testbed, unshaped veths, "
            f"{args.repeats} repetitions alternating, medians; measured {time.strftime('%Y-%m-%d %H:%M')} with "
            f"`{' '.join(['scripts/bench-net.py'] + sys.argv[1:])}`:\n\n"
            "| workload | kernel | DPDK (smoltcp) | DPDK / kernel | runs ok (kernel/DPDK) |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n" + after)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print("\n" + text)
    log(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
