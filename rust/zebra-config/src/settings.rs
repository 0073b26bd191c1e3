//! Every setting of Zebra in one table, [`SETTINGS`]: its environment
//! variable, its key in the hot-path settings file, its `zebra switch` flag
//! (each if it has one), its default, what it does, and its own parser.
//!
//! A process's own settings (`ZEBRA_ENABLE`, `ZEBRA_LOG`, ...) are read
//! from the environment alone, by [`Config::from_vars`](crate::Config::from_vars)
//! at the process's first zmq call. A hot-path setting (`switch`,
//! `workers`, `slots`, ...) has one parser whatever gives it: the settings
//! file (`ZEBRA_HOT_CONFIG`, `zebra switch --config`), a flag, or the
//! variable that stands for it (`ZEBRA_SWITCH`, `ZEBRA_HOT_KEYS`,
//! `ZEBRA_HOT_LOSS`, `ZEBRA_JOB_KEY(_FILE)`, PS-lite's `DMLC_NUM_WORKER` and
//! `DMLC_NUM_SERVER`), see [`Settings`](crate::entries::Settings). Where one is
//! given several ways, flags win over variables, variables over the file,
//! the file over the default. `zebra config --list` prints the table, and
//! tests hold `docs/CONFIG.md` and `docs/HOTPATH.md` to it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use zebra_proto::config::MAX_UPDATE_WINDOW;
use zebra_proto::{consts, Packing};

use crate::entries::{
    boolean, drift, int, layout, millis, number, path, unit, Entry, HotValues, SHARE,
};
use crate::{
    host_port, parse_bool, parse_interval, Bad, Delivery, HotLoss, Ipv4Cidr, Network, Pull,
    Reading, StatsSink,
};

/// One setting.
#[derive(Clone, Copy)]
pub struct Setting {
    /// The environment variable that gives it, if any.
    pub env: Option<&'static str>,
    /// Its key in the hot-path settings file, if any.
    pub key: Option<&'static str>,
    /// Its long flag of `zebra switch` (without `--`), if any.
    pub flag: Option<&'static str>,
    /// Placeholder for the value in help texts.
    pub value: &'static str,
    /// Default, as text (in parentheses: words, not a value).
    pub default: &'static str,
    /// What it does.
    pub help: &'static str,
    /// Whether it may be given more than once (values accumulate).
    pub repeat: bool,
    /// `zebra switch` reads `env` too; else only a PS-lite process does
    /// (where `ZEBRA_SWITCH` or `DMLC_NUM_WORKER` stand for the key).
    pub switch_env: bool,
    /// A process setting's parser: checks the variable's value as typed
    /// and sets it in the process's configuration.
    pub(crate) read: Option<Read>,
    /// A hot-path setting's parser: checks one value, named as the user
    /// gave it ([`Entry::bad`]), and sets it.
    pub(crate) apply: Option<Apply>,
}

/// A process setting's parser.
pub(crate) type Read = fn(&mut Reading, &str) -> Result<(), Bad>;

/// A hot-path setting's parser.
pub(crate) type Apply = fn(&mut HotValues, &Entry) -> Result<(), String>;

impl Setting {
    /// How the setting is called: its key, else its variable.
    pub fn name(&self) -> &'static str {
        self.key.or(self.env).unwrap_or("")
    }

    /// Whether it is a hot-path setting (given by the file, a flag or a
    /// variable standing for one), rather than a process's own.
    pub fn is_hot_path(&self) -> bool {
        self.apply.is_some()
    }
}

impl fmt::Debug for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Setting")
            .field("env", &self.env)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// The base of every row: nothing set.
const NONE: Setting = Setting {
    env: None,
    key: None,
    flag: None,
    value: "",
    default: "",
    help: "",
    repeat: false,
    switch_env: false,
    read: None,
    apply: None,
};

/// A hot-path setting with a file key and a flag.
const fn knob(
    key: &'static str,
    flag: &'static str,
    value: &'static str,
    default: &'static str,
    help: &'static str,
    apply: Apply,
) -> Setting {
    Setting {
        key: Some(key),
        flag: Some(flag),
        value,
        default,
        help,
        apply: Some(apply),
        ..NONE
    }
}

/// Sets a single-valued setting.
fn set<T>(field: &mut Option<T>, value: T) -> Result<(), String> {
    *field = Some(value);
    Ok(())
}

/// A path, `None` when empty.
fn path_or_none(value: &str) -> Option<PathBuf> {
    (!value.trim().is_empty()).then(|| PathBuf::from(value))
}

/// Every setting: the process's own, then the hot path's in the order
/// `zebra switch --help` and `docs/HOTPATH.md` list them.
pub const SETTINGS: &[Setting] = &[
    Setting {
        env: Some("ZEBRA_ENABLE"),
        default: "0",
        help: "1: Zebra's own engine carries the zmq calls; 0 or unset: every call is forwarded to the real libzmq",
        read: Some(|r, v| {
            r.cfg.enable = parse_bool(v)?;
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_LOG"),
        default: "warn",
        help: "log filter (env_logger syntax, e.g. `info` or `zebra_ffi=debug`); RUST_LOG is read when this is unset",
        read: Some(|r, v| {
            r.zebra_log = Some(v.to_string());
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_REAL_LIBZMQ"),
        default: "(found at run time)",
        help: "absolute path of the real libzmq to forward to when no other definition is loaded in the process",
        read: Some(|r, v| {
            if !v.starts_with('/') {
                return Err(Bad::Expected("expected an absolute path to a libzmq shared object"));
            }
            r.cfg.real_libzmq = Some(PathBuf::from(v));
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_STATS"),
        default: "(off)",
        help: "`stderr` or a file path: at exit, write the mode, the library forwarded to and per-function call counts (a file path may contain `%p`, replaced by the process id)",
        read: Some(|r, v| {
            r.cfg.stats = match v {
                "" => None,
                "stderr" => Some(StatsSink::Stderr),
                path => Some(StatsSink::File(r.with_pid(path).into())),
            };
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_STATS_INTERVAL"),
        default: "(off: at exit only)",
        help: "with ZEBRA_STATS: every SECONDS (e.g. `1` or `0.5`) while the process runs, write its statistics to the ZEBRA_STATS destination as one JSON object per line (JSON Lines), and a last one at exit, in place of the at-exit `key value` report; `0`: off",
        read: Some(|r, v| {
            r.cfg.stats_interval = parse_interval(v).map_err(Bad::Expected)?;
            r.interval_typed = v.to_string();
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_METRICS"),
        default: "(off)",
        help: "HOST:PORT: serve this process's counters (zmq calls, the hot path's) in Prometheus's text format at http://HOST:PORT/metrics while it runs (`127.0.0.1:0`: a free port, logged); counters only, no authentication: bind to loopback",
        read: Some(|r, v| {
            r.cfg.metrics = host_port(v).map_err(|_| {
                Bad::Expected("expected HOST:PORT to serve the metrics on (e.g. 127.0.0.1:9960, or port 0 for a free one)")
            })?;
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_HOT"),
        default: "auto",
        help: "`auto`: `file` when hot keys are given (ZEBRA_HOT_KEYS, or hot_keys or online_capacity in ZEBRA_HOT_CONFIG), else `online` with each server's job an equal share of the switch's memory, admitted when it registers (zero configuration); `file`: the hot keys of ZEBRA_HOT_KEYS stay for the whole job; `online` or `online:T`: each server re-ranks its keys over every worker's first T pushes (default: online_rounds of ZEBRA_HOT_CONFIG) and, if the ranking moved, installs new hot keys in every worker at one round boundary; ZEBRA_HOT_KEYS is then the starting set and sizes the switch memory (without it, online_capacity of ZEBRA_HOT_CONFIG does); `watch` or `watch:T`: the keys of ZEBRA_HOT_KEYS, installed after every worker's first T pushes went whole (the pace without aggregation), and stepped aside from by the online rules when they cost (slower pushes, flushed rounds, a silent switch), tried again later; `watch:0`: no probe, the file's keys from the first push, stepped aside from on flushed rounds or a silent switch",
        read: Some(|r, v| {
            r.cfg.hot_mode = v.parse().map_err(Bad::Expected)?;
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_HOT_CONFIG"),
        default: "(none: protocol defaults)",
        help: "the hot-path settings file `zebra switch --config` reads (TOML: `key = value` lines, text in double quotes): registers, slots, timeouts, packet size; every party must use the same one",
        read: Some(|r, v| {
            r.cfg.hot_config = path_or_none(v);
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_DELIVERY"),
        default: "per-worker",
        help: "how a server sees a round's hot sums: `per-worker` (each worker's push request, one carrying the sum, the others zeros: right for every server) or `merged` (one request carries the sum: only for servers that do not count pushes)",
        read: Some(|r, v| {
            r.cfg.delivery = match v.trim() {
                "" | "per-worker" => Delivery::PerWorker,
                "merged" => Delivery::Merged,
                _ => return Err(Bad::Expected("expected per-worker or merged")),
            };
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_PULL"),
        default: "switch",
        help: "the pull half with a switch (docs/PULL.md): `switch`: after each round a server sends the round's updated hot values once through the switch, which copies them to every worker, and a worker answers pulls of hot keys from them when they are what the server would return (its first answers checked against the server's); `server`: every pull goes to its server (for servers that change values outside pushes)",
        read: Some(|r, v| {
            r.cfg.pull = match v.trim() {
                "" | "switch" => Pull::Switch,
                "server" => Pull::Server,
                _ => return Err(Bad::Expected("expected switch or server")),
            };
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_SYNC"),
        default: "exact",
        help: "when a worker's push completes with a switch (docs/OSP.md): `exact`: when the server has applied all of it (PS-lite's own); `two-stage`: once its hot part is settled at the switch, the cold part still on its way (a later pull is still served after the push); `two-stage:S`: the same, and a pull may be served with up to S of its worker's pushes to that server not yet applied",
        read: Some(|r, v| {
            r.cfg.sync = v.parse().map_err(Bad::Expected)?;
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_SYNC_RANK"),
        default: "hot",
        help: "which keys the switch sums, the part of each push that gates the worker's next step in two-stage mode, when a server's census chooses them (online hot keys, zero configuration; docs/OSP.md): `hot`: by the copies aggregation saves; `pgp`: by |gradient x parameter| (OSP's PGP), summed per value over every worker's counted pushes, the parameters read from the server app's answers to pulls meanwhile (keys never weighed, and ties, by copies saved); a hot-keys file without a census is not re-ranked",
        read: Some(|r, v| {
            r.cfg.sync_rank = v.parse().map_err(Bad::Expected)?;
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_TRACE"),
        default: "(off)",
        help: "with ZEBRA_ENABLE=1, each worker records the keys of every push it sends to this file (`%p`: process id, `%r`: worker rank), the input of `zebra profile` (format: rust/zebra-hotkeys/TRACE.md)",
        read: Some(|r, v| {
            r.cfg.trace = (!v.trim().is_empty()).then(|| r.with_pid(v));
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_TRACE_MAX_MB"),
        default: "256",
        help: "size bound of each ZEBRA_TRACE file in MiB; pushes after it are not recorded (logged once)",
        read: Some(|r, v| match v.trim().parse::<u64>() {
            Ok(mb) if (1..=1 << 20).contains(&mb) => {
                r.cfg.trace_max_bytes = mb << 20;
                Ok(())
            }
            _ => Err(Bad::Expected("expected MiB, 1..=1048576")),
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_PSLITE_FLAVOR"),
        default: "auto",
        help: "PS-lite message format: `auto` (detected from the bytes), `byteps` (BytePS's binary meta) or `protobuf` (dmlc/ps-lite and MXNet)",
        read: Some(|r, v| {
            r.cfg.flavor = v.parse().map_err(|_| Bad::Expected("expected auto, byteps or protobuf"))?;
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_NET"),
        default: "kernel",
        help: "the network under the engine's tcp:// and the hot path: `kernel` (kernel sockets), `dpdk` (the user-level stack, smoltcp over a DPDK port; needs ZEBRA_DPDK_ARGS and ZEBRA_IP) or `raw:IFACE` (smoltcp over an AF_PACKET raw socket on IFACE; needs ZEBRA_IP and root)",
        read: Some(|r, v| {
            r.cfg.net = match v.trim() {
                "" | "kernel" => Network::Kernel,
                "dpdk" => Network::Dpdk,
                v if v.starts_with("raw:") && v.len() > 4 && v.len() < 4 + 16 => Network::Raw(v[4..].to_string()),
                _ => return Err(Bad::Expected("expected kernel, dpdk or raw:IFACE")),
            };
            r.net_typed = v.to_string();
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_DPDK_ARGS"),
        default: "(none)",
        help: "with ZEBRA_NET=dpdk: the DPDK EAL arguments, whitespace-separated (e.g. `--no-huge -m 256 --no-pci --no-shconf --file-prefix=w0 -l 0 --vdev=net_af_packet0,iface=veth0,framecnt=8192,blocksz=65536`); the first port found is used",
        read: Some(|r, v| {
            r.cfg.dpdk_args = Some(v.trim().to_string()).filter(|a| !a.is_empty());
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_IP"),
        default: "(none)",
        help: "with ZEBRA_NET=dpdk or raw: the user-level stack's own IPv4 address and prefix, `A.B.C.D/N` (it answers ARP for it; the kernel must not use it)",
        read: Some(|r, v| {
            r.cfg.net_ip = match v.trim() {
                "" => None,
                _ => Some(v.parse::<Ipv4Cidr>().map_err(Bad::Expected)?),
            };
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_GATEWAY"),
        default: "(none: on-link peers only)",
        help: "with ZEBRA_NET=dpdk or raw: the IPv4 default gateway of the user-level stack",
        read: Some(|r, v| {
            r.cfg.net_gateway = match v.trim() {
                "" => None,
                gw => Some(gw.parse().map_err(|_| Bad::Expected("expected an IPv4 address"))?),
            };
            Ok(())
        }),
        ..NONE
    },
    Setting {
        env: Some("ZEBRA_SWITCH"),
        ..knob("switch", "listen", "HOST:PORT", "(none: no in-network aggregation; zebra switch requires it)", "HOST:PORT of the aggregating switch (`zebra switch`, which binds it, 0.0.0.0 for all interfaces; or a Tofino running p4/): workers send the hot part of each push there and servers register there; ZEBRA_SWITCH alone, with ZEBRA_ENABLE=1, is the whole set-up (zero configuration: online hot keys in jobs the switch admits)", HotValues::switch)
    },
    knob("job", "job", "ID", "1", "job id carried in every packet; with a hot-keys file, PS-lite server s is job ID + s", |b, e| set(&mut b.job, int(e, 0, u16::MAX)?)),
    Setting {
        env: Some("DMLC_NUM_WORKER"),
        ..knob("workers", "workers", "N", "(required)", "workers of the job (ranks 0..N), 1..=64; in a PS-lite process, PS-lite's DMLC_NUM_WORKER", |b, e| set(&mut b.workers, int(e, 1, 64)?))
    },
    Setting {
        env: Some("DMLC_NUM_SERVER"),
        ..knob("servers", "servers", "S", "1", "servers of the job (PS-lite server ranks 0..S); in a PS-lite process, PS-lite's DMLC_NUM_SERVER", |b, e| set(&mut b.servers, int(e, 1, u16::MAX)?))
    },
    Setting {
        env: Some("ZEBRA_HOT_KEYS"),
        ..knob("hot_keys", "hot-keys", "FILE", "(none)", "hot-keys file: PS-lite keys hottest first (line order = hot rank), `KEY [VALUES]` or `A-B [VALUES]` per line; owners follow PS-lite's default key ranges, each owning server is its own job; the switch, every worker and every server read the same file", HotValues::hot_keys)
    },
    knob("hot_key_count", "hot-key-count", "K", "(none)", "instead of a file: hot ranks 0..K, split into S contiguous ranges by owner", |b, e| set(&mut b.hot_key_count, int(e, 1, u32::MAX)?)),
    knob("registers", "registers", "R", "32", "register arrays: hot rank r lives in register r mod R", |b, e| {
        b.config().registers = int(e, 1, consts::MAX_REGISTERS as u16)?;
        Ok(())
    }),
    knob("slots", "slots", "K", "1024", "slots per register array and copy, shared by the jobs (ceil(hot keys / R) needed)", |b, e| {
        b.config().slots = int(e, 1, consts::MAX_REGISTER_ENTRIES as u32)?;
        Ok(())
    }),
    knob("copies", "copies", "W", "2", "copies of the slot memory: rounds of one job open at once, 1..=4", |b, e| {
        b.config().copies = int(e, 1, consts::MAX_COPIES as u8)?;
        Ok(())
    }),
    knob("packet_size", "packet-size", "BYTES", "192", "UDP payload of every hot-path packet, 64..=1472", |b, e| {
        b.config().packet_size = int(e, consts::MIN_PACKET_SIZE, consts::MAX_PACKET_SIZE)?;
        Ok(())
    }),
    knob("max_seqs", "max-seqs", "N", "4096", "most packets one worker sends for one round; the rest falls back", |b, e| {
        b.config().max_seqs = int(e, 1, u16::MAX)?;
        Ok(())
    }),
    knob("packing", "packing", "strict|fill|sequential", "strict", "how workers pack pairs: Algorithm 1 without conflicts, Algorithm 1 with full packets, or rank order", |b, e| {
        b.config().packing = match e.value.as_str() {
            "strict" => Packing::Strict,
            "fill" => Packing::Fill,
            "sequential" => Packing::Sequential,
            _ => return Err(e.bad("expected strict, fill or sequential")),
        };
        Ok(())
    }),
    knob("round_timeout_ms", "round-timeout-ms", "MS", "50", "a round still open this long after its first packet is flushed, until the switch has measured the job's rounds: then srtt + 4 rttvar of their lengths, never below MS, doubled after each flush, at most 10 s and half of uncertain_timeout_ms", |b, e| {
        b.config().round_timeout = millis(e)?;
        Ok(())
    }),
    knob("aggregate_rto_ms", "aggregate-rto-ms", "MS", "2", "switch: first resend timeout of an aggregate part, until round trips to the server are measured (rto.rs)", |b, e| {
        b.config().aggregate_rto = millis(e)?;
        Ok(())
    }),
    knob("aggregate_max_retries", "aggregate-max-retries", "N", "50", "switch: resends before an aggregate part is given up (counted)", |b, e| {
        b.config().aggregate_max_retries = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    knob("worker_rto_ms", "worker-rto-ms", "MS", "2", "worker: first resend timeout of a hot packet, until round trips to the switch are measured (rto.rs)", |b, e| {
        b.config().worker_rto = millis(e)?;
        Ok(())
    }),
    knob("worker_max_retries", "worker-max-retries", "N", "10", "worker: resends before a packet's pairs go to the servers as uncertain fallback", |b, e| {
        b.config().worker_max_retries = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    knob("worker_max_in_flight", "worker-max-in-flight", "N", "256", "worker: hot packets in flight at once", |b, e| {
        b.config().worker_max_in_flight = int(e, 1, 1 << 20)?;
        Ok(())
    }),
    knob("worker_window", "worker-window", "true|false", "true", "worker: keep at most the congestion window of hot packets in flight (slow start, halved on a timeout; docs/HOTPATH.md, Congestion control); false: every packet up to worker_max_in_flight leaves at once (for measurements); the switch ignores it", |b, e| set(&mut b.worker_window, boolean(e)?)),
    knob("worker_retain_pairs", "worker-retain-pairs", "N", "1048576", "worker: hot pairs of settled rounds kept (8 bytes each, oldest rounds dropped first) until the server answers, so that what a switch held when it was killed is sent to the servers when it starts again; 0: none (a restart then costs those rounds' hot sums, reported by the servers)", |b, e| {
        b.config().worker_retain_pairs = int(e, 0, 1 << 30)?;
        Ok(())
    }),
    knob("max_round_ahead", "max-round-ahead", "ROUNDS", "1048576", "switch: a hot packet more than ROUNDS rounds past its job's newest round is refused (FALLBACK FarAhead, counted), not remembered (docs/SECURITY.md)", |b, e| {
        b.config().max_round_ahead = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    Setting {
        env: Some("ZEBRA_JOB_KEY_FILE"),
        switch_env: true,
        ..knob("job_key_file", "job-key-file", "FILE", "(none: the switch draws each job's token)", "the job's secret key, in a file nobody else may read (chmod 600): every party derives the job's token from it and the switch takes on only members that show it (docs/SECURITY.md); a relative path is relative to this file; ZEBRA_JOB_KEY gives the key itself", HotValues::job_key_file)
    },
    Setting {
        env: Some("ZEBRA_JOB_KEY"),
        default: "(none: the switch draws the job's token)",
        help: "the job's secret key, the same string in every worker, server and the switch: each derives the job's membership token from it (HMAC-SHA-256), shows it from its first packet, and the switch takes on only members that show it (docs/SECURITY.md); visible to anyone who can read this process's environment, so prefer ZEBRA_JOB_KEY_FILE; never a flag or a file's line",
        switch_env: true,
        apply: Some(HotValues::job_key_value),
        ..NONE
    },
    knob("uncertain_timeout_ms", "uncertain-timeout-ms", "MS", "5000", "server: how long uncertain fallback pairs wait for their round's aggregate (a switch learns round timeouts up to half of it)", |b, e| {
        b.config().uncertain_timeout = millis(e)?;
        Ok(())
    }),
    knob("server_history", "server-history", "ROUNDS", "4096", "server: reported rounds remembered", |b, e| {
        b.config().server_history = int(e, 1, u32::MAX)?;
        Ok(())
    }),
    knob("update_window", "update-window", "N", "8", "server and workers (the pull half, docs/PULL.md): a server keeps its updates of the last N seqs (older ones unacknowledged are given up); a worker that sees update n takes any still missing below n - N + 1 as a gap; 1..=1024", |b, e| {
        b.config().update_window = int(e, 1, MAX_UPDATE_WINDOW)?;
        Ok(())
    }),
    knob("register_wait_ms", "register-wait-ms", "MS", "2000", "server: a switch that has not acknowledged the server's REGISTER this long is taken as silent (not running, unreachable, or not taking the job's token): the server steps aside, its workers push whole, until the switch answers (needs online hot keys or the file's watcher; the switch ignores it)", |b, e| set(&mut b.register_wait, millis(e)?)),
    Setting {
        env: Some("ZEBRA_SWITCH_STANDBY"),
        ..knob("standby", "standby", "HOST:PORT", "(none: no failover)", "HOST:PORT of a standby switch (another `zebra switch`, or a second Tofino with the job installed): when the switch in use leaves a server's REGISTER unanswered for failover_ms, the server moves its job there and tells its workers from which round it serves (docs/RELIABILITY.md, A standby switch); every worker and server of the job names the same one; one address, not a list; the switch ignores it", HotValues::standby)
    },
    knob("failover_ms", "failover-ms", "MS", "3000", "server, with a standby: the switch in use is taken as dead after leaving the server's REGISTER (sent every second) unanswered this long, and the job moves to the other switch; at least 2000 (the switch ignores it)", |b, e| {
        let ms = millis(e)?;
        if ms < Duration::from_secs(2) {
            return Err(e.bad("expected milliseconds, at least 2000 (two REGISTER keep-alives)"));
        }
        set(&mut b.failover, ms)
    }),
    knob("settle_timeout_ms", "settle-timeout-ms", "MS", "30000", "server (PS-lite level): a push whose hot part is still unsettled this long is delivered with what arrived, logged and counted (a party died); the switch ignores it", |b, e| set(&mut b.settle_timeout, millis(e)?)),
    knob("number", "number", "f32|fixed:BITS", "f32", "value format: exact f32 sums, or i32 fixed point with BITS fraction bits (0..=30, the Tofino mode)", |b, e| set(&mut b.number, number(e)?)),
    knob("layout", "layout", "heat|random:SEED", "heat", "register layout: the paper's heat layout, or a seeded random permutation (baseline)", |b, e| set(&mut b.layout, layout(e)?)),
    knob("dense_ranks", "dense-ranks", "N", "0", "ranks 0..N travel as dense blocks (every worker sends every block)", |b, e| set(&mut b.dense_ranks, int(e, 0, u32::MAX)?)),
    knob("online_rounds", "online-rounds", "T", "10", "with ZEBRA_HOT=online: each server counts its keys over every worker's first T pushes to it, then decides", |b, e| set(&mut b.online_rounds, int(e, 1, u32::MAX)?)),
    knob("online_tau", "online-tau", "D", "0.05", "with ZEBRA_HOT=online: the counted ranking replaces a server's hot keys when its top-k Kendall tau distance to them is at least D (0..=1)", |b, e| set(&mut b.online_tau, unit(e, "expected a distance in 0..=1")?)),
    knob("online_max_drift", "online-max-drift", "ROUNDS", "inf", "with ZEBRA_HOT=online: a server steps aside (its workers' pushes go unchanged, without the switch) when their latest rounds were on average more than ROUNDS apart while it counted (asynchronous workers, uneven push counts, stragglers); inf (the default): never for this reason, the pace rule (online_min_pace) measures what aggregation costs instead", |b, e| set(&mut b.online_max_drift, drift(e)?)),
    knob("online_min_saving", "online-min-saving", "SHARE", "0.05", "with ZEBRA_HOT=online: a server steps aside when the keys it would choose save less than SHARE (0..=1) of the values its counted pushes carried (a key saves one copy per extra worker pushing it in the same round; none when each worker pushes its own keys)", |b, e| set(&mut b.online_min_saving, unit(e, SHARE)?)),
    knob("online_min_pace", "online-min-pace", "SHARE", "0.95", "with ZEBRA_HOT=online: after installing keys, a server steps aside when its workers push at less than SHARE (0..=1) of the pace they had while it counted, without aggregation: aggregation made them slower (judged over every stretch of max(T, 10) pushes of each worker)", |b, e| set(&mut b.online_min_pace, unit(e, SHARE)?)),
    knob("online_retry_ms", "online-retry-ms", "MS", "30000", "with ZEBRA_HOT=online: a server that stepped aside counts again this long after (every worker pushing whole, then a new decision), doubling each time up to 16x; 0: never (a job the switch did not admit counts again once the switch admits it, not after this)", |b, e| {
        let retry = if e.value == "0" { Duration::ZERO } else { millis(e)? };
        set(&mut b.online_retry, retry)
    }),
    knob("online_wait_ms", "online-wait-ms", "MS", "5000", "with ZEBRA_HOT=online: once some worker pushed its T-th, a server with no counted push for this long decides without the missing ones (keeps its hot keys; starting from none, takes the counted ones)", |b, e| set(&mut b.online_wait, millis(e)?)),
    knob("online_capacity", "online-capacity", "VALUES", "(the hot-keys file's)", "hot values each PS-lite server's job holds at least, for keys installed online (ZEBRA_HOT=online); without a hot-keys file the job starts with no hot key and this size", |b, e| set(&mut b.online_capacity, int(e, 1, u32::MAX)?)),
    knob("online_out", "online-out", "FILE", "(none)", "with ZEBRA_HOT=online: each server writes the hot keys it decided on to FILE (`%r`: server rank), in the hot-keys file format", |b, e| set(&mut b.online_out, path(e)?)),
    Setting {
        repeat: true,
        ..knob("server_addr", "server-addr", "INDEX=HOST:PORT", "(learned from REGISTER)", "fix server INDEX's address instead of learning it from its REGISTER (repeatable)", HotValues::server_addr)
    },
    Setting {
        env: Some("ZEBRA_HOT_LOSS"),
        switch_env: true,
        ..knob("loss", "loss", "SPEC", "(off)", "seeded fault injection on every hot-path send (worker, server, zebra switch), for tests: a drop probability (`0.05`), or drop=P,dup=P,delay=P,delay_ms=MS,seed=N", |b, e| {
        b.loss = if e.value.is_empty() {
            None
        } else {
            Some(e.value.parse::<HotLoss>().map_err(|x| e.bad(x))?).filter(HotLoss::is_active)
        };
        Ok(())
    })
    },
];

/// The setting of file key `key`.
pub fn setting_by_key(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == Some(key))
}

/// The setting environment variable `var` gives.
pub fn setting_by_env(var: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.env == Some(var))
}
