#!/usr/bin/env python3
"""Helpers of the `on+switch` suites: hot-keys files for our test apps, and the check
that a job really aggregated in the network.

  hotpath.py exact-sums --servers S --keys K --val-len V > hot.keys
      exact_sums's keys that every worker pushes (index mod 4 == 0), in phases 1 and 3
      (fixed val_len V); phase 2 varies its lengths and stays cold. Key layout: tests/pslite-app/README.md.
  hotpath.py mxnet --servers S --key K:VALUES [--key ...] > hot.keys
      MXNet kvstore_dist's PS-lite key of a small dense array with int key K and VALUES
      float32 values (EncodeDefaultKey: server (K * 9973) mod S, key = its range start + K).
  hotpath.py check LOGDIR
      Reads the switch's log (LOGDIR/switch.log) and the shim's statistics files
      (LOGDIR/stats/*): fails unless the switch added pairs, no server lost a value or
      forced an unsettled request, and the servers received fewer hot bytes (trailers
      listing the hot keys, SETTLE messages, aggregates over UDP) than the hot entries of
      the same pushes whole. Prints the numbers, and all bytes of the split pushes.
  hotpath.py precision --full FULL.keys --servers S ONLINE-0.keys ... ONLINE-(S-1).keys
      The online decisions (online_out files of ZEBRA_HOT=online, one per server in rank
      order) against the hot set of all the data (FULL.keys from `zebra profile` over the
      whole trace, hottest first): per server, the share of the full data's top k of that
      server's keys that the online set holds, k its size. Fails unless every server
      changed its keys and reached --min.
"""

import argparse
import glob
import os
import re
import sys

U64_MAX = (1 << 64) - 1
KEY_INDEX_BITS = 24


def range_start(server, servers):
    return U64_MAX // servers * server


def exact_sums(args):
    print(f"# exact_sums hot keys: {args.servers} servers, {args.keys} keys, val_len {args.val_len}")
    for phase in (1, 3):
        for idx in range(args.keys):
            if idx % 4 != 0:
                continue
            server = (idx // 8) % args.servers
            key = range_start(server, args.servers) + (phase << KEY_INDEX_BITS) + idx
            print(f"{key} {args.val_len}")


def mxnet(args):
    print(f"# MXNet dist_sync dense keys: {args.servers} servers")
    for spec in args.key:
        k, values = spec.split(":")
        k, values = int(k), int(values)
        server = (k * 9973) % args.servers
        print(f"{range_start(server, args.servers) + k} {values}")


FIELD = r"\b{}: (\d+)"


def field(text, name):
    return sum(int(v) for v in re.findall(FIELD.format(name), text))


def push_bytes(logdir):
    """What the switch summed and what the pushes cost the servers, from LOGDIR/switch.log
    and the shim's statistics files (LOGDIR/stats/*): a dict, and the problems found."""
    problems = []
    try:
        with open(os.path.join(logdir, "switch.log")) as f:
            sw = f.read()
    except OSError as e:
        sw = ""
        problems.append(f"no switch log: {e}")
    added = re.findall(r"added\s+(\d+) packets, (\d+) pairs", sw)
    pairs = int(added[-1][1]) if added else 0
    if pairs == 0:
        problems.append("the switch added no pair: nothing was aggregated")
    stats = ""
    for path in glob.glob(os.path.join(logdir, "stats", "*")):
        with open(path) as f:
            stats += f.read()
    workers = [l for l in stats.splitlines() if "WorkerAgentStats" in l]
    servers = [l for l in stats.splitlines() if "ServerAgentStats" in l]
    links = [l for l in stats.splitlines() if l.strip().startswith("link: ServerLinkStats")]
    if not workers or not servers:
        problems.append("no hot-path statistics from the workers or servers (ZEBRA_STATS)")
    whole = sum(field(l, "bytes_before") for l in workers)
    split = sum(field(l, "bytes_after") + field(l, "settle_bytes") for l in workers)
    udp = sum(field(l, "rx_bytes") for l in links)
    # Aggregate parts the switch sent again although the first copy arrived (the server
    # counts them as duplicates): their share of the datagrams, to show the bytes without.
    parts, dups = sum(field(l, "parts") for l in links), sum(field(l, "duplicate_parts") for l in links)
    udp_first = round(udp * (parts - dups) / parts) if parts else udp
    # Hot bytes: the hot entries the pushes carried whole, against what replaced them
    # (the trailer listing the hot keys, the SETTLE messages, the aggregates over UDP).
    trailers = sum(field(l, "trailer_bytes") for l in workers)
    hot_whole = whole - sum(field(l, "bytes_after") for l in workers) + trailers
    hot_switch = trailers + sum(field(l, "settle_bytes") for l in workers) + udp
    lost = sum(field(l, "lost_values") + field(l, "forced") for l in servers)
    if lost:
        problems.append(f"servers lost {lost} values or forced {lost} unsettled requests")
    return {"pairs": pairs, "whole": whole, "split": split, "udp": udp, "udp_first": udp_first,
            "hot_whole": hot_whole, "hot_switch": hot_switch}, problems


def read_keys(path):
    """(header comment lines, [key, ...] hottest first) of a hot-keys file."""
    header, keys = [], []
    with open(path) as f:
        for line in f:
            text = line.strip()
            if text.startswith("#"):
                header.append(text)
                continue
            first = text.split("#", 1)[0].split()
            if not first:
                continue
            if "-" in first[0]:
                a, b = (int(x) for x in first[0].split("-"))
                keys.extend(range(a, b + 1))
            else:
                keys.append(int(first[0]))
    return header, keys


def precision(args):
    _, full = read_keys(args.full)
    step = U64_MAX // args.servers
    failed = False
    if len(args.online) != args.servers:
        print(f"hotpath precision: {len(args.online)} online files for {args.servers} servers", file=sys.stderr)
        return 1
    for server, path in enumerate(args.online):
        try:
            header, keys = read_keys(path)
        except OSError as e:
            print(f"hotpath precision: server {server}: {e}", file=sys.stderr)
            failed = True
            continue
        mine = [k for k in full if k // step == server][: len(keys)]
        found = len(set(mine) & set(keys)) / len(mine) if mine else 0.0
        changed = any(" changed " in h for h in header)
        print(f"server {server}: {'changed' if changed else 'kept'} its hot keys: {len(keys)} keys, "
              f"precision {100 * found:.1f} % against the full data's top {len(mine)}")
        if not changed or found < args.min:
            print(f"hotpath precision: server {server} below {100 * args.min:.0f} % or unchanged", file=sys.stderr)
            failed = True
    return 1 if failed else 0


def check(args):
    b, problems = push_bytes(args.logdir)
    pairs, whole, split, udp = b["pairs"], b["whole"], b["split"], b["udp"]
    hot_whole, hot_switch = b["hot_whole"], b["hot_switch"]
    ingress = split + udp
    ratio = ingress / whole if whole else float("nan")
    hot_ratio = hot_switch / hot_whole if hot_whole else float("nan")
    print(f"switch: {pairs} pairs added; hot bytes at the servers: {hot_switch} with the switch "
          f"vs {hot_whole} in the whole pushes ({hot_ratio:.2f}x); all bytes of the split "
          f"pushes: {ingress} ({split} over ZeroMQ + {udp} over UDP) vs {whole} ({ratio:.2f}x)")
    if hot_whole and hot_switch >= hot_whole:
        problems.append(f"the servers received {hot_switch} hot bytes, not fewer than {hot_whole} without the switch")
    for p in problems:
        print(f"hotpath check: {p}", file=sys.stderr)
    return 1 if problems else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("exact-sums")
    e.add_argument("--servers", type=int, required=True)
    e.add_argument("--keys", type=int, default=48)
    e.add_argument("--val-len", type=int, default=4)
    m = sub.add_parser("mxnet")
    m.add_argument("--servers", type=int, required=True)
    m.add_argument("--key", action="append", required=True, help="K:VALUES")
    c = sub.add_parser("check")
    c.add_argument("logdir")
    r = sub.add_parser("precision")
    r.add_argument("--full", required=True)
    r.add_argument("--servers", type=int, required=True)
    r.add_argument("--min", type=float, default=0.8, help="lowest precision that passes (0..1)")
    r.add_argument("online", nargs="+")
    args = p.parse_args()
    if args.cmd == "exact-sums":
        exact_sums(args)
    elif args.cmd == "mxnet":
        mxnet(args)
    elif args.cmd == "precision":
        return precision(args)
    else:
        return check(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
