//! What both sides of a job must agree on, and the few local choices.

use std::time::Duration;

use thiserror::Error;
use zebra_pslite::FormatChoice;

use crate::online::OnlineConfig;
use crate::pull::PullConfig;
use crate::sync::SyncMode;

/// How PS-lite values typed `OTHER` (`char`: MXNet, BytePS's benchmarks)
/// are read. The wire does not say what the bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtherValues {
    /// Little-endian `f32` (MXNet's default `float32` arrays); lens count
    /// bytes, so a hot key of `L` values has a len of `4 L`.
    #[default]
    F32,
    /// Unknown: pushes typed `OTHER` pass through whole.
    Opaque,
}

/// How the server side presents a settled round to the server app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delivery {
    /// One push request per worker, with every key the worker pushed: for
    /// each hot key one request carries the sum, the others zeros. Servers
    /// that count one push per worker and key (MXNet `dist_sync`, BytePS)
    /// see the requests they expect.
    #[default]
    PerWorker,
    /// One request of the round carries every hot sum; the other requests
    /// carry only their cold keys. Fewer values for the app to add; only for
    /// apps that do not count pushes.
    Merged,
}

/// The agent's settings. Every worker and server of a job uses the same
/// values (and the same [`crate::HotSet`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// The zebra-proto job of PS-lite server rank `s` is `job_base + s`
    /// (one job per server: see the crate docs for why).
    pub job_base: u16,
    /// PS-lite workers (ranks `0..workers`, node ids `9 + 2 rank`).
    pub workers: u16,
    /// PS-lite servers (ranks `0..servers`, node ids `8 + 2 rank`).
    pub servers: u16,
    /// The application whose pushes are aggregated (`KVWorker`'s app id);
    /// other applications' pushes pass through.
    pub app_id: i32,
    /// The customer whose pushes are aggregated.
    pub customer_id: i32,
    /// The PS-lite meta format, or detection.
    pub format: FormatChoice,
    /// How `OTHER`-typed values are read.
    pub other_values: OtherValues,
    /// How rounds are presented to the server app.
    pub delivery: Delivery,
    /// Server side, last resort: a held push still unsettled this long
    /// after it arrived is delivered with what is known (logged and
    /// counted: part of its hot sum may be missing). The hot path's own
    /// timeouts (retransmission, fallback, `uncertain_timeout`) settle
    /// every round long before this unless a party died.
    pub settle_timeout: Duration,
    /// Server side: rounds remembered (counted, not round numbers, which
    /// jump at barriers), for late aggregates and fallbacks.
    pub history: u32,
    /// Worker side: a push with more hot values than this may leave pairs
    /// over at the switch (more packets than its `max_seqs`; a packet holds
    /// at least one value), so its trailer promises a SETTLE whatever
    /// happens. The hot path's `max_seqs`.
    pub max_clean_values: u32,
    /// Online hot keys (`crate::online`): each server re-ranks its keys
    /// after the first rounds; `None` keeps the starting set, unwatched.
    /// With a hot-keys file, [`OnlineConfig::file`] keeps the file's keys
    /// but watches what they cost and steps aside as online servers do.
    pub online: Option<OnlineConfig>,
    /// The pull half (`crate::pull`, `docs/PULL.md`): servers read each
    /// round's hot values back and send them once through the switch;
    /// workers answer pulls of hot keys from them. `None`: off.
    pub pull: Option<PullConfig>,
    /// When a worker's push completes (`crate::sync`, `ZEBRA_SYNC`): on
    /// the server's answer, or once its hot part settled. Server side: the
    /// pushes of its worker a pull may pass.
    pub sync: SyncMode,
}

impl AgentConfig {
    /// The defaults for a job of `workers` workers and `servers` servers:
    /// zebra-proto jobs `job_base..job_base + servers`, app 0 customer 0,
    /// format detection, `OTHER` values as `f32`, per-worker delivery, a
    /// 10 s settle timeout, 4096 rounds of history, the hot path's default
    /// `max_seqs`.
    pub fn new(job_base: u16, workers: u16, servers: u16) -> AgentConfig {
        AgentConfig {
            job_base,
            workers,
            servers,
            app_id: 0,
            customer_id: 0,
            format: FormatChoice::Auto,
            other_values: OtherValues::F32,
            delivery: Delivery::PerWorker,
            settle_timeout: Duration::from_secs(10),
            history: 4096,
            max_clean_values: u32::from(zebra_proto::consts::DEFAULT_MAX_SEQS),
            online: None,
            pull: None,
            sync: SyncMode::Exact,
        }
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<(), AgentError> {
        if self.workers == 0 || self.workers as usize > zebra_proto::consts::MAX_WORKERS {
            return Err(AgentError::Config(format!(
                "workers = {}: expected 1..={}",
                self.workers,
                zebra_proto::consts::MAX_WORKERS
            )));
        }
        if self.servers == 0 {
            return Err(AgentError::Config("servers must be at least 1".into()));
        }
        if u32::from(self.job_base) + u32::from(self.servers) > u32::from(u16::MAX) + 1 {
            return Err(AgentError::Config(format!(
                "job_base {} + {} servers exceeds the job id range",
                self.job_base, self.servers
            )));
        }
        if self.settle_timeout.is_zero() {
            return Err(AgentError::Config(
                "settle_timeout must be longer than zero".into(),
            ));
        }
        if self.history == 0 {
            return Err(AgentError::Config("history must be at least 1".into()));
        }
        if let Some(o) = &self.online {
            o.validate().map_err(AgentError::Config)?;
        }
        Ok(())
    }

    /// The zebra-proto job of server rank `server`.
    pub fn job(&self, server: u16) -> u16 {
        self.job_base.wrapping_add(server)
    }

    /// The server rank whose job is `job`, if it is one of this job's.
    pub fn server_of_job(&self, job: u16) -> Option<u16> {
        job.checked_sub(self.job_base).filter(|&s| s < self.servers)
    }
}

/// A call the agent refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AgentError {
    /// A setting the agent cannot run with.
    #[error("agent configuration: {0}")]
    Config(String),
    /// A rank outside the job.
    #[error("{role} rank {rank} is not in the job ({count} {role}s)")]
    Rank {
        /// `worker` or `server`.
        role: &'static str,
        /// The rank.
        rank: u16,
        /// Ranks in the job.
        count: u16,
    },
    /// A zebra-proto job that is not one of this agent's.
    #[error("zebra-proto job {0} is not one of this agent's")]
    UnknownJob(u16),
    /// A round the agent has no record of (never split, or already settled).
    #[error("job {job} round {round}: no such open round")]
    UnknownRound {
        /// Job id.
        job: u16,
        /// Round.
        round: u32,
    },
    /// Fallback pairs of another worker.
    #[error("fallback of worker {0} handed to another worker's agent")]
    WrongWorker(u16),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_map_to_servers() {
        let c = AgentConfig::new(10, 4, 3);
        c.validate().unwrap();
        assert_eq!(c.job(2), 12);
        assert_eq!(c.server_of_job(11), Some(1));
        assert_eq!(c.server_of_job(13), None);
        assert_eq!(c.server_of_job(9), None);
    }

    #[test]
    fn bad_values_are_named() {
        let mut c = AgentConfig::new(u16::MAX, 4, 2);
        assert!(c.validate().unwrap_err().to_string().contains("job id"));
        c.job_base = 1;
        c.workers = 0;
        assert!(c.validate().unwrap_err().to_string().contains("workers"));
        c.workers = 2;
        c.settle_timeout = Duration::ZERO;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("settle_timeout"));
    }
}
