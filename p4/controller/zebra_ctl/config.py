"""The protocol configuration, as zebra-proto's `Config` and `JobConfig`
(rust/zebra-proto/src/config.rs): the same fields and defaults, and the
derived sizes the switch CPU and the table plan use. Built from
`zebra switch --plan` (settings.py), which has checked them; durations are
microseconds."""

from dataclasses import dataclass, field

from . import consts


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
    token: int = 0               # from the job's key; 0: none (the switch draws one)

    @classmethod
    def from_plan(cls, d):
        """A job of `zebra switch --plan`'s document."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})

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

    @classmethod
    def from_plan(cls, d):
        """The `proto` of `zebra switch --plan`'s document."""
        fields = {k: d[k] for k in cls.__dataclass_fields__ if k != "jobs"}
        return cls(jobs=[JobConfig.from_plan(j) for j in d["jobs"]], **fields)

    def region_slots(self, job):
        r = max(self.registers, 1)
        return -(-job.hot_keys // r)

    def job(self, job_id):
        return next((j for j in self.jobs if j.id == job_id), None)

    def dense_values_per_packet(self):
        return min(
            (self.packet_size - consts.HOT_DENSE_HEADER_LEN) // consts.VALUE_LEN,
            self.registers,
            consts.MAX_PAIRS_PER_PACKET,
        )

    def aggregate_run_bytes_per_packet(self):
        return self.aggregate_size - consts.AGGREGATE_HEADER_LEN

    def coverage_bits_per_packet(self):
        return (self.packet_size - consts.COVERAGE_HEADER_LEN) * 8

    def cover_words(self):
        return -(-self.max_seqs // consts.COVER_WORD_BITS)

    def round_timeout_cap_us(self):
        """The longest a learned round timeout gets, as zebra_proto::Config::round_timeout_cap:
        at most 10 s and half of uncertain_timeout, never below round_timeout."""
        return max(min(10_000_000, self.uncertain_timeout_us // 2), self.round_timeout_us)
