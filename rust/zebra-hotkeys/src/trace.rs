//! Push traces: which keys each worker pushed in each round, and how many
//! values each key carried. The byte layout is in `TRACE.md`.
//!
//! A worker process records with a [`TraceWriter`] (bounded size, flushed
//! on drop); `zebra profile` reads one or more traces with a
//! [`TraceReader`], which checks every byte and returns an error, never
//! panics, on input it does not understand.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use thiserror::Error;

/// The first eight bytes of every trace.
pub const MAGIC: [u8; 8] = *b"ZEBRATRC";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Bytes in the file header: magic, version, header length, flags.
pub const HEADER_LEN: usize = 16;
/// Largest record body accepted (and written: longer pushes are split).
pub const MAX_RECORD_BYTES: usize = 1 << 24;
/// Bytes of the length prefix in front of each record body.
const PREFIX_LEN: usize = 4;
/// Longest encoding of one pair (a 10-byte key delta and a 5-byte count).
const MAX_PAIR_BYTES: usize = 15;
/// Smallest encoding of one pair, used to bound a record's pair count.
const MIN_PAIR_BYTES: usize = 2;

/// A trace that cannot be read.
#[derive(Debug, Error)]
pub enum TraceError {
    /// Reading failed.
    #[error("read error: {0}")]
    Io(#[from] io::Error),
    /// The file does not start with [`MAGIC`].
    #[error("not a Zebra trace (magic {0:02x?})")]
    BadMagic([u8; 8]),
    /// A version this reader does not know.
    #[error("trace format version {0} is not supported (this reader knows {VERSION})")]
    Version(u16),
    /// A header field with a value this version does not allow.
    #[error("bad trace header: {0}")]
    BadHeader(&'static str),
    /// The input ended inside the header or a record.
    #[error("trace truncated at byte {offset} (inside {what})")]
    Truncated {
        /// Offset of the incomplete header or record.
        offset: u64,
        /// `header` or `record`.
        what: &'static str,
    },
    /// A record body longer than [`MAX_RECORD_BYTES`].
    #[error("record at byte {offset}: body of {len} bytes exceeds {MAX_RECORD_BYTES}")]
    TooLong {
        /// Offset of the record.
        offset: u64,
        /// Its declared length.
        len: u64,
    },
    /// A record body that does not decode.
    #[error("record at byte {offset}: {what}")]
    Malformed {
        /// Offset of the record.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
}

/// One push of one worker: its rank, its round and the pushed keys, each
/// with the number of `f32` values it carried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The worker's rank.
    pub worker: u32,
    /// The round (the worker's push count, or the app's timestamp).
    pub round: u32,
    /// `(key, values)` in push order.
    pub pairs: Vec<(u64, u32)>,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Appends the body of one record (without its length prefix).
fn encode_body(out: &mut Vec<u8>, worker: u32, round: u32, pairs: &[(u64, u32)]) {
    put_varint(out, u64::from(worker));
    put_varint(out, u64::from(round));
    put_varint(out, pairs.len() as u64);
    let mut prev = 0u64;
    for &(key, values) in pairs {
        put_varint(out, zigzag(key.wrapping_sub(prev) as i64));
        put_varint(out, u64::from(values));
        prev = key;
    }
}

/// A cursor over one record body.
struct Body<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Body<'_> {
    fn varint(&mut self) -> Result<u64, &'static str> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err("body ends inside a number");
            };
            self.pos += 1;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err("number exceeds 64 bits");
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("number exceeds 64 bits")
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, &'static str> {
        u32::try_from(self.varint()?).map_err(|_| what)
    }
}

/// Decodes one record body into `record` (its buffers are reused).
pub fn decode_body(bytes: &[u8], record: &mut Record) -> Result<(), &'static str> {
    let mut b = Body { bytes, pos: 0 };
    record.worker = b.u32("worker rank exceeds 32 bits")?;
    record.round = b.u32("round exceeds 32 bits")?;
    let n = b.varint()?;
    if n > (bytes.len() / MIN_PAIR_BYTES) as u64 {
        return Err("more pairs declared than the body can hold");
    }
    record.pairs.clear();
    record.pairs.reserve(n as usize);
    let mut prev = 0u64;
    for _ in 0..n {
        let key = prev.wrapping_add(unzigzag(b.varint()?) as u64);
        let values = b.u32("value count exceeds 32 bits")?;
        record.pairs.push((key, values));
        prev = key;
    }
    if b.pos != bytes.len() {
        return Err("bytes left after the last pair");
    }
    Ok(())
}

/// Records a worker's pushes to a file of at most `max_bytes` bytes.
///
/// When the next record would pass the bound the writer stops recording,
/// logs that once, and drops every later record; the file stays a valid
/// trace of the pushes before. Buffered; flushed on [`flush`](Self::flush)
/// and on drop.
#[derive(Debug)]
pub struct TraceWriter<W: Write = BufWriter<File>> {
    out: W,
    written: u64,
    max_bytes: u64,
    full: bool,
    dropped: u64,
    scratch: Vec<u8>,
    name: String,
}

impl TraceWriter {
    /// Creates (or truncates) `path` and writes the header. `max_bytes`
    /// bounds the whole file, header included.
    pub fn create(path: &Path, max_bytes: u64) -> io::Result<TraceWriter> {
        let file = File::create(path)?;
        TraceWriter::new(
            BufWriter::with_capacity(1 << 16, file),
            max_bytes,
            path.display().to_string(),
        )
    }
}

impl<W: Write> TraceWriter<W> {
    /// A writer over `out`, named `name` in log lines; writes the header.
    pub fn new(mut out: W, max_bytes: u64, name: String) -> io::Result<TraceWriter<W>> {
        if max_bytes < HEADER_LEN as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("trace bound of {max_bytes} bytes is below the {HEADER_LEN}-byte header"),
            ));
        }
        out.write_all(&header())?;
        Ok(TraceWriter {
            out,
            written: HEADER_LEN as u64,
            max_bytes,
            full: false,
            dropped: 0,
            scratch: Vec::new(),
            name,
        })
    }

    /// Records one push. Returns whether it was recorded (`false` once the
    /// bound is reached). A push too long for one record is written as
    /// several records of the same worker and round.
    pub fn record(&mut self, worker: u32, round: u32, pairs: &[(u64, u32)]) -> io::Result<bool> {
        if self.full {
            self.dropped += 1;
            return Ok(false);
        }
        self.scratch.clear();
        let per_record = (MAX_RECORD_BYTES - 3 * 10) / MAX_PAIR_BYTES;
        let mut chunks = pairs.chunks(per_record).peekable();
        if chunks.peek().is_none() {
            self.frame(worker, round, &[]);
        }
        for chunk in chunks {
            self.frame(worker, round, chunk);
        }
        let len = self.scratch.len() as u64;
        if self.written.saturating_add(len) > self.max_bytes {
            self.full = true;
            self.dropped += 1;
            log::warn!(
                "trace {}: size bound of {} bytes reached after {} bytes; later pushes are not recorded",
                self.name,
                self.max_bytes,
                self.written
            );
            return Ok(false);
        }
        self.out.write_all(&self.scratch)?;
        self.written += len;
        Ok(true)
    }

    fn frame(&mut self, worker: u32, round: u32, pairs: &[(u64, u32)]) {
        let start = self.scratch.len();
        self.scratch.extend_from_slice(&[0; PREFIX_LEN]);
        encode_body(&mut self.scratch, worker, round, pairs);
        let body = (self.scratch.len() - start - PREFIX_LEN) as u32;
        self.scratch[start..start + PREFIX_LEN].copy_from_slice(&body.to_le_bytes());
    }

    /// Bytes written so far, header included.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Whether the bound was reached.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Pushes not recorded because of the bound.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Flushes buffered records.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> Drop for TraceWriter<W> {
    fn drop(&mut self) {
        if let Err(e) = self.out.flush() {
            log::error!("trace {}: flush failed: {e}", self.name);
        }
    }
}

fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
    h
}

/// Reads a trace record by record, checking every byte.
#[derive(Debug)]
pub struct TraceReader<R: Read> {
    input: R,
    offset: u64,
    body: Vec<u8>,
}

/// Fills `buf` from `input`; returns how many bytes were read before the
/// end of the input (less than `buf.len()` only at the end).
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R) -> Result<TraceReader<R>, TraceError> {
        let mut h = [0u8; HEADER_LEN];
        let got = read_full(&mut input, &mut h)?;
        if got >= 8 && h[..8] != MAGIC {
            return Err(TraceError::BadMagic(h[..8].try_into().unwrap_or_default()));
        }
        if got < HEADER_LEN {
            return Err(TraceError::Truncated {
                offset: 0,
                what: "header",
            });
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        if version != VERSION {
            return Err(TraceError::Version(version));
        }
        if u16::from_le_bytes([h[10], h[11]]) as usize != HEADER_LEN {
            return Err(TraceError::BadHeader("header length is not 16"));
        }
        if h[12..16] != [0; 4] {
            return Err(TraceError::BadHeader("reserved flags are not zero"));
        }
        Ok(TraceReader {
            input,
            offset: HEADER_LEN as u64,
            body: Vec::new(),
        })
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next record into `record`; `Ok(false)` at the clean end.
    pub fn next_into(&mut self, record: &mut Record) -> Result<bool, TraceError> {
        let at = self.offset;
        let mut prefix = [0u8; PREFIX_LEN];
        match read_full(&mut self.input, &mut prefix)? {
            0 => return Ok(false),
            PREFIX_LEN => {}
            _ => {
                return Err(TraceError::Truncated {
                    offset: at,
                    what: "record",
                })
            }
        }
        let len = u32::from_le_bytes(prefix) as usize;
        if len > MAX_RECORD_BYTES {
            return Err(TraceError::TooLong {
                offset: at,
                len: len as u64,
            });
        }
        self.body.resize(len, 0);
        if read_full(&mut self.input, &mut self.body)? < len {
            return Err(TraceError::Truncated {
                offset: at,
                what: "record",
            });
        }
        self.offset += (PREFIX_LEN + len) as u64;
        decode_body(&self.body, record)
            .map_err(|what| TraceError::Malformed { offset: at, what })?;
        Ok(true)
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut r = Record::default();
        match self.next_into(&mut r) {
            Ok(true) => Some(Ok(r)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// Opens a trace file for reading.
pub fn open(path: &Path) -> Result<TraceReader<io::BufReader<File>>, TraceError> {
    TraceReader::new(io::BufReader::with_capacity(1 << 16, File::open(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(records: &[Record], max: u64) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = TraceWriter::new(&mut out, max, "test".into()).unwrap();
            for r in records {
                w.record(r.worker, r.round, &r.pairs).unwrap();
            }
        }
        out
    }

    fn read(bytes: &[u8]) -> Result<Vec<Record>, TraceError> {
        TraceReader::new(bytes)?.collect()
    }

    fn sample() -> Vec<Record> {
        vec![
            Record {
                worker: 0,
                round: 1,
                pairs: vec![(5, 1), (9, 4), (u64::MAX, 1), (0, 0), (1 << 40, u32::MAX)],
            },
            Record {
                worker: u32::MAX,
                round: u32::MAX,
                pairs: vec![],
            },
            Record {
                worker: 3,
                round: 2,
                pairs: (0..1000).map(|i| (i * 7919, 1 + (i % 3) as u32)).collect(),
            },
        ]
    }

    #[test]
    fn round_trip_and_compact() {
        let records = sample();
        let bytes = write(&records, u64::MAX);
        assert_eq!(&bytes[..8], b"ZEBRATRC");
        assert_eq!(read(&bytes).unwrap(), records);
        let sorted = write(&records[2..], u64::MAX);
        assert!(
            sorted.len() < HEADER_LEN + 4 + 10 + 1000 * 4,
            "ascending keys take a few bytes a pair: {}",
            sorted.len()
        );
    }

    #[test]
    fn bound_stops_recording_and_keeps_a_valid_file() {
        let records = sample();
        let full = write(&records, u64::MAX).len() as u64;
        let mut out = Vec::new();
        let mut w = TraceWriter::new(&mut out, full - 1, "t".into()).unwrap();
        assert!(w.record(0, 1, &records[0].pairs).unwrap());
        assert!(w.record(u32::MAX, u32::MAX, &[]).unwrap());
        assert!(!w.record(3, 2, &records[2].pairs).unwrap());
        assert!(w.is_full());
        assert!(!w.record(0, 0, &[]).unwrap(), "nothing after the bound");
        assert_eq!(w.dropped(), 2);
        assert!(w.bytes_written() < full);
        drop(w);
        assert_eq!(read(&out).unwrap().len(), 2);
        assert!(TraceWriter::new(Vec::new(), 15, "t".into()).is_err());
    }

    #[test]
    fn bad_headers_are_named() {
        let good = write(&sample(), u64::MAX);
        let mut bad = good.clone();
        bad[0] = b'X';
        assert!(matches!(read(&bad), Err(TraceError::BadMagic(_))));
        let mut bad = good.clone();
        bad[8] = 2;
        assert!(matches!(read(&bad), Err(TraceError::Version(2))));
        let mut bad = good.clone();
        bad[10] = 17;
        assert!(matches!(read(&bad), Err(TraceError::BadHeader(_))));
        let mut bad = good.clone();
        bad[15] = 1;
        assert!(matches!(read(&bad), Err(TraceError::BadHeader(_))));
        assert!(matches!(
            read(&good[..10]),
            Err(TraceError::Truncated { what: "header", .. })
        ));
        assert!(matches!(read(b"ELF"), Err(TraceError::Truncated { .. })));
        assert!(read(&good[..HEADER_LEN]).unwrap().is_empty());
    }

    #[test]
    fn bad_records_are_named_with_their_offset() {
        let good = write(&sample(), u64::MAX);
        for cut in [HEADER_LEN + 2, HEADER_LEN + 6, good.len() - 1] {
            let err = read(&good[..cut]).unwrap_err();
            assert!(
                matches!(err, TraceError::Truncated { what: "record", .. }),
                "{cut}: {err}"
            );
        }
        let mut long = good[..HEADER_LEN].to_vec();
        long.extend_from_slice(&(MAX_RECORD_BYTES as u32 + 1).to_le_bytes());
        assert!(matches!(
            read(&long),
            Err(TraceError::TooLong { offset: 16, .. })
        ));
        let body = |b: &[u8]| {
            let mut v = good[..HEADER_LEN].to_vec();
            v.extend_from_slice(&(b.len() as u32).to_le_bytes());
            v.extend_from_slice(b);
            read(&v).unwrap_err().to_string()
        };
        assert!(body(&[0, 0, 1, 2, 1, 9]).contains("bytes left"));
        assert!(body(&[0, 0, 100, 2, 1]).contains("more pairs"));
        assert!(body(&[0x80, 0x80, 0x80, 0x80, 0x10, 0, 0]).contains("worker rank"));
        assert!(body(&[0, 0, 1, 2, 0x80, 0x80, 0x80, 0x80, 0x10]).contains("value count"));
        assert!(body(&[0, 0, 1, 0xff]).contains("inside a number"));
        let mut huge = vec![0, 0, 1];
        huge.extend_from_slice(&[0xff; 9]);
        huge.extend_from_slice(&[0x02, 1]);
        assert!(body(&huge).contains("64 bits"));
    }

    #[test]
    fn seeded_mutations_never_panic_and_keep_offsets_in_bounds() {
        let good = write(&sample(), u64::MAX);
        let mut rng = zebra_proto::rng::SplitMix64::new(0x7ace);
        let mut outcomes = [0u32; 2];
        for _ in 0..20_000 {
            let mut bytes = good.clone();
            match rng.below(4) {
                0 => bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize),
                1 => {
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(bytes.len() as u64) as usize;
                        bytes[i] = rng.next_u64() as u8;
                    }
                }
                2 => {
                    let i = rng.below(bytes.len() as u64) as usize;
                    let n = rng.below(16) as usize;
                    let junk: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                    bytes.splice(i..i, junk);
                }
                _ => {
                    let i = HEADER_LEN + rng.below((bytes.len() - HEADER_LEN) as u64) as usize;
                    bytes[i] ^= 1 << rng.below(8);
                }
            }
            match read(&bytes) {
                Ok(records) => {
                    outcomes[0] += 1;
                    assert_eq!(read(&write(&records, u64::MAX)).unwrap(), records);
                }
                Err(TraceError::Truncated { offset, .. })
                | Err(TraceError::TooLong { offset, .. })
                | Err(TraceError::Malformed { offset, .. }) => {
                    outcomes[1] += 1;
                    assert!(offset < bytes.len().max(1) as u64);
                }
                Err(_) => outcomes[1] += 1,
            }
        }
        assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
    }
}
