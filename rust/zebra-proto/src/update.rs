//! The pull half's updates (`docs/PULL.md`): after a round a server sends
//! the values of the round's hot keys, as its pull answers hold them, once
//! to the switch, which copies every part to the job's workers.
//!
//! - [`UpdateSender`] (one per server): numbers updates from 1 (a chain, so
//!   a worker sees a gap), cuts them into UPDATE parts, sends each part once
//!   to every worker (target `0xFFFF`) through a congestion window, keeps it
//!   until every worker of the job acknowledged it, and resends it to each
//!   worker still missing when a part sent after it reached that worker
//!   first, or on its timeout (learned from the acknowledgements like the
//!   switch's aggregates, at least [`UPDATE_MIN_RTO`], doubling, at most 16×) up to
//!   `aggregate_max_retries` times, at most [`UPDATE_MAX_RETRIES`]. It keeps the updates of the last
//!   `update_window` seqs: a new update gives up any still kept that is
//!   `update_window` seqs older.
//! - [`UpdateReceiver`] (one per server, on a worker): acknowledges every
//!   well-formed part addressed to it, duplicates included; puts updates
//!   together and hands them up strictly in seq order, exactly once; an
//!   update complete while an earlier one is missing is held, and a gap is
//!   reported ([`UpdateEvent::Gap`]) once it is certain (a part
//!   `update_window` past the missing update: the sender gave it up) or has
//!   stayed open [`gap_timeout`]. After a gap the worker's copy of the
//!   server's rows is dropped and restarts from the next update. Late parts
//!   of an update reported in a gap are not acknowledged: the sender gives
//!   it up for this worker rather than count it delivered.
//!
//! Like every state machine here: no I/O and no clock; callers pass `now`.

use std::ops::Range;
use std::time::Duration;

use thiserror::Error;

use crate::config::Config;
use crate::rto::RttEstimator;

mod receiver;
mod sender;

pub use receiver::UpdateReceiver;
pub use sender::{update_max_retries, UpdateSender, UPDATE_MAX_RETRIES, UPDATE_MIN_RTO};

/// A complete update, handed up in seq order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The server's update number.
    pub seq: u32,
    /// The round after which these are the server's values (0 for a BREAK).
    pub round: u32,
    /// The server's pull answers carry a lens frame.
    pub lens: bool,
    /// Drop every row held for this server (values changed outside rounds).
    pub brk: bool,
    /// `(key, value bytes)` in key order.
    pub entries: Vec<(u64, Vec<u8>)>,
}

/// What a receiver hands up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateEvent {
    /// The next update of the chain.
    Update(Update),
    /// These updates will not come (or came malformed): drop the copy of the
    /// server's rows; the chain goes on after them.
    Gap {
        /// The updates skipped.
        missing: Range<u32>,
    },
}

/// What a sender wants done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateAction {
    /// Send this datagram to the switch.
    Send(Vec<u8>),
    /// Update `seq` was given up for these workers (they see a gap).
    GivenUp {
        /// Update number.
        seq: u32,
        /// Its round.
        round: u32,
        /// Bit `w`: worker `w` had not acknowledged all of it.
        workers: u64,
    },
}

/// An update the sender refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UpdateError {
    /// Round 0 is a BREAK's ([`UpdateSender::break_chain`]).
    #[error("round 0 is reserved for a BREAK")]
    ZeroRound,
    /// A key given twice.
    #[error("key {0} given twice")]
    DuplicateKey(u64),
    /// A value larger than an offset can address.
    #[error("key {key}: a value of {len} bytes")]
    TooLarge {
        /// The key.
        key: u64,
        /// Its length.
        len: usize,
    },
    /// More parts than an update may have.
    #[error("{0} parts: an update has at most 65535")]
    TooManyParts(usize),
}

/// How long a receiver waits for a missing update before it reports the
/// gap (unless a later part proves it given up sooner): the time the sender
/// takes to give a part up at its shortest timeout (every resend of
/// [`update_max_retries`], their timeouts doubling, at most 16× and at most
/// [`MAX_RTO`](crate::rto::MAX_RTO), from `aggregate_rto` or from the update timeout's floor
/// [`UPDATE_MIN_RTO`], whichever is longer). A sender whose learned timeout
/// is longer, or whose resends wait for each other, may still resend after
/// that; a gap reported early costs local answers, never exactness.
pub fn gap_timeout(config: &Config) -> Duration {
    let rtt = RttEstimator::new(config.aggregate_rto.max(UPDATE_MIN_RTO));
    (0..=update_max_retries(config))
        .map(|i| rtt.backoff(i))
        .fold(Duration::ZERO, Duration::saturating_add)
}

#[cfg(test)]
mod tests;
