//! The two ZeroMQ frames Zebra adds to a PS-lite job's traffic between a
//! worker and a server (byte tables in `FRAMES.md`). All multi-byte fields
//! are big endian, as on the hot path.
//!
//! - **PUSH trailer**: one extra last frame on a push request whose hot keys
//!   went to the switch: the round and the hot keys the worker pushed.
//! - **SETTLE**: a message of this one frame, sent by the worker when the
//!   hot part of a round is settled at the switch: how many packets the
//!   switch added, and the pairs it refused or never answered (fallback),
//!   for the server to apply directly.
//! - **HOTSET** (online hot keys, `crate::online`): the other way, from the
//!   server's ROUTER to a worker's DEALER, which PS-lite never reads: the
//!   server's decision after counting the first rounds, its new hot keys
//!   and the first round that uses them, or "keep the current ones".
//! - **RESTART** (server to worker, as HOTSET): the switch was started again
//!   and lost what it held; the worker sends what it kept of its settled
//!   rounds again, as SETTLE frames with the RESEND flag
//!   (`zebra_proto::Worker::restart`).
//!
//! A PS-lite message never ends with a valid trailer: its frame count is
//! fixed by its meta (one frame per data type), so a trailer is recognised
//! only when the frames before it parse as a whole PS-lite message. A
//! SETTLE frame is a message's only frame after the sender's identity,
//! where PS-lite puts its meta; no meta of either format is a valid
//! SETTLE frame (a protobuf meta starts with 0x08; a BytePS meta would need
//! the head 0x5350425A and the exact SETTLE length).

use thiserror::Error;
use zebra_proto::wire::FallbackReason;
use zebra_proto::{Fallback, FallbackCause, SwitchChoice};
use zebra_pslite::DataType;

/// First four bytes of both frames: "ZBPS".
pub const MAGIC: [u8; 4] = *b"ZBPS";
/// Frame format version.
pub const VERSION: u8 = 2;
/// Frame types (byte 5).
pub mod frame_type {
    /// PUSH trailer.
    pub const PUSH: u8 = 1;
    /// SETTLE.
    pub const SETTLE: u8 = 2;
    /// HOTSET (server to worker).
    pub const HOTSET: u8 = 3;
    /// RESTART (server to worker).
    pub const RESTART: u8 = 4;
}
/// SETTLE flags (byte 6).
pub mod settle_flags {
    /// A resend after the switch was started again: the batches are the
    /// round's packets the lost switch had added (uncertain), `added` 0; the
    /// server takes it only while it still holds the round's push.
    pub const RESEND: u8 = 0x01;
}
/// RESTART length.
pub const RESTART_LEN: usize = 24;
/// RESTART flags (byte 6).
pub mod restart_flags {
    /// The switch in use from now on is the standby
    /// (`ZEBRA_SWITCH_STANDBY`); without it, the primary (`ZEBRA_SWITCH`).
    pub const STANDBY: u8 = 0x01;
}
/// HOTSET flags (byte 6).
pub mod hotset_flags {
    /// The keys that follow replace the server's hot keys from the frame's
    /// round on; without it the frame lists no key: keep the current ones.
    pub const CHANGE: u8 = 0x01;
    /// The server steps aside: from now on the worker sends its pushes to
    /// this server unchanged (no trailer, nothing to the switch). No key
    /// follows; never with `CHANGE`.
    pub const ASIDE: u8 = 0x02;
    /// The server counts again (it stood aside and tries aggregation
    /// again): the worker sends its pushes to it whole, with a trailer, until
    /// its next decision. No key follows; never with `CHANGE` or `ASIDE`.
    pub const RECOUNT: u8 = 0x04;
}
/// HOTSET header length.
pub const HOTSET_HEADER_LEN: usize = 28;
/// Bytes per HOTSET key: the PS-lite key u64, its value count u32.
pub const HOTSET_ENTRY_LEN: usize = 12;
/// PUSH trailer flags (byte 6).
pub mod push_flags {
    /// The push carried a lens frame.
    pub const LENS: u8 = 0x01;
    /// A SETTLE follows for this round whatever happens (the round may
    /// leave pairs over); without it a clean round has no SETTLE.
    pub const SETTLES: u8 = 0x02;
    /// The hot keys are a bitmap over the server's hot keys, not a list.
    pub const BITMAP: u8 = 0x04;
    /// Bits that must be zero.
    pub const RESERVED: u8 = !(LENS | SETTLES | BITMAP);
}
/// PUSH trailer header length.
pub const PUSH_HEADER_LEN: usize = 24;
/// Bytes per listed hot key: its ordinal, u32.
pub const PUSH_ENTRY_LEN: usize = 4;
/// Longest bitmap: 2^29 bytes cover every u32 ordinal.
const MAX_BITMAP_BYTES: usize = 1 << 29;
/// SETTLE header length.
pub const SETTLE_HEADER_LEN: usize = 24;
/// SETTLE batch header length: seq u16, cause u8, reason u8, count u32.
pub const BATCH_HEADER_LEN: usize = 8;
/// Bytes per fallback pair: hot index u32, f32 bits u32.
pub const PAIR_LEN: usize = 8;
/// SETTLE batch causes (byte 2 of a batch).
pub mod cause {
    /// The switch answered FALLBACK; the batch's reason byte says why.
    pub const SWITCH: u8 = 1;
    /// More packets than `max_seqs`: never sent.
    pub const TOO_MANY_PACKETS: u8 = 2;
    /// No answer after every retry: the switch may hold the pairs.
    pub const NO_RESPONSE: u8 = 3;
    /// Added by a switch since started again: its sum may or may not have
    /// reached the server.
    pub const RESTARTED: u8 = 4;
    /// Never sent: after a restart, a round the switch before may have
    /// closed.
    pub const BYPASSED: u8 = 5;
}

/// A malformed Zebra frame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// Not "ZBPS".
    #[error("not a Zebra frame")]
    Magic,
    /// Another version.
    #[error("Zebra frame version {0}, this build speaks {VERSION}")]
    Version(u8),
    /// An unknown type.
    #[error("unknown Zebra frame type {0}")]
    Type(u8),
    /// Shorter or longer than its header says.
    #[error("Zebra {what} of {len} bytes, its header implies {expected}")]
    Length {
        /// Frame type name.
        what: &'static str,
        /// Bytes present.
        len: usize,
        /// Bytes implied (at least, while the header is cut short).
        expected: usize,
    },
    /// A reserved bit or byte is set.
    #[error("Zebra {0}: reserved bits set")]
    Reserved(&'static str),
    /// Round 0, or a previous round that is not before the round.
    #[error("Zebra PUSH trailer: round {round} after previous round {previous}")]
    Round {
        /// Round.
        round: u32,
        /// Previous round.
        previous: u32,
    },
    /// Listed hot keys not strictly increasing.
    #[error("Zebra PUSH trailer: hot key {0} listed after a larger or equal one")]
    Unsorted(u32),
    /// A value type code PS-lite does not have.
    #[error("Zebra PUSH trailer: unknown value type {0}")]
    ValueType(u8),
    /// An unknown fallback cause or reason.
    #[error("Zebra SETTLE: unknown fallback cause {cause} reason {reason}")]
    Cause {
        /// Cause byte.
        cause: u8,
        /// Reason byte.
        reason: u8,
    },
    /// A count that does not fit its field when emitting.
    #[error("Zebra {what}: {count} entries do not fit the frame")]
    TooLarge {
        /// Field.
        what: &'static str,
        /// Entries.
        count: usize,
    },
}

/// The PUSH trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTrailer {
    /// zebra-proto job (the server's).
    pub job: u16,
    /// Worker rank.
    pub worker: u16,
    /// Round of this push in the server's job.
    pub round: u32,
    /// The worker's previous round in this job (0 before its first): rounds
    /// increase but jump after a barrier, and the server needs to know which
    /// rounds of this worker come before this one.
    pub previous: u32,
    /// PS-lite value type of the push (`FLOAT`, or `OTHER` holding f32).
    pub val_type: DataType,
    /// Whether the push had a lens frame.
    pub lens: bool,
    /// Whether a SETTLE follows whatever happens (else only when the round
    /// is not clean: a packet refused or unanswered).
    pub settles: bool,
    /// The hot keys the worker took out, each as its ordinal among the
    /// server's hot keys in hot-index order (the hot set says which key, its
    /// first hot index and how many values), strictly increasing. On the
    /// wire a list of u32 or a bitmap, whichever is shorter.
    pub hot: Vec<u32>,
}

/// The SETTLE message's frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Settle {
    /// zebra-proto job (the server's).
    pub job: u16,
    /// Worker rank.
    pub worker: u16,
    /// Round.
    pub round: u32,
    /// Hot packets the worker sent for the round.
    pub packets: u16,
    /// Packets the switch acknowledged (their pairs are in the round's
    /// aggregate).
    pub added: u16,
    /// Pairs for the server to apply directly, one batch per packet, with
    /// the packet's identity (`job`, `round`, `worker` as above).
    pub batches: Vec<Fallback>,
    /// A resend after the switch was started again (flag RESEND).
    pub resend: bool,
}

/// The RESTART frame: the switch was started again (server to worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartFrame {
    /// zebra-proto job (the server's).
    pub job: u16,
    /// The worker it is addressed to.
    pub worker: u16,
    /// The newest round the server had an aggregate of (0: none): the
    /// worker's rounds up to it go to the server only.
    pub through: u32,
    /// The switch's new epoch.
    pub epoch: u32,
    /// The oldest round of this worker's the server may still need: its
    /// oldest held push, or the round after the newest one that arrived. The
    /// worker resends its kept rounds from this one on.
    pub resend_from: u32,
    /// The switch in use from now on (flag STANDBY): after a failover
    /// the worker sends its hot packets there.
    pub switch: SwitchChoice,
}

/// The HOTSET frame: a server's online decision, sent to each worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotSetFrame {
    /// zebra-proto job (the server's).
    pub job: u16,
    /// The worker it is addressed to.
    pub worker: u16,
    /// The first round of the job that uses `keys` (with `change`).
    pub from_round: u32,
    /// Whether `keys` replace the server's hot keys; else keep them.
    pub change: bool,
    /// Whether the server steps aside (aggregation costs it more than it
    /// saves): the worker's pushes to it go unchanged from now on. Never
    /// with `change`.
    pub aside: bool,
    /// Whether the server counts again after standing aside: the worker
    /// pushes whole, with trailers, until the next decision.
    pub recount: bool,
    /// The largest round of the job the server had seen a push of when it
    /// decided (0: none): the worker closes the rounds up to it that it
    /// will never push (`crate::worker`).
    pub seen: u32,
    /// The smallest of the workers' latest rounds the server had seen when
    /// it decided (0: some worker had pushed none): a worker that was
    /// further on in that barrier epoch goes on as far past the decision's
    /// round (`crate::worker`).
    pub floor: u32,
    /// The server's new hot keys, hottest first: `(PS-lite key, values)`.
    pub keys: Vec<(u64, u32)>,
}

/// A parsed Zebra frame.
#[derive(Debug, Clone, PartialEq)]
pub enum ZebraFrame {
    /// A PUSH trailer.
    Push(PushTrailer),
    /// A SETTLE frame.
    Settle(Settle),
    /// A HOTSET frame.
    HotSet(HotSetFrame),
    /// A RESTART frame.
    Restart(RestartFrame),
}

/// Whether `bytes` starts like a Zebra frame (it may still be malformed).
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn need(what: &'static str, len: usize, expected: usize) -> Result<(), FrameError> {
    if len < expected {
        return Err(FrameError::Length {
            what,
            len,
            expected,
        });
    }
    Ok(())
}

fn exact(what: &'static str, len: usize, expected: usize) -> Result<(), FrameError> {
    if len != expected {
        return Err(FrameError::Length {
            what,
            len,
            expected,
        });
    }
    Ok(())
}

fn header(out: &mut Vec<u8>, kind: u8, flags: u8, byte7: u8, job: u16, worker: u16, round: u32) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[VERSION, kind, flags, byte7]);
    out.extend_from_slice(&job.to_be_bytes());
    out.extend_from_slice(&worker.to_be_bytes());
    out.extend_from_slice(&round.to_be_bytes());
}

impl ZebraFrame {
    /// Parses a frame, checking magic, version, type, reserved bits, codes
    /// and that the length is exactly what the header implies.
    pub fn parse(b: &[u8]) -> Result<ZebraFrame, FrameError> {
        if !has_magic(b) {
            return Err(FrameError::Magic);
        }
        need("frame", b.len(), 8)?;
        if b[4] != VERSION {
            return Err(FrameError::Version(b[4]));
        }
        match b[5] {
            frame_type::PUSH => PushTrailer::parse_body(b).map(ZebraFrame::Push),
            frame_type::SETTLE => Settle::parse_body(b).map(ZebraFrame::Settle),
            frame_type::HOTSET => HotSetFrame::parse_body(b).map(ZebraFrame::HotSet),
            frame_type::RESTART => RestartFrame::parse_body(b).map(ZebraFrame::Restart),
            t => Err(FrameError::Type(t)),
        }
    }
}

impl ZebraFrame {
    /// The frame's type code (byte 5).
    pub fn kind(&self) -> u8 {
        match self {
            ZebraFrame::Push(_) => frame_type::PUSH,
            ZebraFrame::Settle(_) => frame_type::SETTLE,
            ZebraFrame::HotSet(_) => frame_type::HOTSET,
            ZebraFrame::Restart(_) => frame_type::RESTART,
        }
    }
}

impl PushTrailer {
    fn parse_body(b: &[u8]) -> Result<PushTrailer, FrameError> {
        const WHAT: &str = "PUSH trailer";
        need(WHAT, b.len(), PUSH_HEADER_LEN)?;
        if b[6] & push_flags::RESERVED != 0 {
            return Err(FrameError::Reserved(WHAT));
        }
        let val_type =
            DataType::from_code(i32::from(b[7])).map_err(|_| FrameError::ValueType(b[7]))?;
        let bitmap = b[6] & push_flags::BITMAP != 0;
        let count = u32_at(b, 20) as usize;
        let body = if bitmap {
            if count > MAX_BITMAP_BYTES {
                return Err(FrameError::TooLarge { what: WHAT, count });
            }
            count
        } else {
            count.saturating_mul(PUSH_ENTRY_LEN)
        };
        exact(WHAT, b.len(), body.saturating_add(PUSH_HEADER_LEN))?;
        let (round, previous) = (u32_at(b, 12), u32_at(b, 16));
        if previous >= round {
            return Err(FrameError::Round { round, previous });
        }
        let rest = &b[PUSH_HEADER_LEN..];
        let hot: Vec<u32> = if bitmap {
            bits_set(rest).collect()
        } else {
            let hot: Vec<u32> = rest
                .chunks_exact(PUSH_ENTRY_LEN)
                .map(|c| u32_at(c, 0))
                .collect();
            check_increasing(&hot)?;
            hot
        };
        Ok(PushTrailer {
            job: u16_at(b, 8),
            worker: u16_at(b, 10),
            round,
            previous,
            val_type,
            lens: b[6] & push_flags::LENS != 0,
            settles: b[6] & push_flags::SETTLES != 0,
            hot,
        })
    }

    /// Parses a frame that must be a PUSH trailer.
    pub fn parse(b: &[u8]) -> Result<PushTrailer, FrameError> {
        match ZebraFrame::parse(b)? {
            ZebraFrame::Push(t) => Ok(t),
            other => Err(FrameError::Type(other.kind())),
        }
    }

    /// Bytes of the bitmap encoding, if it is the shorter one.
    fn bitmap_len(&self) -> Option<usize> {
        let bytes = *self.hot.last()? as usize / 8 + 1;
        (bytes < PUSH_ENTRY_LEN * self.hot.len()).then_some(bytes)
    }

    /// Length of the frame.
    pub fn len(&self) -> usize {
        PUSH_HEADER_LEN + self.bitmap_len().unwrap_or(PUSH_ENTRY_LEN * self.hot.len())
    }

    /// Whether no hot key is listed.
    pub fn is_empty(&self) -> bool {
        self.hot.is_empty()
    }

    /// The frame.
    pub fn to_bytes(&self) -> Result<Vec<u8>, FrameError> {
        check_increasing(&self.hot)?;
        let bitmap = self.bitmap_len();
        let n = bitmap.unwrap_or(self.hot.len());
        let count = u32::try_from(n).map_err(|_| FrameError::TooLarge {
            what: "PUSH trailer",
            count: n,
        })?;
        let mut out = Vec::with_capacity(self.len());
        let flags = (if self.lens { push_flags::LENS } else { 0 })
            | (if self.settles { push_flags::SETTLES } else { 0 })
            | (if bitmap.is_some() {
                push_flags::BITMAP
            } else {
                0
            });
        header(
            &mut out,
            frame_type::PUSH,
            flags,
            self.val_type.code() as u8,
            self.job,
            self.worker,
            self.round,
        );
        out.extend_from_slice(&self.previous.to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
        match bitmap {
            Some(bytes) => {
                let at = out.len();
                out.resize(at + bytes, 0);
                for &i in &self.hot {
                    out[at + i as usize / 8] |= 1 << (i % 8);
                }
            }
            None => {
                for index in &self.hot {
                    out.extend_from_slice(&index.to_be_bytes());
                }
            }
        }
        Ok(out)
    }
}

/// Listed hot keys must increase strictly (one bitmap encodes only such a list).
fn check_increasing(hot: &[u32]) -> Result<(), FrameError> {
    match hot.windows(2).find(|w| w[0] >= w[1]) {
        Some(w) => Err(FrameError::Unsorted(w[1])),
        None => Ok(()),
    }
}

/// The set bits of a bitmap (bit `i` is bit `i mod 8` of byte `i / 8`),
/// ascending. The caller keeps it below 2^29 bytes.
fn bits_set(bitmap: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bitmap.iter().enumerate().flat_map(|(at, &byte)| {
        (0..8u32)
            .filter(move |bit| byte >> bit & 1 == 1)
            .map(move |bit| at as u32 * 8 + bit)
    })
}

fn cause_bytes(c: FallbackCause) -> (u8, u8) {
    match c {
        FallbackCause::Switch(r) => (cause::SWITCH, r as u8),
        FallbackCause::TooManyPackets => (cause::TOO_MANY_PACKETS, 0),
        FallbackCause::NoResponse => (cause::NO_RESPONSE, 0),
        FallbackCause::Restarted => (cause::RESTARTED, 0),
        FallbackCause::Bypassed => (cause::BYPASSED, 0),
    }
}

fn cause_of(c: u8, reason: u8) -> Option<FallbackCause> {
    match (c, reason) {
        (cause::SWITCH, r) => FallbackReason::from_code(r).map(FallbackCause::Switch),
        (cause::TOO_MANY_PACKETS, 0) => Some(FallbackCause::TooManyPackets),
        (cause::NO_RESPONSE, 0) => Some(FallbackCause::NoResponse),
        (cause::RESTARTED, 0) => Some(FallbackCause::Restarted),
        (cause::BYPASSED, 0) => Some(FallbackCause::Bypassed),
        _ => None,
    }
}

impl Settle {
    fn parse_body(b: &[u8]) -> Result<Settle, FrameError> {
        const WHAT: &str = "SETTLE";
        need(WHAT, b.len(), SETTLE_HEADER_LEN)?;
        if b[6] & !settle_flags::RESEND != 0 || b[7] != 0 || b[22] != 0 || b[23] != 0 {
            return Err(FrameError::Reserved(WHAT));
        }
        let (job, worker, round) = (u16_at(b, 8), u16_at(b, 10), u32_at(b, 12));
        let nbatches = u16_at(b, 20) as usize;
        let mut at = SETTLE_HEADER_LEN;
        let mut batches = Vec::with_capacity(nbatches);
        for _ in 0..nbatches {
            need(WHAT, b.len(), at + BATCH_HEADER_LEN)?;
            let seq = u16_at(b, at);
            let (c, reason) = (b[at + 2], b[at + 3]);
            let cause = cause_of(c, reason).ok_or(FrameError::Cause { cause: c, reason })?;
            let count = u32_at(b, at + 4) as usize;
            at += BATCH_HEADER_LEN;
            let end = count
                .checked_mul(PAIR_LEN)
                .and_then(|n| n.checked_add(at))
                .unwrap_or(usize::MAX);
            need(WHAT, b.len(), end)?;
            let pairs = (0..count)
                .map(|i| {
                    let p = at + i * PAIR_LEN;
                    (u32_at(b, p), f32::from_bits(u32_at(b, p + 4)))
                })
                .collect();
            at = end;
            batches.push(Fallback {
                job,
                round,
                worker,
                seq,
                cause,
                pairs,
            });
        }
        exact(WHAT, b.len(), at)?;
        Ok(Settle {
            job,
            worker,
            round,
            packets: u16_at(b, 16),
            added: u16_at(b, 18),
            batches,
            resend: b[6] & settle_flags::RESEND != 0,
        })
    }

    /// Parses a frame that must be a SETTLE frame.
    pub fn parse(b: &[u8]) -> Result<Settle, FrameError> {
        match ZebraFrame::parse(b)? {
            ZebraFrame::Settle(s) => Ok(s),
            other => Err(FrameError::Type(other.kind())),
        }
    }

    /// Length of the frame.
    pub fn len(&self) -> usize {
        SETTLE_HEADER_LEN
            + self
                .batches
                .iter()
                .map(|f| BATCH_HEADER_LEN + PAIR_LEN * f.pairs.len())
                .sum::<usize>()
    }

    /// Whether no batch is carried.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// The frame. Each batch's job, round and worker are this frame's.
    pub fn to_bytes(&self) -> Result<Vec<u8>, FrameError> {
        let n = u16::try_from(self.batches.len()).map_err(|_| FrameError::TooLarge {
            what: "SETTLE",
            count: self.batches.len(),
        })?;
        let mut out = Vec::with_capacity(self.len());
        header(
            &mut out,
            frame_type::SETTLE,
            if self.resend { settle_flags::RESEND } else { 0 },
            0,
            self.job,
            self.worker,
            self.round,
        );
        out.extend_from_slice(&self.packets.to_be_bytes());
        out.extend_from_slice(&self.added.to_be_bytes());
        out.extend_from_slice(&n.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        for f in &self.batches {
            let count = u32::try_from(f.pairs.len()).map_err(|_| FrameError::TooLarge {
                what: "SETTLE batch",
                count: f.pairs.len(),
            })?;
            let (c, reason) = cause_bytes(f.cause);
            out.extend_from_slice(&f.seq.to_be_bytes());
            out.extend_from_slice(&[c, reason]);
            out.extend_from_slice(&count.to_be_bytes());
            for &(index, value) in &f.pairs {
                out.extend_from_slice(&index.to_be_bytes());
                out.extend_from_slice(&value.to_bits().to_be_bytes());
            }
        }
        Ok(out)
    }
}

impl HotSetFrame {
    fn parse_body(b: &[u8]) -> Result<HotSetFrame, FrameError> {
        const WHAT: &str = "HOTSET";
        need(WHAT, b.len(), HOTSET_HEADER_LEN)?;
        use hotset_flags::{ASIDE, CHANGE, RECOUNT};
        if !matches!(b[6], 0 | CHANGE | ASIDE | RECOUNT) || b[7] != 0 {
            return Err(FrameError::Reserved(WHAT));
        }
        let change = b[6] == CHANGE;
        let aside = b[6] == ASIDE;
        let recount = b[6] == RECOUNT;
        let count = u32_at(b, 16) as usize;
        if !change && count != 0 {
            return Err(FrameError::Reserved(WHAT));
        }
        let body = count.saturating_mul(HOTSET_ENTRY_LEN);
        exact(WHAT, b.len(), body.saturating_add(HOTSET_HEADER_LEN))?;
        let keys = b[HOTSET_HEADER_LEN..]
            .chunks_exact(HOTSET_ENTRY_LEN)
            .map(|c| {
                let key = u64::from(u32_at(c, 0)) << 32 | u64::from(u32_at(c, 4));
                (key, u32_at(c, 8))
            })
            .collect();
        Ok(HotSetFrame {
            job: u16_at(b, 8),
            worker: u16_at(b, 10),
            from_round: u32_at(b, 12),
            change,
            aside,
            recount,
            seen: u32_at(b, 20),
            floor: u32_at(b, 24),
            keys,
        })
    }

    /// Parses a frame that must be a HOTSET frame.
    pub fn parse(b: &[u8]) -> Result<HotSetFrame, FrameError> {
        match ZebraFrame::parse(b)? {
            ZebraFrame::HotSet(h) => Ok(h),
            other => Err(FrameError::Type(other.kind())),
        }
    }

    /// Length of the frame.
    pub fn len(&self) -> usize {
        HOTSET_HEADER_LEN + HOTSET_ENTRY_LEN * self.keys.len()
    }

    /// Whether no key is listed.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The frame. A frame that keeps the current keys lists none.
    pub fn to_bytes(&self) -> Result<Vec<u8>, FrameError> {
        let keys: &[(u64, u32)] = if self.change { &self.keys } else { &[] };
        let count = u32::try_from(keys.len()).map_err(|_| FrameError::TooLarge {
            what: "HOTSET",
            count: keys.len(),
        })?;
        let flags = match (self.change, self.aside, self.recount) {
            (true, false, false) => hotset_flags::CHANGE,
            (false, true, false) => hotset_flags::ASIDE,
            (false, false, true) => hotset_flags::RECOUNT,
            (false, false, false) => 0,
            _ => return Err(FrameError::Reserved("HOTSET")),
        };
        let mut out = Vec::with_capacity(HOTSET_HEADER_LEN + HOTSET_ENTRY_LEN * keys.len());
        header(
            &mut out,
            frame_type::HOTSET,
            flags,
            0,
            self.job,
            self.worker,
            self.from_round,
        );
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&self.seen.to_be_bytes());
        out.extend_from_slice(&self.floor.to_be_bytes());
        for &(key, len) in keys {
            out.extend_from_slice(&key.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
        }
        Ok(out)
    }
}

impl RestartFrame {
    fn parse_body(b: &[u8]) -> Result<RestartFrame, FrameError> {
        const WHAT: &str = "RESTART";
        exact(WHAT, b.len(), RESTART_LEN)?;
        if b[6] & !restart_flags::STANDBY != 0 || b[7] != 0 {
            return Err(FrameError::Reserved(WHAT));
        }
        let switch = if b[6] & restart_flags::STANDBY != 0 {
            SwitchChoice::Standby
        } else {
            SwitchChoice::Primary
        };
        Ok(RestartFrame {
            job: u16_at(b, 8),
            worker: u16_at(b, 10),
            through: u32_at(b, 12),
            epoch: u32_at(b, 16),
            resend_from: u32_at(b, 20),
            switch,
        })
    }

    /// The frame.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RESTART_LEN);
        let flags = if self.switch.is_standby() {
            restart_flags::STANDBY
        } else {
            0
        };
        header(
            &mut out,
            frame_type::RESTART,
            flags,
            0,
            self.job,
            self.worker,
            self.through,
        );
        out.extend_from_slice(&self.epoch.to_be_bytes());
        out.extend_from_slice(&self.resend_from.to_be_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trailer() -> PushTrailer {
        PushTrailer {
            job: 3,
            worker: 2,
            round: 70_000,
            previous: 65_537,
            val_type: DataType::Other,
            lens: true,
            settles: true,
            hot: vec![7, 0x0102_0304],
        }
    }

    fn settle() -> Settle {
        let f = |seq, cause, pairs| Fallback {
            job: 3,
            round: 9,
            worker: 1,
            seq,
            cause,
            pairs,
        };
        Settle {
            job: 3,
            worker: 1,
            round: 9,
            packets: 4,
            added: 1,
            batches: vec![
                f(
                    1,
                    FallbackCause::Switch(FallbackReason::Late),
                    vec![(0, 1.5), (9, -2.0)],
                ),
                f(2, FallbackCause::NoResponse, vec![]),
                f(u16::MAX, FallbackCause::TooManyPackets, vec![(4, 8.0)]),
            ],
            resend: false,
        }
    }

    #[test]
    fn a_resend_settle_and_a_restart_round_trip() {
        let f = |seq, cause| Fallback {
            job: 3,
            round: 9,
            worker: 1,
            seq,
            cause,
            pairs: vec![(2, 0.5)],
        };
        let s = Settle {
            added: 0,
            batches: vec![
                f(0, FallbackCause::Restarted),
                f(1, FallbackCause::Bypassed),
            ],
            resend: true,
            ..settle()
        };
        let b = s.to_bytes().unwrap();
        assert_eq!(b[6], settle_flags::RESEND);
        assert_eq!(
            (b[24 + 2], b[24 + 8 + 8 + 2]),
            (cause::RESTARTED, cause::BYPASSED)
        );
        assert_eq!(Settle::parse(&b), Ok(s));
        let mut bad = b.clone();
        bad[6] = 0x02;
        assert_eq!(Settle::parse(&bad), Err(FrameError::Reserved("SETTLE")));

        let r = RestartFrame {
            job: 3,
            worker: 1,
            through: 0x0001_0005,
            epoch: 0xDEAD_BEEF,
            resend_from: 3,
            switch: SwitchChoice::Primary,
        };
        let b = r.to_bytes();
        assert_eq!(b.len(), RESTART_LEN);
        assert_eq!(&b[..8], b"ZBPS\x02\x04\x00\x00");
        assert_eq!(
            &b[8..24],
            &[0, 3, 0, 1, 0, 1, 0, 5, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 3]
        );
        assert_eq!(ZebraFrame::parse(&b), Ok(ZebraFrame::Restart(r)));
        let standby = RestartFrame {
            switch: SwitchChoice::Standby,
            ..r
        };
        let sb = standby.to_bytes();
        assert_eq!(&sb[..8], b"ZBPS\x02\x04\x01\x00");
        assert_eq!(&sb[8..], &b[8..]);
        assert_eq!(ZebraFrame::parse(&sb), Ok(ZebraFrame::Restart(standby)));
        for (at, v) in [(6, 2), (6, 0x81), (7, 1)] {
            let mut bad = b.clone();
            bad[at] = v;
            assert_eq!(
                ZebraFrame::parse(&bad),
                Err(FrameError::Reserved("RESTART"))
            );
        }
        assert!(matches!(
            ZebraFrame::parse(&b[..23]),
            Err(FrameError::Length { .. })
        ));
    }

    #[test]
    fn push_round_trips_with_its_byte_table() {
        let t = trailer();
        let b = t.to_bytes().unwrap();
        assert_eq!(b.len(), t.len());
        assert_eq!(&b[..8], b"ZBPS\x02\x01\x03\x0b", "LENS | SETTLES");
        assert_eq!(&b[8..16], &[0, 3, 0, 2, 0, 1, 0x11, 0x70]);
        assert_eq!(&b[16..24], &[0, 1, 0, 1, 0, 0, 0, 2]);
        assert_eq!(&b[24..32], &[0, 0, 0, 7, 1, 2, 3, 4]);
        assert_eq!(PushTrailer::parse(&b), Ok(t));
    }

    #[test]
    fn dense_hot_keys_go_as_a_bitmap() {
        let mut t = trailer();
        t.hot = vec![0, 3, 9, 10, 17];
        assert_eq!(t.len(), 24 + 3, "3 bitmap bytes beat 5 indices of 4");
        let b = t.to_bytes().unwrap();
        assert_eq!(b.len(), t.len());
        assert_eq!(b[6], 0x07, "LENS | SETTLES | BITMAP");
        assert_eq!(
            &b[20..],
            &[0, 0, 0, 3, 0b0000_1001, 0b0000_0110, 0b0000_0010]
        );
        assert_eq!(PushTrailer::parse(&b), Ok(t.clone()));
        t.hot = vec![8, 60];
        assert_eq!(
            t.len(),
            24 + 8,
            "two indices of 4 are no longer than 8 bitmap bytes"
        );
        assert_eq!(t.to_bytes().unwrap()[6], 0x03);
        t.hot = vec![];
        assert_eq!(PushTrailer::parse(&t.to_bytes().unwrap()), Ok(t));
    }

    #[test]
    fn listed_indices_must_increase() {
        let mut t = trailer();
        t.hot = vec![7, 7];
        assert_eq!(t.to_bytes(), Err(FrameError::Unsorted(7)));
        let mut b = trailer().to_bytes().unwrap();
        b[24..28].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        b[28..32].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(PushTrailer::parse(&b), Err(FrameError::Unsorted(7)));
        let mut huge = trailer().to_bytes().unwrap();
        huge[6] |= push_flags::BITMAP;
        huge[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            PushTrailer::parse(&huge),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn settle_round_trips_with_its_byte_table() {
        let s = settle();
        let b = s.to_bytes().unwrap();
        assert_eq!(b.len(), s.len());
        assert_eq!(b.len(), 24 + (8 + 16) + 8 + (8 + 8));
        assert_eq!(&b[..8], b"ZBPS\x02\x02\x00\x00");
        assert_eq!(&b[16..24], &[0, 4, 0, 1, 0, 3, 0, 0]);
        assert_eq!(&b[24..32], &[0, 1, 1, 1, 0, 0, 0, 2]);
        assert_eq!(Settle::parse(&b), Ok(s));
    }

    #[test]
    fn every_defect_is_refused() {
        let p = trailer().to_bytes().unwrap();
        let s = settle().to_bytes().unwrap();
        let with = |b: &[u8], at: usize, v: u8| {
            let mut c = b.to_vec();
            c[at] = v;
            ZebraFrame::parse(&c)
        };
        assert_eq!(ZebraFrame::parse(b"ZBP"), Err(FrameError::Magic));
        assert!(matches!(
            ZebraFrame::parse(b"ZBPS\x01"),
            Err(FrameError::Length { .. })
        ));
        assert_eq!(with(&p, 4, 1), Err(FrameError::Version(1)));
        assert_eq!(with(&p, 5, 9), Err(FrameError::Type(9)));
        assert_eq!(with(&p, 6, 11), Err(FrameError::Reserved("PUSH trailer")));
        assert_eq!(with(&p, 7, 12), Err(FrameError::ValueType(12)));
        assert!(matches!(
            ZebraFrame::parse(&p[..p.len() - 1]),
            Err(FrameError::Length { .. })
        ));
        let mut long = p.clone();
        long.push(0);
        assert!(matches!(
            ZebraFrame::parse(&long),
            Err(FrameError::Length { .. })
        ));
        assert!(matches!(
            with(&p, 23, 0xff),
            Err(FrameError::Length { expected: 1044, .. })
        ));
        assert_eq!(
            with(&p, 17, 0x11),
            Err(FrameError::Round {
                round: 70_000,
                previous: 0x0011_0001
            })
        );
        let mut round_zero = p.clone();
        round_zero[12..16].fill(0);
        assert_eq!(
            ZebraFrame::parse(&round_zero),
            Err(FrameError::Round {
                round: 0,
                previous: 65_537
            })
        );
        assert_eq!(with(&s, 23, 1), Err(FrameError::Reserved("SETTLE")));
        assert_eq!(
            with(&s, 27, 99),
            Err(FrameError::Cause {
                cause: 1,
                reason: 99
            })
        );
        assert_eq!(
            with(&s, 26, 7),
            Err(FrameError::Cause {
                cause: 7,
                reason: 1
            })
        );
        assert!(matches!(
            ZebraFrame::parse(&s[..s.len() - 3]),
            Err(FrameError::Length { .. })
        ));
        let mut long = s.clone();
        long.push(0);
        assert!(matches!(
            ZebraFrame::parse(&long),
            Err(FrameError::Length { .. })
        ));
        assert!(matches!(with(&s, 21, 200), Err(FrameError::Length { .. })));
        assert_eq!(
            PushTrailer::parse(&s),
            Err(FrameError::Type(frame_type::SETTLE))
        );
    }

    fn hotset() -> HotSetFrame {
        HotSetFrame {
            job: 3,
            worker: 1,
            from_round: 65_548,
            change: true,
            aside: false,
            recount: false,
            seen: 65_547,
            floor: 65_540,
            keys: vec![(0x0102_0304_0506_0708, 4), (9, 1)],
        }
    }

    #[test]
    fn hotset_round_trips_with_its_byte_table() {
        let h = hotset();
        let b = h.to_bytes().unwrap();
        assert_eq!(b.len(), h.len());
        assert_eq!(&b[..8], b"ZBPS\x02\x03\x01\x00");
        assert_eq!(&b[8..16], &[0, 3, 0, 1, 0, 1, 0, 0x0c]);
        assert_eq!(&b[16..24], &[0, 0, 0, 2, 0, 1, 0, 0x0b]);
        assert_eq!(&b[24..28], &[0, 1, 0, 0x04]);
        assert_eq!(&b[28..40], &[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 4]);
        assert_eq!(HotSetFrame::parse(&b), Ok(h.clone()));
        let keep = HotSetFrame {
            change: false,
            keys: vec![],
            ..h
        };
        let b = keep.to_bytes().unwrap();
        assert_eq!((b.len(), b[6]), (28, 0));
        assert_eq!(HotSetFrame::parse(&b), Ok(keep.clone()));
        let aside = HotSetFrame {
            aside: true,
            ..keep
        };
        let b = aside.to_bytes().unwrap();
        assert_eq!((b.len(), b[6]), (28, 0x02));
        assert_eq!(HotSetFrame::parse(&b), Ok(aside.clone()));
        let recount = HotSetFrame {
            aside: false,
            recount: true,
            ..aside
        };
        let b = recount.to_bytes().unwrap();
        assert_eq!((b.len(), b[6]), (28, 0x04));
        assert_eq!(HotSetFrame::parse(&b), Ok(recount));
        assert_eq!(
            PushTrailer::parse(&b),
            Err(FrameError::Type(frame_type::HOTSET))
        );
    }

    #[test]
    fn hotset_defects_are_refused() {
        let b = hotset().to_bytes().unwrap();
        let with = |at: usize, v: u8| {
            let mut c = b.clone();
            c[at] = v;
            ZebraFrame::parse(&c)
        };
        assert_eq!(with(6, 3), Err(FrameError::Reserved("HOTSET")));
        assert_eq!(with(6, 5), Err(FrameError::Reserved("HOTSET")));
        assert_eq!(with(6, 8), Err(FrameError::Reserved("HOTSET")));
        assert_eq!(with(7, 1), Err(FrameError::Reserved("HOTSET")));
        assert_eq!(
            with(6, 0),
            Err(FrameError::Reserved("HOTSET")),
            "keep with keys"
        );
        assert!(matches!(with(19, 3), Err(FrameError::Length { .. })));
        assert!(matches!(with(16, 0xff), Err(FrameError::Length { .. })));
    }

    #[test]
    fn truncations_never_panic() {
        for b in [
            trailer().to_bytes().unwrap(),
            settle().to_bytes().unwrap(),
            hotset().to_bytes().unwrap(),
        ] {
            for n in 0..b.len() {
                assert!(ZebraFrame::parse(&b[..n]).is_err());
            }
        }
    }
}
