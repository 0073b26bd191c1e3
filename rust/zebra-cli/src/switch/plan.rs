//! `zebra switch --plan`: the settings as `zebra switch` checked them, as
//! one JSON document, for programs that must act on the same settings
//! without parsing them again — the P4 control plane (`p4/controller`)
//! loads its jobs from it. Every value here comes from [`HotpathConfig`];
//! nothing is decided in this module but the names and units of the JSON
//! (durations in whole microseconds, addresses as `HOST:PORT`). The sizes
//! `zebra_proto::Config` derives from the settings come along, so that a
//! reader need not derive them again.

use std::time::Duration;

use serde::Serialize;
use zebra_config::HotLoss;
use zebra_hotpath::HotpathConfig;
use zebra_proto::{Config, JobConfig, LayoutKind, NumberMode, Packing};

/// The document `zebra switch --plan` prints.
#[derive(Debug, Serialize)]
pub struct Plan {
    /// The switch's hot-path address (`switch` / `--listen`), if given.
    pub switch: Option<String>,
    /// The first job id (`job`); with hot keys, PS-lite server `s` is job
    /// `job_base + s`.
    pub job_base: u16,
    /// Each PS-lite server that owns hot keys is its own job of one server
    /// (a hot-keys file, `online_capacity` or zero configuration); else the
    /// one job has every server (`hot_key_count`).
    pub job_per_server: bool,
    /// Nothing sized the jobs: each server's job is an equal share of the
    /// switch, its keys found online.
    pub zero_config: bool,
    /// A switch with no job that admits jobs as their servers register,
    /// each like this template (nothing sized a job: no workers, no keys).
    pub admit: Option<JobPlan>,
    /// The job's key was given (`job_key_file`, `ZEBRA_JOB_KEY`): every
    /// job's `token` is derived from it and required from the first
    /// datagram. The key itself is never printed.
    pub keyed: bool,
    /// The protocol configuration, validated, with its jobs.
    pub proto: ProtoPlan,
    /// Servers pinned by `server_addr`, in server order.
    pub server_addrs: Vec<PinnedServer>,
    /// The hot-keys file's size, when one was read.
    pub hot_keys: Option<HotKeysPlan>,
    /// Faults injected on every send (`loss`, `ZEBRA_HOT_LOSS`), if any.
    pub loss: Option<HotLoss>,
    /// `settle_timeout_ms`, in microseconds.
    pub settle_timeout_us: u64,
    /// `register_wait_ms`, in microseconds.
    pub register_wait_us: u64,
    /// An admitted job none of whose servers registered this long is
    /// retired and its memory given back (`zebra_hotpath::JOB_SILENCE`).
    pub job_silence_us: u64,
}

/// `zebra_proto::Config`, field by field (durations in microseconds), and
/// the sizes it derives.
#[derive(Debug, Serialize)]
pub struct ProtoPlan {
    pub registers: u16,
    pub slots: u32,
    pub copies: u8,
    pub packet_size: usize,
    pub aggregate_size: usize,
    pub max_seqs: u16,
    pub max_round_ahead: u32,
    /// `strict`, `fill` or `sequential`.
    pub packing: &'static str,
    pub round_timeout_us: u64,
    pub aggregate_rto_us: u64,
    pub aggregate_max_retries: u32,
    pub worker_rto_us: u64,
    pub worker_max_retries: u32,
    pub worker_max_in_flight: usize,
    pub worker_retain_pairs: usize,
    pub uncertain_timeout_us: u64,
    pub server_history: u32,
    pub update_window: usize,
    /// `Config::round_timeout_cap`: the longest a learned round timeout gets.
    pub round_timeout_cap_us: u64,
    /// `Config::dense_values_per_packet`.
    pub dense_values_per_packet: usize,
    /// `Config::aggregate_run_bytes_per_packet`.
    pub aggregate_run_bytes_per_packet: usize,
    /// `Config::coverage_bits_per_packet`.
    pub coverage_bits_per_packet: usize,
    /// `Config::cover_words`: coverage words per worker and copy.
    pub cover_words: usize,
    pub jobs: Vec<JobPlan>,
}

/// `zebra_proto::JobConfig`, field by field.
#[derive(Debug, Serialize)]
pub struct JobPlan {
    pub id: u16,
    pub workers: u16,
    pub hot_keys: u32,
    pub servers: u16,
    /// The owning server of each hot rank, or `null`: the ranks split into
    /// `servers` contiguous, nearly equal ranges.
    pub owners: Option<Vec<u16>>,
    /// `f32` or `fixed`.
    pub number: &'static str,
    /// `fixed`'s fraction bits (`null` for `f32`).
    pub frac_bits: Option<u8>,
    /// `heat` or `random`.
    pub layout: &'static str,
    /// `random`'s seed (`null` for `heat`).
    pub layout_seed: Option<u64>,
    pub dense_ranks: u32,
    /// The job's token from its key; 0: no key (the switch draws one).
    pub token: u32,
    /// `Config::region_slots`: the job's slots in each register.
    pub region_slots: u32,
}

/// A server whose address the settings fix.
#[derive(Debug, Serialize)]
pub struct PinnedServer {
    /// The PS-lite server rank (`server_addr = SERVER=HOST:PORT`).
    pub server: u16,
    /// The switch job it is a member of.
    pub job: u16,
    /// Its server index in that job.
    pub index: u16,
    /// `HOST:PORT`.
    pub addr: String,
}

/// The size of the hot-keys file read.
#[derive(Debug, Serialize)]
pub struct HotKeysPlan {
    /// Keys listed.
    pub keys: usize,
    /// Hot values they take (a key with L values takes L hot indices).
    pub values: u64,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Plan {
    /// The plan of a checked configuration.
    pub fn of(config: &HotpathConfig) -> Plan {
        Plan {
            switch: config.switch.map(|a| a.to_string()),
            job_base: config.job_base,
            job_per_server: config.hot_set.is_some(),
            zero_config: config.zero_config,
            admit: config.admit.as_ref().map(|j| JobPlan::of(j, &config.proto)),
            keyed: config.job_key.is_some(),
            proto: ProtoPlan::of(&config.proto),
            server_addrs: if config.proto.jobs.is_empty() {
                Vec::new()
            } else {
                config
                    .server_addrs
                    .iter()
                    .map(|(&server, addr)| {
                        let (job, index) = config.server_member(server);
                        PinnedServer {
                            server,
                            job,
                            index,
                            addr: addr.to_string(),
                        }
                    })
                    .collect()
            },
            hot_keys: config.hot_keys.as_ref().map(|hk| HotKeysPlan {
                keys: hk.len(),
                values: hk.values().iter().map(|&v| u64::from(v)).sum(),
            }),
            loss: config.loss,
            settle_timeout_us: micros(config.settle_timeout),
            register_wait_us: micros(config.register_wait),
            job_silence_us: micros(zebra_hotpath::JOB_SILENCE),
        }
    }
}

impl ProtoPlan {
    fn of(p: &Config) -> ProtoPlan {
        ProtoPlan {
            registers: p.registers,
            slots: p.slots,
            copies: p.copies,
            packet_size: p.packet_size,
            aggregate_size: p.aggregate_size,
            max_seqs: p.max_seqs,
            max_round_ahead: p.max_round_ahead,
            packing: match p.packing {
                Packing::Strict => "strict",
                Packing::Fill => "fill",
                Packing::Sequential => "sequential",
            },
            round_timeout_us: micros(p.round_timeout),
            aggregate_rto_us: micros(p.aggregate_rto),
            aggregate_max_retries: p.aggregate_max_retries,
            worker_rto_us: micros(p.worker_rto),
            worker_max_retries: p.worker_max_retries,
            worker_max_in_flight: p.worker_max_in_flight,
            worker_retain_pairs: p.worker_retain_pairs,
            uncertain_timeout_us: micros(p.uncertain_timeout),
            server_history: p.server_history,
            update_window: p.update_window,
            round_timeout_cap_us: micros(p.round_timeout_cap()),
            dense_values_per_packet: p.dense_values_per_packet(),
            aggregate_run_bytes_per_packet: p.aggregate_run_bytes_per_packet(),
            coverage_bits_per_packet: p.coverage_bits_per_packet(),
            cover_words: p.cover_words(),
            jobs: p.jobs.iter().map(|j| JobPlan::of(j, p)).collect(),
        }
    }
}

impl JobPlan {
    pub(super) fn of(j: &JobConfig, p: &Config) -> JobPlan {
        let (number, frac_bits) = match j.number {
            NumberMode::F32 => ("f32", None),
            NumberMode::Fixed { frac_bits } => ("fixed", Some(frac_bits)),
        };
        let (layout, layout_seed) = match j.layout {
            LayoutKind::Heat => ("heat", None),
            LayoutKind::Random { seed } => ("random", Some(seed)),
        };
        JobPlan {
            id: j.id,
            workers: j.workers,
            hot_keys: j.hot_keys,
            servers: j.servers,
            owners: j.owners.clone(),
            number,
            frac_bits,
            layout,
            layout_seed,
            dense_ranks: j.dense_ranks,
            token: j.token,
            region_slots: p.region_slots(j),
        }
    }
}
