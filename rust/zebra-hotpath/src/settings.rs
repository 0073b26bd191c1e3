//! The hot-path configuration of one job, checked as a whole: what the
//! switch, every worker and every server run with.
//!
//! The settings come from one table, `zebra_config::SETTINGS`: the settings
//! file every party reads (TOML), the `zebra switch` flags and the variables
//! that stand for some of them (`ZEBRA_SWITCH`, `ZEBRA_HOT_KEYS`,
//! `ZEBRA_HOT_LOSS`, `ZEBRA_JOB_KEY(_FILE)`, PS-lite's `DMLC_NUM_WORKER` and
//! `DMLC_NUM_SERVER`), each checked by its own parser
//! ([`Settings::values`]). [`Build::build`] then reads the hot-keys file,
//! makes the jobs and checks the combination with
//! [`zebra_proto::Config::validate`], reporting every problem at once.
//!
//! ```text
//! # zebra hot path, job 1
//! switch = "10.0.0.250:9950"
//! workers = 8
//! servers = 2
//! hot_keys = "hot.keys"
//! round_timeout_ms = 20
//! server_addr = ["0=10.0.0.1:9951"]
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use zebra_config::{setting_by_key, HotValues, Setting, Settings, SettingsError, SETTINGS};
use zebra_config::{HotLoss, JobKey};
use zebra_proto::{job_token, Config, JobConfig, LayoutKind, NumberMode};

use zebra_agent::{AgentConfig, HotSet, KeyRanges, OnlineConfig};

use crate::hotkeys::{HotKeys, HotKeysError};
use crate::switch_node::SwitchNodeConfig;

/// A loaded and checked hot-path configuration (one job).
#[derive(Debug, Clone)]
pub struct HotpathConfig {
    /// The switch's address (`switch` / `--listen`), if given.
    pub switch: Option<SocketAddr>,
    /// The standby switch's address (`standby`, `ZEBRA_SWITCH_STANDBY`),
    /// if given: a server moves its job there when the switch in use
    /// leaves its REGISTER unanswered for [`Self::failover`].
    pub standby: Option<SocketAddr>,
    /// `failover_ms`.
    pub failover: Duration,
    /// The protocol configuration, validated; its one job is [`Self::job`].
    pub proto: Config,
    /// The hot keys, when read from a file (else ranks are given directly).
    pub hot_keys: Option<HotKeys>,
    /// With a hot-keys file: the keys' owners and hot indices. Each PS-lite
    /// server `s` that owns a hot key is then its own job `job + s` with one
    /// server (index 0), as `zebra-agent` splits pushes; [`Self::proto`]
    /// holds those jobs.
    pub hot_set: Option<Arc<HotSet>>,
    /// The first job id (`job`).
    pub job_base: u16,
    /// Pinned server addresses, by server index.
    pub server_addrs: BTreeMap<u16, SocketAddr>,
    /// Faults to inject on every send.
    pub loss: Option<HotLoss>,
    /// `settle_timeout_ms`: the PS-lite level's last resort (`zebra-agent`).
    pub settle_timeout: Duration,
    /// `register_wait_ms`: how long a server waits for the switch to answer
    /// its REGISTER before it steps aside (`Aside::Unanswered`).
    pub register_wait: Duration,
    /// `worker_window`: whether workers keep to their congestion window
    /// ([`LinkConfig::window`](crate::LinkConfig::window)).
    pub worker_window: bool,
    /// `online_rounds`, `online_tau`, `online_wait_ms`: the online
    /// re-ranking, used when `ZEBRA_HOT=online` asks for it.
    pub online: OnlineConfig,
    /// `online_out`: where each server writes its decided hot keys.
    pub online_out: Option<String>,
    /// A switch with nothing that sizes a job (no workers, no hot keys):
    /// it admits jobs as their servers register, each like this template
    /// (number format, layout, dense ranks); `proto` then has no job.
    pub admit: Option<JobConfig>,
    /// Nothing sized the jobs (no hot keys, no `online_capacity`): each
    /// server's job is an equal share of the switch's memory
    /// ([`Config::share`]), asked for at registration, its keys found
    /// online.
    pub zero_config: bool,
    /// The hot-keys file lists no key (`zebra profile` writes one when
    /// aggregation would save nothing; its comments say why): there is
    /// nothing to aggregate, and `proto` has no job. The file's path.
    pub no_keys: Option<String>,
    /// The job's secret key (`job_key_file`, `ZEBRA_JOB_KEY`): every job of
    /// [`Self::proto`] has the token it derives; a switch that admits jobs
    /// gives each the token of its id and admits only REGISTERs showing it.
    pub job_key: Option<JobKey>,
}

/// Default of `online_rounds`.
pub const ONLINE_ROUNDS: u32 = 10;

/// Default of `settle_timeout_ms`.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of `failover_ms`: three REGISTER keep-alives unanswered.
pub const FAILOVER: Duration = Duration::from_secs(3);

/// Default of `register_wait_ms`: a switch answers a REGISTER in a round
/// trip, a loaded 2-core testbed in milliseconds; a REGISTER lost on the way
/// is sent again well within it.
pub const REGISTER_WAIT: Duration = Duration::from_secs(2);

impl HotpathConfig {
    /// The first job (a switch that admits jobs has none: see
    /// [`Self::admit`]).
    pub fn job(&self) -> &JobConfig {
        &self.proto.jobs[0]
    }

    /// The job and server index of PS-lite server `server`: with a hot-keys
    /// file each server is its own job; else server `server` of the one job.
    pub fn server_member(&self, server: u16) -> (u16, u16) {
        match &self.hot_set {
            Some(_) => (self.job_base.wrapping_add(server), 0),
            None => (self.job().id, server),
        }
    }

    /// What a [`SwitchNode`](crate::SwitchNode) listening on `listen` needs.
    pub fn switch_node_config(&self, listen: SocketAddr) -> SwitchNodeConfig {
        SwitchNodeConfig {
            server_addrs: self
                .server_addrs
                .iter()
                .map(|(&s, &a)| (self.server_member(s), a))
                .collect(),
            loss: self.loss,
            admit: self.admit.clone(),
            job_key: self.job_key.clone(),
            ..SwitchNodeConfig::new(listen, self.proto.clone())
        }
    }
}

/// Checks settings as a whole: [`Settings`] is `zebra_config`'s, which
/// parses each value; the jobs, the hot keys and the switch are this
/// crate's.
pub trait Build {
    /// Checks every value and the combination.
    fn build(&self) -> Result<HotpathConfig, SettingsError>;
}

impl Build for Settings {
    fn build(&self) -> Result<HotpathConfig, SettingsError> {
        let (values, mut problems) = self.parse_values();
        // Resolved here, not by the parser (a process whose hot path is
        // off reads ZEBRA_SWITCH without resolving it).
        let switch = values.switch_addr().unwrap_or_else(|p| {
            problems.push(p);
            None
        });
        let standby = values.standby_addr().unwrap_or_else(|p| {
            problems.push(p);
            None
        });
        if !problems.is_empty() {
            return Err(SettingsError { problems });
        }
        let failover = values.failover.unwrap_or(FAILOVER);
        let mut c = values.finish(switch)?;
        if standby.is_some() && standby == c.switch {
            return Err(SettingsError::one(
                "the standby switch is the switch itself: name another address".into(),
            ));
        }
        c.standby = standby;
        c.failover = failover;
        Ok(c)
    }
}

/// The checks of the whole, on the values each parser checked alone.
trait Finish: Sized {
    fn finish(self, switch: Option<SocketAddr>) -> Result<HotpathConfig, SettingsError>;
    fn admitting(self, switch: Option<SocketAddr>) -> Result<HotpathConfig, SettingsError>;
    fn jobless(
        self,
        switch: Option<SocketAddr>,
        admit: Option<JobConfig>,
        no_keys: Option<String>,
    ) -> Result<HotpathConfig, SettingsError>;
}

impl Finish for HotValues {
    fn finish(mut self, switch: Option<SocketAddr>) -> Result<HotpathConfig, SettingsError> {
        let mut problems = Vec::new();
        let servers = self.servers.unwrap_or(1);
        let sized = self.hot_keys_file.is_some()
            || self.hot_key_count.is_some()
            || self.online_capacity.is_some();
        if self.workers.is_none() && !sized {
            return self.admitting(switch);
        }
        let zero_config = !sized;
        if zero_config {
            // Nothing sizes the jobs: each server asks the switch for an equal
            // share of its memory (admission), and finds its keys online.
            let geometry = self.config.get_or_insert_with(|| Config::new(Vec::new()));
            self.online_capacity = Some(geometry.share(servers));
        }
        if self.workers.is_none() {
            problems.push("workers: not set (--workers N, or `workers = N` in the file)".into());
        }
        let hot_keys = match (&self.hot_keys_file, self.hot_key_count) {
            (Some(_), Some(_)) => {
                problems.push(format!(
                    "hot keys: {} gives a hot-keys file and {} a number of hot keys: give one, not both",
                    self.named["hot_keys"], self.named["hot_key_count"]
                ));
                None
            }
            (None, None) => None,
            (Some(path), None) => match HotKeys::load(path) {
                Ok(hk) => Some(hk),
                // Online, the file only starts the count: as if there were none.
                Err(HotKeysError::Empty) if self.online_capacity.is_some() => None,
                Err(HotKeysError::Empty) if problems.is_empty() => {
                    // `zebra profile` writes such a file when aggregation would save
                    // nothing (its comments say why): a job with nothing to aggregate.
                    let no_keys = Some(path.display().to_string());
                    return self.jobless(switch, None, no_keys);
                }
                Err(e) => {
                    problems.push(format!("hot keys: {e}"));
                    None
                }
            },
            (None, Some(_)) => None,
        };
        for (index, (_, origin)) in &self.server_addrs {
            if *index >= servers {
                problems.push(format!(
                    "{origin}: server_addr names server {index}, the job has {servers} servers"
                ));
            }
        }
        if !problems.is_empty() {
            return Err(SettingsError { problems });
        }
        let number = self.number.unwrap_or(NumberMode::F32);
        let layout = self.layout.unwrap_or(LayoutKind::Heat);
        let dense_ranks = self.dense_ranks.unwrap_or(0);
        let job_base = self
            .job
            .or(self.zero_config_job.filter(|_| zero_config))
            .unwrap_or(1);
        let workers = self.workers.unwrap_or(0);
        let entries = match &hot_keys {
            Some(hk) => Some(hk.entries().collect::<Vec<_>>()),
            None if self.hot_key_count.is_none() => self.online_capacity.map(|_| Vec::new()),
            None => None,
        };
        let (jobs, hot_set) = match entries {
            Some(entries) => {
                let mut hot = HotSet::new(entries, KeyRanges::pslite(servers))
                    .map_err(|e| SettingsError::one(format!("hot keys: {e}")))?;
                if let Some(values) = self.online_capacity {
                    hot = hot
                        .with_capacity(values)
                        .map_err(|e| SettingsError::one(format!("online_capacity: {e}")))?;
                }
                let agent = AgentConfig::new(job_base, workers, servers);
                agent
                    .validate()
                    .map_err(|e| SettingsError::one(e.to_string()))?;
                let jobs = hot
                    .job_configs(&agent)
                    .into_iter()
                    .map(|mut job| {
                        job.number = number;
                        job.layout = layout;
                        job.dense_ranks = dense_ranks;
                        job
                    })
                    .collect();
                (jobs, Some(Arc::new(hot)))
            }
            None => {
                let mut job =
                    JobConfig::new(job_base, workers, self.hot_key_count.unwrap_or(0), servers);
                job.number = number;
                job.layout = layout;
                job.dense_ranks = dense_ranks;
                (vec![job], None)
            }
        };
        let mut proto = self
            .config
            .take()
            .unwrap_or_else(|| Config::new(Vec::new()));
        proto.jobs = jobs;
        if let Some((key, _)) = &self.job_key {
            for job in &mut proto.jobs {
                job.token = job_token(key.as_bytes(), job.id);
            }
        }
        proto
            .validate()
            .map_err(|e| SettingsError::one(format!("the settings do not fit together: {e}")))?;
        Ok(HotpathConfig {
            switch,
            standby: None,
            failover: FAILOVER,
            proto,
            hot_keys,
            hot_set,
            job_base,
            server_addrs: self
                .server_addrs
                .into_iter()
                .map(|(i, (a, _))| (i, a))
                .collect(),
            loss: self.loss,
            settle_timeout: self.settle_timeout.unwrap_or(SETTLE_TIMEOUT),
            register_wait: self.register_wait.unwrap_or(REGISTER_WAIT),
            worker_window: self.worker_window.unwrap_or(true),
            online: {
                let mut o = OnlineConfig::new(self.online_rounds.unwrap_or(ONLINE_ROUNDS));
                o.tau = self.online_tau.unwrap_or(o.tau);
                o.wait = self.online_wait.unwrap_or(o.wait);
                o.max_drift = self.online_max_drift.unwrap_or(o.max_drift);
                o.min_saving = self.online_min_saving.unwrap_or(o.min_saving);
                o.min_pace = self.online_min_pace.unwrap_or(o.min_pace);
                o.retry = self.online_retry.unwrap_or(o.retry);
                o
            },
            online_out: self.online_out,
            admit: None,
            zero_config,
            no_keys: None,
            job_key: self.job_key.map(|(k, _)| k),
        })
    }

    /// `zebra switch --listen` with nothing that sizes a job: a switch that
    /// admits jobs as their servers register, with this file's geometry,
    /// timeouts and number format.
    fn admitting(self, switch: Option<SocketAddr>) -> Result<HotpathConfig, SettingsError> {
        if !self.server_addrs.is_empty() {
            return Err(SettingsError::one(
                "server_addr: a switch that admits jobs as they register has no server to pin \
                 (give workers and hot keys to fix the job)"
                    .into(),
            ));
        }
        let mut template = JobConfig::new(0, 1, 1, 1);
        template.number = self.number.unwrap_or(NumberMode::F32);
        template.layout = self.layout.unwrap_or(LayoutKind::Heat);
        template.dense_ranks = self.dense_ranks.unwrap_or(0);
        self.jobless(switch, Some(template), None)
    }

    /// A configuration with no job: a switch that admits jobs like
    /// `admit`, or a job whose hot-keys file `no_keys` lists no key.
    fn jobless(
        mut self,
        switch: Option<SocketAddr>,
        admit: Option<JobConfig>,
        no_keys: Option<String>,
    ) -> Result<HotpathConfig, SettingsError> {
        let mut proto = self
            .config
            .take()
            .unwrap_or_else(|| Config::new(Vec::new()));
        proto.jobs = Vec::new();
        proto
            .validate_for_admission()
            .map_err(|e| SettingsError::one(format!("the settings do not fit together: {e}")))?;
        Ok(HotpathConfig {
            switch,
            standby: None,
            failover: FAILOVER,
            proto,
            hot_keys: None,
            hot_set: None,
            job_base: self.job.unwrap_or(1),
            server_addrs: BTreeMap::new(),
            loss: self.loss,
            settle_timeout: self.settle_timeout.unwrap_or(SETTLE_TIMEOUT),
            register_wait: self.register_wait.unwrap_or(REGISTER_WAIT),
            worker_window: self.worker_window.unwrap_or(true),
            online: OnlineConfig::new(self.online_rounds.unwrap_or(ONLINE_ROUNDS)),
            online_out: self.online_out,
            zero_config: admit.is_some(),
            admit,
            no_keys,
            job_key: self.job_key.map(|(k, _)| k),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use zebra_proto::Packing;

    fn path() -> PathBuf {
        PathBuf::from("/etc/zebra/hot.conf")
    }

    #[test]
    fn defaults_are_the_protocol_defaults() {
        let mut s = Settings::new();
        s.set("workers", "4").unwrap();
        s.set("hot_key_count", "1000").unwrap();
        let c = s.build().unwrap();
        let want = Config::new(vec![JobConfig::new(1, 4, 1000, 1)]);
        assert_eq!(c.proto, want);
        assert_eq!((c.switch, c.loss, c.hot_keys.is_none()), (None, None, true));
        let defaults = [
            ("registers", want.registers.to_string()),
            ("slots", want.slots.to_string()),
            ("copies", want.copies.to_string()),
            ("packet_size", want.packet_size.to_string()),
            ("max_seqs", want.max_seqs.to_string()),
            (
                "round_timeout_ms",
                want.round_timeout.as_millis().to_string(),
            ),
            (
                "aggregate_rto_ms",
                want.aggregate_rto.as_millis().to_string(),
            ),
            (
                "aggregate_max_retries",
                want.aggregate_max_retries.to_string(),
            ),
            ("worker_rto_ms", want.worker_rto.as_millis().to_string()),
            ("worker_max_retries", want.worker_max_retries.to_string()),
            (
                "worker_max_in_flight",
                want.worker_max_in_flight.to_string(),
            ),
            ("worker_retain_pairs", want.worker_retain_pairs.to_string()),
            ("max_round_ahead", want.max_round_ahead.to_string()),
            (
                "uncertain_timeout_ms",
                want.uncertain_timeout.as_millis().to_string(),
            ),
            ("server_history", want.server_history.to_string()),
            ("update_window", want.update_window.to_string()),
            ("register_wait_ms", REGISTER_WAIT.as_millis().to_string()),
            ("failover_ms", FAILOVER.as_millis().to_string()),
            ("settle_timeout_ms", SETTLE_TIMEOUT.as_millis().to_string()),
            ("job", "1".into()),
            ("servers", "1".into()),
            ("packing", "strict".into()),
            ("number", "f32".into()),
            ("layout", "heat".into()),
            ("dense_ranks", "0".into()),
            ("online_rounds", ONLINE_ROUNDS.to_string()),
            ("online_tau", OnlineConfig::new(1).tau.to_string()),
            (
                "online_max_drift",
                OnlineConfig::new(1).max_drift.to_string(),
            ),
            (
                "online_min_saving",
                OnlineConfig::new(1).min_saving.to_string(),
            ),
            (
                "online_wait_ms",
                OnlineConfig::new(1).wait.as_millis().to_string(),
            ),
        ];
        assert_eq!(c.online, OnlineConfig::new(ONLINE_ROUNDS));
        for (key, value) in defaults {
            assert_eq!(setting_by_key(key).unwrap().default, value, "{key}");
        }
    }

    #[test]
    fn worker_window_is_on_unless_switched_off() {
        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        assert!(s.clone().build().unwrap().worker_window);
        let file = Settings::parse("workers = 2\nworker_window = false\n", &path()).unwrap();
        assert!(!file.build().unwrap().worker_window);
        s.set("worker_window", "false").unwrap();
        assert!(!s.clone().build().unwrap().worker_window);
        s.set("worker_window", "off").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(
            err.contains("--worker-window \"off\": expected true or false"),
            "{err}"
        );
    }

    #[test]
    fn a_zero_configuration_job_takes_the_id_given_for_it_unless_job_is_set() {
        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("servers", "2").unwrap();
        s.set_zero_config_job(4000);
        let c = s.clone().build().unwrap();
        assert!(c.zero_config);
        let ids: Vec<u16> = c.proto.jobs.iter().map(|j| j.id).collect();
        assert_eq!((c.job_base, ids), (4000, vec![4000, 4001]));
        let mut sized = s.clone();
        sized.set("online_capacity", "64").unwrap();
        assert_eq!(sized.build().unwrap().job_base, 1, "a sized job keeps 1");
        s.set("job", "11").unwrap();
        assert_eq!(s.build().unwrap().job_base, 11, "job wins");
    }

    #[test]
    fn online_capacity_without_a_file() {
        let mut s = Settings::new();
        s.set("workers", "4").unwrap();
        s.set("servers", "2").unwrap();
        let zero = s.clone().build().unwrap();
        assert!(zero.zero_config && zero.admit.is_none());
        let share = Config::new(Vec::new()).share(2);
        assert_eq!(share, 32 * 512, "half of the default switch's memory each");
        let jobs: Vec<(u16, u32)> = zero.proto.jobs.iter().map(|j| (j.id, j.hot_keys)).collect();
        assert_eq!(
            jobs,
            vec![(1, share), (2, share)],
            "nothing else sizes them"
        );
        s.set("online_capacity", "640").unwrap();
        let c = s.build().unwrap();
        let hot = c.hot_set.unwrap();
        assert!(hot.is_empty());
        assert_eq!((hot.indices(0), hot.indices(1)), (640, 640));
        let jobs: Vec<(u16, u32)> = c.proto.jobs.iter().map(|j| (j.id, j.hot_keys)).collect();
        assert_eq!(jobs, vec![(1, 640), (2, 640)]);
    }

    #[test]
    fn a_hot_keys_file_with_no_key_is_a_job_with_nothing_to_aggregate() {
        let dir = std::env::temp_dir().join(format!("zebra-empty-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("hot.keys");
        std::fs::write(&file, "# why: every worker pushes its own keys\n").unwrap();
        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("hot_keys", &file.display().to_string()).unwrap();
        let c = s.clone().build().unwrap();
        assert_eq!(c.no_keys.as_deref(), Some(&*file.display().to_string()));
        assert!(c.proto.jobs.is_empty() && c.admit.is_none() && c.hot_set.is_none());
        s.set("online_capacity", "64").unwrap();
        let c = s.build().unwrap();
        assert!(
            c.no_keys.is_none(),
            "online: the file only starts the count"
        );
        assert_eq!(c.proto.jobs.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_switch_given_only_its_address_admits_jobs() {
        let mut s = Settings::new();
        s.set("switch", "127.0.0.1:9950").unwrap();
        s.set("number", "fixed:16").unwrap();
        s.set("slots", "2048").unwrap();
        let c = s.clone().build().unwrap();
        assert!(c.proto.jobs.is_empty());
        assert_eq!(c.proto.slots, 2048);
        let template = c.admit.clone().expect("admits jobs");
        assert_eq!(template.number, NumberMode::Fixed { frac_bits: 16 });
        assert_eq!(
            c.switch_node_config("127.0.0.1:0".parse().unwrap()).admit,
            Some(template)
        );
        s.set("server_addr", "0=127.0.0.1:5").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(err.contains("server_addr"), "{err}");
    }

    #[test]
    fn file_then_flags() {
        let dir = std::env::temp_dir().join(format!("zebra-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("hot.keys"),
            "# two hot keys\n7\n18446744073709551000\n",
        )
        .unwrap();
        let text = "\
# hot path
switch = \"127.0.0.1:9950\"
job = 3
workers = \"5\"   # quoted
servers = 2
hot_keys = \"hot.keys\"
registers = 8
slots = 64
copies = 3
packet_size = 96
max_seqs = 100
packing = \"fill\"
round_timeout_ms = 0.5
aggregate_rto_ms = 3
aggregate_max_retries = 7
worker_rto_ms = 4
worker_max_retries = 5
worker_max_in_flight = 9
uncertain_timeout_ms = 60
server_history = 10
update_window = 3
number = \"fixed:12\"
layout = \"random:42\"
dense_ranks = 1
server_addr = [\"0=127.0.0.1:9001\", \"1=127.0.0.1:9002\"]
loss = \"drop=0.01\"
";
        let file = dir.join("hot.conf");
        std::fs::write(&file, text).unwrap();
        let mut s = Settings::load(&file).unwrap();
        s.set("workers", "6").unwrap();
        s.set("server_addr", "1=127.0.0.1:9003").unwrap();
        let c = s.build().unwrap();
        let p = &c.proto;
        assert_eq!(c.switch, Some("127.0.0.1:9950".parse().unwrap()));
        assert_eq!(
            (p.registers, p.slots, p.copies, p.packet_size, p.max_seqs),
            (8, 64, 3, 96, 100)
        );
        assert_eq!(p.packing, Packing::Fill);
        assert_eq!(p.round_timeout, Duration::from_micros(500));
        assert_eq!(
            (p.aggregate_rto, p.worker_rto, p.uncertain_timeout),
            (
                Duration::from_millis(3),
                Duration::from_millis(4),
                Duration::from_millis(60)
            )
        );
        assert_eq!(
            (
                p.aggregate_max_retries,
                p.worker_max_retries,
                p.worker_max_in_flight,
                p.server_history,
                p.update_window
            ),
            (7, 5, 9, 10, 3)
        );
        let jobs: Vec<_> = p
            .jobs
            .iter()
            .map(|j| (j.id, j.workers, j.servers, j.hot_keys))
            .collect();
        assert_eq!(
            jobs,
            [(3, 6, 1, 1), (4, 6, 1, 1)],
            "one job per PS-lite server that owns a hot key (PS-lite key ranges)"
        );
        for j in &p.jobs {
            assert_eq!(j.number, NumberMode::Fixed { frac_bits: 12 });
            assert_eq!(j.layout, LayoutKind::Random { seed: 42 });
            assert_eq!(j.dense_ranks, 1);
        }
        assert_eq!((c.server_member(1), c.job_base), ((4, 0), 3));
        assert_eq!(c.hot_keys.as_ref().unwrap().rank(7), Some(0));
        assert_eq!(
            c.server_addrs
                .values()
                .map(|a| a.port())
                .collect::<Vec<_>>(),
            [9001, 9003]
        );
        assert_eq!(c.loss.unwrap().drop_ppm, 10_000);
        let node = c.switch_node_config("127.0.0.1:0".parse().unwrap());
        assert_eq!(node.server_addrs.len(), 2);
        assert!(node.server_addrs.contains_key(&(4, 0)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_standby_is_another_switch() {
        let with = |standby: &str, failover: Option<&str>| {
            let mut s = Settings::new();
            s.set("workers", "4").unwrap();
            s.set("hot_key_count", "10").unwrap();
            s.set("switch", "127.0.0.1:9950").unwrap();
            s.set("standby", standby).unwrap();
            if let Some(f) = failover {
                s.set("failover_ms", f).unwrap();
            }
            s.build()
        };
        let c = with("127.0.0.1:9951", None).unwrap();
        assert_eq!(c.standby, Some("127.0.0.1:9951".parse().unwrap()));
        assert_eq!(c.failover, FAILOVER);
        let c = with("127.0.0.1:9951", Some("2500")).unwrap();
        assert_eq!(c.failover, Duration::from_millis(2500));
        let err = with("127.0.0.1:9950", None).unwrap_err().to_string();
        assert!(
            err.contains("the standby switch is the switch itself"),
            "{err}"
        );
        let err = with("127.0.0.1:9951", Some("500")).unwrap_err().to_string();
        assert!(
            err.contains("failover-ms") && err.contains("at least 2000"),
            "{err}"
        );
        let mut s = Settings::new();
        s.set("workers", "4").unwrap();
        s.set("hot_key_count", "10").unwrap();
        s.set("switch", "127.0.0.1:9950").unwrap();
        assert_eq!(s.build().unwrap().standby, None);
    }

    #[test]
    fn file_syntax_errors_name_the_line() {
        let err = Settings::parse(
            "workers = 2\nfoo = 1\nswitch = 10.0.0.250:9950\nserver_addr = \"0=1.2.3.4:5\"\nservers = [\"2\"]\n",
            &path(),
        )
        .unwrap_err();
        let text = err.to_string();
        assert_eq!(err.problems.len(), 1, "{text}");
        assert!(
            text.contains(
                "/etc/zebra/hot.conf:3: not TOML: a text value goes in double quotes: \
                 write switch = \"10.0.0.250:9950\""
            ),
            "{text}"
        );
        let err = Settings::parse(
            "workers = 2\nfoo = 1\nserver_addr = \"0=1.2.3.4:5\"\nservers = [\"2\"]\n",
            &path(),
        )
        .unwrap_err();
        let text = err.to_string();
        assert_eq!(err.problems.len(), 2, "{text}");
        assert!(
            text.contains("/etc/zebra/hot.conf:2: unknown key \"foo\" (known: switch, job,"),
            "{text}"
        );
        assert!(
            text.contains("/etc/zebra/hot.conf:4: servers takes one value, not an array"),
            "{text}"
        );
        let err = Settings::parse("workers = 2\nworkers = 3\n", &path()).unwrap_err();
        assert!(
            err.to_string()
                .contains("/etc/zebra/hot.conf:2: not TOML: "),
            "a key set twice: {err}"
        );
    }

    #[test]
    fn a_value_from_the_environment_is_named_by_its_variable_as_typed() {
        let mut s = Settings::new();
        s.set_from_env("ZEBRA_SWITCH", " nowhere").unwrap();
        s.set_from_env("DMLC_NUM_WORKER", "99").unwrap();
        s.set_from_env("ZEBRA_HOT_LOSS", "drop=2").unwrap();
        s.set("hot_key_count", "4").unwrap();
        let text = s.build().unwrap_err().to_string();
        for want in [
            "ZEBRA_SWITCH=\" nowhere\": expected HOST:PORT",
            "DMLC_NUM_WORKER=\"99\": expected an integer in 1..=64",
            "ZEBRA_HOT_LOSS=\"drop=2\"",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        for flag in ["--listen", "--workers", "--loss", "switch =", "workers ="] {
            assert!(!text.contains(flag), "{flag} in {text}");
        }
    }

    #[test]
    fn every_bad_value_is_reported_with_its_origin() {
        let text = "\
switch = \"nowhere\"
workers = 65
servers = 0
registers = 41
copies = 9
packet_size = 20
packing = \"best\"
round_timeout_ms = 0
worker_rto_ms = \"abc\"
number = \"fixed:31\"
layout = \"random:x\"
server_addr = \"0\"
loss = \"drop=2\"
";
        let mut s = Settings::parse(text, &path()).unwrap();
        s.set("slots", "-1").unwrap();
        let err = s.build().unwrap_err();
        let text = err.to_string();
        assert_eq!(err.problems.len(), 14, "{text}");
        for want in [
            "hot.conf:1: switch = \"nowhere\": expected HOST:PORT",
            "hot.conf:2: workers = 65: expected an integer in 1..=64",
            "hot.conf:3: servers = 0: expected an integer in 1..=65535",
            "hot.conf:4: registers = 41: expected an integer in 1..=40",
            "hot.conf:5: copies = 9: expected an integer in 1..=4",
            "hot.conf:6: packet_size = 20: expected an integer in 64..=1472",
            "hot.conf:7: packing = \"best\": expected strict, fill or sequential",
            "hot.conf:8: round_timeout_ms = 0: expected milliseconds",
            "hot.conf:9: worker_rto_ms = \"abc\": expected milliseconds",
            "hot.conf:10: number = \"fixed:31\": expected f32 or fixed:BITS",
            "hot.conf:11: layout = \"random:x\": expected heat or random:SEED",
            "hot.conf:12: server_addr = \"0\": expected INDEX=HOST:PORT",
            "hot.conf:13: loss = \"drop=2\": expected a drop probability",
            "--slots \"-1\": expected an integer in 1..=65536",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
    }

    #[test]
    fn missing_and_conflicting_settings() {
        assert!(
            Settings::new().build().unwrap().admit.is_some(),
            "nothing set: a switch that admits jobs"
        );
        let mut s = Settings::new();
        s.set("hot_key_count", "5").unwrap();
        let err = s.build().unwrap_err();
        assert_eq!(err.problems.len(), 1, "{err}");
        assert!(err.problems[0].starts_with("workers: not set"));

        let mut s = Settings::new();
        for (k, v) in [
            ("workers", "2"),
            ("hot_keys", "/nonexistent.keys"),
            ("hot_key_count", "5"),
            ("server_addr", "3=127.0.0.1:1"),
        ] {
            s.set(k, v).unwrap();
        }
        let err = s.build().unwrap_err().to_string();
        assert!(
            err.contains(
                "hot keys: --hot-keys gives a hot-keys file and --hot-key-count a number of hot \
                 keys: give one, not both"
            ),
            "{err}"
        );
        let mut env = Settings::parse("hot_key_count = 5\n", &path()).unwrap();
        env.set_from_env("DMLC_NUM_WORKER", "2").unwrap();
        env.set_from_env("ZEBRA_HOT_KEYS", "/k").unwrap();
        let both = env.build().unwrap_err().to_string();
        assert!(
            both.contains(
                "ZEBRA_HOT_KEYS gives a hot-keys file and /etc/zebra/hot.conf:1: hot_key_count a \
                 number of hot keys"
            ),
            "{both}"
        );
        assert!(
            err.contains("--server-addr: server_addr names server 3, the job has 1 servers"),
            "{err}"
        );

        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("hot_keys", "/nonexistent.keys").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(err.contains("hot keys: /nonexistent.keys: "), "{err}");

        let mut s = Settings::new();
        s.set("workers", "2").unwrap();
        s.set("hot_key_count", "40000").unwrap();
        let err = s.build().unwrap_err().to_string();
        assert!(
            err.contains(
                "do not fit together: jobs need 1250 slots per register, the switch has 1024"
            ),
            "{err}"
        );
        assert!(Settings::new().set("nope", "1").is_err());
    }
}
