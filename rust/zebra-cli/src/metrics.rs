//! `zebra switch --metrics HOST:PORT`: the switch's counters over HTTP in
//! Prometheus's text exposition format (`GET /metrics`), for a scraper or
//! `curl`. Counters only: no address, key or value of any job.
//!
//! The numbers are the ones the statistics table prints (SIGUSR1, exit),
//! read from [`SwitchNode::stats`] at each scrape: per job
//! ([`JobNodeStats`], label `zebra_job`: Prometheus keeps `job` for its own
//! scrape job), and `zebra_job="none"` for what no job of the switch counted (datagrams naming a job it does not have, garbage), so that
//! the series of a family add up to the switch's total. `docs/METRICS.md`
//! lists every metric.
//!
//! Encoding is `prometheus-client`'s (a collector over one snapshot); the
//! HTTP server is `tiny_http`'s, answered by one thread of ours.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use zebra_hotpath::{JobNodeStats, SwitchNodeStats};
use zebra_proto::wire::FallbackReason;
use zebra_proto::SwitchStats;

/// The label value of what no job of the switch counted.
pub const NO_JOB: &str = "none";

/// One counter of every job: name (without the `zebra_switch_` prefix and
/// the `_total` suffix the encoder adds), help, and where it is read.
type JobCounter = (&'static str, &'static str, fn(&JobNodeStats) -> u64);

/// The per-job counters, in the order they are exposed.
const JOB_COUNTERS: &[JobCounter] = &[
    (
        "packets",
        "Hot-path datagrams handed to the switch (HOT, AGGREGATE_ACK, UPDATE, UPDATE_ACK).",
        |j| j.switch.packets,
    ),
    (
        "bad_packets",
        "Datagrams dropped as malformed or unexpected (never answered).",
        |j| j.switch.bad_packets,
    ),
    ("added_packets", "Hot packets added to the slots.", |j| {
        j.switch.added_packets
    }),
    (
        "pairs_summed",
        "Hot pairs (dense values included) added to the slots.",
        |j| j.switch.added_pairs,
    ),
    (
        "recirculations",
        "Extra pipeline passes: two pairs of one packet in the same register.",
        |j| j.switch.recirculations,
    ),
    (
        "duplicates",
        "Retransmitted or duplicated hot packets answered from the records, not added again.",
        |j| j.switch.duplicates,
    ),
    (
        "rounds_completed",
        "Rounds closed because every worker finished.",
        |j| j.switch.rounds_completed,
    ),
    (
        "rounds_flushed",
        "Rounds closed by the round timeout (partial aggregates).",
        |j| j.switch.rounds_flushed,
    ),
    (
        "aggregate_parts",
        "Aggregate and coverage parts sent to servers the first time.",
        |j| j.switch.aggregate_parts,
    ),
    (
        "aggregate_resends",
        "Aggregate and coverage parts sent again (timeout, or shown lost).",
        |j| j.switch.aggregate_retransmits,
    ),
    (
        "aggregate_acked",
        "Aggregate and coverage parts acknowledged by their server.",
        |j| j.switch.aggregate_acked,
    ),
    (
        "aggregate_abandoned",
        "Aggregate parts given up unacknowledged: their sums are lost; must stay 0.",
        |j| j.switch.aggregate_abandoned,
    ),
    ("saturations", "Fixed-point sums that saturated.", |j| {
        j.switch.saturations
    }),
    (
        "updates_copied",
        "UPDATE parts of the pull half copied to the job's workers.",
        |j| j.switch.updates_copied,
    ),
    (
        "registrations",
        "Server REGISTER datagrams accepted (keep-alives included).",
        |j| j.registrations,
    ),
    (
        "registrations_refused",
        "Server REGISTER datagrams refused.",
        |j| j.register_refused,
    ),
];

/// One job's gauges: name, help, value.
type JobGauge = (&'static str, &'static str, fn(&JobNodeStats) -> u64);

const JOB_GAUGES: &[JobGauge] = &[
    (
        "job_memory_bytes",
        "Accumulator memory the job takes: 4 B x registers x its slots x copies.",
        |j| j.memory_bytes,
    ),
    (
        "job_hot_values",
        "Hot values the job holds (its share of the memory).",
        |j| u64::from(j.hot_values),
    ),
    ("job_workers", "Workers of the job.", |j| {
        u64::from(j.workers)
    }),
];

/// What no job of the switch counted: the switch's totals less its jobs'.
fn unattributed(stats: &SwitchNodeStats) -> JobNodeStats {
    let mut jobs = SwitchStats::default();
    let (mut registrations, mut refused) = (0, 0);
    for j in &stats.jobs {
        jobs.add_growth(&SwitchStats::default(), &j.switch);
        registrations += j.registrations;
        refused += j.register_refused;
    }
    let mut rest = SwitchStats::default();
    rest.add_growth(&jobs, &stats.switch);
    JobNodeStats {
        switch: rest,
        registrations: stats.registrations.saturating_sub(registrations),
        register_refused: stats.register_refused.saturating_sub(refused),
        ..JobNodeStats::default()
    }
}

/// A snapshot of the switch's counters, encoded on a scrape.
#[derive(Debug)]
struct Snapshot(SwitchNodeStats);

/// Writes one metric family: a descriptor, then a sample per label set
/// (none: one sample without labels).
fn family(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: &[(Vec<(&'static str, String)>, u64)],
) -> fmt::Result {
    let mut metric = enc.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in samples {
        let sample = metric.encode_family(labels)?;
        match kind {
            MetricType::Counter => ConstCounter::new(*value).encode(sample)?,
            _ => ConstGauge::new(*value).encode(sample)?,
        }
    }
    Ok(())
}

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = &self.0;
        let none = unattributed(s);
        let rows: Vec<(String, &JobNodeStats)> = s
            .jobs
            .iter()
            .map(|j| (j.job.to_string(), j))
            .chain([(NO_JOB.to_string(), &none)])
            .collect();
        for &(name, help, read) in JOB_COUNTERS {
            let samples: Vec<_> = rows
                .iter()
                .map(|(job, j)| (vec![("zebra_job", job.clone())], read(j)))
                .collect();
            family(&mut enc, name, help, MetricType::Counter, &samples)?;
        }
        let fallbacks: Vec<_> = rows
            .iter()
            .flat_map(|(job, j)| {
                FallbackReason::ALL.iter().map(move |&r| {
                    (
                        vec![("zebra_job", job.clone()), ("reason", format!("{r:?}"))],
                        j.switch.fallback(r),
                    )
                })
            })
            .collect();
        family(
            &mut enc,
            "fallbacks",
            "Hot packets refused (FALLBACK: the worker sends their pairs to the servers), by reason.",
            MetricType::Counter,
            &fallbacks,
        )?;
        for &(name, help, read) in JOB_GAUGES {
            let samples: Vec<_> = s
                .jobs
                .iter()
                .map(|j| (vec![("zebra_job", j.job.to_string())], read(j)))
                .collect();
            family(&mut enc, name, help, MetricType::Gauge, &samples)?;
        }
        let one = |v: u64| [(Vec::new(), v)];
        let switch_wide: [(&str, &str, MetricType, u64); 8] = [
            (
                "memory_bytes",
                "The switch's accumulator memory: 4 B x registers x slots x copies.",
                MetricType::Gauge,
                s.memory_bytes,
            ),
            (
                "memory_used_bytes",
                "Accumulator memory its jobs take.",
                MetricType::Gauge,
                s.jobs.iter().map(|j| j.memory_bytes).sum(),
            ),
            (
                "jobs",
                "Jobs the switch has (configured and admitted).",
                MetricType::Gauge,
                s.jobs.len() as u64,
            ),
            (
                "jobs_admitted",
                "Jobs admitted as their servers registered.",
                MetricType::Counter,
                s.admitted,
            ),
            (
                "open_rounds",
                "Rounds open now.",
                MetricType::Gauge,
                s.open_rounds as u64,
            ),
            (
                "pending_parts",
                "Aggregate parts waiting for their server's acknowledgement.",
                MetricType::Gauge,
                s.pending_parts as u64,
            ),
            (
                "datagrams_received",
                "UDP datagrams received by the switch's socket.",
                MetricType::Counter,
                s.io.rx_datagrams,
            ),
            (
                "datagrams_sent",
                "UDP datagrams sent by the switch's socket.",
                MetricType::Counter,
                s.io.tx_datagrams,
            ),
        ];
        for (name, help, kind, value) in switch_wide {
            family(&mut enc, name, help, kind, &one(value))?;
        }
        family(
            &mut enc,
            "socket_errors",
            "Socket errors, by direction.",
            MetricType::Counter,
            &[
                (vec![("direction", "send".into())], s.io.send_errors),
                (vec![("direction", "receive".into())], s.io.recv_errors),
            ],
        )
    }
}

/// The switch's counters in Prometheus's text format (version 0.0.4).
pub fn render(stats: SwitchNodeStats) -> String {
    let mut registry = Registry::with_prefix("zebra_switch");
    registry.register_collector(Box::new(Snapshot(stats)));
    let mut text = String::new();
    // Writing to a String fails only if a metric's encoding does, which
    // ours never do; an empty answer would show it.
    if let Err(e) = prometheus_text::encode(&mut text, &registry) {
        log::error!("zebra switch: metrics not encoded: {e}");
    }
    text
}

/// The HTTP endpoint: `GET /metrics` answers what `scrape` returns; any
/// other path is 404, any other method 405.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<zebra_thread::Handle<()>>,
}

impl fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Binds `addr` and answers scrapes on a thread of its own until
    /// [`stop`](Self::stop) or drop.
    pub fn start(
        addr: SocketAddr,
        scrape: impl Fn() -> String + Send + 'static,
    ) -> io::Result<MetricsServer> {
        let server = tiny_http::Server::http(addr).map_err(io::Error::other)?;
        let server = Arc::new(server);
        let bound = server.server_addr().to_ip().unwrap_or(addr);
        let serving = Arc::clone(&server);
        let thread = zebra_thread::spawn("zebra-metrics", move || serve(&serving, scrape))?;
        Ok(MetricsServer {
            server,
            addr: bound,
            thread: Some(thread),
        })
    }

    /// The bound address (the port is known here when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops answering and joins the thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.halt();
    }
}

fn serve(server: &tiny_http::Server, scrape: impl Fn() -> String) {
    let text_type = tiny_http::Header::from_bytes(
        &b"Content-Type"[..],
        prometheus_text::CONTENT_TYPE.as_bytes(),
    )
    .ok();
    for request in server.incoming_requests() {
        let path = request.url().split('?').next().unwrap_or("");
        let response = match (request.method(), path) {
            (tiny_http::Method::Get | tiny_http::Method::Head, "/metrics") => {
                let mut r = tiny_http::Response::from_string(scrape());
                if let Some(h) = &text_type {
                    r = r.with_header(h.clone());
                }
                r
            }
            (tiny_http::Method::Get | tiny_http::Method::Head, _) => {
                tiny_http::Response::from_string("not found: the metrics are at /metrics\n")
                    .with_status_code(404)
            }
            _ => tiny_http::Response::from_string("only GET /metrics\n").with_status_code(405),
        };
        if let Err(e) = request.respond(response) {
            log::debug!("zebra switch: metrics answer not sent: {e}");
        }
    }
}
