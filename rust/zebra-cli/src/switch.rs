//! `zebra switch`: the software switch on a UDP socket until SIGINT or
//! SIGTERM — a kernel socket, or one of Zebra's user-level stack (smoltcp over
//! a DPDK port) with `ZEBRA_NET`. Its flags are the hot-path settings of
//! the one settings table [`zebra_config::SETTINGS`], so the file format, the
//! flags and `--help` cannot disagree. With `--plan` it runs nothing and prints the
//! settings it would run with as JSON ([`plan`]).

mod admit;
mod plan;

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;
use zebra_config::SETTINGS;
use zebra_hotpath::{Build, HotpathConfig, Settings, StartError, SwitchNode};
use zebra_net::{Stack, StackConfig};

use crate::failure::{finish, Failure};
use crate::metrics::{self, MetricsServer};
use plan::Plan;

/// Shown after the flags by `zebra switch --help`.
pub const FORMATS: &str = "\
Configuration file (--config FILE): the same settings as the flags, in TOML: one
`key = value` per line, text in double quotes (switch = \"10.0.0.250:9950\"), numbers bare
(round_timeout_ms = 20), server_addr an array (server_addr = [\"0=10.0.0.1:9951\"]). The key
is the flag's name with `_` for `-`, except --listen, whose key is `switch`. `#` starts a
comment; a relative hot_keys path is relative to the file. Flags override the file. Workers
and servers read the same file, so every party agrees on the protocol settings.

Hot-keys file (--hot-keys FILE): PS-lite keys, hottest first, one per line, as decimal u64,
optionally followed by the key's number of values (default 1); `a-b` stands for the keys
a..=b in ascending order; `#` starts a comment. Each key's server follows PS-lite's default
key ranges for --servers, and each server owning a hot key is its own job (--job + server
rank) whose hot indices are its keys' values in file order (register index mod R, slot
index div R).

Network: with ZEBRA_NET=dpdk (ZEBRA_DPDK_ARGS, ZEBRA_IP) or raw:IFACE the switch listens on
Zebra's user-level stack (smoltcp) instead of a kernel socket; --listen then names the stack's
address (or 0.0.0.0). At exit the stack is shut down and a DPDK port's mbuf count checked.

Plan (--plan): instead of running, print the settings as checked (the same file, flags,
variables and checks; exit 2 and the same message for bad ones) as one JSON document on
standard output: the switch's address, the protocol configuration (durations in
microseconds), the jobs (with each job's token when a job key is given, never the key),
the pinned servers with their job and index, loss, settle and register timeouts. The P4
control plane (p4/controller) loads its jobs from it.

Admit (--admit): instead of running, read one JSON document on standard input, the jobs a
switch of these settings holds (id, workers, hot_keys, and base: the first slot of the job's
region) and a REGISTER asking to be admitted (job, server, workers, capacity, token), and print
what this switch would grant: capacity (0: refused, with the reason), and a new job's base and
settings. The P4 control plane admits jobs by it.

Signals: SIGUSR1 prints the statistics to standard output; SIGINT or SIGTERM stops the switch
and prints them. Logs go to standard error, filtered by ZEBRA_LOG (or RUST_LOG; default info).";

/// The flags of `zebra switch`, as given (checked by [`Settings::build`]).
#[derive(Debug, Clone, Default)]
pub struct SwitchArgs {
    config: Option<PathBuf>,
    metrics: Option<String>,
    /// `--plan`: print the checked settings as JSON, run nothing.
    plan: bool,
    /// `--admit`: decide one admission read as JSON, run nothing.
    admit: bool,
    /// Settings given: key, values, and the variable they came from if not
    /// a flag (`ZEBRA_HOT_LOSS`).
    given: Vec<(&'static str, Vec<String>, Option<&'static str>)>,
}

impl FromArgMatches for SwitchArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let given = SETTINGS
            .iter()
            .filter_map(|k| {
                let key = k.key?;
                let values = m.get_many::<String>(key)?;
                let from_env = k
                    .env
                    .filter(|_| m.value_source(key) == Some(ValueSource::EnvVariable));
                Some((key, values.cloned().collect(), from_env))
            })
            .collect();
        Ok(SwitchArgs {
            config: m.get_one::<PathBuf>("config").cloned(),
            metrics: m.get_one::<String>("metrics").cloned(),
            plan: m.get_flag("plan"),
            admit: m.get_flag("admit"),
            given,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = SwitchArgs::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for SwitchArgs {
    fn augment_args(cmd: Command) -> Command {
        let cmd = cmd.arg(
            Arg::new("config")
                .long("config")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help(
                    "hot-path configuration file (TOML `key = value` lines, below); flags override it",
                ),
        )
        .arg(
            Arg::new("metrics")
                .long("metrics")
                .value_name("HOST:PORT")
                .help(
                    "serve the statistics as Prometheus metrics at http://HOST:PORT/metrics                      (counters only, no authentication: bind a private address) [default: off]",
                ),
        )
        .arg(
            Arg::new("plan")
                .long("plan")
                .action(ArgAction::SetTrue)
                .conflicts_with("metrics")
                .help(
                    "run nothing: print the checked settings as one JSON document (below, Plan); \
                     exit 2 for bad settings as without it",
                ),
        )
        .arg(
            Arg::new("admit")
                .long("admit")
                .action(ArgAction::SetTrue)
                .conflicts_with_all(["metrics", "plan"])
                .help(
                    "run nothing: read the jobs a switch holds and a REGISTER asking to be \
                     admitted as JSON on standard input, print the admission as JSON (below, Admit)",
                ),
        );
        let flags = SETTINGS.iter().filter_map(|k| Some((k, k.key?, k.flag?)));
        flags.fold(cmd, |cmd, (k, key, flag)| {
            let mut arg = Arg::new(key)
                .long(flag)
                .value_name(k.value)
                .help(if k.default.starts_with('(') {
                    format!("{} {}", k.help, k.default)
                } else {
                    format!("{} [default: {}]", k.help, k.default)
                })
                .action(if k.repeat {
                    ArgAction::Append
                } else {
                    ArgAction::Set
                });
            if let Some(var) = k.env.filter(|_| k.switch_env) {
                arg = arg.env(var);
            }
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        SwitchArgs::augment_args(cmd)
    }
}

fn init_logging() {
    let filter = std::env::var("ZEBRA_LOG")
        .ok()
        .filter(|f| !f.trim().is_empty())
        .or_else(|| std::env::var("RUST_LOG").ok())
        .filter(|f| !f.trim().is_empty())
        .unwrap_or_else(|| "info".into());
    env_logger::Builder::new()
        .parse_filters(&filter)
        .format_timestamp_millis()
        .init();
}

fn settings(args: &SwitchArgs) -> Result<HotpathConfig, String> {
    let mut s = match &args.config {
        Some(path) => Settings::load(path).map_err(|e| e.to_string())?,
        None => Settings::new(),
    };
    // The variables `zebra switch` reads with no flag (ZEBRA_JOB_KEY: the
    // key itself, never a flag, as a command line is visible to every
    // user; docs/SECURITY.md), then the flags and the variables clap took
    // for them.
    for k in SETTINGS.iter().filter(|k| k.switch_env && k.flag.is_none()) {
        let Some(var) = k.env else { continue };
        if let Some(typed) = std::env::var_os(var) {
            s.set_from_env(var, &typed.to_string_lossy())
                .map_err(|e| e.to_string())?;
        }
    }
    for (key, values, from_env) in &args.given {
        for v in values {
            match from_env {
                Some(var) => s.set_from_env(var, v),
                None => s.set(key, v),
            }
            .map_err(|e| e.to_string())?;
        }
    }
    let config = s.build().map_err(|e| e.to_string())?;
    if let Some(file) = &config.no_keys {
        return Err(format!(
            "invalid hot-path configuration:\n  - hot keys: {file} lists no key (zebra profile \
             found nothing that aggregation saves; its comments say why): nothing to aggregate. \
             Start the switch with --listen alone to admit jobs as they come, or give another file"
        ));
    }
    Ok(config)
}

fn banner(config: &HotpathConfig, node: &SwitchNode) -> String {
    let p = &config.proto;
    let geometry = format!(
        "R={} S={} W={}, {}-byte packets, round timeout {:?} until learned per job{}\n\
         zebra switch: SIGUSR1 prints statistics, SIGINT/SIGTERM stops",
        p.registers,
        p.slots,
        p.copies,
        p.packet_size,
        p.round_timeout,
        if config.loss.is_some() {
            ", injecting faults"
        } else {
            ""
        }
    );
    let Some(j) = p.jobs.first() else {
        return format!(
            "zebra switch: listening on {} for any job: each is admitted when its servers \
             register (an equal share of the memory for each PS-lite server); {geometry}",
            node.local_addr(),
        );
    };
    let keys = match (&config.hot_keys, &config.hot_set) {
        (Some(hk), _) => format!("{} hot keys from the file", hk.len()),
        (None, Some(_)) => format!("{} hot values a job, keys found online", j.hot_keys),
        (None, None) => format!("hot ranks 0..{}", j.hot_keys),
    };
    let jobs = match &config.hot_set {
        Some(_) => format!(
            "jobs {} (one per PS-lite server with hot keys)",
            p.jobs
                .iter()
                .map(|j| j.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!("job {}", j.id),
    };
    let servers = config
        .hot_set
        .as_ref()
        .map_or(j.servers, |h| h.ranges().len() as u16);
    format!(
        "zebra switch: listening on {} for {jobs}: {} workers, {servers} servers, {keys}; {geometry}",
        node.local_addr(),
        j.workers,
    )
}

/// Runs `zebra switch` until SIGINT or SIGTERM.
pub fn run(args: SwitchArgs) -> ExitCode {
    init_logging();
    if args.plan {
        return finish("zebra switch", print_plan(&args));
    }
    if args.admit {
        return finish("zebra switch", print_admission(&args));
    }
    finish("zebra switch", serve(&args))
}

/// `zebra switch --plan`: the settings checked as [`serve`] checks them,
/// printed as JSON instead of run. An address to listen on is not required:
/// whoever reads the plan decides whether it needs one.
fn print_plan(args: &SwitchArgs) -> Result<(), Failure> {
    let config = settings(args).map_err(Failure::usage)?;
    let json = serde_json::to_string_pretty(&Plan::of(&config))
        .map_err(|e| Failure::runtime(format!("--plan: {e}")))?;
    print_out("--plan", &json)
}

/// `zebra switch --admit`: the admission of the REGISTER on standard input
/// by a switch of these settings holding the jobs given there ([`admit`]).
fn print_admission(args: &SwitchArgs) -> Result<(), Failure> {
    let config = settings(args).map_err(Failure::usage)?;
    let query: admit::AdmitQuery = serde_json::from_reader(std::io::stdin().lock())
        .map_err(|e| Failure::usage(format!("--admit: standard input: {e}")))?;
    let json = serde_json::to_string(&admit::decide(&config, &query))
        .map_err(|e| Failure::runtime(format!("--admit: {e}")))?;
    print_out("--admit", &json)
}

/// `text` and a newline on standard output. A reader that stopped reading
/// (`zebra switch --plan | head`) is no error: what it wanted it has.
fn print_out(what: &str, text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::runtime(format!("{what}: standard output: {e}")))
        }
        _ => Ok(()),
    }
}

/// The address `--metrics` names, if given.
fn metrics_addr(args: &SwitchArgs) -> Result<Option<SocketAddr>, Failure> {
    let Some(typed) = &args.metrics else {
        return Ok(None);
    };
    let bad = |why: String| Failure::usage(format!("--metrics {typed:?}: {why}"));
    let mut addrs = typed
        .to_socket_addrs()
        .map_err(|e| bad(format!("expected HOST:PORT ({e})")))?;
    addrs
        .next()
        .map(Some)
        .ok_or_else(|| bad("the name has no address".into()))
}

fn serve(args: &SwitchArgs) -> Result<(), Failure> {
    let config = settings(args).map_err(Failure::usage)?;
    let Some(listen) = config.switch else {
        return Err(Failure::usage(
            "no address to listen on: give --listen HOST:PORT (or `switch = HOST:PORT` in the file)",
        ));
    };
    let metrics_at = metrics_addr(args)?;
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGUSR1])
        .map_err(|e| Failure::runtime(format!("cannot install signal handlers: {e}")))?;
    let stack = user_stack()?;
    let mut node_config = config.switch_node_config(listen);
    node_config.stack = stack.clone();
    let node = SwitchNode::start(node_config).map_err(|e| match e {
        StartError::Io { .. } => Failure::runtime(e),
        StartError::Config(_) | StartError::UnknownServer { .. } => Failure::usage(e),
    })?;
    let node = Arc::new(node);
    let metrics = match metrics_at {
        Some(addr) => {
            let scraped = Arc::clone(&node);
            let server = MetricsServer::start(addr, move || metrics::render(scraped.stats()))
                .map_err(|e| Failure::runtime(format!("--metrics: cannot serve on {addr}: {e}")))?;
            Some(server)
        }
        None => None,
    };
    println!("{}", banner(&config, &node));
    if let Some(m) = &metrics {
        println!("zebra switch: metrics at http://{}/metrics", m.local_addr());
    }
    for signal in signals.forever() {
        if signal == SIGUSR1 {
            println!("{}", node.stats());
        } else {
            break;
        }
    }
    if let Some(m) = metrics {
        m.stop();
    }
    // The metrics thread, joined, held the only other reference.
    match Arc::try_unwrap(node) {
        Ok(node) => println!("{}", node.shutdown()),
        Err(node) => println!("{}", node.stats()),
    }
    match stack.map(|s| (s.stats(), s.shutdown())) {
        Some((stats, Err(e))) => Err(Failure::runtime(format!("user-level stack: {e} ({stats})"))),
        Some((stats, Ok(()))) => {
            println!("user-level stack closed: {stats}");
            Ok(())
        }
        None => Ok(()),
    }
}

/// The user-level stack `ZEBRA_NET` asks for, started (`None`: kernel
/// sockets): a bad variable is a usage failure, a stack that does not start
/// a runtime one.
fn user_stack() -> Result<Option<Arc<Stack>>, Failure> {
    let cfg = zebra_config::Config::from_env().map_err(Failure::usage)?;
    let Some(net) =
        StackConfig::from_zebra(&cfg).map_err(|e| Failure::usage(format!("ZEBRA_NET: {e}")))?
    else {
        return Ok(None);
    };
    let stack = Stack::start(net).map_err(|e| Failure::runtime(format!("ZEBRA_NET: {e}")))?;
    log::info!("zebra switch: on the user-level stack at {}", stack.ip());
    Ok(Some(Arc::new(stack)))
}
