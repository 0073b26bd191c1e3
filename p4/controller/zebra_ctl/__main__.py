"""python3 -m zebra_ctl: load a job into the switch and run its CPU part.

    python3 -m zebra_ctl --config hot.conf --ports ports.conf --dry-run
        check the job against the P4 program, print what would be written
    python3 -m zebra_ctl --config hot.conf --ports ports.conf --backend grpc \\
            --grpc-addr localhost:50052 --cpu-iface bf_pci0
        load it and run until SIGINT/SIGTERM, printing the counters at the end

The settings are `zebra switch`'s: read and checked by running
`zebra switch --plan` (--zebra PATH, else $ZEBRA_BIN, else zebra on PATH, else
the repository's target/release/zebra); a bad setting is reported in its words.

Exit codes: 0 done, 2 bad settings, ports or job (every problem listed).
"""

import argparse
import signal
import sys
import time

from .backend import FakeBackend
from .controller import Controller, DEFAULT_GRACE_US
from .plan import PlanError
from .ports import PortsConfig, PortsError
from .settings import SettingsError, load
from . import program as P


def main(argv=None):
    p = argparse.ArgumentParser(prog="zebra_ctl", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the hot-path settings file (the one `zebra switch` reads)")
    p.add_argument("--ports", required=True, help="the switch's ports file (CPU and recirculation ports, routes)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting of the file (passed to zebra switch as --KEY=VALUE)")
    p.add_argument("--zebra", metavar="PATH",
                   help="the zebra binary that reads the settings [default: $ZEBRA_BIN, zebra on PATH, target/release/zebra]")
    p.add_argument("--build", choices=["fixed", "lns"], default="fixed", help="the P4 build loaded: fixed (default) or lns (-DZEBRA_LNS)")
    p.add_argument("--lns-frac-bits", type=int, help="lns build: the scale of the sums (values are summed as round(x * 2^F))")
    p.add_argument("--grace-us", type=int, default=DEFAULT_GRACE_US, help="wait after a FLUSH before reading the round out")
    p.add_argument("--backend", choices=["fake", "grpc"], default="fake")
    p.add_argument("--grpc-addr", default="localhost:50052")
    p.add_argument("--program", default="zebra")
    p.add_argument("--cpu-iface", help="the Linux interface of the switch's CPU port")
    p.add_argument("--dry-run", action="store_true", help="check and print the entries, do not run")
    args = p.parse_args(argv)

    try:
        hotpath = load(args.config, args.set, args.zebra)
    except SettingsError as e:
        print(e.message, file=sys.stderr)
        return e.code
    try:
        ports = PortsConfig.load(args.ports)
    except PortsError as e:
        print(e, file=sys.stderr)
        return 2

    if args.backend == "grpc" and not args.dry_run:
        from .grpc_backend import GrpcBackend

        backend = GrpcBackend(args.grpc_addr, args.program, args.cpu_iface)
    else:
        backend = FakeBackend(P.REGISTER_SIZES)
    ctl = Controller(backend, grace_us=args.grace_us)
    try:
        plan = ctl.load(hotpath, ports, args.build, args.lns_frac_bits)
    except PlanError as e:
        print(e, file=sys.stderr)
        return 2

    if ctl.admitting:
        print(f"no job loaded: jobs are admitted as their servers register (the template: "
              f"{plan.job.number}, layout {plan.job.layout}), retired after "
              f"{hotpath.job_silence_us / 1e6:.1f} s without a REGISTER; build {plan.build}")
    for plan in ctl.plans.values():
        job = plan.job
        print(
            f"job {job.id}: {job.workers} workers, {job.servers} servers, {job.hot_keys} hot keys in "
            f"{plan.region_slots} rows x {P.R} registers from row {plan.region_base}, {plan.copies} copies, "
            f"build {plan.build}"
        )
    if args.dry_run:
        for table in sorted(backend.tables):
            entries = backend.tables[table]
            if entries:
                print(f"  {table}: {len(entries)} entries")
        for table, (action, data) in sorted(backend.defaults.items()):
            print(f"  {table}: default {action}({', '.join(f'{k}={v}' for k, v in data.items())})")
        for sid, (port, max_len) in sorted(backend.sessions.items()):
            print(f"  mirror session {sid}: port {port}, max_len {max_len}")
        return 0

    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    start = time.monotonic()
    while not stop:
        ctl.step(int((time.monotonic() - start) * 1e6))
        time.sleep(0.0002)
    for name, (ingress, egress) in ctl.counters().items():
        print(f"  {name:<24} {ingress:>12} {egress:>12}")
    print(f"  parts {ctl.store.parts} sent, {ctl.store.retransmits} resent, {ctl.store.acked} acked, "
          f"{len(ctl.store.pending)} pending, {ctl.store.abandoned} abandoned, {ctl.unroutable} unroutable")
    if ctl.admitting:
        print(f"  jobs: {ctl.admitted} admitted, {ctl.retired} retired, {len(ctl.plans)} held; "
              f"{sum(ctl.admission_refused.values())} REGISTERs refused admission")
        for reason, n in ctl.admission_refused.most_common():
            print(f"    {n:>8}  {reason}")
    w = ctl.worker_check
    print(f"  members: {w.pins} workers pinned, {w.pin_refused} digests of a pinned worker from elsewhere, "
          f"{w.refused_rank} of a rank the job does not have")
    r = ctl.replicate
    print(f"  pull half: {r.learned} workers learned, {r.moved} moved, {r.repeated} repeated digests, "
          f"{r.refused + ctl.bad_digests} refused, {r.unroutable} servers without a route")
    return 0


if __name__ == "__main__":
    sys.exit(main())
