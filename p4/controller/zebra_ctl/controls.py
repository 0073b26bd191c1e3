"""One class per P4 file (SwitchML's controller shape): each knows the
tables, registers and counters its file declares, what a job writes into
them, and how to clear them.

    parsers.p4       Parsers       the hot-path UDP port, the internal ports
    worker_check.p4  WorkerCheck   jobs, copy offsets, workers, the switch address; records
    round_state.p4   RoundState    round state, progress, completion, coverage
    accumulate.p4    Accumulate    the accumulators and their hit counters
    recirculate.p4   Recirculate   the popcount tables of the conflict check
    mirror_cpu.p4    MirrorCpu     CPU and recirculation ports, mirror sessions
    forward.p4       Forward       L2 routes
    lns/lns.p4       Lns           the float-to-fixed tables (ZEBRA_LNS build)
    zebra.p4         Stats         the ingress and egress statistics
"""

import ipaddress

from . import consts
from . import program as P
from .lns import lns_tables


class Control:
    tables = ()
    registers = ()
    counters = ()

    def __init__(self, backend):
        self.backend = backend

    def clear(self):
        for t in self.tables:
            self.backend.table_clear(t)
        for r in self.registers:
            self.backend.register_clear(r)
        for c in self.counters:
            self.backend.counter_clear(c)

    def entries(self, plan):
        """[(table, key, action, data)] the job needs."""
        return []

    def switch_entries(self, plan):
        """[(table, key, action, data)] the switch needs once, whatever its
        jobs (`plan`: any of them, for the settings they share)."""
        return []

    def install(self, plan):
        for table, key, action, data in self.entries(plan):
            self.backend.table_add(table, key, action, data)

    def install_switch(self, plan):
        for table, key, action, data in self.switch_entries(plan):
            self.backend.table_add(table, key, action, data)


class Parsers(Control):
    tables = (P.UDP_PORTS, P.INTERNAL_PORTS)

    def switch_entries(self, plan):
        ports = plan.ports
        return [
            (P.UDP_PORTS, {"f1": plan.hotpath.switch.port}, None, {}),
            (P.INTERNAL_PORTS, {"f1": ports.cpu_port}, None, {}),
            (P.INTERNAL_PORTS, {"f1": ports.recirc_port}, None, {}),
        ]


class WorkerCheck(Control):
    tables = (P.JOBS, P.COPY_OFFSETS, P.WORKERS, P.ADDRESSES)
    registers = (P.RECORDS,)

    def entries(self, plan):
        proto, job = plan.proto, plan.job
        out = []
        saturate = 0
        if plan.build == "lns":
            saturate = lns_tables(plan.lns_frac_bits).e_saturate
        out.append((
            P.JOBS,
            {"job_id": job.id},
            "set_job",
            {
                "index": plan.job_index,
                "workers": job.workers,
                "hot_keys": job.hot_keys,
                "max_udp_len": 8 + proto.packet_size,
                "max_seqs": proto.max_seqs,
                "fixed": plan.fixed_flag(),
                "copy_mask": proto.copies - 1,
                "region_base": plan.region_base,
                "readout_rows": plan.readout_rows,
                "lns_profile": 0,
                "lns_saturate": saturate,
            },
        ))
        for w in range(job.workers):
            for c in range(proto.copies):
                out.append((
                    P.WORKERS,
                    {"ig_md.job.index": plan.job_index, "hdr.hot.worker": w, "ig_md.copy": c},
                    "set_worker",
                    {"rec_base": plan.record_base_of(w, c), "cover_base": plan.cover_base_of(w, c)},
                ))
        return out

    def switch_entries(self, plan):
        proto = plan.proto
        out = [(P.COPY_OFFSETS, {"ig_md.copy": c}, "set_copy_offset", {"offset": c * proto.slots})
               for c in range(proto.copies)]
        ip = ipaddress.IPv4Address(plan.hotpath.switch.host)
        out.append((
            P.ADDRESSES,
            {"hdr.ipv4.dst_addr": (int(ip), 0xFFFFFFFF), "hdr.udp.dst_port": plan.hotpath.switch.port},
            "is_mine",
            {},
        ))
        return out


class RoundState(Control):
    registers = (P.ROUNDS, P.PROGRESS, P.DONE, P.COVER)

    def install(self, plan):
        for c in range(consts.P4_MAX_COPIES):
            self.backend.register_write(P.ROUNDS, P.round_state_index(plan.job_index, c), P.ROUND_STATE_INITIAL)

    def clear(self):
        super().clear()
        for i in range(P.REGISTER_SIZES[P.ROUNDS]):
            self.backend.register_write(P.ROUNDS, i, P.ROUND_STATE_INITIAL)

    def round_state(self, plan, copy):
        """(lo, hi) of the job's copy."""
        v = self.backend.register_read(P.ROUNDS, P.round_state_index(plan.job_index, copy))
        return v.get("lo", 0), v.get("hi", consts.ROUND_FREE)

    def coverage(self, plan, worker, copy, round_):
        """The coverage words of (worker, copy) that belong to `round_`, others as 0."""
        base = plan.cover_base_of(worker, copy)
        words = []
        for i in range(plan.cover_words):
            v = self.backend.register_read(P.COVER, base + i)
            words.append(v.get("bits", 0) if v.get("round", 0) == round_ else 0)
        return words


class Accumulate(Control):
    registers = tuple(P.sums(k) for k in range(P.R))
    counters = tuple(P.hits(k) for k in range(P.R))

    def hits(self, plan):
        """Pairs added per hot rank since the last reset (the switch's side of
        online hot-key ranking), summed over the copies."""
        out = [0] * plan.job.hot_keys
        for row in range(plan.region_slots):
            for k in range(P.R):
                rank = plan.rank_of(k, row)
                if rank is None:
                    continue
                for c in range(plan.copies):
                    entry = c * plan.proto.slots + plan.region_base + row
                    out[rank] += self.backend.counter_read(P.hits(k), entry)
        return out


class Recirculate(Control):
    tables = tuple(P.POPCOUNT)

    def switch_entries(self, plan):
        out = []
        for i, table in enumerate(P.POPCOUNT):
            field = f"routed[{8 * i + 7}:{8 * i}]"
            for n in range(256):
                out.append((table, {field: n}, f"count{i}", {"n": bin(n).count("1")}))
        return out


class MirrorCpu(Control):
    def clear(self):
        self.backend.table_set_default(P.PORTS, "set_ports", {"cpu_port": 0, "recirc_port": 0})
        self.backend.table_set_default(P.SESSIONS, "set_sessions", {"cpu_session": 0, "recirc_session": 0})

    def install_switch(self, plan):
        ports = plan.ports
        self.backend.table_set_default(
            P.PORTS, "set_ports", {"cpu_port": ports.cpu_port, "recirc_port": ports.recirc_port}
        )
        self.backend.table_set_default(
            P.SESSIONS, "set_sessions",
            {"cpu_session": ports.cpu_session, "recirc_session": ports.recirc_session},
        )
        self.backend.mirror_session(ports.cpu_session, ports.cpu_port, 0)
        self.backend.mirror_session(ports.recirc_session, ports.recirc_port, CLOSE_TRUNCATE)


# A CLOSE copy only needs its zebra_ctl_h; the session cuts the rest.
CLOSE_TRUNCATE = 64


class Forward(Control):
    tables = (P.L2,)

    def switch_entries(self, plan):
        return [(P.L2, {"hdr.ethernet.dst_addr": mac}, "to_port", {"port": port})
                for mac, port in sorted(plan.ports.routes.items())]


class Lns(Control):
    tables = tuple(P.LNS_TABLES)

    def switch_entries(self, plan):
        if plan.build != "lns":
            return []
        t = lns_tables(plan.lns_frac_bits)
        hi = sorted(t.hi_entries().items())
        lo = sorted(t.lo_entries().items())
        hi_field = f"value[22:{23 - t.hi_bits}]"
        lo_field = f"value[{22 - t.hi_bits}:{23 - t.hi_bits - t.lo_bits}]"
        out = []
        for k in range(P.R):
            for (e, m), v in hi:
                out.append((P.lns_hi(k), {"profile": 0, "exponent": e, hi_field: m}, "set_hi", {"v": v}))
            for (e, m), v in lo:
                out.append((P.lns_lo(k), {"profile": 0, "exponent": e, lo_field: m}, "set_lo", {"v": v & 0xFFFFFFFF}))
        return out


class Stats(Control):
    counters = (P.INGRESS_STATS, P.EGRESS_STATS)

    def read(self):
        """{name: (ingress, egress)} of every statistic, fallbacks by reason."""
        out = {}
        for i, name in enumerate(consts.STATS[:-1]):
            out[name] = (self.backend.counter_read(P.INGRESS_STATS, i), self.backend.counter_read(P.EGRESS_STATS, i))
        for j, reason in enumerate(consts.FALLBACK_REASONS):
            i = consts.FALLBACK_BASE + 1 + j
            out["FALLBACK_" + reason] = (self.backend.counter_read(P.INGRESS_STATS, i), 0)
        return out


def all_controls(backend):
    return [
        Parsers(backend),
        WorkerCheck(backend),
        RoundState(backend),
        Accumulate(backend),
        Recirculate(backend),
        MirrorCpu(backend),
        Forward(backend),
        Lns(backend),
        Stats(backend),
    ]
