//! The hot-path settings as the user gave them: a settings file's lines
//! (TOML, `file.rs`), `zebra switch` flags and the variables that stand for
//! settings, each an [`Entry`] of a [`Setting`] of [`SETTINGS`] with where it
//! came from, and [`Settings::values`], which runs each entry's parser.
//!
//! An error names the setting as the user gave it (`FILE:LINE: key =
//! "value"`, `--flag "value"`, `VAR="value"`). Entries are applied in the
//! order given, a later one overriding an earlier one of a single-valued
//! setting (repeatable ones accumulate): the file first, then variables,
//! then flags, so flags > variables > file > defaults. Checking the
//! combination (the hot-keys file, the jobs, the switch's memory) is
//! `zebra_hotpath::settings`'s.

mod file;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use zebra_proto::number::MAX_FRAC_BITS;
use zebra_proto::{Config, LayoutKind, NumberMode};

use crate::settings::{setting_by_env, setting_by_key, Setting, SETTINGS};
use crate::{HotLoss, JobKey};

/// Every problem found, so they are fixed in one go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// One line per problem.
    pub problems: Vec<String>,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid hot-path configuration:")?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SettingsError {}

impl SettingsError {
    /// One problem.
    pub fn one(problem: String) -> SettingsError {
        SettingsError {
            problems: vec![problem],
        }
    }
}

/// Where an entry was given.
#[derive(Debug, Clone)]
enum Origin {
    /// A line of the settings file, and the value as written there.
    File {
        path: PathBuf,
        line: usize,
        typed: String,
    },
    Flag(&'static str),
    /// An environment variable, and its value as the user typed it.
    Env {
        var: String,
        typed: String,
    },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line, .. } => write!(f, "{}:{line}", path.display()),
            Origin::Flag(flag) => write!(f, "--{flag}"),
            Origin::Env { var, .. } => f.write_str(var),
        }
    }
}

/// One value of a setting as given, and where.
#[derive(Debug, Clone)]
pub struct Entry {
    setting: &'static Setting,
    /// The value, trimmed.
    pub value: String,
    origin: Origin,
}

impl Entry {
    /// The problem `expected` of this value, naming it as the user gave it.
    pub fn bad(&self, expected: &str) -> String {
        match &self.origin {
            // The user wrote no key: name the variable and what they typed.
            Origin::Env { var, typed } => format!("{var}={typed:?}: {expected}"),
            Origin::Flag(flag) => format!("--{flag} {:?}: {expected}", self.value),
            // As written in the file: `hot.conf:2: workers = 65`.
            Origin::File { typed, .. } => {
                format!(
                    "{}: {} = {typed}: {expected}",
                    self.origin,
                    self.setting.name()
                )
            }
        }
    }

    /// The setting as the user named it: `VAR`, `--flag`, `FILE:LINE: key`.
    pub fn named(&self) -> String {
        match &self.origin {
            Origin::File { .. } => format!("{}: {}", self.origin, self.setting.name()),
            origin => origin.to_string(),
        }
    }

    /// The value as a path: relative to the settings file's directory when
    /// it comes from the file.
    fn path(&self) -> PathBuf {
        let path = PathBuf::from(&self.value);
        match &self.origin {
            Origin::File { path: file, .. } if path.is_relative() => {
                file.parent().map_or(path.clone(), |dir| dir.join(&path))
            }
            _ => path,
        }
    }
}

/// Settings as given, before checking: a file's lines, then variables
/// and flags.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    entries: Vec<Entry>,
    /// The job id of a zero-configuration job without `job`
    /// ([`Settings::set_zero_config_job`]).
    zero_config_job: Option<u16>,
}

impl Settings {
    /// No setting: every one at its default.
    pub fn new() -> Settings {
        Settings::default()
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SettingsError::one(format!("{}: {e}", path.display())))?;
        Settings::parse(&text, path)
    }

    /// Parses the text of a configuration file read from `path` (TOML,
    /// `file.rs`).
    pub fn parse(text: &str, path: &Path) -> Result<Settings, SettingsError> {
        let items = file::items(text, path).map_err(|problems| SettingsError { problems })?;
        let mut s = Settings::new();
        let mut problems = Vec::new();
        for item in items {
            let at = format!("{}:{}", path.display(), item.line);
            let Some(setting) = setting_by_key(&item.key) else {
                problems.push(format!(
                    "{at}: unknown key {:?} (known: {})",
                    item.key,
                    SETTINGS
                        .iter()
                        .filter_map(|s| s.key)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                continue;
            };
            if item.array && !setting.repeat {
                problems.push(format!("{at}: {} takes one value, not an array", item.key));
                continue;
            }
            for (value, typed) in item.values.into_iter().zip(item.typed) {
                s.entries.push(Entry {
                    setting,
                    value: value.trim().to_string(),
                    origin: Origin::File {
                        path: path.to_path_buf(),
                        line: item.line,
                        typed,
                    },
                });
            }
        }
        if problems.is_empty() {
            Ok(s)
        } else {
            Err(SettingsError { problems })
        }
    }

    /// Takes out every value of setting `key`, returning where each was given
    /// (`FILE:LINE`, `--flag`, `VAR`).
    pub fn remove(&mut self, key: &str) -> Vec<String> {
        let (gone, kept) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|e| e.setting.key == Some(key));
        self.entries = kept;
        gone.iter().map(|e: &Entry| e.origin.to_string()).collect()
    }

    /// Whether setting `key` is given.
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|e| e.setting.key == Some(key))
    }

    /// Every setting given, one line each, named as the user gave it:
    /// `FILE:LINE: key = "value"`, `--flag "value"`, `VAR="value"`; the job
    /// key's file named, never its key.
    pub fn given(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| match &e.origin {
                Origin::Env { var, typed } => format!("{var}={typed:?}"),
                Origin::Flag(flag) => format!("--{flag} {:?}", e.value),
                Origin::File { typed, .. } => {
                    format!("{}: {} = {typed}", e.origin, e.setting.name())
                }
            })
            .collect()
    }

    /// Sets the setting of file key `key` from its flag (overriding the
    /// file for single-valued settings, adding to it for repeatable ones).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingsError> {
        let setting = setting_by_key(key)
            .ok_or_else(|| SettingsError::one(format!("unknown setting {key:?}")))?;
        self.entries.push(Entry {
            setting,
            value: value.trim().to_string(),
            origin: Origin::Flag(setting.flag.unwrap_or(setting.name())),
        });
        Ok(())
    }

    /// Sets the setting environment variable `var` stands for, to the value
    /// `typed` (as [`set`](Self::set) does for a flag): a bad value is
    /// reported as `VAR="typed": expected ...`, naming neither the key nor a
    /// flag the user did not write.
    pub fn set_from_env(&mut self, var: &str, typed: &str) -> Result<(), SettingsError> {
        let setting = setting_by_env(var)
            .filter(|s| s.apply.is_some())
            .ok_or_else(|| SettingsError::one(format!("{var} is not a hot-path setting")))?;
        self.entries.push(Entry {
            setting,
            value: typed.trim().to_string(),
            origin: Origin::Env {
                var: var.to_string(),
                typed: typed.to_string(),
            },
        });
        Ok(())
    }

    /// The job id a zero-configuration job (nothing sizes it: no hot keys,
    /// no `online_capacity`) takes when `job` is not given, instead of 1:
    /// one every process of the job derives alike and other jobs do not
    /// (zebra-runtime: from the scheduler's address), so that jobs sharing
    /// a switch that admits them do not collide. A `job` given wins.
    pub fn set_zero_config_job(&mut self, id: u16) {
        self.zero_config_job = Some(id);
    }

    /// Runs each entry's parser, in the order given: every bad value at
    /// once, else the values.
    pub fn values(&self) -> Result<HotValues, SettingsError> {
        match self.parse_values() {
            (values, problems) if problems.is_empty() => Ok(values),
            (_, problems) => Err(SettingsError { problems }),
        }
    }

    /// Runs each entry's parser, in the order given: the values of the
    /// good ones, and every problem of the others.
    pub fn parse_values(&self) -> (HotValues, Vec<String>) {
        let mut b = HotValues {
            zero_config_job: self.zero_config_job,
            ..HotValues::default()
        };
        let mut problems = Vec::new();
        for e in &self.entries {
            if let Some(name) = e.setting.key.or(e.setting.env) {
                b.named.insert(name, e.named());
            }
            if let Some(apply) = e.setting.apply {
                if let Err(p) = apply(&mut b, e) {
                    problems.push(p);
                }
            }
        }
        (b, problems)
    }
}

/// Each hot-path setting's value as given and checked alone (`None`: not
/// given, its default), for `zebra_hotpath` to check together.
#[derive(Debug, Default)]
pub struct HotValues {
    /// The protocol settings given (registers, slots, timeouts, ...) over
    /// the protocol defaults; `None`: none given. Its jobs are not set.
    pub config: Option<Config>,
    /// `switch` / `--listen` / `ZEBRA_SWITCH`: `HOST:PORT` as given,
    /// resolved by [`Self::switch_addr`].
    pub switch: Option<Entry>,
    /// `standby` / `ZEBRA_SWITCH_STANDBY`: the standby switch's
    /// `HOST:PORT` as given, resolved by [`Self::standby_addr`].
    pub standby: Option<Entry>,
    /// `failover_ms`: a server moves its job to the other switch when
    /// the one in use leaves its REGISTER unanswered this long.
    pub failover: Option<Duration>,
    pub job: Option<u16>,
    pub workers: Option<u16>,
    pub servers: Option<u16>,
    /// How each setting given was named last ([`Entry::named`]), by key
    /// (by variable for one without a key).
    pub named: BTreeMap<&'static str, String>,
    pub hot_keys_file: Option<PathBuf>,
    pub hot_key_count: Option<u32>,
    pub number: Option<NumberMode>,
    pub layout: Option<LayoutKind>,
    pub dense_ranks: Option<u32>,
    /// Pinned servers: address and where it was given.
    pub server_addrs: BTreeMap<u16, (SocketAddr, String)>,
    pub loss: Option<HotLoss>,
    pub settle_timeout: Option<Duration>,
    pub register_wait: Option<Duration>,
    pub worker_window: Option<bool>,
    pub online_rounds: Option<u32>,
    pub online_tau: Option<f64>,
    pub online_wait: Option<Duration>,
    pub online_max_drift: Option<f64>,
    pub online_min_saving: Option<f64>,
    pub online_min_pace: Option<f64>,
    pub online_retry: Option<Duration>,
    pub online_out: Option<String>,
    pub online_capacity: Option<u32>,
    /// The job's secret key and where it was given.
    pub job_key: Option<(JobKey, String)>,
    /// [`Settings::set_zero_config_job`].
    pub zero_config_job: Option<u16>,
}

pub(crate) fn int<T: FromStr + PartialOrd + fmt::Display + Copy>(
    e: &Entry,
    min: T,
    max: T,
) -> Result<T, String> {
    match e.value.parse::<T>() {
        Ok(v) if v >= min && v <= max => Ok(v),
        _ => Err(e.bad(&format!("expected an integer in {min}..={max}"))),
    }
}

pub(crate) fn millis(e: &Entry) -> Result<Duration, String> {
    let expected =
        "expected milliseconds, more than 0 and at most 3600000 (fractions allowed: 0.5)";
    let ms: f64 = e.value.parse().map_err(|_| e.bad(expected))?;
    if !(ms > 0.0 && ms <= 3_600_000.0) {
        return Err(e.bad(expected));
    }
    let us = (ms * 1000.0).round() as u64;
    if us == 0 {
        return Err(e.bad(expected));
    }
    Ok(Duration::from_micros(us))
}

/// What a bad share is told.
pub(crate) const SHARE: &str = "expected a share in 0..=1";

/// A number in `0..=1`.
pub(crate) fn unit(e: &Entry, expected: &str) -> Result<f64, String> {
    match e.value.parse::<f64>() {
        Ok(d) if (0.0..=1.0).contains(&d) => Ok(d),
        _ => Err(e.bad(expected)),
    }
}

/// `online_max_drift`: rounds, 0 or more, or `inf`.
pub(crate) fn drift(e: &Entry) -> Result<f64, String> {
    match e.value.parse::<f64>() {
        Ok(d) if d >= 0.0 => Ok(d),
        _ => Err(e.bad("expected a number of rounds, 0 or more, or inf")),
    }
}

/// `true` or `false` (a TOML boolean, or the same words from a flag).
pub(crate) fn boolean(e: &Entry) -> Result<bool, String> {
    match e.value.as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(e.bad("expected true or false")),
    }
}

/// A file path, not empty.
pub(crate) fn path(e: &Entry) -> Result<String, String> {
    if e.value.is_empty() {
        return Err(e.bad("expected a file path"));
    }
    Ok(e.value.clone())
}

pub(crate) fn number(e: &Entry) -> Result<NumberMode, String> {
    let expected = "expected f32 or fixed:BITS with BITS in 0..=30";
    match e.value.split_once(':') {
        None if e.value == "f32" => Ok(NumberMode::F32),
        Some(("fixed", bits)) => match bits.parse::<u8>() {
            Ok(frac_bits) if frac_bits <= MAX_FRAC_BITS => Ok(NumberMode::Fixed { frac_bits }),
            _ => Err(e.bad(expected)),
        },
        _ => Err(e.bad(expected)),
    }
}

pub(crate) fn layout(e: &Entry) -> Result<LayoutKind, String> {
    let expected = "expected heat or random:SEED (SEED a u64)";
    match e.value.split_once(':') {
        None if e.value == "heat" => Ok(LayoutKind::Heat),
        Some(("random", seed)) => Ok(LayoutKind::Random {
            seed: seed.parse().map_err(|_| e.bad(expected))?,
        }),
        _ => Err(e.bad(expected)),
    }
}

/// What a bad address is told.
const ADDRESS: &str = "expected HOST:PORT (an IP address or a name that resolves, and a port)";

/// `HOST:PORT` as given, checked for its form (resolved later).
fn host_port(e: &Entry) -> Result<Entry, String> {
    match e.value.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(e.clone()),
        _ => Err(e.bad(ADDRESS)),
    }
}

fn address(e: &Entry, text: &str) -> Result<SocketAddr, String> {
    text.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| e.bad(ADDRESS))
}

impl HotValues {
    /// The protocol settings, started from the protocol defaults.
    pub fn config(&mut self) -> &mut Config {
        self.config.get_or_insert_with(|| Config::new(Vec::new()))
    }

    /// The switch's address, resolved; `None` when not given.
    pub fn switch_addr(&self) -> Result<Option<SocketAddr>, String> {
        self.switch
            .as_ref()
            .map(|e| address(e, &e.value))
            .transpose()
    }

    /// The standby switch's address, resolved; `None` when not given.
    pub fn standby_addr(&self) -> Result<Option<SocketAddr>, String> {
        self.standby
            .as_ref()
            .map(|e| address(e, &e.value))
            .transpose()
    }

    /// `switch`: `HOST:PORT`, resolved when the settings are checked
    /// together ([`Self::switch_addr`]).
    pub(crate) fn switch(&mut self, e: &Entry) -> Result<(), String> {
        self.switch = Some(host_port(e)?);
        Ok(())
    }

    /// `standby`: `HOST:PORT` (empty: none), resolved when the
    /// settings are checked together ([`Self::standby_addr`]).
    pub(crate) fn standby(&mut self, e: &Entry) -> Result<(), String> {
        self.standby = if e.value.is_empty() {
            None
        } else if e.value.contains(',') {
            return Err(e.bad("expected one HOST:PORT: a standby is one switch, not a list"));
        } else {
            Some(host_port(e)?)
        };
        Ok(())
    }

    /// The job's secret key from `named` (a file's or `ZEBRA_JOB_KEY`).
    fn job_key(&mut self, key: Result<JobKey, String>, named: String) -> Result<(), String> {
        let key = key?;
        match &self.job_key {
            Some((_, first)) if first.starts_with("ZEBRA_") && named.starts_with("ZEBRA_") => {
                Err("ZEBRA_JOB_KEY and ZEBRA_JOB_KEY_FILE are both set: give one".into())
            }
            Some((_, first)) => Err(format!(
                "{named}: the job key is given twice (also by {first}): give one"
            )),
            None => {
                self.job_key = Some((key, named));
                Ok(())
            }
        }
    }

    /// `ZEBRA_JOB_KEY`: the key itself (never a flag or a file's line: it
    /// is secret).
    pub(crate) fn job_key_value(&mut self, e: &Entry) -> Result<(), String> {
        let named = e.setting.name().to_string();
        // Taken as given, spaces and all.
        let typed = match &e.origin {
            Origin::Env { typed, .. } => typed.as_str(),
            _ => e.value.as_str(),
        };
        self.job_key(JobKey::from_value(&named, typed), named)
    }

    /// `job_key_file`: the key read at once (a relative path is relative
    /// to the settings file).
    pub(crate) fn job_key_file(&mut self, e: &Entry) -> Result<(), String> {
        let named = match &e.origin {
            Origin::File { .. } => format!("{}: job_key_file", e.origin),
            other => other.to_string(),
        };
        let key = JobKey::from_file(&named, &e.path());
        self.job_key(key, named)
    }

    pub(crate) fn hot_keys(&mut self, e: &Entry) -> Result<(), String> {
        if e.value.is_empty() {
            return Err(e.bad("expected a file path"));
        }
        self.hot_keys_file = Some(e.path());
        Ok(())
    }

    pub(crate) fn server_addr(&mut self, e: &Entry) -> Result<(), String> {
        let expected = "expected INDEX=HOST:PORT";
        let (index, addr) = e.value.split_once('=').ok_or_else(|| e.bad(expected))?;
        let index: u16 = index.trim().parse().map_err(|_| e.bad(expected))?;
        let addr = address(e, addr.trim())?;
        self.server_addrs
            .insert(index, (addr, e.origin.to_string()));
        Ok(())
    }
}
