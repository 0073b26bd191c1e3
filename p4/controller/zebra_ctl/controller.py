"""The controller: loads the jobs of a settings file into the switch (one per
PS-lite server that owns a hot key, as the shim makes them), resets it
between loads, reads its counters, and runs the switch CPU's part (cpu.py)
over the CPU port. The pull half (replicate.p4) needs no CPU part: the
controller writes where workers are from the pipeline's digests and where
servers are from their REGISTERs.

    c = Controller(backend)
    c.load(settings, ports, build="fixed")    # clears everything, then installs the jobs
                                               # (settings that size no job: jobs admitted as they register)
    c.step(now_us)                             # call often: CPU port, digests, round timers, resends
    c.counters(); c.hot_key_hits()
    c.reset()                                  # between jobs
"""

import collections
import ipaddress
import logging
import secrets

from . import consts
from . import program as P
from .controls import Accumulate, Peer, Replicate, RoundState, Stats, WorkerCheck, all_controls
from .cpu import (
    AggregateStore,
    ReadoutAssembler,
    RoundTimer,
    ServerDirectory,
    ToPipeline,
    ToServer,
    build_parts,
    release,
    single_row,
)
from .config import JobConfig
from .plan import PlanError, admitted_plan, plan_jobs, template_plan
from .settings import SettingsError, admit
from .wire import (
    CTL_LEN,
    AggregateAck,
    Ctl,
    ReadoutRow,
    Register,
    WireError,
    encode_register_ack,
    parse_datagram,
    parse_udp_frame,
    udp_frame,
)

log = logging.getLogger("zebra_ctl")

DEFAULT_GRACE_US = 1_000
DEFAULT_ROW_TIMEOUT_US = 10_000


class Controller:
    def __init__(self, backend, grace_us=DEFAULT_GRACE_US, row_timeout_us=DEFAULT_ROW_TIMEOUT_US):
        self.backend = backend
        self.controls = all_controls(backend)
        self.grace_us = grace_us
        self.row_timeout_us = row_timeout_us
        self.plan = None
        self.plans = {}
        self.bad_frames = 0
        self.bad_digests = 0
        self.unroutable = 0
        # Jobs admitted as their servers register (settings that size none).
        self.admitting = False
        self.admitted = 0
        self.retired = 0
        self.admission_refused = collections.Counter()   # reason -> REGISTERs refused admission
        self.heard = {}                                  # job -> (registrations, since)

    def _control(self, cls):
        return next(c for c in self.controls if isinstance(c, cls))

    @property
    def worker_check(self):
        """The job and member tables' control (workers pinned, digests refused)."""
        return self._control(WorkerCheck)

    @property
    def replicate(self):
        """The pull half's control (workers and servers it knows, its counts)."""
        return self._control(Replicate)

    def reset(self):
        """Every table, register and counter back to its empty state; no job."""
        for c in self.controls:
            c.clear()
        self.plan = None
        self.plans = {}
        self.heard = {}

    def load(self, hotpath, ports, build="fixed", lns_frac_bits=None):
        """Checks the jobs against the program, resets the switch and installs
        them; returns the first job's plan (`plans`: every job's, by id).
        Settings that size no job (`hotpath.admit`, the template of jobs
        zebra switch admits) install what the switch needs once and admit
        jobs as their servers register; the template's plan is returned."""
        if hotpath.admit is not None and not hotpath.proto.jobs:
            return self._load_admitting(hotpath, ports, build, lns_frac_bits)
        self.admitting = False
        plans = plan_jobs(hotpath, ports, build, lns_frac_bits)
        self.reset()
        for c in self.controls:
            c.install_switch(plans[0])
            for plan in plans:
                c.install(plan)
        self.plan = plans[0]
        self.plans = {p.job.id: p for p in plans}
        proto = hotpath.proto
        pinned = {}
        for s in hotpath.server_addrs.values():
            pinned.setdefault(s.job, {})[s.index] = (int(ipaddress.ip_address(s.addr.host)), s.addr.port)
        # A job with a key has its token from the settings (zebra switch
        # --plan derives it); else its plan drew one (the pipeline's tables
        # hold the same).
        self.epoch = secrets.randbits(32) or 1
        self.servers = {
            p.job.id: ServerDirectory(p.job.id, p.job.servers, pinned.get(p.job.id), ports.neighbors,
                                      epoch=self.epoch, token=p.token, keyed=p.keyed)
            for p in plans
        }
        self.store = AggregateStore(proto.aggregate_rto_us, proto.aggregate_max_retries)
        self.assemblers = {p.job.id: ReadoutAssembler(p, self.row_timeout_us) for p in plans}
        retry = max(proto.aggregate_rto_us, 1_000)
        self.timers = {p.job.id: RoundTimer(p, proto.round_timeout_us, self.grace_us, retry,
                                            cap_us=proto.round_timeout_cap_us) for p in plans}
        self.switch_ip = int(ipaddress.ip_address(hotpath.switch.host))
        self.hotpath = hotpath
        replicate = self.replicate
        for p in plans:
            for index, a in sorted(self.servers[p.job.id].addresses.items()):
                if a.mac is not None:
                    replicate.set_server(p, index, a)
        return plans[0]

    def _load_admitting(self, hotpath, ports, build, lns_frac_bits):
        template = template_plan(hotpath, ports, build, lns_frac_bits)
        self.reset()
        for c in self.controls:
            c.install_switch(template)
        self.admitting = True
        self.build, self.lns_frac_bits = build, lns_frac_bits
        self.hotpath, self.ports = hotpath, ports
        self.plan = template
        self.epoch = secrets.randbits(32) or 1
        self.servers, self.assemblers, self.timers = {}, {}, {}
        proto = hotpath.proto
        self.store = AggregateStore(proto.aggregate_rto_us, proto.aggregate_max_retries)
        self.switch_ip = int(ipaddress.ip_address(hotpath.switch.host))
        return template

    def _admit(self, now, msg, f):
        """A REGISTER asking to be admitted: the capacity granted (0: refused,
        counted with its reason). The decision is the software switch's
        (`zebra switch --admit`: a job held of the same size is granted its
        capacity, settings that size their jobs admit no other); a new job
        then has to fit the compiled program (plan.admitted_plan) and is
        installed."""
        held = [{"id": p.job.id, "workers": p.job.workers, "hot_keys": p.job.hot_keys, "base": p.region_base}
                for p in self.plans.values()]
        workers, capacity = msg.admit
        register = {"job": msg.job, "server": msg.server, "workers": workers, "capacity": capacity, "token": msg.token}
        try:
            answer = admit(self.hotpath, held, register)
        except SettingsError as e:
            return self._refuse_admission(msg, f, f"the zebra binary did not decide: {e}")
        if answer["capacity"] == 0:
            return self._refuse_admission(msg, f, answer["reason"])
        if answer["job"] is None or not self.admitting:
            return answer["capacity"]
        try:
            plan = admitted_plan(self.hotpath, self.ports, JobConfig.from_plan(answer["job"]), answer["base"],
                                 list(self.plans.values()), self.build, self.lns_frac_bits)
        except PlanError as e:
            return self._refuse_admission(msg, f, "; ".join(e.problems))
        for c in self.controls:
            c.install(plan)
        self._add_job(now, plan)
        self.admitted += 1
        log.info("job %d admitted (%d workers, %d hot values) at slot %d, job index %d, for %s",
                 msg.job, workers, plan.job.hot_keys, plan.region_base, plan.job_index, ipaddress.IPv4Address(f.src_ip))
        return answer["capacity"]

    def _refuse_admission(self, msg, f, reason):
        self.admission_refused[reason] += 1
        log.warning("REGISTER for job %d server %d from %s not admitted: %s",
                    msg.job, msg.server, ipaddress.IPv4Address(f.src_ip), reason)
        return 0

    def _add_job(self, now, plan):
        proto = self.hotpath.proto
        job = plan.job.id
        self.plans[job] = plan
        self.servers[job] = ServerDirectory(job, plan.job.servers, None, self.ports.neighbors, epoch=self.epoch,
                                            token=plan.token, keyed=plan.keyed)
        self.assemblers[job] = ReadoutAssembler(plan, self.row_timeout_us)
        self.timers[job] = RoundTimer(plan, proto.round_timeout_us, self.grace_us, max(proto.aggregate_rto_us, 1_000),
                                      cap_us=proto.round_timeout_cap_us)
        self.heard[job] = (0, now)

    def _retire_silent(self, now):
        """Retires every admitted job none of whose servers' REGISTERs was
        accepted for the binary's job silence (Switch::retire_silent)."""
        for job in list(self.plans):
            seen = self.servers[job].registrations
            count, since = self.heard[job]
            if seen != count:
                self.heard[job] = (seen, now)
            elif now - since >= self.hotpath.job_silence_us:
                self.retire(job)
                log.info("job %d retired: no REGISTER of its server for %.1f s; its memory is free",
                         job, self.hotpath.job_silence_us / 1e6)

    def retire(self, job):
        """Takes admitted job `job` out: its entries, registers, parts in
        flight and state, so its region and job index serve the next job."""
        plan = self.plans.pop(job)
        for c in reversed(self.controls):
            c.remove(plan)
        for d in (self.servers, self.assemblers, self.timers, self.heard):
            d.pop(job, None)
        self.store.forget(job)
        self.retired += 1

    def counters(self):
        return self._control(Stats).read()

    def hot_key_hits(self, job=None):
        """Pairs added per hot rank of job `job` (default: the first)."""
        plan = self.plan if job is None else self.plans[job]
        return self._control(Accumulate).hits(plan)

    # ---- the CPU part ----

    def step(self, now):
        """Handles what came in on the CPU port, polls the round state, resends."""
        if self.plan is None:
            return
        for frame in self.backend.receive_packets():
            self._on_frame(now, frame)
        for d in self.backend.receive_digests(P.WORKER_DIGEST):
            self._on_worker_digest(d)
        rs = self._control(RoundState)
        for job, plan in self.plans.items():
            timer, assembler = self.timers[job], self.assemblers[job]
            for copy in range(plan.copies):
                _, hi = rs.round_state(plan, copy)
                for action in timer.observe(now, copy, hi):
                    self._do(action)
                    if action.what == "READOUT":
                        assembler.expect(now, hi & ~consts.ROUND_FLAGS, action.payload[1] & consts.CTL_FLAG_FLUSHED != 0)
            for round_, row in assembler.missing(now):
                self._do(single_row(job, round_, row, timer.flushed.get(round_) is not None))
        for action in self.store.poll(now):
            self._do(action)
        if self.admitting:
            self._retire_silent(now)

    def _on_frame(self, now, frame):
        try:
            ctl = Ctl.unpack(frame)
            if ctl.kind == consts.CtlKind.READOUT:
                self._on_row(now, ReadoutRow.parse(frame))
            elif ctl.kind == consts.CtlKind.FLUSH:
                self._timer(ctl.job).on_flush_reply(now, ctl)
            elif ctl.kind == consts.CtlKind.TO_CPU:
                self._on_datagram(now, parse_udp_frame(frame[CTL_LEN:]))
            else:
                raise WireError(f"zebra_ctl_h kind {ctl.kind} is not for the CPU")
        except WireError as e:
            self.bad_frames += 1
            log.debug("CPU port: bad frame (%s)", e)

    def _on_worker_digest(self, d):
        plan = self.plans.get(d["job"])
        if plan is None:
            self.bad_digests += 1
            log.debug("worker digest for job %d, not loaded", d["job"])
            return
        peer = Peer(d["port"], d["mac"], d["ip"], d["udp_port"])
        if not self.worker_check.pin_worker(plan, d["worker"], peer.ip, peer.udp_port):
            return
        self.replicate.learn_worker(plan, d["worker"], peer)

    def _on_datagram(self, now, f):
        msg = parse_datagram(f.payload)
        if isinstance(msg, AggregateAck):
            directory = self.servers.get(msg.job)
            if directory is not None and msg.server < directory.servers and not directory.check(msg.server, f.src_ip, f.src_port, msg.token):
                log.debug("AGGREGATE_ACK for job %d server %d not from it: refused", msg.job, msg.server)
                return
            if msg.job in self.plans:
                self.store.ack(now, msg.job, msg.server, msg.round, msg.part)
                for action in self.store.drain(now):
                    self._do(action)
        elif isinstance(msg, Register):
            granted = None
            if msg.admit is not None:
                capacity = self._admit(now, msg, f)
                if capacity == 0:
                    refusal = encode_register_ack(msg.job, msg.server, self.epoch, 0, (msg.admit[0], 0))
                    self._frame_to(f.src_mac, f.src_ip, f.src_port, refusal)
                    return
                granted = (msg.admit[0], capacity)
            directory = self.servers.get(msg.job)
            reply = None if directory is None else directory.on_register(
                msg.job, msg.server, f.src_ip, f.src_port, f.src_mac, msg.token, granted)
            if reply is None:
                log.warning("REGISTER for job %d server %d refused", msg.job, msg.server)
                return
            self.replicate.set_server(self.plans[msg.job], msg.server, directory.addresses[msg.server])
            self._frame_to(f.src_mac, f.src_ip, f.src_port, reply)

    def _timer(self, job):
        timer = self.timers.get(job)
        if timer is None:
            raise WireError(f"zebra_ctl_h of job {job}, not loaded")
        return timer

    def _on_row(self, now, row):
        timer = self._timer(row.ctl.job)
        plan, assembler = self.plans[row.ctl.job], self.assemblers[row.ctl.job]
        timer.on_readout_started(row.ctl.round)
        closed = assembler.on_row(now, row)
        if closed is None:
            return
        rs = self._control(RoundState)
        parts = build_parts(plan, closed, lambda w, c, r: rs.coverage(plan, w, c, r))
        for server, payloads in parts.items():
            for part, payload in enumerate(payloads):
                self.store.add(now, closed.job, closed.round, server, part, payload)
        for action in self.store.drain(now):
            self._do(action)
        timer.forget(closed.round)
        self._do(release(closed.job, closed.round))

    def _do(self, action):
        if isinstance(action, ToPipeline):
            self.backend.send_packet(action.payload)
        elif isinstance(action, ToServer):
            directory = self.servers.get(action.job)
            a = None if directory is None else directory.address(action.server)
            if a is None:
                self.unroutable += 1
                return
            self._frame_to(a.mac, a.ip, a.port, action.payload)

    def _frame_to(self, mac, ip, port, payload):
        ports = self.plan.ports
        frame = udp_frame(ports.switch_mac, mac, self.switch_ip, ip, self.plan.hotpath.switch.port, port, payload)
        self.backend.send_packet(Ctl(consts.CtlKind.FORWARD).pack() + frame)


__all__ = ["Controller", "P"]
