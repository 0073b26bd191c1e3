"""The switch CPU's part, as pure logic: no clock (times are microseconds
passed in), no sockets, no hardware. The controller (controller.py) feeds it
what the pipeline sends to the CPU port and what it reads from the round
state, and sends what it returns.

  RoundTimer       flushes rounds open longer than round_timeout, starts the
                   readout of a flushed round after a grace period, and of a
                   draining round whose readout never arrived.
  ReadoutAssembler collects a closed round's rows; asks again for lost ones.
  build_parts      a closed round as AGGREGATE and COVERAGE parts, exactly as
                   zebra-proto's Switch::close builds them.
  AggregateStore   keeps every part until its server acknowledges it, sends
                   parts as each server's window allows (flow.py), resends
                   on a timeout learned per server from the
                   acknowledgements (rto.py; doubling, at most 16x) up to
                   aggregate_max_retries times (Switch::poll).
  ServerDirectory  REGISTER: where each server's parts go.
"""

import secrets
from dataclasses import dataclass, field

from . import consts
from .rto import RttEstimator
from .lns import sum_to_f32_bits
from .flow import Flow
from .wire import Ctl, encode_aggregate, encode_coverage, encode_register_ack, readout_request, split_parts

# ---- actions for the controller ----


@dataclass(frozen=True)
class ToPipeline:
    """A packet for the pipeline, through the CPU port (FLUSH, READOUT, RELEASE)."""

    what: str
    payload: bytes


@dataclass(frozen=True)
class ToServer:
    """A Zebra datagram for a server (AGGREGATE, COVERAGE, REGISTER_ACK)."""

    job: int
    server: int
    payload: bytes
    retransmit: bool = False


# ---- servers ----


@dataclass
class ServerAddress:
    ip: int
    port: int
    mac: int = None
    pinned: bool = False
    # The server has shown the job's token (docs/SECURITY.md).
    proven: bool = False


class ServerDirectory:
    """Where the aggregates of (job, server) go, and who may acknowledge them:
    each server pinned by the settings (server_addr) or by the source address
    of its first REGISTER, and the job's token, handed out in REGISTER_ACK
    (zebra-proto's switch/members.rs, docs/SECURITY.md). A job with a key
    (`keyed`: `token` derived from it, zebra switch --plan) requires the token
    from a server's first datagram, so only who knows the key is pinned."""

    def __init__(self, job, servers, pinned=None, neighbors=None, epoch=None, token=None, keyed=False):
        self.job = job
        # This incarnation's epoch, in every REGISTER_ACK (docs: WIRE.md).
        self.epoch = epoch if epoch is not None else (secrets.randbits(32) or 1)
        # The job's membership token, drawn at random (nobody off the path
        # can guess it), shown by the servers once handed out.
        self.token = token if token is not None else (secrets.randbits(32) or 1)
        self.keyed = keyed
        self.refused_address = 0
        self.refused_token = 0
        self.servers = servers
        self.neighbors = dict(neighbors or {})
        self.addresses = {}
        for index, (ip, port) in (pinned or {}).items():
            self.addresses[index] = ServerAddress(ip, port, self.neighbors.get(ip), True)
        self.registrations = 0
        self.refused = 0

    def check(self, server, ip, port, token):
        """Whether a datagram from (ip, port) showing token comes from server
        `server` (which the job has), pinning the server at its first one;
        refusals counted by reason (Members::check)."""
        known = self.addresses.get(server)
        right = token == self.token
        if known is None:
            if self.keyed and not right:
                self.refused_token += 1
                return False
            self.addresses[server] = ServerAddress(ip, port, proven=right)
            return True
        if (known.ip, known.port) != (ip, port):
            self.refused_address += 1
            return False
        if right:
            known.proven = True
        elif known.proven or self.keyed:
            self.refused_token += 1
            return False
        return True

    def on_register(self, job, server, ip, port, mac, token=0, admit=None):
        """The REGISTER_ACK to send back to the source, or None (refused:
        unknown job or server, or not from the server: another address than
        its pinned one, or a wrong token once it has shown the right one).
        admit: (workers, capacity) granted, for a REGISTER with admission."""
        if job != self.job or server >= self.servers:
            self.refused += 1
            return None
        if not self.check(server, ip, port, token):
            self.refused += 1
            return None
        self.addresses[server].mac = mac
        self.registrations += 1
        return encode_register_ack(job, server, self.epoch, self.token, admit)

    def address(self, server):
        """The address to send to, or None when not known yet (or no MAC)."""
        a = self.addresses.get(server)
        if a is None or a.mac is None:
            return None
        return a


# ---- keeping parts until acknowledged ----


@dataclass
class _Pending:
    payload: bytes
    sent: int = 0
    last_sent: int = 0
    next: int = 0
    retries: int = 0
    queued: bool = True
    lost: bool = False


class AggregateStore:
    """Parts kept until acknowledged (Switch::pending), sent as each server's
    flow window allows (flow.py), resent on its learned timeout."""

    def __init__(self, rto_us, max_retries):
        self.rto_us = rto_us
        self.max_retries = max_retries
        self.pending = {}
        self.flows = {}
        self.parts = 0
        self.retransmits = 0
        self.acked = 0
        self.abandoned = 0
        self.deferred = 0
        self.lost = 0

    def flow(self, job, server):
        """The aggregate flow to (job, server) (Switch::flow)."""
        return self.flows.setdefault((job, server), Flow(self.rto_us))

    def forget(self, job):
        """Drops every part of a retired job and its flows (Switch::retire)."""
        self.pending = {k: p for k, p in self.pending.items() if k[0] != job}
        self.flows = {k: f for k, f in self.flows.items() if k[0] != job}

    def add(self, now, job, round_, server, part, payload):
        """Keeps a new part; it leaves through drain()."""
        self.parts += 1
        key = (job, round_, server, part)
        self.pending[key] = _Pending(payload)
        self.flow(job, server).enqueue(key)

    def drain(self, now):
        """Parts the windows let out now (ToServer, in order per server)."""
        out = []
        for (job, server), flow in sorted(self.flows.items()):
            while (key := flow.next_to_send()) is not None:
                p = self.pending.get(key)
                if p is None:
                    continue
                p.queued, p.sent, p.last_sent, p.next = False, now, now, now + flow.rtt.rto()
                out.append(ToServer(job, server, p.payload))
        return out

    def ack(self, now, job, server, round_, part):
        """False for a part not in flight (an ACK of a part never sent is not genuine)."""
        p = self.pending.get((job, round_, server, part))
        if p is None or p.queued:
            return False
        del self.pending[(job, round_, server, part)]
        self.acked += 1
        # Karn's rule, but before the first measurement the time since the first copy
        # (an upper bound) is taken, as the Rust switch does.
        flow = self.flow(job, server)
        flow.on_ack(now - p.sent if p.retries == 0 or flow.rtt.samples == 0 else None)
        if p.retries == 0:
            # As Switch::lost_before: parts of the flow last sent before this one (sent
            # once) are lost if still unacknowledged a reorder window from now.
            at = now + flow.reorder_window()
            acked = (job, round_, server, part)
            for key, q in self.pending.items():
                if key < acked and (key[0], key[2]) == (job, server) and not q.queued \
                        and not q.lost and q.last_sent < p.sent:
                    q.lost, q.next = True, min(q.next, at)
        return True

    def poll(self, now):
        """Parts due for a resend (ToServer, retransmit=True); parts past the
        retry limit are dropped and counted as abandoned."""
        out, resent, given_up = [], set(), set()
        for key in sorted(self.pending):
            p = self.pending[key]
            if p.queued or p.next > now:
                continue
            job, _, server, _ = key
            flow = self.flow(job, server)
            if p.retries >= self.max_retries:
                given_up.add((job, server))
                continue
            lost, p.lost = p.lost, False
            if lost:
                flow.on_loss(now)
                self.lost += 1
            elif (job, server) in resent:
                # As zebra-proto's Switch::poll: one part per flow per call, the
                # oldest due; the others wait one more timeout, budget untouched,
                # unless the acknowledgement of a part sent after them shows them lost.
                p.next = now + flow.rtt.backoff(p.retries)
                self.deferred += 1
                continue
            else:
                resent.add((job, server))
                if p.retries == 0:
                    flow.on_timeout(now)
            p.retries += 1
            p.last_sent = now
            p.next = now + flow.rtt.backoff(p.retries)
            self.retransmits += 1
            out.append(ToServer(job, server, p.payload, retransmit=True))
        for key in sorted(self.pending):
            if not self.pending[key].queued and (key[0], key[2]) in given_up:
                del self.pending[key]
                self.flow(key[0], key[2]).on_abandon()
                self.abandoned += 1
        return out + self.drain(now)

    def poll_at(self):
        return min((p.next for p in self.pending.values() if not p.queued), default=None)


# ---- a closed round, as rows ----


@dataclass
class ClosedRound:
    job: int
    round: int
    copy: int
    flushed: bool
    values: dict          # rank -> raw register value (touched slots only)
    progress: dict        # worker -> (total, added) for workers that contributed


class ReadoutAssembler:
    """Rows of closed rounds, as the E2E mirror copies them to the CPU."""

    def __init__(self, plan, row_timeout_us):
        self.plan = plan
        self.row_timeout_us = row_timeout_us
        self.rounds = {}

    def expect(self, now, round_, flushed):
        self.rounds.setdefault(round_, {"rows": {}, "since": now, "flushed": flushed})

    def on_row(self, now, row):
        """A ReadoutRow; the ClosedRound when it was the last one missing."""
        r = row.ctl.round
        st = self.rounds.setdefault(r, {"rows": {}, "since": now, "flushed": False})
        st["flushed"] = st["flushed"] or bool(row.ctl.flags & consts.CTL_FLAG_FLUSHED)
        st["rows"][row.row] = row
        st["since"] = now
        if len(st["rows"]) < self.plan.readout_rows:
            return None
        del self.rounds[r]
        return self._closed(r, st)

    def _closed(self, round_, st):
        plan = self.plan
        values = {}
        progress = {}
        for i, row in st["rows"].items():
            if i < plan.region_slots:
                for k, v in enumerate(row.values):
                    rank = plan.rank_of(k, i)
                    if rank is not None and v != consts.SLOT_UNTOUCHED:
                        values[rank] = v
            if i < plan.job.workers and row.progress != 0:
                progress[i] = (row.progress >> 16, row.progress & 0xFFFF)
        copy = round_ & (plan.copies - 1)
        return ClosedRound(plan.job.id, round_, copy, st["flushed"], values, progress)

    def missing(self, now):
        """(round, row) pairs to ask for again: rows of a round that stopped
        arriving more than row_timeout ago."""
        out = []
        for r, st in self.rounds.items():
            if now - st["since"] >= self.row_timeout_us:
                out.extend((r, i) for i in range(self.plan.readout_rows) if i not in st["rows"])
                st["since"] = now
        return out


def coverage_parts(worker, words, chunk_bits):
    """One worker's coverage (zebra-proto switch.rs coverage_parts): one ALL
    part when packets 0..n are all covered, else bitmaps of at most
    chunk_bits sequence numbers. [(worker, first_seq, nbits, bitmap or None)]."""
    wb = consts.COVER_WORD_BITS

    def bit(i):
        return (words[i // wb] >> (i % wb)) & 1 == 1

    total_bits = len(words) * wb
    highest = next((i for i in range(total_bits - 1, -1, -1) if bit(i)), None)
    if highest is None:
        return []
    nbits = highest + 1
    ones = sum(bin(w).count("1") for w in words)
    if ones == nbits:
        return [(worker, 0, nbits, None)]
    out = []
    for first in range(0, nbits, chunk_bits):
        n = min(chunk_bits, nbits - first)
        bitmap = bytearray((n + 7) // 8)
        for i in range(n):
            if bit(first + i):
                bitmap[i // 8] |= 1 << (i % 8)
        out.append((worker, first, n, bytes(bitmap)))
    return out


def build_parts(plan, closed, read_coverage):
    """{server: [payload, ...]} for a closed round (Switch::close).
    read_coverage(worker, copy, round) gives the coverage words of a worker
    that contributed but is not complete (a flushed round)."""
    proto, job = plan.proto, plan.job
    per_server = [[] for _ in range(job.servers)]
    for rank in sorted(closed.values):
        raw = closed.values[rank]
        if raw == consts.SLOT_UNTOUCHED + 1:
            raw = consts.SLOT_UNTOUCHED
        if plan.build == "lns":
            raw = sum_to_f32_bits(raw, plan.lns_frac_bits)
        per_server[job.owner(rank)].append((rank, raw))
    contributed = 0
    complete = 0
    coverage = []
    chunk = proto.coverage_bits_per_packet
    for w in range(job.workers):
        if w not in closed.progress:
            continue
        total, added = closed.progress[w]
        contributed |= 1 << w
        if total != 0 and total == added:
            # Every packet up to its DONE was added: the complete bit says so,
            # no coverage part is sent.
            complete |= 1 << w
            continue
        coverage.extend(coverage_parts(w, read_coverage(w, closed.copy, closed.round), chunk))
    budget = proto.aggregate_run_bytes_per_packet
    fixed = job.is_fixed()
    out = {}
    for server, pairs in enumerate(per_server):
        chunks = split_parts(sorted(pairs), budget)
        data_parts = len(chunks)
        parts = data_parts + len(coverage)
        payloads = []
        for d, chunk_pairs in enumerate(chunks):
            payloads.append(encode_aggregate(
                job.id, server, closed.round, d, parts, contributed, complete, fixed, closed.flushed,
                len(pairs), chunk_pairs,
            ))
        for i, (worker, first, nbits, bitmap) in enumerate(coverage):
            payloads.append(encode_coverage(job.id, server, closed.round, data_parts + i, parts, worker, first, nbits, bitmap))
        out[server] = payloads
    return out


# ---- rounds: flush on timeout, readout after the grace ----


@dataclass
class _CopyWatch:
    round: int = 0
    first_seen: int = 0
    flush_sent: int = None
    draining_since: int = None
    readout_sent: bool = False


@dataclass
class RoundTimer:
    """Decides, from the round state the controller polls, when to FLUSH a
    round (open for the job's round timeout since it was first seen) and when
    to start a readout the pipeline did not start itself (a flushed round,
    after the grace that lets conflicting packets finish their CONT passes; a
    draining round whose rows never came).

    The round timeout is learned as the software switch learns it
    (rust/zebra-proto/src/switch.rs): round_timeout until a round's length is
    measured, then srtt + 4 rttvar of the lengths (never below round_timeout),
    doubled after each flush. The CPU measures a round when it sees it draining
    without a FLUSH of its own (it completed); the software switch also
    measures a flushed round by its first late packet, which the pipeline
    answers without the CPU."""

    plan: object
    round_timeout_us: int
    grace_us: int
    retry_us: int
    copies: dict = field(default_factory=dict)
    flushed: dict = field(default_factory=dict)
    # The longest the learned timeout gets (Config.round_timeout_cap_us, from zebra switch --plan); None: round_timeout.
    cap_us: int = None
    lengths: RttEstimator = None

    def __post_init__(self):
        if self.lengths is None:
            cap = self.cap_us if self.cap_us is not None else self.round_timeout_us
            self.lengths = RttEstimator(self.round_timeout_us, self.round_timeout_us, cap)

    def timeout_us(self):
        """The job's round timeout now."""
        return self.lengths.rto()

    def observe(self, now, copy, hi):
        """One poll of (job, copy)'s round state hi word: [ToPipeline]."""
        plan = self.plan
        w = self.copies.setdefault(copy, _CopyWatch())
        r = hi & ~consts.ROUND_FLAGS & 0xFFFFFFFF
        out = []
        if hi & consts.ROUND_FREE:
            self.copies[copy] = _CopyWatch(round=r)
            return out
        if not hi & consts.ROUND_DRAINING:
            if w.round != r:
                self.copies[copy] = w = _CopyWatch(round=r, first_seen=now)
            if w.flush_sent is None:
                due = now >= w.first_seen + self.timeout_us()
                if due:
                    self.lengths.on_timeout()
            else:
                due = now - w.flush_sent >= self.retry_us
            if due:
                w.flush_sent = now
                ctl = Ctl(consts.CtlKind.FLUSH, 0, plan.job.id, r)
                out.append(ToPipeline("FLUSH", ctl.pack()))
            return out
        if w.round != r or w.draining_since is None:
            if w.round == r and w.flush_sent is None:
                # It completed: every worker's DONE came before any FLUSH of ours.
                self.lengths.sample(now - w.first_seen)
            self.copies[copy] = w = _CopyWatch(round=r, draining_since=now)
            w.readout_sent = False
        start = self.flushed.get(r)
        if not w.readout_sent and start is not None and now >= start:
            w.readout_sent = True
            out.append(ToPipeline("READOUT", readout_request(plan.job.id, r, 0, plan.readout_rows, True)))
        elif not w.readout_sent and start is None and now - w.draining_since >= self.retry_us:
            w.readout_sent = True
            out.append(ToPipeline("READOUT", readout_request(plan.job.id, r, 0, plan.readout_rows, False)))
        return out

    def on_flush_reply(self, now, ctl):
        """The pipeline's answer to a FLUSH: if it closed the round, read it out after the grace."""
        if ctl.flags & consts.CTL_FLAG_CLOSED:
            self.flushed[ctl.round] = now + self.grace_us

    def on_readout_started(self, round_):
        for w in self.copies.values():
            if w.round == round_:
                w.readout_sent = True

    def forget(self, round_):
        self.flushed.pop(round_, None)


def release(job, round_):
    return ToPipeline("RELEASE", Ctl(consts.CtlKind.RELEASE, 0, job, round_).pack())


def single_row(job, round_, row, flushed):
    return ToPipeline("READOUT", readout_request(job, round_, row, row + 1, flushed))
