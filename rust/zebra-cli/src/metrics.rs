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
//! HTTP server is `tiny_http`'s, answered by one thread of ours: both in the
//! `zebra-metrics` crate, shared with the shim's `ZEBRA_METRICS`.

use std::fmt;

use zebra_hotpath::{JobNodeStats, SwitchNodeStats};
use zebra_metrics::prometheus_client::collector::Collector;
use zebra_metrics::prometheus_client::encoding::DescriptorEncoder;
use zebra_metrics::{family, MetricType};
use zebra_proto::wire::FallbackReason;
use zebra_proto::SwitchStats;

pub use zebra_metrics::MetricsServer;

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
        let switch_wide: [(&str, &str, MetricType, u64); 9] = [
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
                "jobs_retired",
                "Admitted jobs given back after their server stopped registering.",
                MetricType::Counter,
                s.retired,
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
    zebra_metrics::render("zebra_switch", Box::new(Snapshot(stats)))
}
