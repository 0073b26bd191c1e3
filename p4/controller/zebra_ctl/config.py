"""The protocol configuration, as zebra-proto's `Config` and `JobConfig`
(rust/zebra-proto/src/config.rs), built from `zebra switch --plan`'s
document (settings.py): the binary has checked every value and derived the
sizes (coverage words, region slots, bytes of a part, the round timeout's
cap) the switch CPU and the table plan use, so nothing here computes them
again. Durations are microseconds."""

from dataclasses import dataclass, fields

from . import consts


def _of(cls, d, **extra):
    return cls(**{f.name: d[f.name] for f in fields(cls) if f.name not in extra}, **extra)


@dataclass
class JobConfig:
    id: int
    workers: int
    hot_keys: int
    servers: int
    owners: list                 # owning server per hot rank, or None: contiguous ranges
    number: str                  # "f32" or "fixed"
    frac_bits: int               # for "fixed", else None
    layout: str                  # "heat" or "random"
    layout_seed: int             # for "random", else None
    dense_ranks: int
    token: int                   # from the job's key; 0: none (the switch draws one)
    region_slots: int            # the job's slots in each register (ceil(hot_keys / R))

    @classmethod
    def from_plan(cls, d):
        """A job of `zebra switch --plan`'s document."""
        return _of(cls, d)

    def is_fixed(self):
        return self.number == "fixed"

    def owner(self, rank):
        """The server that owns hot rank `rank` (JobConfig::owner)."""
        if self.owners is not None:
            return self.owners[rank]
        return (rank * self.servers) // max(self.hot_keys, 1)

    def all_workers_mask(self):
        if self.workers >= consts.MAX_WORKERS:
            return (1 << 64) - 1
        return (1 << self.workers) - 1


@dataclass
class Config:
    jobs: list
    registers: int
    slots: int
    copies: int
    packet_size: int
    aggregate_size: int          # largest AGGREGATE part: the CPU builds them, MTU-sized
    max_seqs: int
    max_round_ahead: int
    packing: str
    round_timeout_us: int
    aggregate_rto_us: int
    aggregate_max_retries: int
    worker_rto_us: int
    worker_max_retries: int
    worker_max_in_flight: int
    worker_retain_pairs: int
    uncertain_timeout_us: int
    server_history: int
    update_window: int
    # Derived by zebra-proto's Config (its methods of the same names).
    round_timeout_cap_us: int    # the longest a learned round timeout gets
    dense_values_per_packet: int
    aggregate_run_bytes_per_packet: int
    coverage_bits_per_packet: int
    cover_words: int             # coverage words per worker and copy

    @classmethod
    def from_plan(cls, d):
        """The `proto` of `zebra switch --plan`'s document."""
        return _of(cls, d, jobs=[JobConfig.from_plan(j) for j in d["jobs"]])

    def job(self, job_id):
        return next((j for j in self.jobs if j.id == job_id), None)
