#!/usr/bin/env python3
"""Online hot keys in a live PS-lite job (Table II analogue): how well ZEBRA_HOT=online finds
the hot keys after T pushes of every worker, and what the job gains, against a stale
hot-keys file and the right one.

An OA-like trace (`zebra trace gen --shape oa`) is replayed by BytePS PS-lite's trace_replay
(every pulled sum checked exactly) beside `zebra switch`, with 1 % seeded loss on the hot
path. The runs:

  stale      ZEBRA_HOT=file with the hot set of another trace of the same model whose keys
             are permuted (--key-seed 2): a profile that no longer fits the job
  online:T   ZEBRA_HOT=online:T from that stale set, for each T of --rounds-counted
  none:T     ZEBRA_HOT=online:T without a hot-keys file, each server's job sized for as many
             values as the right set gives it (online_capacity), for the first T
  oracle     ZEBRA_HOT=file with the hot set `zebra profile` picks from the whole trace

Per run: exact (every worker's and server's OK line), the servers' precision (the share of
the whole trace's top k keys of that server that the run's set holds, k its size), the round
the new set starts at, pushes sent whole while a worker waited for the decision, pairs the
switch added, and what the pushes cost the servers (the split pushes over ZeroMQ and the
aggregates over UDP) against the same pushes whole (tests/lib/hotpath.py). Prints a table
(Markdown) and writes OUT/runs.json.
"""

import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import benchlib  # noqa: E402
import hotpath  # noqa: E402

ROOT = benchlib.ROOT
OK_WORKER = re.compile(r"^trace_replay: OK worker rank \d+ .* [1-9]\d* values checked, 0 wrong", re.M)
DECISION = re.compile(r"^# zebra online hot keys of PS-lite server \d+: (changed|kept) after (\d+) pushes "
                      r"of (\d+) keys, from round (\d+)")


def main():
    p = benchlib.parser(__doc__, 2)
    p.set_defaults(workers="4", net="loopback", server_rate="", repeats=1,
                   hot_config=os.path.join(ROOT, "tests/suites/hot.conf"))
    p.add_argument("--rounds-counted", default="2,5,10,20", help="the T of each online run (default 2,5,10,20)")
    p.add_argument("--trace-rounds", type=int, default=60, help="rounds of the replayed trace (default 60)")
    p.add_argument("--values", type=int, default=32, help="f32 values per key (default 32)")
    p.add_argument("--loss", default="drop=0.01,seed=12", help="ZEBRA_HOT_LOSS of every run (default 1 %% drop)")
    p.add_argument("--out", default=os.path.join(ROOT, ".build/bench-online"), help="output directory")
    args = p.parse_args()
    workers = benchlib.worker_counts(p, args)[0]
    counted = [int(t) for t in args.rounds_counted.split(",") if t]
    replay = os.path.join(ROOT, ".build/byteps-pslite/tests/trace_replay")
    for path, what in ((replay, "scripts/setup.sh --clients"), (args.shim, "scripts/setup.sh")):
        if not os.path.exists(path):
            p.error(f"{path} is missing; run {what}")
    os.makedirs(args.out, exist_ok=True)

    def zebra(*argv):
        res = subprocess.run([args.zebra, *argv], capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"bench-online: zebra {' '.join(argv)} failed: {res.stderr.strip()[-300:]}")

    trace, stale_trace = os.path.join(args.out, "job.trace"), os.path.join(args.out, "stale.trace")
    stale, oracle, full = (os.path.join(args.out, f) for f in ("stale.keys", "oracle.keys", "full.keys"))
    zebra(*benchlib.trace_gen(trace, workers, args.trace_rounds, values=args.values))
    zebra(*benchlib.trace_gen(stale_trace, workers, args.trace_rounds, values=args.values), "--key-seed", "2")
    zebra(*benchlib.profile(stale, stale_trace, args.servers))
    zebra(*benchlib.profile(oracle, trace, args.servers))
    zebra(*benchlib.profile(full, trace, args.servers, p=1, switch_mem="4M"))
    _, full_keys = hotpath.read_keys(full)

    runs = ([("stale", stale, None)] + [(f"online:{t}", stale, t) for t in counted]
            + [(f"none:{counted[0]}", None, counted[0])] + [("oracle", oracle, None)])
    results = []
    for i, (name, keys, t) in enumerate(runs, 1):
        logdir = os.path.join(args.out, "logs", name.replace(":", "-"))
        run_args = type(args)(**vars(args))
        if keys is None:
            # benchlib's on+online: no file, each job sized for the right set's values.
            run_args.online_rounds = t
            cmd = benchlib.launch_cmd(run_args, "on+online", workers, logdir, oracle)
        else:
            run_args.hot_config = os.path.join(args.out, f"{name.replace(':', '-')}.conf")
            with open(args.hot_config) as f, open(run_args.hot_config, "w") as out:
                out.write(f.read() + f"\nonline_out = {json.dumps(f'{logdir}/online-%r.keys')}\n")  # a TOML string
            cmd = benchlib.launch_cmd(run_args, "on+switch", workers, logdir, keys)
            if t is not None:
                cmd[-1:-1] = ["--env", f"ZEBRA_HOT=online:{t}"]
        cmd[-1:-1] = ["--env", f"ZEBRA_HOT_LOSS={args.loss}"]  # launch_cmd wrote ZEBRA_STATS to logdir/stats
        print(f"[{i}/{len(runs)}] {name} ...", file=sys.stderr)
        res = subprocess.run(cmd + [replay, f"--trace={trace}"], env=benchlib.clean_env(),
                             capture_output=True, text=True)
        results.append(measure(name, t, logdir, keys, full_keys, args.servers, workers, res.returncode == 0))
        print(f"  {results[-1]}", file=sys.stderr)

    with open(os.path.join(args.out, "runs.json"), "w") as f:
        json.dump({"workers": workers, "servers": args.servers, "trace_rounds": args.trace_rounds,
                   "values": args.values, "loss": args.loss, "runs": results}, f, indent=1)
    print(f"| run | exact | precision (server 0 / 1 …) | new set from round (epoch:round) | whole pushes "
          f"| pairs added | server bytes vs whole pushes |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        prec = " / ".join(f"{100 * x:.1f} %" for x in r["precision"])
        first = "-" if r["from_round"] is None else f"{r['from_round'] >> 16}:{r['from_round'] & 0xFFFF}"
        print(f"| {r['run']} | {'yes' if r['exact'] else 'NO'} | {prec} | {first} "
              f"| {r['whole_pushes']} | {r['pairs']} | {benchlib.fmt(r['bytes_ratio'], '.2f')}x |")
    return 0 if all(r["exact"] for r in results) else 1


def measure(name, t, logdir, keys, full_keys, servers, workers, ok):
    """One run's row."""
    logs = benchlib.worker_logs(logdir) if os.path.isdir(logdir) else ""
    server_logs = ""
    for s in range(servers):
        path = os.path.join(logdir, f"server-{s}.log")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                server_logs += f.read()
    exact = ok and len(OK_WORKER.findall(logs)) == workers and len(benchlib.REPLAY_SERVER_OK.findall(server_logs)) == servers
    step = hotpath.U64_MAX // servers
    precision, from_round = [], None
    for s in range(servers):
        online = os.path.join(logdir, f"online-{s}.keys")
        mine = []
        if t is not None and os.path.exists(online):
            header, mine = hotpath.read_keys(online)
            m = next((DECISION.match(h) for h in header if DECISION.match(h)), None)
            if m and m.group(1) == "changed":
                from_round = int(m.group(4)) if from_round is None else min(from_round, int(m.group(4)))
        elif t is None:
            mine = [k for k in hotpath.read_keys(keys)[1] if k // step == s]
        top = [k for k in full_keys if k // step == s][: len(mine)]
        precision.append(len(set(top) & set(mine)) / len(top) if top else 0.0)
    b, _ = hotpath.push_bytes(logdir) if ok else ({}, [])
    stats = ""
    for path in sorted(glob.glob(os.path.join(logdir, "stats", "*"))) if ok else []:
        with open(path) as f:
            stats += f.read()
    return {"run": name, "config": name, "counted": t, "exact": exact, "precision": precision, "from_round": from_round,
            "whole_pushes": hotpath.field(stats, "whole_pushes"), "pairs": b.get("pairs"),
            "bytes_ratio": benchlib.ratio((b.get("split") or 0) + (b.get("udp") or 0), b.get("whole"))}


if __name__ == "__main__":
    sys.exit(main())
