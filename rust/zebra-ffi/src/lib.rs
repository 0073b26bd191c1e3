//! The bridge the C++ shim (`cpp-shim/`) calls. The shim owns the C ABI and the
//! forwarding to the real libzmq; Rust owns the decisions: configuration, mode,
//! logging, and (with `ZEBRA_ENABLE=1`) the engine.
//!
//! The only `unsafe` is what `cxx` generates for the bridge module: its invariant (the
//! C++ and Rust signatures agree) is checked by cxx's generated static assertions.

use std::sync::OnceLock;

use zebra_config::Config;

#[allow(unsafe_code)]
#[cxx::bridge(namespace = "zebra::ffi")]
mod ffi {
    /// How this process handles zmq calls, decided once.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        /// Forward every call to the real libzmq.
        Off,
        /// Zebra's own engine carries the calls.
        On,
        /// The configuration is invalid: refuse to create contexts (EINVAL).
        BadConfig,
    }

    /// What the shim needs to know at first use.
    #[derive(Debug)]
    struct Startup {
        mode: Mode,
        /// Why a context will be refused (already logged), for `zmq_strerror`-style reporting.
        reason: String,
        /// `ZEBRA_REAL_LIBZMQ`, or empty.
        real_libzmq: String,
        /// Count calls per function (ZEBRA_STATS or ZEBRA_METRICS is set).
        count_calls: bool,
    }

    extern "Rust" {
        /// Reads and checks the configuration, sets up logging, decides the mode.
        /// Idempotent: later calls return the first decision.
        fn startup() -> Startup;
        /// Logs one line from the C++ side; `level` is 1 (error) … 5 (trace).
        fn log_line(level: u8, message: &str);
        /// With ZEBRA_STATS or ZEBRA_METRICS (starts its endpoint): remembers the library the shim forwards to and the names of
        /// the counted functions (space-separated, in the order of [`count_call`]'s
        /// indices), and with ZEBRA_STATS_INTERVAL starts the `zebra-stats` thread.
        fn stats_begin(real_libzmq: &str, found_by: &str, functions: &str);
        /// One call of the zmq function `function` (an index into `stats_begin`'s names).
        fn count_call(function: u16);
        /// At exit: stops the `zebra-stats` thread and writes the last statistics where
        /// ZEBRA_STATS says (no-op when unset).
        fn stats_at_exit();
        /// At exit: stops the process's user-level stack if `ZEBRA_NET` started one
        /// (network thread joined, DPDK port closed, mbuf leak check, EAL cleanup) and
        /// keeps its final counters for the statistics. No-op on the kernel's network.
        fn shutdown_network();
    }
}

pub use ffi::{Mode, Startup};

mod native;
mod process;
mod stats;

struct Decision {
    mode: Mode,
    reason: String,
    config: Option<Config>,
    hot: Option<zebra_runtime::Plan>,
}

/// The hot-path plan of this process (mode on with `ZEBRA_SWITCH`).
fn hot_plan() -> Option<&'static zebra_runtime::Plan> {
    decision().hot.as_ref()
}

fn decision() -> &'static Decision {
    static DECISION: OnceLock<Decision> = OnceLock::new();
    DECISION.get_or_init(|| {
        let parsed = Config::from_env();
        let filter = parsed
            .as_ref()
            .map(|c| c.log_filter.clone())
            .unwrap_or_else(|_| "warn".into());
        // A second logger (e.g. the host program is Rust too) is fine: keep theirs.
        let _ = env_logger::Builder::new()
            .parse_filters(&filter)
            .format_target(false)
            .format_timestamp_millis()
            .try_init();
        match parsed {
            Err(errors) => {
                let reason = format!("{errors}");
                log::error!("zebra: {reason}");
                Decision {
                    mode: Mode::BadConfig,
                    reason,
                    config: None,
                    hot: None,
                }
            }
            Ok(config) => {
                let job = zebra_runtime::JobEnv::from_env();
                let hot = match zebra_runtime::Plan::from_config(&config, &job) {
                    Ok(plan) => plan,
                    Err(problems) => {
                        let reason = zebra_runtime::hot_path_problems(&problems);
                        log::error!("zebra: {reason}");
                        return Decision {
                            mode: Mode::BadConfig,
                            reason,
                            config: Some(config),
                            hot: None,
                        };
                    }
                };
                let mode = if config.enable { Mode::On } else { Mode::Off };
                log::info!(
                    "zebra: mode {}",
                    if config.enable {
                        "on (Zebra's engine)"
                    } else {
                        "off (forwarding to the real libzmq)"
                    }
                );
                Decision {
                    mode,
                    reason: String::new(),
                    config: Some(config),
                    hot,
                }
            }
        }
    })
}

/// See the bridge declaration.
pub fn startup() -> Startup {
    let d = decision();
    let config = d.config.as_ref();
    Startup {
        mode: d.mode,
        reason: d.reason.clone(),
        real_libzmq: config
            .and_then(|c| c.real_libzmq.as_ref())
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        count_calls: config.is_some_and(|c| c.stats.is_some() || c.metrics.is_some()),
    }
}

/// See the bridge declaration.
pub fn log_line(level: u8, message: &str) {
    let level = match level {
        0 | 1 => log::Level::Error,
        2 => log::Level::Warn,
        3 => log::Level::Info,
        4 => log::Level::Debug,
        _ => log::Level::Trace,
    };
    log::log!(level, "zebra: {message}");
}

/// See the bridge declaration.
pub fn stats_begin(real_libzmq: &str, found_by: &str, functions: &str) {
    let d = decision();
    let Some(config) = d.config.as_ref() else {
        return;
    };
    let process = stats::Process {
        pid: std::process::id(),
        mode: match d.mode {
            Mode::Off => "off",
            Mode::On => "on",
            _ => "refused (bad configuration)",
        },
        real_libzmq: real_libzmq.to_string(),
        found_by: found_by.to_string(),
        functions: functions.split_whitespace().map(String::from).collect(),
    };
    stats::begin(
        process,
        config.stats.as_ref(),
        config.stats_interval,
        config.metrics.as_deref(),
    );
}

/// See the bridge declaration.
pub fn count_call(function: u16) {
    stats::count_call(function);
}

/// See the bridge declaration.
pub fn stats_at_exit() {
    stats::stop_metrics();
    let Some(sink) = decision().config.as_ref().and_then(|c| c.stats.as_ref()) else {
        return;
    };
    stats::at_exit(sink, NET_REPORT.get().map_or("", String::as_str));
}

/// The running user-level stack's counters, for a periodic report (None on the kernel's
/// network, and once the stack has been shut down).
fn net_stats() -> Option<String> {
    if NET_REPORT.get().is_some() {
        return None;
    }
    let stack = zebra_engine::current_stack().filter(|s| s.in_owner_process())?;
    Some(stack.stats().to_string())
}

/// The user-level stack's last words, for the statistics (set by [`shutdown_network`]).
static NET_REPORT: OnceLock<String> = OnceLock::new();

/// See the bridge declaration.
pub fn shutdown_network() {
    // A child forked after the stack started has a copy of it but not its thread, port or
    // EAL (and maybe a lock held at the fork): leave it to the parent.
    let Some(stack) = zebra_engine::current_stack().filter(|s| s.in_owner_process()) else {
        return;
    };
    let stats = stack.stats();
    let line = match stack.shutdown() {
        Ok(()) => {
            log::info!("zebra: user-level stack closed: {stats}");
            format!("net ok {stats}\n")
        }
        Err(e) => {
            log::error!("zebra: user-level stack: {e} ({stats})");
            format!("net error {e}; {stats}\n")
        }
    };
    let _ = NET_REPORT.set(line);
}

#[cfg(test)]
mod tests {
    use super::stats::write_whole;

    #[test]
    fn a_report_replaces_the_old_one_whole_and_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("zebra-ffi-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("1234");
        std::fs::write(&path, "an older, longer report\n".repeat(10)).unwrap();
        write_whole(&path, "pid 1234\nmode on\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "pid 1234\nmode on\n"
        );
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("1234")]);
        assert!(write_whole(&dir.join("missing-dir/1234"), "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
