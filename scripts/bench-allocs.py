#!/usr/bin/env python3
"""Heap allocations and memcpy'd bytes per push, Zebra's share: a real BytePS PS-lite job
(tests/pslite-app/trace_replay, 2 servers, 4 workers, an OA-like trace with 32 values a
key and the hot keys `zebra profile` picks from it) beside `zebra switch`, with
tests/lib/alloccount.c preloaded into every node; the same job on the real libzmq alone
gives the client's own share, which is subtracted.

Each configuration runs the job at two lengths (--rounds A,B: A rounds and B rounds, each
--reps times); what one push costs is the slope, (count at B - count at A) / (pushes at B -
pushes at A), so the start-up and shutdown of the processes and the switch cancel out.
A push is one worker's ZPush (every round each worker pushes ~60 keys, half their values
hot, and waits for it; --check=end: one pull of every key after the last round). The
worker column counts in the 4 worker processes, the server column in the 2 servers, both
per push of one worker.

Builds: --build NAME=ROOT, a checkout where `scripts/setup.sh --prefix ROOT/dist` ran
(ROOT/dist/lib/libzmq.so.5, ROOT/dist/bin/zebra) and whose tests/suites/hot.conf (or
scripts/suites/hot.conf in a checkout from before issue 19 moved the suites) is the
settings file, as in the on+switch suites (no loss). Every build replays the same trace
and hot-keys file (made by the last build's zebra) with the same client binaries
(PSLITE_BIN_DIR, default .build/byteps-pslite/tests of this checkout).

Prints Markdown tables (and writes them to OUT/allocs.md, each run's counts to
OUT/runs.json): allocations, bytes allocated, memcpy calls and memcpy'd bytes per push;
memcpy'd bytes per push by call site (each site named by the innermost frame in Zebra's
code, with addr2line); with --where N, heaptrack's allocations per push by Zebra function. Issue 19's before/after (docs/BENCHMARKS.md):

  git worktree add /tmp/wt-before 7299995 && (cd /tmp/wt-before && \\
      CARGO_TARGET_DIR=/tmp/wt-before/target scripts/setup.sh --prefix /tmp/wt-before/dist)
  (the same for /tmp/wt-after at main)
  scripts/bench-allocs.py --build before=/tmp/wt-before --build after=/tmp/wt-after
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

from benchlib import REPLAY_SERVER_OK, ROOT, clean_env, profile, trace_gen

SERVERS, WORKERS = 2, 4
# The suites' settings file in a build's checkout: where it is, then where it was before issue 19.
SUITE_CONFS = (os.path.join("tests", "suites", "hot.conf"), os.path.join("scripts", "suites", "hot.conf"))
COUNTERS = ("allocs", "alloc_bytes", "copies", "copy_bytes")
WORKER_OK = re.compile(r"^trace_replay: OK worker rank \d+ of \d+: (\d+) rounds, (\d+) pairs \((\d+) values\) pushed", re.M)


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"bench-allocs: {' '.join(cmd)} failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-400:]}")
    return r.stdout


def build_counter(out):
    so = os.path.join(out, "alloccount.so")
    sh(["cc", "-shared", "-fPIC", "-O2", "-fno-builtin", "-fno-tree-loop-distribute-patterns", "-o", so,
        os.path.join(ROOT, "tests", "lib", "alloccount.c"), "-ldl"])
    return so


def make_workload(zebra, out, rounds):
    trace, keys = os.path.join(out, "oa.trace"), os.path.join(out, "hot.keys")
    sh([zebra, *trace_gen(trace, WORKERS, rounds)])
    sh([zebra, *profile(keys, trace, SERVERS)])
    return trace, keys


def read_counts(d):
    """Sums of each counter over the worker and the server processes of one run."""
    sums = {role: dict.fromkeys(COUNTERS, 0) for role in ("worker", "server")}
    seen = {"worker": 0, "server": 0}
    for name in os.listdir(d):
        role = name.split(".")[0]
        if role not in sums or name.endswith(".sites"):
            continue
        seen[role] += 1
        fields = open(os.path.join(d, name)).read().split()
        values = dict(zip(fields[0::2], map(int, fields[1::2])))
        for c in COUNTERS:
            sums[role][c] += values[c]
    if seen != {"worker": WORKERS, "server": SERVERS}:
        sys.exit(f"bench-allocs: counts of {seen} processes in {d}, expected {WORKERS} workers and {SERVERS} servers")
    return sums


def read_sites(d):
    """memcpy'd bytes by call site ("OBJECT OFFSET"), summed over the worker and the server
    processes of one run (the sites alloccount wrote: those that copied SITE_BYTES or more)."""
    sites = {"worker": {}, "server": {}}
    for name in os.listdir(d):
        role = name.split(".")[0]
        if role not in sites or not name.endswith(".sites"):
            continue
        for line in open(os.path.join(d, name)):
            nbytes, _calls, key = line.rstrip("\n").split(" ", 2)
            sites[role][key] = sites[role].get(key, 0) + int(nbytes)
    return sites


def resolve(keys):
    """Each site ("OBJECT OFFSET" per return address, innermost first) as (function,
    file:line) of the innermost frame in Zebra's own code (addr2line, inlined frames
    included), else of the innermost frame with a name."""
    by_obj, frames = {}, {}
    for k in keys:
        parts = k.split()
        for obj, off in zip(parts[0::2], parts[1::2]):
            by_obj.setdefault(obj, set()).add(off)
    for obj, offs in by_obj.items():
        offs = sorted(offs)
        r = subprocess.run(["addr2line", "-a", "-f", "-i", "-C", "-e", obj] + offs, capture_output=True, text=True)
        cur, lines, i = None, r.stdout.splitlines(), 0
        while i < len(lines):
            if re.fullmatch(r"0x[0-9a-f]+", lines[i]):
                cur = (obj, int(lines[i], 16))
                frames[cur] = []
                i += 1
                continue
            if cur is not None and i + 1 < len(lines):
                frames[cur].append((lines[i], lines[i + 1].split(" (discriminator")[0]))
            i += 2
    out = {}
    for k in keys:
        parts = k.split()
        fs = [f for obj, off in zip(parts[0::2], parts[1::2]) for f in frames.get((obj, int(off, 16)), [])]
        ours = [f for f in fs if "/rust/zebra-" in f[1] or "/cpp-shim/" in f[1]]
        # Else the function the first return address is in (the outermost of its inlined
        # frames), e.g. BTreeMap's remove for its node's memmove.
        first = [f for f in frames.get((parts[0], int(parts[1], 16)), []) if f[0] != "??"]
        func, loc = ours[0] if ours else first[-1] if first else (os.path.basename(parts[0]) + " " + parts[1], "?")
        if len(func) > 90:
            func = func[:87] + "..."
        loc = re.sub(r"^.*?/((rust|cpp-shim)/)", r"\1", loc)
        out[k] = (re.sub(r"::h[0-9a-f]{16}$", "", func), loc)
    return out


def copy_sites(runs, configs, a, b, per, top):
    """Markdown: memcpy'd bytes per push by call site, each build's minus nothing (sites of
    the client are the same in every build), the `top` largest of any build."""
    lines = []
    for role in ("worker", "server"):
        rows = {}
        for config in configs:
            name = config["name"]
            at = {n: [r for r in runs if r["config"] == name and r["rounds"] == n] for n in (a, b)}
            dp = statistics.mean(r["pushes"] for r in at[b]) - statistics.mean(r["pushes"] for r in at[a])
            keys = set().union(*(r["sites"][role] for r in at[a] + at[b]))
            names = resolve(keys)
            for k in keys:
                m = {n: statistics.mean(r["sites"][role].get(k, 0) for r in at[n]) for n in (a, b)}
                func, loc = names[k]
                row = rows.setdefault(func, {})
                v, locs = row.get(name, (0.0, set()))
                row[name] = (v + (m[b] - m[a]) / dp, locs | {loc})
        order = sorted(rows, key=lambda f: -max(abs(v) for v, _ in rows[f].values()))[:top]
        names = [c["name"] for c in configs]
        lines += ["", f"memcpy'd bytes per push by call site, {role}s (the innermost frame in Zebra's code; "
                  "in parentheses: copies of the push's value bytes)", "",
                  "| function | " + " | ".join(names) + " | where |", "|---|" + "---:|" * len(names) + "---|"]
        for f in order:
            cells = []
            for n in names:
                v = rows[f].get(n, (0.0, set()))[0]
                cells.append(f"{v:.0f} ({v / per[n]['value_bytes']:.2f})" if abs(v) >= 1 else "-")
            where_ = "; ".join(f"{n}: {', '.join(sorted(l for l in rows[f][n][1] if l.startswith(('rust/', 'cpp-shim/'))))}"
                               for n in names if n in rows[f] and any(l.startswith(("rust/", "cpp-shim/")) for l in rows[f][n][1]))
            lines.append(f"| `{f}` | " + " | ".join(cells) + f" | {where_} |")
    return "\n".join(lines)


def run_job(args, config, rounds, rep, counter, trace, keys, heaptrack=None):
    """One job; with `heaptrack` (a directory), its first worker and first server run
    under heaptrack (recording there) instead of being counted."""
    name = f"{config['name']}-r{rounds}-{rep}" + ("-heaptrack" if heaptrack else "")
    logdir, countdir = os.path.join(args.out, name, "logs"), os.path.join(args.out, name, "counts")
    os.makedirs(countdir, exist_ok=True)
    for f in os.listdir(countdir):
        os.remove(os.path.join(countdir, f))
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "pslaunch.py"), "--servers", str(SERVERS),
           "--workers", str(WORKERS), "--timeout", str(args.timeout), "--logdir", logdir, "--quiet",
           "--env", f"ALLOCCOUNT_DIR={countdir}", "--env", "ALLOCCOUNT_SITE_BYTES=16384"]
    env = clean_env()
    if config["root"] is None:
        cmd += ["--preload", counter]
    else:
        dist = os.path.join(config["root"], "dist")
        conf = config["conf"]
        zebra = os.path.join(dist, "bin", "zebra")
        stats = os.path.join(logdir, "stats")
        os.makedirs(stats, exist_ok=True)
        cmd += ["--preload", f"{os.path.join(dist, 'lib', 'libzmq.so.5')}:{counter}",
                "--env", "ZEBRA_ENABLE=1", "--env", "ZEBRA_SWITCH={ip:switch}:{port:switch}",
                "--env", f"ZEBRA_HOT_KEYS={keys}", "--env", f"ZEBRA_HOT_CONFIG={conf}", "--env", "ZEBRA_HOT_LOSS=0",
                "--env", f"ZEBRA_STATS={stats}/%p",
                "--service", f"switch={zebra} switch --config {conf} --listen {{ip:switch}}:{{port:switch}} "
                             f"--workers {{workers}} --servers {{servers}} --hot-keys {keys} --loss 0"]
    cmd += ["--"]
    if heaptrack:
        os.makedirs(heaptrack, exist_ok=True)
        cmd += ["sh", "-c", HEAPTRACK_WRAPPER, "heaptrack-wrapper", heaptrack]
    cmd += [os.path.join(args.bin_dir, "trace_replay"), f"--trace={trace}", "--check=end", f"--rounds={rounds}"]
    t0 = time.monotonic()
    r = subprocess.run(["nice", "-n", "19"] + cmd, env=env, capture_output=True, text=True)
    secs = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"bench-allocs: {name} failed: {(r.stdout + r.stderr).strip()[-600:]}")
    pushes = values = 0
    for i in range(WORKERS):
        m = WORKER_OK.search(open(os.path.join(logdir, f"worker-{i}.log")).read())
        if not m or int(m.group(1)) != rounds:
            sys.exit(f"bench-allocs: {name}: worker {i} did not report OK for {rounds} rounds; logs in {logdir}")
        pushes += rounds
        values += int(m.group(3))
    for i in range(SERVERS):
        if not REPLAY_SERVER_OK.search(open(os.path.join(logdir, f"server-{i}.log")).read()):
            sys.exit(f"bench-allocs: {name}: server {i} reported errors; logs in {logdir}")
    hot = ""
    if config["root"] is not None:
        h = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "lib", "hotpath.py"), "check", logdir],
                           capture_output=True, text=True)
        hot = (h.stdout + h.stderr).strip().splitlines()[-1:] or [""]
        hot = hot[0]
        if h.returncode != 0:
            sys.exit(f"bench-allocs: {name}: the job did not aggregate: {hot}")
    if heaptrack:
        return {"rounds": rounds, "pushes": pushes, "sites": {role: heaptrack_sites(heaptrack, role)
                                                              for role in ("worker", "server")}}
    run = {"config": config["name"], "rounds": rounds, "rep": rep, "pushes": pushes, "values": values,
           "seconds": round(secs, 1), "hotpath": hot, "counts": read_counts(countdir),
           "sites": read_sites(countdir)}
    print(f"  {name}: {secs:.1f} s, workers {run['counts']['worker']}, servers {run['counts']['server']}"
          + (f"; {hot}" if hot else ""), file=sys.stderr)
    return run


# Runs the node's command under heaptrack for the first worker and the first server to
# start (a lock directory each), the others as they are: $1 is the output directory.
HEAPTRACK_WRAPPER = r"""
out=$1; shift
case "$DMLC_ROLE" in
  worker|server) if mkdir "$out/$DMLC_ROLE.lock" 2>/dev/null; then exec heaptrack -o "$out/$DMLC_ROLE" "$@"; fi ;;
esac
exec "$@"
"""


def heaptrack_sites(d, role):
    """Calls to allocation functions in heaptrack's recording of the `role` process, by the
    innermost frame of Zebra's own code (a function of a zebra_* crate) on the stack;
    allocations with no Zebra frame (the client's, PS-lite's, libstdc++'s) under one key."""
    data = [f for f in os.listdir(d) if f.startswith(role + ".") and not f.endswith(".lock")]
    if len(data) != 1:
        sys.exit(f"bench-allocs: no single heaptrack recording of the {role} in {d}: {data}")
    stacks = os.path.join(d, role + ".stacks")
    sh(["heaptrack_print", "-f", os.path.join(d, data[0]), "--flamegraph-cost-type", "allocations", "-F", stacks])
    sites = {}
    for line in open(stacks):
        stack, _, n = line.rstrip().rpartition(" ")
        ours = [f for f in stack.split(";") if f.startswith(("zebra_", "<zebra_"))]
        key = re.sub(r"::h[0-9a-f]{16}", "", ours[-1]).replace("_$u7b$$u7b$closure$u7d$$u7d$", "{{closure}}") \
            if ours else "(no Zebra frame: the client, PS-lite, libstdc++)"
        sites[key] = sites.get(key, 0) + int(n)
    return sites


def where(args, configs, counter, trace, keys, a, b):
    """Markdown: each build's allocations per push by Zebra function (heaptrack, the slope
    between the two job lengths), worker 0 per push of its own, server 0 per push it got."""
    lines = []
    for config in configs[1:]:
        at = {}
        for rounds in (a, b):
            d = os.path.join(args.out, f"{config['name']}-r{rounds}-0-heaptrack", "heaptrack")
            if os.path.isdir(d):
                for f in os.listdir(d):
                    p = os.path.join(d, f)
                    os.rmdir(p) if os.path.isdir(p) else os.remove(p)
            at[rounds] = run_job(args, config, rounds, 0, counter, trace, keys, heaptrack=d)
        for role, per in (("worker", 1), ("server", WORKERS)):
            da, db = at[a]["sites"][role], at[b]["sites"][role]
            pushes = (b - a) * per
            rows = sorted(((db.get(k, 0) - da.get(k, 0)) / pushes, k) for k in set(da) | set(db))
            rows = [r for r in rows[::-1] if abs(r[0]) >= 0.5][: args.where]
            lines += ["", f"{config['name']}, {role} 0: allocations per push by the innermost Zebra function "
                      f"(heaptrack, {a} and {b} rounds)", "", "| allocations / push | function |", "|---:|---|"]
            lines += [f"| {n:.1f} | `{k}` |" for n, k in rows]
    return "\n".join(lines)


def slopes(runs, config, a, b):
    """Per push: (mean at b - mean at a) / (pushes at b - pushes at a), per role and counter,
    and the value bytes of a push."""
    at = {n: [r for r in runs if r["config"] == config and r["rounds"] == n] for n in (a, b)}
    mean = lambda n, f: statistics.mean(f(r) for r in at[n])  # noqa: E731
    dp = mean(b, lambda r: r["pushes"]) - mean(a, lambda r: r["pushes"])
    out = {"value_bytes": 4 * (mean(b, lambda r: r["values"]) - mean(a, lambda r: r["values"])) / dp}
    for role in ("worker", "server"):
        out[role] = {c: (mean(b, lambda r: r["counts"][role][c]) - mean(a, lambda r: r["counts"][role][c])) / dp
                     for c in COUNTERS}
    return out


def table(per, builds, command):
    base = per["libzmq"]
    lines = [f"Per push of one worker (A push: {base['value_bytes']:.0f} value bytes on average). Zebra's share = the "
             "build's count minus the same job's on the real libzmq alone; copies = memcpy/memmove bytes "
             "per value byte of the push.", "",
             "| build | side | allocations / push | bytes allocated / push | memcpy calls / push "
             "| memcpy'd bytes / push | copies of the values (memcpy'd bytes / value bytes) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name in ["libzmq"] + builds:
        for role in ("worker", "server"):
            s = per[name][role]
            if name != "libzmq":
                s = {c: s[c] - base[role][c] for c in COUNTERS}
                label = f"{name} (Zebra's share)"
            else:
                label = "libzmq (the client's own)"
            lines.append(f"| {label} | {role} | {s['allocs']:.1f} | {s['alloc_bytes']:.0f} | {s['copies']:.1f} "
                         f"| {s['copy_bytes']:.0f} | {s['copy_bytes'] / per[name]['value_bytes']:.2f} |")
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", action="append", default=[], metavar="NAME=ROOT",
                   help="a build to measure (default: this=this checkout)")
    p.add_argument("--rounds", default="20,80", help="the two job lengths A,B in rounds (default 20,80)")
    p.add_argument("--reps", type=int, default=2, help="runs of each length and configuration (default 2)")
    p.add_argument("--out", default=os.path.join(ROOT, "results", "allocs"), help="logs and results (default results/allocs)")
    p.add_argument("--bin-dir", default=os.environ.get("PSLITE_BIN_DIR", os.path.join(ROOT, ".build", "byteps-pslite", "tests")),
                   help="BytePS PS-lite test binaries (default $PSLITE_BIN_DIR or .build/byteps-pslite/tests)")
    p.add_argument("--timeout", type=int, default=300, help="seconds before a job is killed (default 300)")
    p.add_argument("--sites", type=int, default=12, metavar="N",
                   help="the N call sites of memcpy/memmove that copy most per push (default 12)")
    p.add_argument("--where", type=int, default=0, metavar="N",
                   help="also run each build once more at both lengths with heaptrack on worker 0 and server 0, "
                        "and print the N Zebra functions that allocate most per push (default 0: not)")
    args = p.parse_args()
    a, b = (int(x) for x in args.rounds.split(","))
    if not 0 < a < b:
        p.error("--rounds A,B needs 0 < A < B")
    builds = []
    for spec in args.build or [f"this={ROOT}"]:
        name, sep, root = spec.partition("=")
        if not sep or name == "libzmq":
            p.error(f"--build {spec}: NAME=ROOT, NAME not libzmq")
        for f in ("dist/lib/libzmq.so.5", "dist/bin/zebra"):
            if not os.path.exists(os.path.join(root, f)):
                p.error(f"--build {spec}: no {root}/{f} (run scripts/setup.sh --prefix {root}/dist there)")
        confs = [os.path.join(root, f) for f in SUITE_CONFS if os.path.exists(os.path.join(root, f))]
        if not confs:
            p.error(f"--build {spec}: no {root}/{SUITE_CONFS[0]}")
        builds.append({"name": name, "root": os.path.abspath(root), "conf": os.path.abspath(confs[0])})
    os.makedirs(args.out, exist_ok=True)
    counter = build_counter(args.out)
    trace, keys = make_workload(os.path.join(builds[-1]["root"], "dist", "bin", "zebra"), args.out, b)
    configs = [{"name": "libzmq", "root": None}] + builds
    runs = []
    for rep in range(args.reps):
        # Alternating the configurations within a repetition spreads drift of the machine.
        for config in configs if rep % 2 == 0 else configs[::-1]:
            for rounds in (a, b):
                runs.append(run_job(args, config, rounds, rep, counter, trace, keys))
    json.dump(runs, open(os.path.join(args.out, "runs.json"), "w"), indent=1)
    per = {c["name"]: slopes(runs, c["name"], a, b) for c in configs}
    command = "scripts/bench-allocs.py " + " ".join(sys.argv[1:])
    text = table(per, [c["name"] for c in builds], command.strip())
    text += "\n" + copy_sites(runs, configs, a, b, per, args.sites)
    if args.where:
        text += "\n" + where(args, configs, counter, trace, keys, a, b)
    open(os.path.join(args.out, "allocs.md"), "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
