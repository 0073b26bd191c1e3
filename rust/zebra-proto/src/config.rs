//! The one configuration value every state machine is built from.
//!
//! The switch, the workers and the servers of a job must agree on it (the
//! I/O layer loads it from one file or from `ZEBRA_*` settings). Nothing in
//! the protocol is hard-coded: every size and timeout is a field here, and
//! [`Config::validate`] turns a bad value into a [`ConfigError`] before any
//! state machine exists.

use std::time::Duration;

use thiserror::Error;

use crate::consts;
use crate::layout::LayoutKind;
use crate::number::{NumberMode, MAX_FRAC_BITS};
use crate::packing::Packing;

/// Seqs of updates a server keeps by default ([`Config::update_window`]).
pub const DEFAULT_UPDATE_WINDOW: usize = 8;
/// The largest [`Config::update_window`].
pub const MAX_UPDATE_WINDOW: usize = 1024;

/// One training job aggregated by the switch.
#[derive(Debug, Clone, PartialEq)]
pub struct JobConfig {
    /// Job id carried in every packet.
    pub id: u16,
    /// Number of workers (ranks `0..workers`).
    pub workers: u16,
    /// Number of hot keys `K`; hot indices (ranks) are `0..K`, hottest first.
    pub hot_keys: u32,
    /// Number of servers (indices `0..servers`).
    pub servers: u16,
    /// Owning server of each hot rank (length `K`); `None` splits the ranks
    /// into `servers` contiguous, nearly equal ranges.
    pub owners: Option<Vec<u16>>,
    /// How values are encoded and summed.
    pub number: NumberMode,
    /// Where each hot rank lives in the switch registers.
    pub layout: LayoutKind,
    /// Ranks `0..dense_ranks` travel as dense blocks (every worker sends
    /// every block, zeros included, SwitchML style); the rest as sparse pairs.
    pub dense_ranks: u32,
    /// The job's membership token when it has a key (`ZEBRA_JOB_KEY`): every
    /// member derives it from the key and shows it from its first datagram,
    /// and the switch pins only members that show it. 0: no key; the
    /// switch draws a token and hands it to the members it pins
    /// (`docs/SECURITY.md`).
    pub token: u32,
}

impl JobConfig {
    /// A job with the defaults: exact f32, heat-based layout, no dense block,
    /// ranks split evenly across the servers.
    pub fn new(id: u16, workers: u16, hot_keys: u32, servers: u16) -> JobConfig {
        JobConfig {
            id,
            workers,
            hot_keys,
            servers,
            owners: None,
            number: NumberMode::F32,
            layout: LayoutKind::Heat,
            dense_ranks: 0,
            token: 0,
        }
    }

    /// Owner table from PS-lite key ranges: `hot_keys[r]` is the key of hot
    /// rank `r`, `ranges[s]` the half-open key range of server `s`. A key in
    /// no range goes to the last server.
    pub fn owners_from_key_ranges(hot_keys: &[u64], ranges: &[std::ops::Range<u64>]) -> Vec<u16> {
        hot_keys
            .iter()
            .map(|k| {
                let s = ranges
                    .iter()
                    .position(|r| r.contains(k))
                    .unwrap_or(ranges.len().saturating_sub(1));
                u16::try_from(s).unwrap_or(u16::MAX)
            })
            .collect()
    }

    /// The server that owns hot rank `rank` (`rank < hot_keys`).
    pub fn owner(&self, rank: u32) -> u16 {
        match &self.owners {
            Some(table) => table[rank as usize],
            None => {
                ((u64::from(rank) * u64::from(self.servers)) / u64::from(self.hot_keys.max(1)))
                    as u16
            }
        }
    }

    /// Bit mask with one bit per worker of the job.
    pub fn all_workers_mask(&self) -> u64 {
        if self.workers as usize >= consts::MAX_WORKERS {
            u64::MAX
        } else {
            (1u64 << self.workers) - 1
        }
    }
}

/// Switch geometry, packet size, timeouts and the jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Register arrays `R`: hot rank `r` lives in register `r mod R` (heat layout).
    pub registers: u16,
    /// Slots per register array and copy `S`, shared by all jobs.
    pub slots: u32,
    /// Copies of the slot memory `W`: rounds of one job the switch holds at once.
    pub copies: u8,
    /// UDP payload size of every hot-path packet the pipeline parses (the
    /// paper uses 192).
    pub packet_size: usize,
    /// Largest AGGREGATE part. The switch CPU builds them, not the
    /// pipeline, so they fill a 1500-byte MTU by default whatever
    /// `packet_size` is: fewer headers and acknowledgements on the server's
    /// link. Not a setting of the file; tests make it small.
    pub aggregate_size: usize,
    /// Most packets one worker may send for one round (sequence numbers `0..max_seqs`).
    pub max_seqs: u16,
    /// How far ahead of a job's newest round (the highest it opened) a hot
    /// packet's round may be; a packet further ahead is refused (FALLBACK
    /// `FarAhead`), not remembered, so one stray or forged round cannot
    /// make the job's later rounds late. A job's first round is not limited.
    pub max_round_ahead: u32,
    /// How workers pack sparse pairs into packets.
    pub packing: Packing,
    /// A round still open this long after its first packet is flushed.
    pub round_timeout: Duration,
    /// Switch CPU: time before an unacknowledged aggregate part is sent again
    /// (doubling on each try, capped at 16×).
    pub aggregate_rto: Duration,
    /// Switch CPU: tries before an aggregate part is given up (counted).
    pub aggregate_max_retries: u32,
    /// Worker: time before an unacknowledged hot packet is sent again.
    pub worker_rto: Duration,
    /// Worker: retransmissions before a packet is given up and its pairs
    /// go to the servers as uncertain fallback.
    pub worker_max_retries: u32,
    /// Worker: hot packets in flight at once.
    pub worker_max_in_flight: usize,
    /// Worker: pairs of settled rounds kept (the oldest rounds dropped
    /// first) so that what a switch added and then lost when it was started
    /// again can be sent to the servers ([`crate::Worker::restart`]); 0 keeps
    /// none.
    pub worker_retain_pairs: usize,
    /// Server: how long uncertain fallback pairs wait for their round's
    /// aggregate before they are applied anyway.
    pub uncertain_timeout: Duration,
    /// Server: reported rounds remembered (to drop duplicates and to
    /// reconcile late uncertain fallbacks).
    pub server_history: u32,
    /// Server and workers (the pull half): a server keeps its updates of
    /// the last `update_window` seqs (sending update `n` gives up any still
    /// kept below `n - update_window + 1`), so a worker that sees update `n`
    /// knows every update below that is settled at the server.
    pub update_window: usize,
    /// The jobs sharing the switch.
    pub jobs: Vec<JobConfig>,
}

impl Config {
    /// The defaults (paper-sized packets, two copies) with the given jobs.
    pub fn new(jobs: Vec<JobConfig>) -> Config {
        Config {
            registers: consts::DEFAULT_REGISTERS,
            slots: consts::DEFAULT_SLOTS,
            copies: consts::DEFAULT_COPIES,
            packet_size: consts::DEFAULT_PACKET_SIZE,
            aggregate_size: consts::MAX_PACKET_SIZE,
            max_seqs: consts::DEFAULT_MAX_SEQS,
            max_round_ahead: consts::DEFAULT_MAX_ROUND_AHEAD,
            packing: Packing::Strict,
            round_timeout: Duration::from_millis(50),
            aggregate_rto: Duration::from_millis(2),
            aggregate_max_retries: 50,
            worker_rto: Duration::from_millis(2),
            worker_max_retries: 10,
            worker_max_in_flight: 256,
            worker_retain_pairs: 1 << 20,
            uncertain_timeout: Duration::from_millis(5000),
            server_history: 4096,
            update_window: DEFAULT_UPDATE_WINDOW,
            jobs,
        }
    }

    /// Checks every field; the first bad value is the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        use ConfigError as E;
        let r = self.registers as usize;
        if r == 0 || r > consts::MAX_REGISTERS {
            return Err(E::Registers(self.registers));
        }
        if self.copies == 0 || self.copies as usize > consts::MAX_COPIES {
            return Err(E::Copies(self.copies));
        }
        if self.slots == 0
            || self.slots as usize * self.copies as usize > consts::MAX_REGISTER_ENTRIES
        {
            return Err(E::Slots {
                slots: self.slots,
                copies: self.copies,
            });
        }
        for size in [self.packet_size, self.aggregate_size] {
            if !(consts::MIN_PACKET_SIZE..=consts::MAX_PACKET_SIZE).contains(&size) {
                return Err(E::PacketSize(size));
            }
        }
        if self.max_seqs == 0 {
            return Err(E::MaxSeqs);
        }
        if self.max_round_ahead == 0 {
            return Err(E::MaxRoundAhead);
        }
        for (name, d) in [
            ("round_timeout", self.round_timeout),
            ("aggregate_rto", self.aggregate_rto),
            ("worker_rto", self.worker_rto),
            ("uncertain_timeout", self.uncertain_timeout),
        ] {
            if d.is_zero() {
                return Err(E::ZeroTime(name));
            }
        }
        if self.aggregate_max_retries == 0 || self.worker_max_retries == 0 {
            return Err(E::Retries);
        }
        if self.worker_max_in_flight == 0 {
            return Err(E::InFlight);
        }
        if self.server_history == 0 {
            return Err(E::History);
        }
        if !(1..=MAX_UPDATE_WINDOW).contains(&self.update_window) {
            return Err(E::UpdateWindow(self.update_window));
        }
        if self.jobs.is_empty() {
            return Err(E::NoJobs);
        }
        self.validate_jobs()
    }

    /// Checks every field but the number of jobs: a switch that admits jobs
    /// as they register starts with none.
    pub fn validate_for_admission(&self) -> Result<(), ConfigError> {
        match self.validate() {
            Err(ConfigError::NoJobs) => self.validate_jobs(),
            other => other,
        }
    }

    fn validate_jobs(&self) -> Result<(), ConfigError> {
        use ConfigError as E;
        let mut used_slots = 0u64;
        for (i, job) in self.jobs.iter().enumerate() {
            if self.jobs[..i].iter().any(|j| j.id == job.id) {
                return Err(E::DuplicateJob(job.id));
            }
            if job.workers == 0 || job.workers as usize > consts::MAX_WORKERS {
                return Err(E::Workers {
                    job: job.id,
                    workers: job.workers,
                });
            }
            if job.hot_keys == 0 {
                return Err(E::HotKeys(job.id));
            }
            if job.servers == 0 {
                return Err(E::Servers(job.id));
            }
            if let Some(owners) = &job.owners {
                if owners.len() != job.hot_keys as usize {
                    return Err(E::OwnersLen {
                        job: job.id,
                        len: owners.len(),
                        hot_keys: job.hot_keys,
                    });
                }
                if let Some(&bad) = owners.iter().find(|&&s| s >= job.servers) {
                    return Err(E::Owner {
                        job: job.id,
                        server: bad,
                    });
                }
            }
            if let NumberMode::Fixed { frac_bits } = job.number {
                if frac_bits > MAX_FRAC_BITS {
                    return Err(E::FracBits {
                        job: job.id,
                        frac_bits,
                    });
                }
            }
            if job.dense_ranks > job.hot_keys {
                return Err(E::DenseRanks(job.id));
            }
            used_slots += u64::from(self.region_slots(job));
            if self.max_parts(job) > usize::from(u16::MAX) {
                return Err(E::TooManyParts(job.id));
            }
        }
        if used_slots > u64::from(self.slots) {
            return Err(E::Memory {
                needed: used_slots,
                slots: self.slots,
            });
        }
        Ok(())
    }

    /// Hot values of each server's job when a PS-lite job of `servers`
    /// servers has the switch to itself: an equal share of every register's
    /// slots, whole slots only (what a switch that admits jobs gives, and
    /// what a server asks for when nothing else sizes its job).
    pub fn share(&self, servers: u16) -> u32 {
        u32::from(self.registers) * (self.slots / u32::from(servers.max(1)))
    }

    /// The longest a learned round timeout gets: below the servers'
    /// `uncertain_timeout` (uncertain fallback pairs wait that long for
    /// their round's aggregate; a round must close well before), at most
    /// [`crate::switch::ROUND_TIMEOUT_CAP`], never below `round_timeout`.
    pub fn round_timeout_cap(&self) -> std::time::Duration {
        crate::switch::ROUND_TIMEOUT_CAP
            .min(self.uncertain_timeout / 2)
            .max(self.round_timeout)
    }

    /// Slots per register a job's hot keys take: `ceil(K / R)`.
    pub fn region_slots(&self, job: &JobConfig) -> u32 {
        job.hot_keys.div_ceil(u32::from(self.registers.max(1)))
    }

    /// The job with id `id`.
    pub fn job(&self, id: u16) -> Option<&JobConfig> {
        self.jobs.iter().find(|j| j.id == id)
    }

    /// Sparse pairs per hot packet: what fits in `packet_size`, at most the
    /// parser's stack depth.
    pub fn pairs_per_packet(&self) -> usize {
        ((self.packet_size - consts::HOT_HEADER_LEN) / consts::PAIR_LEN)
            .min(consts::MAX_PAIRS_PER_PACKET)
    }

    /// Values per dense hot packet: what fits, at most one per register (so
    /// a dense block never conflicts) and at most the stack depth.
    pub fn dense_values_per_packet(&self) -> usize {
        ((self.packet_size - consts::HOT_DENSE_HEADER_LEN) / consts::VALUE_LEN)
            .min(self.registers as usize)
            .min(consts::MAX_PAIRS_PER_PACKET)
    }

    /// Bytes of runs one aggregate part holds (after its header).
    pub fn aggregate_run_bytes_per_packet(&self) -> usize {
        self.aggregate_size - consts::AGGREGATE_HEADER_LEN
    }

    /// Values per aggregate part in the worst case, every value a run of
    /// its own (no two hot indices of the part consecutive).
    pub fn aggregate_values_per_packet_worst(&self) -> usize {
        self.aggregate_run_bytes_per_packet() / (consts::RUN_HEADER_LEN + consts::VALUE_LEN)
    }

    /// Sequence-number bits per coverage part (a multiple of 8).
    pub fn coverage_bits_per_packet(&self) -> usize {
        (self.packet_size - consts::COVERAGE_HEADER_LEN) * 8
    }

    /// Most parts (aggregate and coverage) one round can need for one
    /// server: every hot key in data parts, every worker's full bitmap.
    pub fn max_parts(&self, job: &JobConfig) -> usize {
        (job.hot_keys as usize)
            .div_ceil(self.aggregate_values_per_packet_worst())
            .max(1)
            + job.workers as usize
                * (self.max_seqs as usize).div_ceil(self.coverage_bits_per_packet())
    }

    /// Coverage register words per worker and copy.
    pub fn cover_words(&self) -> usize {
        (self.max_seqs as usize).div_ceil(consts::COVER_WORD_BITS)
    }
}

/// A configuration value that the protocol cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// Register count outside `1..=MAX_REGISTERS`.
    #[error("registers = {0}: expected 1..={max}", max = consts::MAX_REGISTERS)]
    Registers(u16),
    /// Copy count outside `1..=MAX_COPIES`.
    #[error("copies = {0}: expected 1..={max}", max = consts::MAX_COPIES)]
    Copies(u8),
    /// Zero slots, or copies × slots larger than a register array.
    #[error("slots = {slots} with {copies} copies: expected 1 ..= {max} entries per register", max = consts::MAX_REGISTER_ENTRIES)]
    Slots {
        /// Slots asked for.
        slots: u32,
        /// Copies asked for.
        copies: u8,
    },
    /// Packet size outside the supported range.
    #[error("packet_size = {0}: expected {min}..={max} bytes", min = consts::MIN_PACKET_SIZE, max = consts::MAX_PACKET_SIZE)]
    PacketSize(usize),
    /// `max_seqs` is zero.
    #[error("max_seqs must be at least 1")]
    MaxSeqs,
    /// `max_round_ahead` is zero.
    #[error("max_round_ahead must be at least 1")]
    MaxRoundAhead,
    /// A timeout or interval is zero.
    #[error("{0} must be longer than zero")]
    ZeroTime(&'static str),
    /// A retry limit is zero.
    #[error("retry limits must be at least 1")]
    Retries,
    /// `worker_max_in_flight` is zero.
    #[error("worker_max_in_flight must be at least 1")]
    InFlight,
    /// `server_history` is zero.
    #[error("server_history must be at least 1")]
    History,
    /// `update_window` outside `1..=MAX_UPDATE_WINDOW`.
    #[error("update_window = {0}: expected 1..={MAX_UPDATE_WINDOW}")]
    UpdateWindow(usize),
    /// No job configured.
    #[error("no job configured")]
    NoJobs,
    /// Two jobs share an id.
    #[error("job id {0} configured twice")]
    DuplicateJob(u16),
    /// Worker count outside `1..=MAX_WORKERS`.
    #[error("job {job}: workers = {workers}: expected 1..={max}", max = consts::MAX_WORKERS)]
    Workers {
        /// Job id.
        job: u16,
        /// Workers asked for.
        workers: u16,
    },
    /// No hot keys.
    #[error("job {0}: hot_keys must be at least 1")]
    HotKeys(u16),
    /// No servers.
    #[error("job {0}: servers must be at least 1")]
    Servers(u16),
    /// Owner table of the wrong length.
    #[error("job {job}: owner table has {len} entries for {hot_keys} hot keys")]
    OwnersLen {
        /// Job id.
        job: u16,
        /// Entries in the table.
        len: usize,
        /// Hot keys of the job.
        hot_keys: u32,
    },
    /// Owner table names a server that does not exist.
    #[error("job {job}: owner table names server {server}, beyond the job's servers")]
    Owner {
        /// Job id.
        job: u16,
        /// The bad server index.
        server: u16,
    },
    /// Too many fraction bits.
    #[error("job {job}: frac_bits = {frac_bits}: expected 0..={max}", max = MAX_FRAC_BITS)]
    FracBits {
        /// Job id.
        job: u16,
        /// Fraction bits asked for.
        frac_bits: u8,
    },
    /// More dense ranks than hot keys.
    #[error("job {0}: dense_ranks exceeds hot_keys")]
    DenseRanks(u16),
    /// The jobs' hot keys do not fit in the switch memory.
    #[error("jobs need {needed} slots per register, the switch has {slots}")]
    Memory {
        /// Slots the jobs need together.
        needed: u64,
        /// Slots configured.
        slots: u32,
    },
    /// A round could need more than 65535 parts per server.
    #[error("job {0}: a round could need more than 65535 parts per server (raise packet_size)")]
    TooManyParts(u16),
    /// A job id or rank that the configuration does not have.
    #[error("job {job} rank {rank} is not in the configuration")]
    UnknownMember {
        /// Job id.
        job: u16,
        /// Worker or server index.
        rank: u16,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Config {
        Config::new(vec![JobConfig::new(1, 4, 1000, 2)])
    }

    #[test]
    fn defaults_validate_and_derive_sizes() {
        let c = ok();
        c.validate().unwrap();
        assert_eq!(c.pairs_per_packet(), 21);
        assert_eq!(c.dense_values_per_packet(), 32);
        assert_eq!(c.aggregate_run_bytes_per_packet(), 1432);
        assert_eq!(c.aggregate_values_per_packet_worst(), 143);
        assert_eq!(c.region_slots(&c.jobs[0]), 32);
        assert_eq!(c.cover_words(), 128);
    }

    #[test]
    fn each_bad_value_is_named() {
        type Case = (fn(&mut Config), ConfigError);
        let cases: Vec<Case> = vec![
            (|c| c.registers = 0, ConfigError::Registers(0)),
            (|c| c.registers = 41, ConfigError::Registers(41)),
            (|c| c.copies = 0, ConfigError::Copies(0)),
            (
                |c| c.slots = 40000,
                ConfigError::Slots {
                    slots: 40000,
                    copies: 2,
                },
            ),
            (|c| c.packet_size = 20, ConfigError::PacketSize(20)),
            (|c| c.max_seqs = 0, ConfigError::MaxSeqs),
            (|c| c.max_round_ahead = 0, ConfigError::MaxRoundAhead),
            (
                |c| c.round_timeout = Duration::ZERO,
                ConfigError::ZeroTime("round_timeout"),
            ),
            (|c| c.worker_max_retries = 0, ConfigError::Retries),
            (|c| c.worker_max_in_flight = 0, ConfigError::InFlight),
            (|c| c.update_window = 0, ConfigError::UpdateWindow(0)),
            (|c| c.update_window = 1025, ConfigError::UpdateWindow(1025)),
            (|c| c.jobs.clear(), ConfigError::NoJobs),
            (
                |c| c.jobs.push(JobConfig::new(1, 2, 10, 1)),
                ConfigError::DuplicateJob(1),
            ),
            (
                |c| c.jobs[0].workers = 65,
                ConfigError::Workers {
                    job: 1,
                    workers: 65,
                },
            ),
            (|c| c.jobs[0].hot_keys = 0, ConfigError::HotKeys(1)),
            (|c| c.jobs[0].servers = 0, ConfigError::Servers(1)),
            (
                |c| c.jobs[0].owners = Some(vec![0; 3]),
                ConfigError::OwnersLen {
                    job: 1,
                    len: 3,
                    hot_keys: 1000,
                },
            ),
            (
                |c| c.jobs[0].owners = Some(vec![2; 1000]),
                ConfigError::Owner { job: 1, server: 2 },
            ),
            (
                |c| c.jobs[0].number = NumberMode::Fixed { frac_bits: 31 },
                ConfigError::FracBits {
                    job: 1,
                    frac_bits: 31,
                },
            ),
            (|c| c.jobs[0].dense_ranks = 1001, ConfigError::DenseRanks(1)),
            (
                |c| c.jobs[0].hot_keys = 40_000,
                ConfigError::Memory {
                    needed: 1250,
                    slots: 1024,
                },
            ),
        ];
        for (mutate, want) in cases {
            let mut c = ok();
            mutate(&mut c);
            assert_eq!(c.validate(), Err(want.clone()), "{want}");
            assert!(!want.to_string().is_empty());
        }
    }

    #[test]
    fn owners_default_split_and_key_ranges() {
        let j = JobConfig::new(1, 2, 10, 3);
        let owners: Vec<u16> = (0..10).map(|r| j.owner(r)).collect();
        assert_eq!(owners, vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
        let table = JobConfig::owners_from_key_ranges(&[5, 150, 99, 1000], &[0..100, 100..200]);
        assert_eq!(table, vec![0, 1, 0, 1]);
        assert_eq!(JobConfig::new(1, 64, 1, 1).all_workers_mask(), u64::MAX);
        assert_eq!(JobConfig::new(1, 3, 1, 1).all_workers_mask(), 0b111);
    }
}
