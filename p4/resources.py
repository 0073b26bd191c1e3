#!/usr/bin/env python3
"""Resource model of the P4 program on one Tofino 1 pipe, computed from the sources.

Parses p4/zebra.p4 and its includes (p4/fit/p4parse.py), elaborates the two
gresses (p4/fit/model.py) and estimates PHV containers, MAU stages, SRAM/TCAM
blocks, stateful and stats ALUs and hash slices against Tofino 1's public
limits (p4/fit/tofino.py), plus the recirculation a round costs. Prints one
table (markdown) with every assumption and exits 1 if a resource is over its
limit. An estimate: the program has never been compiled.

    python3 p4/resources.py                 # the default build
    python3 p4/resources.py -D ZEBRA_LNS    # the table-lookup float build
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fit import analysis, model, p4parse, tofino  # noqa: E402


def report(res, out, workload):
    out.write("| resource | used | Tofino 1 limit | fits | note |\n|---|---|---|---|---|\n")
    for name, used, limit, unit, ok, note in res.rows:
        u = f"{used} {unit}".strip()
        out.write(f"| {name} | {u} | {limit} | {'yes' if ok else '**NO**'} | {note} |\n")
    p = res.details.get("passes")
    if p:
        out.write(
            f"\nRecirculation and resubmission ({p['keys']} hot keys, {p['workers']} workers, "
            f"{workload['packet']}-byte packets, {p['pairs']} pairs a pass, R = {p['registers']}):\n\n"
            f"- a HOT packet packed without register conflicts (strict packing: at most {p['per_packet']} pairs): "
            f"1 pass, none recirculated;\n"
            f"- a packet whose pairs share a register: 1 resubmission + up to {p['pairs']} recirculated passes;\n"
            f"- a round: {p['hot_packets']} HOT packets ({p['hot_bytes']} B) in, and {p['readout_passes']} "
            f"recirculated CLOSE/READOUT passes ({p['readout_bytes']} B, "
            f"{100.0 * p['readout_bytes'] / max(1, p['hot_bytes']):.1f} % of the round's HOT bytes) to read it out.\n")
    out.write("\nAssumptions:\n\n")
    for a in model.ASSUMPTIONS:
        out.write(f"- {a}\n")
    out.write("\nLimits from:\n\n")
    for what, src in tofino.SOURCES:
        out.write(f"- {what}: {src}\n")
    out.write(f"\n{'FITS' if res.fits else 'DOES NOT FIT'} (estimate; never compiled)\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Exit status: 0 if every resource is within its limit, 1 if not, "
                                        "2 if the sources use P4 the parser does not understand.")
    ap.add_argument("program", nargs="?", default=os.path.join(HERE, "zebra.p4"), help="top-level P4 file")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME",
                    help="define NAME for #ifdef (e.g. ZEBRA_LNS)")
    ap.add_argument("--keys", type=int, default=30000, help="hot keys of the example round (default 30000)")
    ap.add_argument("--workers", type=int, default=8, help="workers of the example round (default 8)")
    ap.add_argument("--packet", type=int, default=192, help="HOT packet size in bytes (default 192)")
    args = ap.parse_args(argv)
    workload = {"keys": args.keys, "workers": args.workers, "packet": args.packet}
    try:
        prog = p4parse.parse_files([args.program], defines=set(args.defines))
        res, _ = analysis.analyse(prog, workload)
    except p4parse.P4Error as e:
        print(f"resources: {e}", file=sys.stderr)
        return 2
    report(res, sys.stdout, workload)
    return 0 if res.fits else 1


if __name__ == "__main__":
    sys.exit(main())
