//! `ZEBRA_STATS`: the process's statistics (mode, the library forwarded to, the calls of
//! each zmq function, the hot path's counters), written at exit as `key value` lines or,
//! with `ZEBRA_STATS_INTERVAL`, every interval while the process runs as JSON Lines by
//! the `zebra-stats` thread (schema: `docs/METRICS.md`, "Watching a process").
//!
//! The call counters live here; the C++ shim adds to them ([`count_call`]) and tells
//! once which library it forwards to and the functions' names ([`begin`]).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zebra_config::StatsSink;
use zebra_runtime::json::json_string;

/// More than the shim's functions (`cpp-shim/src/api.def` and the two context makers).
const MAX_FUNCTIONS: usize = 128;

static CALLS: [AtomicU64; MAX_FUNCTIONS] = [const { AtomicU64::new(0) }; MAX_FUNCTIONS];

/// What the shim told at start-up.
#[derive(Debug, Clone, Default)]
pub struct Process {
    pub pid: u32,
    pub mode: &'static str,
    pub real_libzmq: String,
    pub found_by: String,
    /// The zmq functions, in the order of their counter indices.
    pub functions: Vec<String>,
}

static PROCESS: OnceLock<Process> = OnceLock::new();

/// One call of function `index` (out of range: ignored).
pub fn count_call(index: u16) {
    if let Some(c) = CALLS.get(usize::from(index)) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// The calls made so far, by function name, the functions never called left out.
fn calls(functions: &[String]) -> Vec<(&str, u64)> {
    functions
        .iter()
        .zip(CALLS.iter())
        .map(|(name, n)| (name.as_str(), n.load(Ordering::Relaxed)))
        .filter(|&(_, n)| n != 0)
        .collect()
}

/// Stops the periodic writer: set `stop`, signal, join.
struct Periodic {
    stop: Mutex<bool>,
    wake: Condvar,
    thread: Mutex<Option<zebra_thread::Handle<()>>>,
}

static PERIODIC: Periodic = Periodic {
    stop: Mutex::new(false),
    wake: Condvar::new(),
    thread: Mutex::new(None),
};

/// The process's Prometheus endpoint (`ZEBRA_METRICS`), stopped at exit.
static METRICS: Mutex<Option<zebra_metrics::MetricsServer>> = Mutex::new(None);

/// Remembers the process's facts; with `ZEBRA_METRICS` starts its endpoint, with
/// `ZEBRA_STATS_INTERVAL` the `zebra-stats` thread.
pub fn begin(
    process: Process,
    sink: Option<&StatsSink>,
    interval: Option<Duration>,
    metrics: Option<&str>,
) {
    if PROCESS.set(process).is_err() {
        return;
    }
    if let Some(addr) = metrics {
        start_metrics(addr);
    }
    let (Some(sink), Some(interval)) = (sink, interval) else {
        return;
    };
    let mut writer = match LineWriter::open(sink) {
        Ok(w) => w,
        Err(e) => {
            log::error!("zebra: ZEBRA_STATS_INTERVAL: {e}; no periodic statistics");
            return;
        }
    };
    let spawned = zebra_thread::spawn("zebra-stats", move || {
        let mut seq = 0u64;
        let mut stop = PERIODIC.stop.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            // Waits out the interval unless stopped (spurious wake-ups wait again).
            let deadline = std::time::Instant::now() + interval;
            while !*stop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                stop = PERIODIC
                    .wake
                    .wait_timeout(stop, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            if *stop {
                return;
            }
            drop(stop);
            seq += 1;
            writer.write_line(&json_line(seq, false));
            stop = PERIODIC.stop.lock().unwrap_or_else(PoisonError::into_inner);
        }
    });
    match spawned {
        Ok(handle) => {
            *PERIODIC
                .thread
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(handle)
        }
        Err(e) => log::error!("zebra: cannot start the zebra-stats thread: {e}"),
    }
}

/// `ZEBRA_METRICS=addr`: serves [`render_metrics`] there; a failure is logged.
fn start_metrics(addr: &str) {
    use std::net::ToSocketAddrs;
    let resolved = addr.to_socket_addrs().map(|mut a| a.next());
    let server = match resolved {
        Ok(Some(a)) => zebra_metrics::MetricsServer::start(a, render_metrics),
        Ok(None) => Err(std::io::Error::other("the name has no address")),
        Err(e) => Err(e),
    };
    match server {
        Ok(server) => {
            log::info!("zebra: metrics at http://{}/metrics", server.local_addr());
            *METRICS.lock().unwrap_or_else(PoisonError::into_inner) = Some(server);
        }
        Err(e) => log::error!("zebra: ZEBRA_METRICS={addr}: {e}; no metrics endpoint"),
    }
}

/// At exit: stops the metrics endpoint.
pub fn stop_metrics() {
    let server = METRICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(server) = server {
        server.stop();
    }
}

/// The process's counters in Prometheus's text format: `zebra_shim_calls_total` by
/// `function`, and every number of the hot path's statistics as `zebra_shim_hot` by
/// `counter` (its path in the JSON lines, e.g. `worker.agent.split`).
pub fn render_metrics() -> String {
    let p = PROCESS.get().cloned().unwrap_or_default();
    let calls = calls(&p.functions)
        .into_iter()
        .map(|(name, n)| (vec![("function", name.to_string())], n))
        .collect();
    let mut hot = Vec::new();
    json_leaves(&crate::process::report_json(), &mut hot);
    zebra_metrics::render("zebra_shim", Box::new(Scrape { calls, hot }))
}

/// One scrape's numbers.
#[derive(Debug)]
struct Scrape {
    calls: Vec<(zebra_metrics::Labels, u64)>,
    hot: Vec<(String, u64)>,
}

impl zebra_metrics::prometheus_client::collector::Collector for Scrape {
    fn encode(
        &self,
        mut enc: zebra_metrics::prometheus_client::encoding::DescriptorEncoder,
    ) -> std::fmt::Result {
        use zebra_metrics::{family, MetricType};
        family(
            &mut enc,
            "calls",
            "calls of each zmq function by the application",
            MetricType::Counter,
            &self.calls,
        )?;
        let hot: Vec<_> = self
            .hot
            .iter()
            .map(|(path, n)| (vec![("counter", path.clone())], *n))
            .collect();
        family(
            &mut enc,
            "hot",
            "the hot path's statistics, by their path in the ZEBRA_STATS JSON lines",
            MetricType::Gauge,
            &hot,
        )
    }
}

/// The non-negative integers of a JSON text made by this module, by dotted path.
fn json_leaves(json: &str, out: &mut Vec<(String, u64)>) {
    fn walk(s: &[u8], at: &mut usize, path: &str, out: &mut Vec<(String, u64)>) -> Option<()> {
        let join = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        match *s.get(*at)? {
            b'{' => {
                *at += 1;
                while *s.get(*at)? != b'}' {
                    let key = string(s, at)?;
                    (*s.get(*at)? == b':').then_some(())?;
                    *at += 1;
                    walk(s, at, &join(&key), out)?;
                    if *s.get(*at)? == b',' {
                        *at += 1;
                    }
                }
                *at += 1;
            }
            b'[' => {
                *at += 1;
                let mut i = 0;
                while *s.get(*at)? != b']' {
                    walk(s, at, &join(&i.to_string()), out)?;
                    i += 1;
                    if *s.get(*at)? == b',' {
                        *at += 1;
                    }
                }
                *at += 1;
            }
            b'"' => {
                string(s, at)?;
            }
            _ => {
                let start = *at;
                while s.get(*at).is_some_and(|c| !b",}]".contains(c)) {
                    *at += 1;
                }
                let word = std::str::from_utf8(&s[start..*at]).ok()?;
                if let Ok(n) = word.parse::<u64>() {
                    out.push((path.to_string(), n));
                }
            }
        }
        Some(())
    }
    /// A JSON string at `at` (its escapes kept as they are: keys have none).
    fn string(s: &[u8], at: &mut usize) -> Option<String> {
        (*s.get(*at)? == b'"').then_some(())?;
        let start = *at + 1;
        *at = start;
        while *s.get(*at)? != b'"' {
            *at += if s[*at] == b'\\' { 2 } else { 1 };
        }
        *at += 1;
        Some(String::from_utf8_lossy(&s[start..*at - 1]).into_owned())
    }
    let mut at = 0;
    if walk(json.as_bytes(), &mut at, "", out).is_none() {
        log::debug!("zebra: metrics: hot counters not read");
    }
}

/// At exit: stops the periodic writer and writes the last report, a JSON line when
/// periodic, else the `key value` report (whole).
pub fn at_exit(sink: &StatsSink, net: &str) {
    let thread = PERIODIC
        .thread
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(thread) = thread {
        *PERIODIC.stop.lock().unwrap_or_else(PoisonError::into_inner) = true;
        PERIODIC.wake.notify_all();
        thread.join();
        match LineWriter::append(sink) {
            Ok(mut w) => w.write_line(&json_line(u64::MAX, true)),
            Err(e) => log::error!("zebra: ZEBRA_STATS: {e}"),
        }
        return;
    }
    let report = format!("{}{}{net}", text_report(), crate::process::report());
    match sink {
        StatsSink::Stderr => eprint!("{report}"),
        StatsSink::File(path) => {
            if let Err(e) = write_whole(path, &report) {
                log::error!(
                    "zebra: cannot write ZEBRA_STATS file {}: {e}",
                    path.display()
                );
            }
        }
    }
}

/// The `key value` head of the at-exit report.
fn text_report() -> String {
    let p = PROCESS.get().cloned().unwrap_or_default();
    let mut out = format!(
        "pid {}\nmode {}\nreal_libzmq {}\nfound_by {}\n",
        p.pid, p.mode, p.real_libzmq, p.found_by
    );
    for (name, n) in calls(&p.functions) {
        let _ = writeln!(out, "call {name} {n}");
    }
    out
}

/// One JSON line of the statistics now (`seq` u64::MAX: the final one).
fn json_line(seq: u64, last: bool) -> String {
    let p = PROCESS.get().cloned().unwrap_or_default();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = format!(
        "{{\"pid\":{},\"time\":{}.{:03},",
        p.pid,
        now.as_secs(),
        now.subsec_millis()
    );
    if !last {
        let _ = write!(out, "\"seq\":{seq},");
    }
    let _ = write!(
        out,
        "\"final\":{last},\"mode\":{},\"real_libzmq\":{},\"found_by\":{},\"calls\":{{",
        json_string(p.mode),
        json_string(&p.real_libzmq),
        json_string(&p.found_by)
    );
    for (i, (name, n)) in calls(&p.functions).into_iter().enumerate() {
        let comma = if i == 0 { "" } else { "," };
        let _ = write!(out, "{comma}{}:{n}", json_string(name));
    }
    let _ = write!(out, "}},\"hot\":{}", crate::process::report_json());
    if let Some(net) = crate::net_stats() {
        let _ = write!(out, ",\"net\":{}", json_string(&net));
    }
    out.push('}');
    out
}

/// Where the JSON lines go: standard error, or a file appended to.
enum LineWriter {
    Stderr,
    File(std::fs::File, std::path::PathBuf),
}

impl LineWriter {
    /// The periodic writer: a file is started empty.
    fn open(sink: &StatsSink) -> std::io::Result<LineWriter> {
        Self::with(sink, true)
    }

    /// The final line's writer: after the periodic ones.
    fn append(sink: &StatsSink) -> std::io::Result<LineWriter> {
        Self::with(sink, false)
    }

    fn with(sink: &StatsSink, truncate: bool) -> std::io::Result<LineWriter> {
        Ok(match sink {
            StatsSink::Stderr => LineWriter::Stderr,
            StatsSink::File(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| in_file(path, e))?;
                if truncate {
                    file.set_len(0).map_err(|e| in_file(path, e))?;
                }
                LineWriter::File(file, path.clone())
            }
        })
    }

    /// Writes `line` and a newline in one write (a reader of an appended file sees
    /// whole lines); an error is logged, and the next line tried all the same.
    fn write_line(&mut self, line: &str) {
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        let result = match self {
            LineWriter::Stderr => std::io::stderr().lock().write_all(buf.as_bytes()),
            LineWriter::File(f, _) => f.write_all(buf.as_bytes()),
        };
        if let Err(e) = result {
            let place = match self {
                LineWriter::Stderr => "standard error".to_string(),
                LineWriter::File(_, p) => p.display().to_string(),
            };
            log::error!("zebra: ZEBRA_STATS: cannot write to {place}: {e}");
        }
    }
}

fn in_file(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Writes `text` to `path` so that a reader sees all of it or no file: a process killed
/// while writing (a job torn down after one node failed) leaves only a hidden temporary
/// file beside `path`, never a truncated report.
pub(crate) fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    let mut hidden = std::ffi::OsString::from(".");
    hidden.push(name);
    hidden.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(hidden);
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_carry_every_hot_number_by_path() {
        let mut leaves = Vec::new();
        json_leaves(
            r#"{"worker":{"rank":1,"agent":{"split":7,"passed":{"not_push":3}},"links":{"1":{"srtt":"1.5ms","x":null,"l":[4,5]}},"off":"a\"b"}}"#,
            &mut leaves,
        );
        let want = [
            ("worker.rank", 1),
            ("worker.agent.split", 7),
            ("worker.agent.passed.not_push", 3),
            ("worker.links.1.l.0", 4),
            ("worker.links.1.l.1", 5),
        ];
        assert_eq!(leaves, want.map(|(p, n)| (p.to_string(), n)).to_vec());
        count_call(0);
        let text = render_metrics();
        assert!(
            text.contains("# TYPE zebra_shim_calls_total counter"),
            "{text}"
        );
        assert!(text.contains("# TYPE zebra_shim_hot gauge"), "{text}");
    }

    #[test]
    fn calls_are_counted_by_name_and_out_of_range_is_ignored() {
        let names: Vec<String> = ["zmq_a", "zmq_b", "zmq_c"].map(String::from).into();
        count_call(1);
        count_call(1);
        count_call(u16::MAX);
        assert_eq!(calls(&names), vec![("zmq_b", 2)]);
    }

    #[test]
    fn lines_are_appended_whole_after_the_file_is_started_empty() {
        let dir = std::env::temp_dir().join(format!("zebra-ffi-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.jsonl");
        std::fs::write(&path, "an older run\n").unwrap();
        let sink = StatsSink::File(path.clone());
        let mut w = LineWriter::open(&sink).unwrap();
        w.write_line("{\"seq\":1}");
        w.write_line("{\"seq\":2}");
        LineWriter::append(&sink)
            .unwrap()
            .write_line("{\"final\":true}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"seq\":1}\n{\"seq\":2}\n{\"final\":true}\n"
        );
        assert!(LineWriter::open(&StatsSink::File(dir.join("no/such/dir"))).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_json_line_is_one_line_of_valid_shape() {
        let line = json_line(3, false);
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with("{\"pid\":") && line.ends_with('}'),
            "{line}"
        );
        assert!(line.contains("\"seq\":3,\"final\":false,"), "{line}");
        assert!(
            line.contains("\"calls\":{") && line.contains("\"hot\":null"),
            "{line}"
        );
        assert!(!json_line(u64::MAX, true).contains("\"seq\""));
    }
}
