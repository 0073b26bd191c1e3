#!/usr/bin/env python3
"""Checks the JSON Lines that ZEBRA_STATS_INTERVAL makes each process write (docs/METRICS.md,
"Watching a process").

    statslines.py check DIR --processes N [--min-lines 2] [--hot]

DIR holds one ZEBRA_STATS file per process (ZEBRA_STATS=DIR/%p). Each must be JSON Lines of
the documented schema: at least --min-lines periodic lines (`seq` 1, 2, ... in order, `time`
never going back) and then exactly one final line; the call counters never go back and grow
from the first periodic line to the final one. With --hot, every worker's and server's lines
carry the hot path's counters, which never go back and grow too (its agent's `messages`).
Prints one problem a line and exits 1 when there is any; 0 and a summary line otherwise.
"""
import argparse
import json
import os
import sys

MEMBERS = {"pid": int, "time": (int, float), "final": bool, "mode": str,
           "real_libzmq": str, "found_by": str, "calls": dict}
GAUGES = {"srtt_us", "unsettled_rounds"}  # may go down


def leaves(value, path=()):
    """The numeric leaves of a JSON value, by path."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, path + (str(i),))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def check_file(path, min_lines, hot):
    """The problems of one process's file."""
    name = os.path.basename(path)
    problems = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.endswith("\n"):
        problems.append(f"{name}: does not end with a whole line")
    lines = []
    for n, raw in enumerate(text.splitlines(), 1):
        try:
            line = json.loads(raw)
        except ValueError as e:
            problems.append(f"{name}:{n}: not JSON ({e}): {raw[:80]}")
            continue
        if not isinstance(line, dict):
            problems.append(f"{name}:{n}: not a JSON object")
            continue
        for key, kind in MEMBERS.items():
            if not isinstance(line.get(key), kind):
                problems.append(f"{name}:{n}: member {key} missing or not {kind}")
        if "hot" not in line:
            problems.append(f"{name}:{n}: member hot missing")
        if name.isdigit() and line.get("pid") != int(name):
            problems.append(f"{name}:{n}: pid {line.get('pid')} is not the file's")
        lines.append(line)
    if problems:
        return problems
    periodic = [l for l in lines if not l["final"]]
    finals = [l for l in lines if l["final"]]
    if len(finals) != 1 or not lines[-1]["final"]:
        problems.append(f"{name}: {len(finals)} final lines, expected one, the last")
    if len(periodic) < min_lines:
        problems.append(f"{name}: {len(periodic)} periodic lines, expected at least {min_lines}")
        return problems
    seqs = [l.get("seq") for l in periodic]
    if seqs != list(range(1, len(periodic) + 1)):
        problems.append(f"{name}: seq {seqs}, expected 1..{len(periodic)}")
    times = [l["time"] for l in lines]
    if times != sorted(times):
        problems.append(f"{name}: time goes back: {times}")
    for before, after in zip(lines, lines[1:]):
        for fn, n in before["calls"].items():
            if after["calls"].get(fn, 0) < n:
                problems.append(f"{name}: calls of {fn} went back from {n} to {after['calls'].get(fn, 0)}")
        if hot and before["hot"] and after["hot"]:
            now = dict(leaves(after["hot"]))
            for leaf, n in leaves(before["hot"]):
                if leaf[-1] not in GAUGES and now.get(leaf, n) < n:
                    problems.append(f"{name}: hot {'.'.join(leaf)} went back from {n} to {now.get(leaf)}")
    first, last = periodic[0], lines[-1]
    if sum(last["calls"].values()) <= sum(first["calls"].values()):
        problems.append(f"{name}: the call counters did not grow after the first line")
    if hot and first["mode"] == "on" and last["hot"] is not None:
        for side in ("worker", "server"):
            a = (first["hot"] or {}).get(side, {}).get("agent", {}).get("messages")
            b = (last["hot"] or {}).get(side, {}).get("agent", {}).get("messages")
            if b is not None and (a is None or b <= a):
                problems.append(f"{name}: hot {side} agent messages did not grow ({a} then {b})")
    return problems


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--processes", type=int, required=True)
    c.add_argument("--min-lines", type=int, default=2)
    c.add_argument("--hot", action="store_true", help="workers and servers carry hot counters")
    args = ap.parse_args(argv)
    files = sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir) if not f.startswith("."))
    problems = []
    if len(files) != args.processes:
        problems.append(f"{len(files)} statistics files in {args.dir}, expected {args.processes}")
    hot_files = 0
    for path in files:
        problems += check_file(path, args.min_lines, args.hot)
        try:
            with open(path, encoding="utf-8") as f:
                last = json.loads(f.read().splitlines()[-1])
            hot_files += bool(last.get("hot"))
        except (ValueError, IndexError):
            pass
    if args.hot and hot_files == 0:
        problems.append("no process carried hot-path counters")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"statslines: {len(files)} processes, every one wrote >= {args.min_lines} periodic lines "
          f"and a final one; counters grew ({hot_files} with hot-path counters)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
