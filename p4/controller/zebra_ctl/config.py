"""The protocol configuration, as zebra-proto's `Config` and `JobConfig`
(rust/zebra-proto/src/config.rs): the same fields, defaults, derived sizes
and checks, with the same error texts. Durations are microseconds."""

from dataclasses import dataclass, field

from . import consts


class ConfigError(Exception):
    """A value the protocol cannot run with (the text of `ConfigError`'s Display)."""


@dataclass
class JobConfig:
    id: int
    workers: int
    hot_keys: int
    servers: int
    owners: list = None
    number: str = "f32"          # "f32" or "fixed"
    frac_bits: int = None        # for "fixed"
    layout: str = "heat"         # "heat" or "random"
    layout_seed: int = None
    dense_ranks: int = 0

    def is_fixed(self):
        return self.number == "fixed"

    def owner(self, rank):
        if self.owners is not None:
            return self.owners[rank]
        return (rank * self.servers) // max(self.hot_keys, 1)

    def all_workers_mask(self):
        if self.workers >= consts.MAX_WORKERS:
            return (1 << 64) - 1
        return (1 << self.workers) - 1


@dataclass
class Config:
    jobs: list = field(default_factory=list)
    registers: int = consts.DEFAULT_REGISTERS
    slots: int = consts.DEFAULT_SLOTS
    copies: int = consts.DEFAULT_COPIES
    packet_size: int = consts.DEFAULT_PACKET_SIZE
    # Largest AGGREGATE part (Config::aggregate_size): the CPU builds them, so
    # they fill the MTU whatever packet_size is. Not a setting of the file.
    aggregate_size: int = consts.MAX_PACKET_SIZE
    max_seqs: int = consts.DEFAULT_MAX_SEQS
    packing: str = "strict"
    round_timeout_us: int = 50_000
    aggregate_rto_us: int = 2_000
    aggregate_max_retries: int = 50
    worker_rto_us: int = 2_000
    worker_max_retries: int = 10
    worker_max_in_flight: int = 256
    worker_retain_pairs: int = 1 << 20
    max_round_ahead: int = consts.DEFAULT_MAX_ROUND_AHEAD
    uncertain_timeout_us: int = 5_000_000
    server_history: int = 4096
    update_window: int = consts.DEFAULT_UPDATE_WINDOW

    def region_slots(self, job):
        r = max(self.registers, 1)
        return -(-job.hot_keys // r)

    def job(self, job_id):
        return next((j for j in self.jobs if j.id == job_id), None)

    def pairs_per_packet(self):
        return min((self.packet_size - consts.HOT_HEADER_LEN) // consts.PAIR_LEN, consts.MAX_PAIRS_PER_PACKET)

    def dense_values_per_packet(self):
        return min(
            (self.packet_size - consts.HOT_DENSE_HEADER_LEN) // consts.VALUE_LEN,
            self.registers,
            consts.MAX_PAIRS_PER_PACKET,
        )

    def aggregate_run_bytes_per_packet(self):
        return self.aggregate_size - consts.AGGREGATE_HEADER_LEN

    def aggregate_values_per_packet_worst(self):
        return self.aggregate_run_bytes_per_packet() // (consts.RUN_HEADER_LEN + consts.VALUE_LEN)

    def coverage_bits_per_packet(self):
        return (self.packet_size - consts.COVERAGE_HEADER_LEN) * 8

    def max_parts(self, job):
        data = max(-(-job.hot_keys // self.aggregate_values_per_packet_worst()), 1)
        return data + job.workers * -(-self.max_seqs // self.coverage_bits_per_packet())

    def cover_words(self):
        return -(-self.max_seqs // consts.COVER_WORD_BITS)

    def round_timeout_cap_us(self):
        """The longest a learned round timeout gets, as zebra_proto::Config::round_timeout_cap:
        at most 10 s and half of uncertain_timeout, never below round_timeout."""
        return max(min(10_000_000, self.uncertain_timeout_us // 2), self.round_timeout_us)

    def validate(self):
        """Raises ConfigError naming the first bad value (Config::validate)."""
        r = self.registers
        if r == 0 or r > consts.MAX_REGISTERS:
            raise ConfigError(f"registers = {r}: expected 1..={consts.MAX_REGISTERS}")
        if self.copies == 0 or self.copies > consts.MAX_COPIES:
            raise ConfigError(f"copies = {self.copies}: expected 1..={consts.MAX_COPIES}")
        if self.slots == 0 or self.slots * self.copies > consts.MAX_REGISTER_ENTRIES:
            raise ConfigError(
                f"slots = {self.slots} with {self.copies} copies: expected 1 ..= "
                f"{consts.MAX_REGISTER_ENTRIES} entries per register"
            )
        if not consts.MIN_PACKET_SIZE <= self.packet_size <= consts.MAX_PACKET_SIZE:
            raise ConfigError(
                f"packet_size = {self.packet_size}: expected {consts.MIN_PACKET_SIZE}..={consts.MAX_PACKET_SIZE} bytes"
            )
        if self.max_seqs == 0:
            raise ConfigError("max_seqs must be at least 1")
        for name, us in (
            ("round_timeout", self.round_timeout_us),
            ("aggregate_rto", self.aggregate_rto_us),
            ("worker_rto", self.worker_rto_us),
            ("uncertain_timeout", self.uncertain_timeout_us),
        ):
            if us == 0:
                raise ConfigError(f"{name} must be longer than zero")
        if self.aggregate_max_retries == 0 or self.worker_max_retries == 0:
            raise ConfigError("retry limits must be at least 1")
        if self.worker_max_in_flight == 0:
            raise ConfigError("worker_max_in_flight must be at least 1")
        if self.server_history == 0:
            raise ConfigError("server_history must be at least 1")
        if not 1 <= self.update_window <= consts.MAX_UPDATE_WINDOW:
            raise ConfigError(f"update_window = {self.update_window}: expected 1..={consts.MAX_UPDATE_WINDOW}")
        if not self.jobs:
            raise ConfigError("no job configured")
        used = 0
        for i, job in enumerate(self.jobs):
            if any(j.id == job.id for j in self.jobs[:i]):
                raise ConfigError(f"job id {job.id} configured twice")
            if job.workers == 0 or job.workers > consts.MAX_WORKERS:
                raise ConfigError(f"job {job.id}: workers = {job.workers}: expected 1..={consts.MAX_WORKERS}")
            if job.hot_keys == 0:
                raise ConfigError(f"job {job.id}: hot_keys must be at least 1")
            if job.servers == 0:
                raise ConfigError(f"job {job.id}: servers must be at least 1")
            if job.owners is not None:
                if len(job.owners) != job.hot_keys:
                    raise ConfigError(
                        f"job {job.id}: owner table has {len(job.owners)} entries for {job.hot_keys} hot keys"
                    )
                bad = next((s for s in job.owners if s >= job.servers), None)
                if bad is not None:
                    raise ConfigError(f"job {job.id}: owner table names server {bad}, beyond the job's servers")
            if job.is_fixed() and job.frac_bits > consts.MAX_FRAC_BITS:
                raise ConfigError(f"job {job.id}: frac_bits = {job.frac_bits}: expected 0..={consts.MAX_FRAC_BITS}")
            if job.dense_ranks > job.hot_keys:
                raise ConfigError(f"job {job.id}: dense_ranks exceeds hot_keys")
            used += self.region_slots(job)
            if self.max_parts(job) > 0xFFFF:
                raise ConfigError(
                    f"job {job.id}: a round could need more than 65535 parts per server (raise packet_size)"
                )
        if used > self.slots:
            raise ConfigError(f"jobs need {used} slots per register, the switch has {self.slots}")
