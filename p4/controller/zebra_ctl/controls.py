"""One class per P4 file (SwitchML's controller shape): each knows the
tables, registers and counters its file declares, what a job writes into
them, and how to clear them.

    parsers.p4       Parsers       the hot-path UDP port, the internal ports
    worker_check.p4  WorkerCheck   jobs, copy offsets, workers, the switch address; records;
                                   the member check (pinned workers, tokens, shown bits)
    round_state.p4   RoundState    round state, progress, completion, coverage
    accumulate.p4    Accumulate    the accumulators and their hit counters
    recirculate.p4   Recirculate   the popcount tables of the conflict check
    mirror_cpu.p4    MirrorCpu     CPU and recirculation ports, mirror sessions
    forward.p4       Forward       L2 routes
    replicate.p4     Replicate     where workers and servers are; the jobs' multicast groups
    lns/lns.p4       Lns           the float-to-fixed tables (ZEBRA_LNS build)
    zebra.p4         Stats         the ingress and egress statistics
"""

import ipaddress
import logging
from dataclasses import dataclass

from . import consts
from . import program as P
from .lns import lns_tables

log = logging.getLogger("zebra_ctl")


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

    def remove(self, plan):
        """Takes the job out: its entries deleted, its registers zeroed (a job
        retired while others run)."""
        for table, key, _, _ in reversed(self.entries(plan)):
            self.backend.table_delete(table, key)


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
    """Also the member check (MemberCheck, docs/SECURITY.md): the job's token
    in the ingress `tokens` table and in egress's (ack.p4, the answers'), and
    each worker pinned at the address of its first DIGEST_WORKER (`pins` and
    `members`), as zebra-proto's Members::check pins at a worker's first
    packet. A pinned worker keeps its address while the job runs: a digest of
    it from another address (two addresses racing for a slot before the entry
    is written) is refused and counted."""

    tables = (P.JOBS, P.COPY_OFFSETS, P.WORKERS, P.ADDRESSES) + tuple(P.MEMBER_TABLES)
    registers = (P.RECORDS, P.SHOWN)

    def __init__(self, backend):
        super().__init__(backend)
        self.pinned = {}          # job id -> {rank: (ip, udp_port)}
        self.pins = 0             # workers pinned
        self.pin_refused = 0      # digests of a pinned worker from another address
        self.refused_rank = 0     # digests of a rank the job does not have

    def clear(self):
        super().clear()
        self.pinned = {}

    def pin_worker(self, plan, rank, ip, udp_port):
        """A DIGEST_WORKER of worker `rank` of `plan`'s job from (ip,
        udp_port): pins the worker there if it is not pinned yet. True when
        the worker is pinned at this address (now or before), False for a
        rank the job does not have or a worker pinned elsewhere."""
        if rank >= plan.job.workers:
            self.refused_rank += 1
            return False
        known = self.pinned.setdefault(plan.job.id, {})
        pin = known.get(rank)
        if pin == (ip, udp_port):
            return True
        if pin is not None:
            self.pin_refused += 1
            log.warning("job %d worker %d pinned at %s:%d: its digest from %s:%d refused", plan.job.id, rank,
                        ipaddress.IPv4Address(pin[0]), pin[1], ipaddress.IPv4Address(ip), udp_port)
            return False
        # The address first: until `pins` has the slot, its packets stay unpinned (digest, drop).
        self.backend.table_add(P.MEMBERS, self._member_key(plan, rank, ip, udp_port), "from_pin", {})
        self.backend.table_add(P.PINS, self._pin_key(plan, rank), "slot_pinned", {})
        known[rank] = (ip, udp_port)
        self.pins += 1
        log.info("job %d worker %d pinned to %s:%d", plan.job.id, rank, ipaddress.IPv4Address(ip), udp_port)
        return True

    @staticmethod
    def _pin_key(plan, rank):
        return {"ig_md.job.index": plan.job_index, "hdr.hot.worker": rank}

    @classmethod
    def _member_key(cls, plan, rank, ip, udp_port):
        return dict(cls._pin_key(plan, rank), **{"hdr.ipv4.src_addr": ip, "hdr.udp.src_port": udp_port})

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
                "servers": job.servers,
                "max_update_len": 8 + proto.aggregate_size,
                "keyed": 1 if plan.keyed else 0,
                # far <=> round > newest + max_round_ahead (round_state.p4, NewestRound)
                "far_bound": min(proto.max_round_ahead + 1, 0xFFFFFFFF),
            },
        ))
        out.append((P.TOKENS, {"ig_md.job_id": job.id, "hdr.hot.token": plan.token}, "token_right", {}))
        out.append((P.ANSWER_TOKENS, {"hdr.zebra.job": job.id}, "token_is", {"token": plan.token}))
        for w in range(job.workers):
            for c in range(proto.copies):
                out.append((
                    P.WORKERS,
                    {"ig_md.job.index": plan.job_index, "hdr.hot.worker": w, "ig_md.copy": c},
                    "set_worker",
                    {"rec_base": plan.record_base_of(w, c), "cover_base": plan.cover_base_of(w, c)},
                ))
        return out

    def remove(self, plan):
        super().remove(plan)
        for rank, (ip, udp_port) in sorted(self.pinned.pop(plan.job.id, {}).items()):
            self.backend.table_delete(P.PINS, self._pin_key(plan, rank))
            self.backend.table_delete(P.MEMBERS, self._member_key(plan, rank, ip, udp_port))
        for w in range(plan.job.workers):
            self.backend.register_reset(P.SHOWN, P.member_index(plan.job_index, w))
            for c in range(plan.copies):
                base = plan.record_base_of(w, c)
                for i in range(base, base + plan.proto.max_seqs):
                    self.backend.register_reset(P.RECORDS, i)

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
    registers = (P.ROUNDS, P.PROGRESS, P.DONE, P.COVER, P.FIRSTS, P.NEWEST)

    def install(self, plan):
        for c in range(consts.P4_MAX_COPIES):
            self.backend.register_write(P.ROUNDS, P.round_state_index(plan.job_index, c), P.ROUND_STATE_INITIAL)

    def clear(self):
        super().clear()
        for i in range(P.REGISTER_SIZES[P.ROUNDS]):
            self.backend.register_write(P.ROUNDS, i, P.ROUND_STATE_INITIAL)

    def remove(self, plan):
        """The job index's round state free again, its progress, completion
        and coverage words zero, and its first and newest rounds (none yet)."""
        self.backend.register_reset(P.FIRSTS, plan.job_index)
        self.backend.register_reset(P.NEWEST, plan.job_index)
        for c in range(consts.P4_MAX_COPIES):
            self.backend.register_write(P.ROUNDS, P.round_state_index(plan.job_index, c), P.ROUND_STATE_INITIAL)
            self.backend.register_reset(P.DONE, P.round_state_index(plan.job_index, c))
            for w in range(consts.P4_MAX_WORKERS):
                self.backend.register_reset(P.PROGRESS, P.progress_index(plan.job_index, c, w))
        for w in range(plan.job.workers):
            for c in range(plan.copies):
                base = plan.cover_base_of(w, c)
                for i in range(base, base + plan.cover_words):
                    self.backend.register_reset(P.COVER, i)

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

    def entries_of(self, plan):
        """The job's entries of every accumulator: each copy of its region."""
        return [c * plan.proto.slots + plan.region_base + row
                for c in range(plan.copies) for row in range(plan.region_slots)]

    def remove(self, plan):
        """The job's region zero in every register, its hit counters too: a
        later job placed there starts from nothing (Switch::retire)."""
        for entry in self.entries_of(plan):
            for k in range(P.R):
                self.backend.register_reset(P.sums(k), entry)
                self.backend.counter_reset(P.hits(k), entry)

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
        """The low byte's bit count; for the high byte and each count a pass
        holds, the count less the byte's bit count (a conflict: the two differ)."""
        low, high = P.POPCOUNT
        out = [(low, {"routed[7:0]": n}, "count_low", {"n": bin(n).count("1")}) for n in range(256)]
        for n in range(256):
            for count in range(consts.P4_PAIRS_PER_PASS + 1):
                left = count - bin(n).count("1")
                if left >= 0:
                    out.append((high, {"routed[15:8]": n, "count": count}, "pairs_left", {"n": left}))
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


@dataclass(frozen=True)
class Peer:
    """Where a worker or a server is (replicate.p4's peer_t)."""

    port: int
    mac: int
    ip: int
    udp_port: int

    def data(self):
        return {"port": self.port, "mac": self.mac, "ip": self.ip, "udp_port": self.udp_port}

    def __str__(self):
        return f"{ipaddress.IPv4Address(self.ip)}:{self.udp_port} (port {self.port})"


class Replicate(Control):
    """The pull half's routes. A worker is learned from a DIGEST_WORKER (the
    pipeline saw it at an address its entry does not hold): its (job, worker)
    entries in ingress (targeted updates) and egress (multicast copies, by
    egress_rid = rank), its PRE node, its place in the job's multicast group,
    and the group's table entry once the group has a node. A worker seen
    elsewhere replaces its entries and its node's port. A server's (job,
    server) entry is written when it registers or is pinned. Nothing is kept
    per update."""

    tables = tuple(P.UPDATE_TABLES)

    def __init__(self, backend):
        super().__init__(backend)
        self.workers = {}        # job id -> {rank: Peer}
        self.servers = {}        # job id -> {server: Peer}
        self.learned = 0         # workers added
        self.moved = 0           # workers seen at a new address
        self.repeated = 0        # digests of an address already written
        self.refused = 0         # digests of a rank the job does not have
        self.unroutable = 0      # servers without a MAC or an L2 route

    def clear(self):
        """Every job's: the tables, and every group and node (also those a
        controller that stopped left behind)."""
        super().clear()
        self.backend.mcast_clear()
        self.workers = {}
        self.servers = {}

    def learn_worker(self, plan, rank, peer):
        """A DIGEST_WORKER of `plan`'s job; True if the worker's entries changed."""
        job = plan.job.id
        if rank >= plan.job.workers:
            self.refused += 1
            return False
        known = self.workers.setdefault(job, {})
        old = known.get(rank)
        if old == peer:
            self.repeated += 1
            return False
        ingress = (P.UPDATE_WORKERS, {"hdr.zebra.job": job, "ig_md.peer_worker": rank}, "peer_at", peer.data())
        egress = (P.UPDATE_COPIES, {"hdr.replica.job": job, "eg_intr_md.egress_rid": rank}, "copy_to",
                  {"mac": peer.mac, "ip": peer.ip, "udp_port": peer.udp_port})
        node = P.mcast_node(plan.job_index, rank)
        if old is None:
            # Egress first: no copy reaches egress before its destination is there.
            self.backend.table_add(*egress)
            self.backend.table_add(*ingress)
            self.backend.mcast_node_set(node, rank, [peer.port])
            known[rank] = peer
            group = P.mcast_group(plan.job_index)
            self.backend.mcast_group_set(group, [P.mcast_node(plan.job_index, r) for r in sorted(known)])
            if len(known) == 1:
                self.backend.table_add(P.UPDATE_GROUPS, {"hdr.zebra.job": job}, "to_group", {"group": group})
            self.learned += 1
            log.info("job %d worker %d at %s", job, rank, peer)
        else:
            self.backend.table_modify(*egress)
            self.backend.table_modify(*ingress)
            if peer.port != old.port:
                self.backend.mcast_node_set(node, rank, [peer.port])
            known[rank] = peer
            self.moved += 1
            log.info("job %d worker %d at %s (was %s)", job, rank, peer, old)
        return True

    def set_server(self, plan, server, address):
        """A server's address (cpu.ServerAddress: ip, UDP port, MAC) as its
        REGISTER or the settings give it; reached through its MAC's L2 route,
        as the CPU's frames to it are. True if its entry changed."""
        job = plan.job.id
        port = None if address.mac is None else plan.ports.routes.get(address.mac)
        if port is None:
            self.unroutable += 1
            log.warning("job %d server %d: no L2 route to its MAC; its update acknowledgements are dropped", job, server)
            return False
        peer = Peer(port, address.mac, address.ip, address.port)
        known = self.servers.setdefault(job, {})
        old = known.get(server)
        if old == peer:
            return False
        entry = (P.UPDATE_SERVERS, {"hdr.zebra.job": job, "hdr.update_ack.server": server}, "peer_at", peer.data())
        if old is None:
            self.backend.table_add(*entry)
        else:
            self.backend.table_modify(*entry)
        known[server] = peer
        return True

    def remove(self, plan):
        self.remove_job(plan)

    def remove_job(self, plan):
        """Everything of `plan`'s job: its group, nodes and entries."""
        job = plan.job.id
        self._remove_workers(job, plan.job_index)
        for server in self.servers.pop(job, {}):
            self.backend.table_delete(P.UPDATE_SERVERS, {"hdr.zebra.job": job, "hdr.update_ack.server": server})

    def _remove_workers(self, job, job_index):
        known = self.workers.pop(job, {})
        if not known:
            return
        self.backend.table_delete(P.UPDATE_GROUPS, {"hdr.zebra.job": job})
        self.backend.mcast_group_delete(P.mcast_group(job_index))
        for rank in known:
            self.backend.mcast_node_delete(P.mcast_node(job_index, rank))
            self.backend.table_delete(P.UPDATE_WORKERS, {"hdr.zebra.job": job, "ig_md.peer_worker": rank})
            self.backend.table_delete(P.UPDATE_COPIES, {"hdr.replica.job": job, "eg_intr_md.egress_rid": rank})


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
        for j, name in enumerate(consts.MEMBER_STATS):
            out[name] = (self.backend.counter_read(P.INGRESS_STATS, consts.MEMBER_STATS_BASE + j), 0)
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
        Replicate(backend),
        Lns(backend),
        Stats(backend),
    ]
