//! `ZEBRA_TRACE`: a worker records the keys of every push it sends (`zebra-hotkeys`'s
//! trace format), the input of `zebra profile`.

use bytes::Bytes;
use zebra_agent::values::F32_BYTES;
use zebra_hotkeys::TraceWriter;
use zebra_pslite::{kv_in_place, Detector, FormatChoice};

use crate::json::json_string;

/// The keys of every push this worker sends, each with its number of `f32` values (its
/// bytes / 4: what a hot-keys file's `VALUES` counts).
pub(crate) struct Tracer {
    writer: TraceWriter,
    path: String,
    detector: Detector,
    pushes: u32,
    unparsed: u64,
}

impl Tracer {
    pub(crate) fn create(path: &str, max_bytes: u64, rank: u16) -> Option<Tracer> {
        let path = path.replace("%r", &rank.to_string());
        match TraceWriter::create(std::path::Path::new(&path), max_bytes) {
            Ok(writer) => {
                log::info!("zebra: worker {rank}: recording pushes to {path}");
                Some(Tracer {
                    writer,
                    path,
                    detector: Detector::new(FormatChoice::Auto),
                    pushes: 0,
                    unparsed: 0,
                })
            }
            Err(e) => {
                log::error!("zebra: ZEBRA_TRACE {path}: {e}; no trace is recorded");
                None
            }
        }
    }

    /// Records the message if it is a push request with data.
    pub(crate) fn record(&mut self, rank: u16, frames: &[Bytes]) {
        let Some((meta, data)) = frames.split_first() else {
            return;
        };
        let Ok((_, m)) = self.detector.parse(meta) else {
            self.unparsed += 1;
            return;
        };
        if !m.is_push_request() {
            return;
        }
        let data: Vec<&[u8]> = data.iter().map(|b| &b[..]).collect();
        // The meta parsed once; the values read where they are.
        let keys: Option<Vec<(u64, u32)>> = kv_in_place(&m, &data).ok().and_then(|view| {
            let view = view?;
            let keys = view
                .entries()
                .ok()?
                .map(|(k, v, _)| (k, (v.len() / F32_BYTES) as u32))
                .collect();
            Some(keys)
        });
        let Some(keys) = keys else {
            self.unparsed += 1;
            return;
        };
        self.pushes += 1;
        // Flushed per push: the writer lives until the process exits, and
        // nothing runs at exit that could flush it.
        let written = self
            .writer
            .record(u32::from(rank), self.pushes, &keys)
            .and_then(|_| self.writer.flush());
        if let Err(e) = written {
            log::error!("zebra: trace {}: {e}", self.path);
        }
    }

    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"pushes\":{},\"path\":{},\"bytes\":{},\"not_recorded\":{},\"unparsed\":{}}}",
            self.pushes,
            json_string(&self.path),
            self.writer.bytes_written(),
            self.writer.dropped(),
            self.unparsed
        )
    }

    pub(crate) fn report(&mut self) -> String {
        if let Err(e) = self.writer.flush() {
            log::error!("zebra: trace {}: {e}", self.path);
        }
        format!(
            "trace: {} pushes recorded to {} ({} bytes, {} not recorded, {} unparsed messages)\n",
            self.pushes,
            self.path,
            self.writer.bytes_written(),
            self.writer.dropped(),
            self.unparsed
        )
    }
}
