//! Prometheus's text exposition for Zebra's processes: the HTTP endpoint
//! ([`MetricsServer`], `tiny_http`, one thread named `zebra-metrics`) and the encoding
//! of a snapshot of counters ([`family`], [`render`], over `prometheus-client`). Used by
//! `zebra switch --metrics` (`rust/zebra-cli/src/metrics.rs`) and by the shim's
//! `ZEBRA_METRICS` (`rust/zebra-ffi`); docs/METRICS.md.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
pub use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

pub use prometheus_client;

/// Label pairs of one sample.
pub type Labels = Vec<(&'static str, String)>;

/// Writes one metric family: a descriptor, then a sample per label set
/// (none: one sample without labels).
pub fn family(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: &[(Labels, u64)],
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

/// The metrics of `collector` (one snapshot) in Prometheus's text format (version
/// 0.0.4), every name prefixed with `prefix`.
pub fn render(prefix: &str, collector: Box<dyn Collector>) -> String {
    let mut registry = Registry::with_prefix(prefix);
    registry.register_collector(collector);
    let mut text = String::new();
    // Writing to a String fails only if a metric's encoding does, which
    // ours never do; an empty answer would show it.
    if let Err(e) = prometheus_text::encode(&mut text, &registry) {
        log::error!("zebra: metrics not encoded: {e}");
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
            log::debug!("zebra: metrics answer not sent: {e}");
        }
    }
}
