"""What the P4 program needs for the jobs of a settings file, computed from
the settings (no hardware involved): the checks the compiled program imposes
on each job and on all of them together, each job's geometry (register
region, record and coverage bases, placed one after the other as the
software switch places its regions), and the LNS scale.

The table entries themselves are written by the classes of controls.py, one
per P4 file, from a `JobPlan`.
"""

import secrets
from dataclasses import dataclass, field

from . import consts

BUILDS = ("fixed", "lns")


class PlanError(Exception):
    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("this job cannot run on the P4 program:" + "".join(f"\n  - {p}" for p in self.problems))


@dataclass
class JobPlan:
    """One job's geometry in the switch (job index i: the i-th job of the
    settings file)."""

    hotpath: object          # settings.HotpathConfig (zebra switch --plan)
    job: object              # config.JobConfig
    ports: object            # ports.PortsConfig
    build: str               # "fixed" or "lns"
    job_index: int
    lns_frac_bits: int       # the LNS build's scale (None for fixed)
    region_base: int         # first slot of the job's region in each copy
    region_slots: int
    readout_rows: int
    record_base: int         # first record of the job
    cover_base: int          # first coverage word of the job
    # The job's membership token (docs/SECURITY.md): from its key (job.token),
    # else drawn when the job is placed; nonzero. The pipeline's tables and the
    # CPU's ServerDirectory hold the same one.
    token: int = field(default=0, compare=False)

    @property
    def keyed(self):
        """Whether the token comes from the job's key: required from a member's first datagram."""
        return self.job.token != 0

    @property
    def proto(self):
        return self.hotpath.proto

    @property
    def copies(self):
        return self.proto.copies

    @property
    def cover_words(self):
        return self.proto.cover_words

    def record_base_of(self, worker, copy):
        return self.record_base + (worker * self.copies + copy) * self.proto.max_seqs

    def cover_base_of(self, worker, copy):
        return self.cover_base + (worker * self.copies + copy) * self.cover_words

    def fixed_flag(self):
        return 1 if self.build == "fixed" else 0

    def frac_bits(self):
        """The scale of the sums the registers hold."""
        return self.job.frac_bits if self.build == "fixed" else self.lns_frac_bits

    def rank_of(self, register, row):
        """The hot rank at (register, row) of the heat layout, or None."""
        rank = row * consts.P4_REGISTERS + register
        return rank if rank < self.job.hot_keys else None


def switch_problems(hotpath, build="fixed"):
    """What the compiled program imposes on the settings every job shares."""
    proto = hotpath.proto
    problems = []
    if build not in BUILDS:
        problems.append(f"build {build!r}: expected fixed or lns")
    if hotpath.switch is None:
        problems.append("switch: not set; the controller needs the switch's hot-path address (`switch = HOST:PORT`)")
    elif ":" in hotpath.switch.host or hotpath.switch.host == "0.0.0.0":
        problems.append(
            f"switch = {hotpath.switch}: the P4 program needs the switch's own IPv4 address "
            "(the address workers and servers send to)"
        )
    if proto.registers != consts.P4_REGISTERS:
        problems.append(
            f"registers = {proto.registers}: the P4 program has {consts.P4_REGISTERS} register arrays "
            "(REGISTERS in p4/configuration.p4)"
        )
    if proto.copies not in (1, 2, 4):
        problems.append(f"copies = {proto.copies}: the P4 program takes 1, 2 or 4 (the copy is round & (copies - 1))")
    if proto.copies * proto.slots > consts.P4_REGISTER_ENTRIES:
        problems.append(
            f"slots = {proto.slots} with {proto.copies} copies: the P4 registers have "
            f"{consts.P4_REGISTER_ENTRIES} entries (REGISTER_ENTRIES)"
        )
    # The longest packet whose pairs fit in a pass (pairs_per_packet). Strict
    # packing puts at most one pair of each register in a packet, so at most
    # R pairs (no more than a pass holds) whatever the packet size.
    longest = consts.HOT_HEADER_LEN + consts.PAIR_LEN * (consts.P4_PAIRS_PER_PASS + 1) - 1
    strict_fits = proto.packing == "strict" and consts.P4_REGISTERS <= consts.P4_PAIRS_PER_PASS
    if proto.packet_size > longest and not strict_fits:
        problems.append(
            f"packet_size = {proto.packet_size} with packing = {proto.packing}: a pass of the P4 program holds "
            f"{consts.P4_PAIRS_PER_PASS} pairs, so at most {longest} bytes (PAIRS_PER_PASS), or packing = strict "
            f"(at most R = {consts.P4_REGISTERS} pairs a packet)"
        )
    return problems


def job_problems(proto, job, build="fixed", lns_frac_bits=None):
    """What the compiled program imposes on one job."""
    problems = []
    if job.dense_ranks > 0 and proto.dense_values_per_packet != consts.P4_REGISTERS:
        need = consts.HOT_DENSE_HEADER_LEN + consts.VALUE_LEN * consts.P4_REGISTERS
        problems.append(
            f"dense_ranks = {job.dense_ranks} with packet_size = {proto.packet_size}: the P4 program adds dense "
            f"blocks of exactly R = {consts.P4_REGISTERS} values, which needs packet_size >= {need}"
        )
    most = 1 << (consts.P4_SLOT_BITS + consts.P4_REGISTER_BITS)
    if job.hot_keys > most:
        problems.append(
            f"{job.hot_keys} hot keys in one job: the P4 program ranks at most {most} a job "
            "(SLOT_BITS + REGISTER_BITS); use fewer hot keys or more PS-lite servers"
        )
    if job.layout != "heat":
        problems.append("layout = random: the P4 program places ranks by the heat layout only (the random layout is a baseline of the software switch)")
    if build == "fixed" and not job.is_fixed():
        problems.append("number = f32: Tofino has no float adder; use number = fixed:BITS, or the ZEBRA_LNS build (--build lns)")
    if build == "lns":
        if job.is_fixed():
            problems.append("number = fixed: the ZEBRA_LNS build sums f32 values (number = f32)")
        if lns_frac_bits is None or not 0 <= lns_frac_bits <= consts.MAX_FRAC_BITS:
            problems.append(f"the ZEBRA_LNS build needs --lns-frac-bits in 0..={consts.MAX_FRAC_BITS} (the scale of its sums)")
    if job.workers > consts.P4_MAX_WORKERS:
        problems.append(f"workers = {job.workers}: the P4 program has {consts.P4_MAX_WORKERS}")
    if job.servers > consts.P4_MAX_SERVERS:
        problems.append(
            f"servers = {job.servers}: the P4 program routes update acknowledgements to "
            f"{consts.P4_MAX_SERVERS} servers a job (MAX_SERVERS)"
        )
    records = job.workers * proto.copies * proto.max_seqs
    if records > consts.P4_RECORD_ENTRIES:
        problems.append(
            f"workers x copies x max_seqs = {records}: the P4 program keeps {consts.P4_RECORD_ENTRIES} records "
            "(RECORD_ENTRIES); lower max_seqs"
        )
    words = job.workers * proto.copies * proto.cover_words
    if words > consts.P4_COVER_ENTRIES:
        problems.append(
            f"workers x copies x ceil(max_seqs / 32) = {words}: the P4 program has {consts.P4_COVER_ENTRIES} "
            "coverage words (COVER_ENTRIES); lower max_seqs"
        )
    return problems


def plan_jobs(hotpath, ports, build="fixed", lns_frac_bits=None):
    """Checks what the compiled P4 program imposes on the settings' jobs and
    computes their geometry, one after the other; raises PlanError with every
    problem found."""
    proto = hotpath.proto
    jobs = proto.jobs
    if not jobs:
        # zebra switch admits such jobs as their servers register; so does the
        # controller (Controller.load with settings that size no job).
        raise PlanError([
            "workers and hot keys: not set; give the job's workers and hot keys, or settings that "
            "size no job at all (the switch then admits jobs as their servers register)"
        ])
    problems = switch_problems(hotpath, build)

    def add(problem):
        # The jobs of one settings file differ only in their hot keys: a
        # problem one has, they all have; said once.
        if problem not in problems:
            problems.append(problem)

    for job in jobs:
        for problem in job_problems(proto, job, build, lns_frac_bits):
            add(problem)
    records = sum(job.workers for job in jobs) * proto.copies * proto.max_seqs
    words = sum(job.workers for job in jobs) * proto.copies * proto.cover_words
    if len(jobs) > 1 and records > consts.P4_RECORD_ENTRIES:
        problems.append(
            f"the {len(jobs)} jobs' workers x copies x max_seqs = {records}: the P4 program keeps "
            f"{consts.P4_RECORD_ENTRIES} records (RECORD_ENTRIES); lower max_seqs"
        )
    if len(jobs) > 1 and words > consts.P4_COVER_ENTRIES:
        problems.append(
            f"the {len(jobs)} jobs' workers x copies x ceil(max_seqs / 32) = {words}: the P4 program has "
            f"{consts.P4_COVER_ENTRIES} coverage words (COVER_ENTRIES); lower max_seqs"
        )
    if len(jobs) > consts.P4_MAX_JOBS:
        problems.append(f"{len(jobs)} jobs: the P4 program serves {consts.P4_MAX_JOBS} (MAX_JOBS)")
    if problems:
        raise PlanError(problems)
    plans = []
    region = record = cover = 0
    for index, job in enumerate(jobs):
        plans.append(placed_plan(hotpath, ports, job, build, lns_frac_bits, index, region, record, cover))
        region += job.region_slots
        record += job.workers * proto.copies * proto.max_seqs
        cover += job.workers * proto.copies * proto.cover_words
    return plans


def placed_plan(hotpath, ports, job, build, lns_frac_bits, job_index, region_base, record_base, cover_base):
    """The plan of `job` placed at these indices and bases of the program's arrays."""
    return JobPlan(
        hotpath=hotpath,
        job=job,
        ports=ports,
        build=build,
        job_index=job_index,
        lns_frac_bits=lns_frac_bits if build == "lns" else None,
        region_base=region_base,
        region_slots=job.region_slots,
        readout_rows=max(job.region_slots, job.workers),
        record_base=record_base,
        cover_base=cover_base,
        token=job.token or (secrets.randbits(32) or 1),
    )


def lowest_free(used, need, size):
    """The first index from which `need` entries of an array of `size` are in
    none of the ranges `used` ([(start, end)]), or None."""
    at = 0
    for start, end in sorted(used):
        if start - at >= need:
            return at
        at = max(at, end)
    return at if size - at >= need else None


def admitted_plan(hotpath, ports, job, region_base, held, build="fixed", lns_frac_bits=None):
    """The plan of a job admitted as its server registered, beside the plans
    `held`: its region from `region_base` (where zebra switch --admit placed
    it, the software switch's rule); the lowest free job index, records and
    coverage words, arrays the software switch keeps per job and the program
    shares among its jobs. PlanError when the program cannot run it."""
    proto = hotpath.proto
    problems = job_problems(proto, job, build, lns_frac_bits)
    used = {p.job_index for p in held}
    job_index = next((i for i in range(consts.P4_MAX_JOBS) if i not in used), None)
    if job_index is None:
        problems.append(f"{len(held)} jobs already: the P4 program serves {consts.P4_MAX_JOBS} (MAX_JOBS)")
    def place(per_worker, base_of, limit, what):
        """The lowest free stretch of a P4-only array for the job (`per_worker` entries for
        each worker copy), or None with the problem noted."""
        size = job.workers * proto.copies * per_worker
        taken = [(base_of(p), base_of(p) + p.job.workers * proto.copies * per_worker) for p in held]
        base = lowest_free(taken, size, limit)
        if base is None and size <= limit:
            problems.append(f"{what} = {size}: no free stretch among the P4 program's {limit} beside the "
                            f"{len(held)} jobs it has; lower max_seqs")
        return base

    record_base = place(proto.max_seqs, lambda p: p.record_base, consts.P4_RECORD_ENTRIES,
                        "workers x copies x max_seqs (records, RECORD_ENTRIES)")
    cover_base = place(proto.cover_words, lambda p: p.cover_base, consts.P4_COVER_ENTRIES,
                       "workers x copies x ceil(max_seqs / 32) (coverage words, COVER_ENTRIES)")
    if problems:
        raise PlanError(problems)
    return placed_plan(hotpath, ports, job, build, lns_frac_bits, job_index, region_base, record_base,
                       cover_base)


def template_plan(hotpath, ports, build="fixed", lns_frac_bits=None):
    """For settings that size no job (the switch admits jobs as they
    register): the switch-wide checks and those the template of admitted
    jobs fails whatever its size, and a plan of the template for what the
    switch needs once (JobPlan of job index 0, no region)."""
    template = hotpath.admit
    problems = switch_problems(hotpath, build) + job_problems(hotpath.proto, template, build, lns_frac_bits)
    if problems:
        raise PlanError(problems)
    return JobPlan(hotpath=hotpath, job=template, ports=ports, build=build, job_index=0,
                   lns_frac_bits=lns_frac_bits if build == "lns" else None, region_base=0, region_slots=0,
                   readout_rows=0, record_base=0, cover_base=0)


def plan_job(hotpath, ports, build="fixed", lns_frac_bits=None):
    """The plan of a settings file with one job (the first of plan_jobs)."""
    return plan_jobs(hotpath, ports, build, lns_frac_bits)[0]
