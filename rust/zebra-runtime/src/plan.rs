//! What the hot path of a PS-lite process is started with: its role, the switch, the hot
//! keys and the protocol settings (from `zebra_config::Config`, the hot-path
//! configuration file and PS-lite's job size), checked once at start-up with every
//! problem named by the variable the user set.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use zebra_agent::{AgentConfig, HotSet, OnlineConfig, PullConfig, Rank};
use zebra_config::HotMode;
use zebra_hotpath::{Build, HotpathConfig, LinkConfig, Settings, StartError};

/// This process's part in a PS-lite job, from `DMLC_ROLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessRole {
    Worker,
    Server,
    Scheduler,
}

/// What the hot path of this process is started with, checked at start-up.
#[derive(Debug)]
pub struct Plan {
    pub(crate) role: ProcessRole,
    /// In-network aggregation (`ZEBRA_SWITCH`).
    pub(crate) aggregation: Option<Aggregation>,
    /// `ZEBRA_TRACE` (`%r` not yet replaced) and its bound in bytes.
    pub(crate) trace: Option<(String, u64)>,
}

/// The switch, the hot keys and the protocol settings every party shares.
#[derive(Debug)]
pub(crate) struct Aggregation {
    /// `settings.switch`, which aggregation requires.
    pub(crate) switch: SocketAddr,
    /// `settings.hot_set`, which aggregation requires.
    pub(crate) hot: Arc<HotSet>,
    pub(crate) agent: AgentConfig,
    /// The hot-path configuration, checked: the protocol settings
    /// (`proto`), `loss`, `online_out` (where a server writes its online
    /// decision, `%r`: rank), `register_wait` (a server whose REGISTER the
    /// switch leaves unanswered this long steps aside), `worker_window`.
    pub(crate) settings: HotpathConfig,
    /// Nothing sized the jobs: servers ask the switch to admit theirs
    /// (REGISTER with admission), and step aside if it does not (unlike
    /// `settings.zero_config`, not when `ZEBRA_HOT` asks for a file).
    pub(crate) zero_config: bool,
    /// Zero configuration without `job`: the scheduler's address the job
    /// id was derived from ([`derived_job`]).
    pub(crate) job_from: Option<String>,
    /// `job` is set (in `ZEBRA_HOT_CONFIG`).
    pub(crate) job_given: bool,
}

/// What PS-lite's launcher tells a process: `DMLC_ROLE`, `DMLC_NUM_WORKER`,
/// `DMLC_NUM_SERVER` and the scheduler's address `DMLC_PS_ROOT_URI` /
/// `DMLC_PS_ROOT_PORT`, each as set (`None`: unset), and the host's name. The
/// bridge reads them from the environment; tests give them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobEnv {
    /// `DMLC_ROLE`.
    pub role: Option<String>,
    /// `DMLC_NUM_WORKER`.
    pub num_worker: Option<String>,
    /// `DMLC_NUM_SERVER`.
    pub num_server: Option<String>,
    /// `DMLC_PS_ROOT_URI`: the scheduler's host, the same in every process
    /// of the job.
    pub root_uri: Option<String>,
    /// `DMLC_PS_ROOT_PORT`: the scheduler's port.
    pub root_port: Option<String>,
    /// This host's name (`/proc/sys/kernel/hostname`): a scheduler on a
    /// loopback address is told apart by it from another host's.
    pub host: Option<String>,
}

impl JobEnv {
    /// What PS-lite's launcher set in this process's environment.
    pub fn from_env() -> JobEnv {
        let var = |name| std::env::var(name).ok();
        JobEnv {
            role: var("DMLC_ROLE"),
            num_worker: var("DMLC_NUM_WORKER"),
            num_server: var("DMLC_NUM_SERVER"),
            root_uri: var("DMLC_PS_ROOT_URI"),
            root_port: var("DMLC_PS_ROOT_PORT"),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty()),
        }
    }

    /// The scheduler's address as the job's processes share it
    /// (`DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT`), with this host's name after
    /// it when the address is a loopback one (`127.0.0.1:8000 on HOST`): only
    /// processes of one host reach it, and another host's job may use the
    /// same. `None` unless both variables are set.
    pub fn scheduler(&self) -> Option<String> {
        let uri = self.root_uri.as_deref()?.trim();
        let port = self.root_port.as_deref()?.trim();
        if uri.is_empty() || port.is_empty() {
            return None;
        }
        let loopback = uri.eq_ignore_ascii_case("localhost")
            || uri
                .trim_matches(|c| c == '[' || c == ']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        Some(match (&self.host, loopback) {
            (Some(host), true) => format!("{uri}:{port} on {host}"),
            _ => format!("{uri}:{port}"),
        })
    }
}

/// The smallest job id [`derived_job`] gives: ids below are never derived,
/// for jobs given a `job` by hand.
pub const DERIVED_JOB_MIN: u16 = 1024;

/// The job id of a zero-configuration job of `servers` servers whose
/// scheduler is `scheduler` ([`JobEnv::scheduler`]): a hash of it into
/// `DERIVED_JOB_MIN..=65536 - servers`, so that the ids of its servers' jobs
/// (`id + s`) stay in range; every process of the job derives the same, and
/// another job's differs but by chance (then the two collide at the switch:
/// the second job's REGISTERs are refused and it runs without the switch,
/// exact). `None` for more servers than the range holds.
pub fn derived_job(scheduler: &str, servers: u16) -> Option<u16> {
    let bases = (1u32 << 16)
        .checked_sub(u32::from(DERIVED_JOB_MIN) + u32::from(servers))?
        .checked_add(1)
        .filter(|&n| n > 0)?;
    // FNV-1a, then a SplitMix64 finaliser: the same on every host and build.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in scheduler.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    Some(DERIVED_JOB_MIN + (h % u64::from(bases)) as u16)
}

/// The problems of [`Plan::from_config`] as the library reports them (and
/// `zebra config`).
pub fn hot_path_problems(problems: &[String]) -> String {
    format!(
        "invalid hot-path configuration:\n  - {}",
        problems.join("\n  - ")
    )
}

/// Each problem prefixed with the variable `var` that led to it.
fn named(var: &str, problems: Vec<String>) -> Vec<String> {
    problems
        .into_iter()
        .map(|p| format!("{var}: {p}"))
        .collect()
}

/// PS-lite's count `name` (set to `value`), and its value as typed; 0 when it is
/// missing or not a positive number (a problem is pushed).
fn count(name: &str, value: Option<&str>, problems: &mut Vec<String>) -> (u16, String) {
    match value {
        Some(v) => match v.trim().parse::<u16>() {
            Ok(n) if n > 0 => (n, v.to_string()),
            _ => {
                problems.push(format!(
                    "{name}={v:?}: expected a positive number (ZEBRA_SWITCH needs the job's size)"
                ));
                (0, v.to_string())
            }
        },
        None => {
            problems.push(format!(
                "ZEBRA_SWITCH is set but {name} is not: the hot path needs PS-lite's job size \
                 (every PS-lite launcher sets DMLC_NUM_WORKER and DMLC_NUM_SERVER)"
            ));
            (0, String::new())
        }
    }
}

impl Plan {
    /// The plan for `config` in a process `job` describes: `None` in mode off or
    /// without `ZEBRA_SWITCH` and `ZEBRA_TRACE`; every problem named.
    pub fn from_config(
        config: &zebra_config::Config,
        job: &JobEnv,
    ) -> Result<Option<Plan>, Vec<String>> {
        if !config.enable || (config.switch.is_none() && config.trace.is_none()) {
            return Ok(None);
        }
        let what = if config.switch.is_some() {
            "ZEBRA_SWITCH"
        } else {
            "ZEBRA_TRACE"
        };
        let role = match job.role.as_deref() {
            Some("worker") => ProcessRole::Worker,
            Some("server") => ProcessRole::Server,
            Some("scheduler") => ProcessRole::Scheduler,
            Some(other) => {
                return Err(vec![format!(
                    "DMLC_ROLE={other:?}: expected worker, server or scheduler"
                )])
            }
            None => {
                return Err(vec![format!(
                    "{what} is set but DMLC_ROLE is not: it is for PS-lite processes"
                )])
            }
        };
        let aggregation = match config.switch.as_deref() {
            Some(switch) => Aggregation::from_config(config, switch, job)?,
            None => None,
        };
        Ok(Some(Plan {
            role,
            aggregation,
            trace: config
                .trace
                .as_ref()
                .map(|t| (t.clone(), config.trace_max_bytes)),
        }))
    }
}

impl Plan {
    /// What the plan does, in a few words (`zebra config`).
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(a) = &self.aggregation {
            let keys = match &a.agent.online {
                _ if a.zero_config => "hot keys found online, in a share of the switch's memory \
                                       each server asks it to admit (zero configuration)"
                    .to_string(),
                Some(o) if o.fixed => format!("{} hot keys from the file, watched", a.hot.len()),
                Some(_) if a.hot.is_empty() => "hot keys found online".to_string(),
                Some(_) => format!("{} hot keys to start from, re-ranked online", a.hot.len()),
                None => format!("{} hot keys from the file", a.hot.len()),
            };
            let standby = a.settings.standby.map_or(String::new(), |s| {
                format!(
                    " (standby at {s}, moved to after {} ms without an answer)",
                    a.settings.failover.as_millis()
                )
            });
            parts.push(format!(
                "aggregation through the switch at {}{standby} for {} workers and {} servers: \
                 {keys}; {}",
                a.switch,
                a.agent.workers,
                a.agent.servers,
                a.jobs()
            ));
        }
        if let Some((path, _)) = &self.trace {
            parts.push(format!("push traces written to {path}"));
        }
        if parts.is_empty() {
            parts.push("no aggregation: the hot-keys file lists no key".into());
        }
        parts.join("; ")
    }
}

impl Aggregation {
    /// The aggregation `config` asks for; `None` when its hot-keys file lists
    /// no key (nothing to aggregate: every push goes to its server unchanged).
    fn from_config(
        config: &zebra_config::Config,
        switch: &str,
        job: &JobEnv,
    ) -> Result<Option<Aggregation>, Vec<String>> {
        let mut problems = Vec::new();
        let (workers, workers_typed) =
            count("DMLC_NUM_WORKER", job.num_worker.as_deref(), &mut problems);
        let (servers, servers_typed) =
            count("DMLC_NUM_SERVER", job.num_server.as_deref(), &mut problems);
        let mut settings = match &config.hot_config {
            Some(path) => {
                Settings::load(path).map_err(|e| named("ZEBRA_HOT_CONFIG", e.problems))?
            }
            None => Settings::new(),
        };
        // The variables that stand for settings override the file's, each
        // named by the variable and as typed (`Settings::set_from_env`):
        // ZEBRA_SWITCH, ZEBRA_HOT_KEYS, ZEBRA_HOT_LOSS, the job key's (whose
        // token every party derives, docs/SECURITY.md), and PS-lite's job size.
        let job_size = [
            ("DMLC_NUM_WORKER", workers_typed),
            ("DMLC_NUM_SERVER", servers_typed),
        ];
        let given = config.hot.iter().map(|(var, typed)| (*var, typed.clone()));
        let sized = workers > 0 && servers > 0;
        for (var, typed) in given.chain(job_size.into_iter().filter(|_| sized)) {
            if let Err(e) = settings.set_from_env(var, &typed) {
                problems.extend(e.problems);
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        // A zero-configuration job's id, unless `job` is set: from what every
        // process of this job shares and no other job does, the scheduler's
        // address, so that jobs sharing one switch do not collide at 1.
        let scheduler = job.scheduler();
        let job_given = settings.has("job");
        let derived = scheduler
            .as_deref()
            .filter(|_| !job_given)
            .and_then(|at| derived_job(at, servers));
        if let Some(id) = derived {
            settings.set_zero_config_job(id);
        }
        let built = settings.build().map_err(|e| e.problems)?;
        if let Some(file) = &built.no_keys {
            log::warn!(
                "zebra: the hot-keys file {file} lists no key (zebra profile found nothing that \
                 aggregation saves; its comments say why): every push goes to its server \
                 unchanged, without the switch"
            );
            return Ok(None);
        }
        let Some(hot) = built.hot_set.clone() else {
            return Err(vec![
                "ZEBRA_SWITCH is set without hot keys: set ZEBRA_HOT_KEYS (or hot_keys in \
                 ZEBRA_HOT_CONFIG)"
                    .into(),
            ]);
        };
        // Nothing sized the jobs: each server asks the switch for its share
        // and finds its keys online, unless the user asked for a file.
        let file = matches!(config.hot_mode, HotMode::File | HotMode::Watched { .. });
        let zero_config = built.zero_config && !file;
        let job_from = scheduler.filter(|_| zero_config && derived == Some(built.job_base));
        if hot.is_empty() && file {
            return Err(vec![
                "no hot key: the hot-path settings size the jobs (online_capacity) without a \
                 hot-keys file, which only ZEBRA_HOT=online fills; set ZEBRA_HOT=online or \
                 ZEBRA_HOT_KEYS"
                    .into(),
            ]);
        }
        let mut agent = AgentConfig::new(built.job_base, workers, servers);
        agent.delivery = config.delivery;
        agent.sync = config.sync;
        agent.format = config.flavor;
        agent.settle_timeout = built.settle_timeout;
        if config.pull == zebra_config::Pull::Switch {
            // A copy that heard nothing for half the time a server takes to
            // give an update up is dropped (docs/PULL.md).
            let expiry = zebra_proto::update::gap_timeout(&built.proto) / 2;
            agent.pull = Some(PullConfig {
                expiry: expiry.max(Duration::from_millis(100)),
                ..PullConfig::default()
            });
        }
        agent.max_clean_values = u32::from(built.proto.max_seqs);
        // Online hot keys, or a hot-keys file's watcher (zebra_agent::online):
        // `watch:T` with a probe of T whole pushes (the pace rule too),
        // `watch:0` without one (the workers aggregate from their first push;
        // a server steps aside on flushed rounds or a silent switch); `file`,
        // and `auto` with a file, not at all.
        let online = |rounds: Option<u32>| OnlineConfig {
            rounds: rounds.unwrap_or(built.online.rounds),
            rank: config.sync_rank,
            ..built.online.clone()
        };
        agent.online = match config.hot_mode {
            HotMode::Online { rounds } => Some(online(rounds)),
            HotMode::Watched { rounds: Some(0) } => Some(OnlineConfig {
                fixed: true,
                probe: false,
                min_pace: 0.0,
                ..online(None)
            }),
            HotMode::Watched { rounds } => Some(OnlineConfig {
                fixed: true,
                ..online(rounds)
            }),
            HotMode::Auto if hot.is_empty() => Some(online(None)),
            HotMode::Auto | HotMode::File => None,
        };
        if config.sync_rank != Rank::Saving && agent.online.as_ref().is_none_or(|o| o.fixed) {
            log::warn!(
                "zebra: ZEBRA_SYNC_RANK={}: no census ranks this job's keys (a hot-keys file \
                 without ZEBRA_HOT=online): the file's keys are the cut",
                config.sync_rank
            );
        }
        agent.validate().map_err(|e| vec![e.to_string()])?;
        let switch = built
            .switch
            .ok_or_else(|| vec![format!("ZEBRA_SWITCH={switch}: no address")])?;
        Ok(Some(Aggregation {
            switch,
            hot,
            agent,
            settings: built,
            zero_config,
            job_from,
            job_given,
        }))
    }
}

impl Aggregation {
    /// The switch's job ids of this job's servers, and where they come from
    /// (`switch jobs 4242..=4243, derived from the scheduler's address
    /// 10.0.0.1:9000`).
    pub(crate) fn jobs(&self) -> String {
        let first = self.agent.job_base;
        let last = u32::from(first) + u32::from(self.agent.servers) - 1;
        let ids = if u32::from(first) == last {
            format!("switch job {first}")
        } else {
            format!("switch jobs {first}..={last}")
        };
        match &self.job_from {
            Some(at) => format!(
                "{ids}, derived from the scheduler's address {at} (DMLC_PS_ROOT_URI:\
                 DMLC_PS_ROOT_PORT; `job` in ZEBRA_HOT_CONFIG sets it instead)"
            ),
            None => ids,
        }
    }

    /// A link of this process: on the process's user-level stack when `ZEBRA_NET` asks for
    /// one (the same stack, port and address as its `tcp://` endpoints).
    pub(crate) fn link(&self, job: u16, rank: u16) -> Result<LinkConfig, StartError> {
        let s = &self.settings;
        let mut c = LinkConfig::new(s.proto.clone(), job, rank, self.switch);
        c.standby = s.standby;
        c.failover = s.failover;
        c.loss = s.loss;
        c.window = s.worker_window;
        c.stack = zebra_engine::process_stack().map_err(|source| StartError::Io {
            what: "start the user-level stack (ZEBRA_NET)".into(),
            source,
        })?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zebra_agent::Delivery;

    /// A scratch directory of this test process.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("zebra-runtime-plan-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn job(role: Option<&str>, workers: Option<&str>, servers: Option<&str>) -> JobEnv {
        JobEnv {
            role: role.map(String::from),
            num_worker: workers.map(String::from),
            num_server: servers.map(String::from),
            ..JobEnv::default()
        }
    }

    /// A worker of a job of two workers and one server.
    fn worker() -> JobEnv {
        job(Some("worker"), Some("2"), Some("1"))
    }

    fn plan(vars: &[(&str, &str)], job: &JobEnv) -> Result<Option<Plan>, Vec<String>> {
        let config = zebra_config::Config::from_vars(vars.iter().copied(), 1).unwrap();
        Plan::from_config(&config, job)
    }

    /// The aggregation of a plan that must have one.
    fn aggregation(vars: &[(&str, &str)], job: &JobEnv) -> Aggregation {
        plan(vars, job)
            .unwrap()
            .expect("a plan")
            .aggregation
            .expect("an aggregation")
    }

    fn problems(vars: &[(&str, &str)], job: &JobEnv) -> String {
        plan(vars, job).expect_err("problems").join("\n")
    }

    const SWITCH: (&str, &str) = ("ZEBRA_SWITCH", "127.0.0.1:9950");
    const ON: (&str, &str) = ("ZEBRA_ENABLE", "1");

    #[test]
    fn without_a_switch_or_a_trace_or_in_mode_off_there_is_no_plan() {
        let nobody = job(None, None, None);
        assert!(plan(&[SWITCH], &nobody).unwrap().is_none());
        assert!(plan(&[ON], &nobody).unwrap().is_none());
        assert!(plan(&[("ZEBRA_TRACE", "/t")], &nobody).unwrap().is_none());
    }

    #[test]
    fn the_role_is_required_and_checked() {
        let p = problems(&[ON, SWITCH], &job(None, Some("2"), Some("1")));
        assert_eq!(
            p,
            "ZEBRA_SWITCH is set but DMLC_ROLE is not: it is for PS-lite processes"
        );
        let p = problems(&[ON, ("ZEBRA_TRACE", "/t")], &job(None, None, None));
        assert_eq!(
            p,
            "ZEBRA_TRACE is set but DMLC_ROLE is not: it is for PS-lite processes"
        );
        let p = problems(&[ON, SWITCH], &job(Some("boss"), Some("2"), Some("1")));
        assert_eq!(
            p,
            "DMLC_ROLE=\"boss\": expected worker, server or scheduler"
        );
        for (role, want) in [
            ("worker", ProcessRole::Worker),
            ("server", ProcessRole::Server),
            ("scheduler", ProcessRole::Scheduler),
        ] {
            let p = plan(&[ON, SWITCH], &job(Some(role), Some("2"), Some("1")));
            assert_eq!(p.unwrap().unwrap().role, want, "{role}");
        }
    }

    #[test]
    fn a_trace_alone_records_without_aggregating() {
        let vars = [ON, ("ZEBRA_TRACE", "/t/w%r"), ("ZEBRA_TRACE_MAX_MB", "2")];
        let p = plan(&vars, &job(Some("worker"), None, None))
            .unwrap()
            .unwrap();
        assert_eq!(p.role, ProcessRole::Worker);
        assert!(p.aggregation.is_none());
        assert_eq!(p.trace, Some(("/t/w%r".to_string(), 2 << 20)));
    }

    #[test]
    fn the_job_size_is_named_when_missing_or_bad() {
        let p = problems(&[ON, SWITCH], &job(Some("worker"), None, None));
        for name in ["DMLC_NUM_WORKER", "DMLC_NUM_SERVER"] {
            assert!(
                p.contains(&format!(
                    "ZEBRA_SWITCH is set but {name} is not: the hot path needs PS-lite's job \
                     size (every PS-lite launcher sets DMLC_NUM_WORKER and DMLC_NUM_SERVER)"
                )),
                "{name} in {p}"
            );
        }
        let p = problems(&[ON, SWITCH], &job(Some("server"), Some("abc"), Some("0")));
        for want in [
            "DMLC_NUM_WORKER=\"abc\": expected a positive number (ZEBRA_SWITCH needs the job's size)",
            "DMLC_NUM_SERVER=\"0\": expected a positive number (ZEBRA_SWITCH needs the job's size)",
        ] {
            assert!(p.contains(want), "{want} in {p}");
        }
    }

    /// A bad value in an environment variable is named by the variable and
    /// the value as typed, never by a `zebra switch` flag.
    #[test]
    fn bad_variables_are_named_as_typed() {
        let vars = [ON, ("ZEBRA_SWITCH", "nowhere.invalid:9950")];
        let p = problems(&vars, &job(Some("server"), Some("99"), Some("1")));
        for want in [
            "ZEBRA_SWITCH=\"nowhere.invalid:9950\":",
            "DMLC_NUM_WORKER=\"99\": expected an integer in 1..=64",
        ] {
            assert!(p.contains(want), "{want} in {p}");
        }
        for flag in ["--listen", "--workers", "--servers"] {
            assert!(!p.contains(flag), "{flag} in {p}");
        }
    }

    #[test]
    fn a_standby_reaches_every_link() {
        let a = aggregation(&[ON, SWITCH], &worker());
        let c = a.link(a.agent.job(0), 0).unwrap();
        assert_eq!(c.standby, None);
        let standby = ("ZEBRA_SWITCH_STANDBY", "127.0.0.1:9951");
        let a = aggregation(&[ON, SWITCH, standby], &worker());
        let c = a.link(a.agent.job(0), 0).unwrap();
        assert_eq!(c.standby, Some("127.0.0.1:9951".parse().unwrap()));
        assert_eq!(c.failover, Duration::from_millis(3000));
        let p = problems(
            &[ON, SWITCH, ("ZEBRA_SWITCH_STANDBY", "127.0.0.1:9950")],
            &worker(),
        );
        assert!(p.contains("the standby switch is the switch itself"), "{p}");
    }

    #[test]
    fn zero_configuration_finds_keys_online_and_asks_the_switch_for_admission() {
        let a = aggregation(&[ON, SWITCH], &worker());
        assert!(a.zero_config);
        assert!(a.hot.is_empty());
        assert_eq!(a.switch, "127.0.0.1:9950".parse().unwrap());
        assert_eq!((a.agent.workers, a.agent.servers), (2, 1));
        let online = a.agent.online.as_ref().expect("online hot keys");
        assert!(!online.fixed);
        assert_eq!(a.settings.register_wait, Duration::from_millis(2000));
        assert!(a.agent.pull.is_some(), "the pull half is on by default");
        assert_eq!(a.agent.delivery, Delivery::PerWorker);
        // ZEBRA_HOT=online:T counts T pushes; a file mode needs a file.
        let a = aggregation(&[ON, SWITCH, ("ZEBRA_HOT", "online:5")], &worker());
        assert!(a.zero_config);
        assert_eq!(a.agent.online.unwrap().rounds, 5);
        for mode in ["file", "watch", "watch:3"] {
            let p = problems(&[ON, SWITCH, ("ZEBRA_HOT", mode)], &worker());
            assert_eq!(
                p,
                "no hot key: the hot-path settings size the jobs (online_capacity) without a \
                 hot-keys file, which only ZEBRA_HOT=online fills; set ZEBRA_HOT=online or \
                 ZEBRA_HOT_KEYS",
                "{mode}"
            );
        }
    }

    /// A process of a job of two workers and two servers whose scheduler is
    /// `uri:port` on host `host`.
    fn of_scheduler(role: &str, uri: &str, port: &str, host: &str) -> JobEnv {
        JobEnv {
            root_uri: Some(uri.into()),
            root_port: Some(port.into()),
            host: Some(host.into()),
            ..job(Some(role), Some("2"), Some("2"))
        }
    }

    #[test]
    fn a_zero_configuration_job_id_comes_from_the_scheduler_address() {
        let a = aggregation(
            &[ON, SWITCH],
            &of_scheduler("worker", "10.0.0.1", "9000", "h1"),
        );
        let id = derived_job("10.0.0.1:9000", 2).unwrap();
        assert!(a.zero_config);
        assert_eq!(a.agent.job_base, id);
        let ids: Vec<u16> = a.settings.proto.jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![id, id + 1]);
        assert_eq!(a.job_from.as_deref(), Some("10.0.0.1:9000"));
        assert!(a
            .jobs()
            .contains("derived from the scheduler's address 10.0.0.1:9000"));
        // Every process of the job alike, whatever its role or host.
        for (role, host) in [("server", "h2"), ("scheduler", "h3")] {
            let b = aggregation(&[ON, SWITCH], &of_scheduler(role, "10.0.0.1", "9000", host));
            assert_eq!(b.agent.job_base, id, "{role}");
        }
        // Another scheduler, another id; a loopback one is told apart by host.
        let other = aggregation(
            &[ON, SWITCH],
            &of_scheduler("worker", "10.0.0.1", "9001", "h1"),
        );
        assert_ne!(other.agent.job_base, id);
        let here = of_scheduler("worker", "127.0.0.1", "8000", "h1");
        let there = of_scheduler("worker", "127.0.0.1", "8000", "h2");
        assert_eq!(here.scheduler().as_deref(), Some("127.0.0.1:8000 on h1"));
        assert_ne!(
            aggregation(&[ON, SWITCH], &here).agent.job_base,
            aggregation(&[ON, SWITCH], &there).agent.job_base
        );
        // `job` set by hand wins; so does a sized job's default.
        let dir = scratch("derived");
        let conf = dir.join("hot.conf");
        std::fs::write(&conf, "job = 11\n").unwrap();
        let env = of_scheduler("worker", "10.0.0.1", "9000", "h1");
        let set = aggregation(
            &[ON, SWITCH, ("ZEBRA_HOT_CONFIG", conf.to_str().unwrap())],
            &env,
        );
        assert_eq!((set.agent.job_base, set.job_from.is_none()), (11, true));
        std::fs::write(&conf, "online_capacity = 64\n").unwrap();
        let sized = aggregation(
            &[ON, SWITCH, ("ZEBRA_HOT_CONFIG", conf.to_str().unwrap())],
            &env,
        );
        assert_eq!((sized.agent.job_base, sized.job_from.is_none()), (1, true));
        // Without the scheduler's address (zebra config from a shell): 1.
        let a = aggregation(&[ON, SWITCH], &worker());
        assert_eq!((a.agent.job_base, a.job_from.is_none()), (1, true));
    }

    #[test]
    fn derived_job_ids_keep_every_server_job_in_range_and_clear_of_small_ids() {
        let mut seen = std::collections::BTreeSet::new();
        for port in 9000..9400 {
            for servers in [1u16, 2, 8, 64] {
                let id = derived_job(&format!("10.1.2.3:{port}"), servers).unwrap();
                assert!(id >= DERIVED_JOB_MIN, "{id}");
                assert!(
                    u32::from(id) + u32::from(servers) <= 1 << 16,
                    "{id} + {servers}"
                );
                if servers == 2 {
                    seen.insert(id);
                }
            }
        }
        assert!(seen.len() >= 395, "400 schedulers, {} ids", seen.len());
        assert_eq!(derived_job("10.1.2.3:9000", 64512), Some(DERIVED_JOB_MIN));
        assert_eq!(derived_job("10.1.2.3:9000", 64513), None);
    }

    #[test]
    fn a_hot_keys_file_sizes_the_job_and_zebra_hot_says_what_becomes_of_it() {
        let dir = scratch("file");
        let keys = dir.join("hot.keys");
        std::fs::write(&keys, "# three keys\n7\n3\n100-101\n").unwrap();
        let keys_var = ("ZEBRA_HOT_KEYS", keys.to_str().unwrap());
        let a = aggregation(&[ON, SWITCH, keys_var], &worker());
        assert!(!a.zero_config);
        assert_eq!(a.hot.len(), 4);
        assert!(a.agent.online.is_none(), "auto with keys: the file's keys");
        let a = aggregation(&[ON, SWITCH, keys_var, ("ZEBRA_HOT", "watch:0")], &worker());
        let online = a.agent.online.unwrap();
        assert!(
            online.fixed && !online.probe && online.min_pace == 0.0 && online.rounds == 10,
            "watch:0: the file's keys, watched without a probe, counted over online_rounds"
        );
        let a = aggregation(&[ON, SWITCH, keys_var, ("ZEBRA_HOT", "file")], &worker());
        assert!(!a.zero_config && a.agent.online.is_none());
        let a = aggregation(
            &[ON, SWITCH, keys_var, ("ZEBRA_HOT", "online:4")],
            &worker(),
        );
        let online = a.agent.online.unwrap();
        assert!(!a.zero_config && online.rounds == 4 && !online.fixed);
        assert_eq!(online.rank, Rank::Saving);
        let a = aggregation(
            &[
                ON,
                SWITCH,
                keys_var,
                ("ZEBRA_HOT", "online:4"),
                ("ZEBRA_SYNC_RANK", "pgp"),
            ],
            &worker(),
        );
        assert_eq!(
            a.agent.online.unwrap().rank,
            Rank::Pgp,
            "the census ranks by |g·p|"
        );
        let a = aggregation(&[ON, SWITCH, keys_var, ("ZEBRA_HOT", "watch:7")], &worker());
        let online = a.agent.online.unwrap();
        assert!(!a.zero_config && online.rounds == 7 && online.fixed && online.probe);
        // Without a count, the hot-path configuration's online_rounds.
        let a = aggregation(&[ON, SWITCH, keys_var, ("ZEBRA_HOT", "watch")], &worker());
        assert_eq!(a.agent.online.unwrap().rounds, 10);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_hot_keys_file_without_keys_means_no_aggregation() {
        let dir = scratch("empty");
        let keys = dir.join("hot.keys");
        std::fs::write(&keys, "# zebra profile: nothing to save\n").unwrap();
        let vars = [ON, SWITCH, ("ZEBRA_HOT_KEYS", keys.to_str().unwrap())];
        let p = plan(&vars, &worker()).unwrap().expect("a plan");
        assert!(p.aggregation.is_none());
        assert_eq!(p.role, ProcessRole::Worker);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_hot_path_configuration_file_is_read_and_its_problems_named() {
        let dir = scratch("config");
        let conf = dir.join("hot.conf");
        std::fs::write(
            &conf,
            "register_wait_ms = 1234\nonline_out = \"/tmp/decision-%r\"\nonline_rounds = 6\n",
        )
        .unwrap();
        let conf_var = ("ZEBRA_HOT_CONFIG", conf.to_str().unwrap());
        let a = aggregation(
            &[ON, SWITCH, conf_var, ("ZEBRA_DELIVERY", "merged")],
            &worker(),
        );
        assert_eq!(a.settings.register_wait, Duration::from_millis(1234));
        assert_eq!(a.settings.online_out.as_deref(), Some("/tmp/decision-%r"));
        assert_eq!(a.agent.online.unwrap().rounds, 6);
        assert_eq!(a.agent.delivery, Delivery::Merged);
        let a = aggregation(&[ON, SWITCH, conf_var, ("ZEBRA_PULL", "server")], &worker());
        assert!(a.agent.pull.is_none());
        std::fs::write(&conf, "no_such_knob = 1\n").unwrap();
        let p = problems(&[ON, SWITCH, conf_var], &worker());
        assert!(p.starts_with("ZEBRA_HOT_CONFIG: "), "{p}");
        assert!(
            p.contains(&format!(
                "{}:1: unknown key \"no_such_knob\"",
                conf.display()
            )),
            "{p}"
        );
        let missing = dir.join("missing.conf");
        let p = problems(
            &[ON, SWITCH, ("ZEBRA_HOT_CONFIG", missing.to_str().unwrap())],
            &worker(),
        );
        assert!(p.starts_with("ZEBRA_HOT_CONFIG: "), "{p}");
        assert!(p.contains(&format!("{}: ", missing.display())), "{p}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
