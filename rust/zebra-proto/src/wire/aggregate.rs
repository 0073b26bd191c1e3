//! Switch → server: one part of a round's aggregate for the server's keys.
//!
//! ```text
//!  0..2  magic        2 version     3 type (5)
//!  4..6  job          6..8 server   8..12 round
//! 12..14 part        14..16 parts (aggregate and coverage parts of this round for this server)
//! 16..24 contributed (bit w: worker w has at least one packet in the sum)
//! 24..32 complete    (bit w: every packet of worker w up to its DONE was added)
//! 32     flags (0x01 FIXED, 0x02 FLUSHED: closed by timeout)
//! 33     reserved (0)
//! 34..36 count        36..40 total (values for this server over all parts)
//! 40..   runs: (base u32, len u16, len × value u32) for hot indices base..base+len
//! ```
//!
//! The body is a sequence of runs of consecutive hot indices, ascending and
//! not touching (a run starts at least two indices after the previous one
//! ends), so a key of `L` values costs `6 + 4 L` bytes instead of `8 L`.

use super::{
    check_common, emit_common, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, Error, Field,
    Result,
};
use crate::consts::{
    packet_type, AGGREGATE_HEADER_LEN, MAX_AGGREGATE_VALUES, RUN_HEADER_LEN, VALUE_LEN,
};

/// Byte ranges of an aggregate part.
pub mod field {
    use super::Field;
    /// Destination server index.
    pub const SERVER: Field = 6..8;
    /// Round.
    pub const ROUND: Field = 8..12;
    /// Index of this part.
    pub const PART: Field = 12..14;
    /// Number of parts (aggregate + coverage) for this round and server.
    pub const PARTS: Field = 14..16;
    /// Workers with a packet in the sum.
    pub const CONTRIBUTED: Field = 16..24;
    /// Workers every packet of which, up to their DONE, was added.
    pub const COMPLETE: Field = 24..32;
    /// Flags.
    pub const FLAGS: usize = 32;
    /// Reserved, zero.
    pub const RESERVED: usize = 33;
    /// Values in this part.
    pub const COUNT: Field = 34..36;
    /// Values in all parts.
    pub const TOTAL: Field = 36..40;
}

/// Flag bits.
pub mod flags {
    /// Values are i32 fixed point.
    pub const FIXED: u8 = 0x01;
    /// The round was closed by timeout, not by every worker's DONE.
    pub const FLUSHED: u8 = 0x02;
    /// Must be zero.
    pub const RESERVED: u8 = 0xFC;
}

super::packet_view!("an aggregate part", "a well-formed aggregate part");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, flags, part numbers and exact length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(b, &[packet_type::AGGREGATE], AGGREGATE_HEADER_LEN)?;
        if b[field::FLAGS] & flags::RESERVED != 0 {
            return Err(Error::ReservedFlags(b[field::FLAGS]));
        }
        if b[field::RESERVED] != 0 {
            return Err(Error::Invalid("reserved byte set"));
        }
        let (part, parts) = (get_u16(b, field::PART), get_u16(b, field::PARTS));
        if part >= parts {
            return Err(Error::Invalid("part index not below part count"));
        }
        let count = get_u16(b, field::COUNT) as usize;
        if count > MAX_AGGREGATE_VALUES {
            return Err(Error::TooMany {
                count,
                max: MAX_AGGREGATE_VALUES,
            });
        }
        if count as u64 > u64::from(get_u32(b, field::TOTAL)) {
            return Err(Error::Invalid("more values in a part than in the total"));
        }
        let (mut at, mut values, mut next) = (AGGREGATE_HEADER_LEN, 0usize, 0u64);
        while at < b.len() {
            if b.len() - at < RUN_HEADER_LEN {
                return Err(Error::Truncated {
                    needed: at + RUN_HEADER_LEN,
                    available: b.len(),
                });
            }
            let base = u64::from(get_u32(b, at..at + 4));
            let len = get_u16(b, at + 4..at + 6) as usize;
            if len == 0 {
                return Err(Error::Invalid("empty run"));
            }
            if base < next {
                return Err(Error::Invalid("runs not ascending and apart"));
            }
            if base + len as u64 > u64::from(u32::MAX) + 1 {
                return Err(Error::Invalid("run past the last hot index"));
            }
            next = base + len as u64 + 1;
            values += len;
            at += RUN_HEADER_LEN + len * VALUE_LEN;
        }
        if values != count {
            return Err(Error::Invalid(
                "runs hold another number of values than count",
            ));
        }
        super::check_exact(b.len(), at)
    }
}

/// Bytes the runs of `pairs` (ascending hot indices) take.
pub fn runs_len(pairs: &[(u32, u32)]) -> usize {
    runs(pairs)
        .map(|r| RUN_HEADER_LEN + r.len() * VALUE_LEN)
        .sum()
}

/// `pairs` (ascending hot indices) cut into runs of consecutive indices.
fn runs(pairs: &[(u32, u32)]) -> impl Iterator<Item = &[(u32, u32)]> {
    pairs.chunk_by(|a, b| a.0.checked_add(1) == Some(b.0))
}

/// Cuts `pairs` (ascending hot indices) into parts whose runs take at most
/// `budget` bytes each (at least one part, possibly empty; `budget` must
/// hold a run of one value). Greedy: a part is filled before the next starts,
/// and a run that does not fit is split.
pub fn split_parts(pairs: &[(u32, u32)], budget: usize) -> Vec<&[(u32, u32)]> {
    assert!(budget >= RUN_HEADER_LEN + VALUE_LEN, "budget below one run");
    let mut parts = Vec::new();
    let (mut start, mut used) = (0, 0);
    for i in 0..pairs.len() {
        let continues = i > start && pairs[i - 1].0.checked_add(1) == Some(pairs[i].0);
        let cost = if continues {
            VALUE_LEN
        } else {
            RUN_HEADER_LEN + VALUE_LEN
        };
        if used + cost > budget {
            parts.push(&pairs[start..i]);
            start = i;
            used = RUN_HEADER_LEN + VALUE_LEN;
        } else {
            used += cost;
        }
    }
    parts.push(&pairs[start..]);
    parts
}

/// A parsed aggregate part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregateRepr {
    /// Job id.
    pub job: u16,
    /// Destination server.
    pub server: u16,
    /// Round.
    pub round: u32,
    /// Index of this part.
    pub part: u16,
    /// Parts of this round for this server (aggregate and coverage).
    pub parts: u16,
    /// Workers with at least one packet in the sum.
    pub contributed: u64,
    /// Workers whose round is complete at the switch.
    pub complete: u64,
    /// Values are fixed point.
    pub fixed: bool,
    /// Closed by timeout.
    pub flushed: bool,
    /// Values for this server over all parts.
    pub total: u32,
    /// `(hot index, raw value)`, ascending by index (sent as runs).
    pub pairs: Vec<(u32, u32)>,
}

impl AggregateRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<AggregateRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let count = get_u16(b, field::COUNT) as usize;
        let f = b[field::FLAGS];
        Ok(AggregateRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            round: get_u32(b, field::ROUND),
            part: get_u16(b, field::PART),
            parts: get_u16(b, field::PARTS),
            contributed: get_u64(b, field::CONTRIBUTED),
            complete: get_u64(b, field::COMPLETE),
            fixed: f & flags::FIXED != 0,
            flushed: f & flags::FLUSHED != 0,
            total: get_u32(b, field::TOTAL),
            pairs: {
                let mut pairs = Vec::with_capacity(count);
                let mut at = AGGREGATE_HEADER_LEN;
                while at < b.len() {
                    let base = get_u32(b, at..at + 4);
                    let len = get_u16(b, at + 4..at + 6) as usize;
                    at += RUN_HEADER_LEN;
                    for e in 0..len {
                        pairs.push((base + e as u32, get_u32(b, at..at + VALUE_LEN)));
                        at += VALUE_LEN;
                    }
                }
                pairs
            },
        })
    }

    /// Bytes this part takes.
    pub fn buffer_len(&self) -> usize {
        AGGREGATE_HEADER_LEN + runs_len(&self.pairs)
    }

    /// Writes the part into `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        emit_common(buf, packet_type::AGGREGATE);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
        put_u32(buf, field::ROUND, self.round);
        put_u16(buf, field::PART, self.part);
        put_u16(buf, field::PARTS, self.parts);
        put_u64(buf, field::CONTRIBUTED, self.contributed);
        put_u64(buf, field::COMPLETE, self.complete);
        buf[field::FLAGS] = (if self.fixed { flags::FIXED } else { 0 })
            | (if self.flushed { flags::FLUSHED } else { 0 });
        buf[field::RESERVED] = 0;
        put_u16(buf, field::COUNT, self.pairs.len() as u16);
        put_u32(buf, field::TOTAL, self.total);
        let mut at = AGGREGATE_HEADER_LEN;
        for run in runs(&self.pairs) {
            put_u32(buf, at..at + 4, run[0].0);
            put_u16(buf, at + 4..at + 6, run.len() as u16);
            at += RUN_HEADER_LEN;
            for &(_, v) in run {
                put_u32(buf, at..at + VALUE_LEN, v);
                at += VALUE_LEN;
            }
        }
    }

    /// The part as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part() -> AggregateRepr {
        AggregateRepr {
            job: 1,
            server: 2,
            round: 3,
            part: 0,
            parts: 2,
            contributed: 0b1011,
            complete: 0b0011,
            fixed: false,
            flushed: true,
            total: 5,
            pairs: vec![(4, 7), (9, 1)],
        }
    }

    #[test]
    fn round_trip() {
        let r = part();
        let b = r.to_bytes();
        assert_eq!(b.len(), 40 + 2 * (6 + 4));
        assert_eq!(b[32], flags::FLUSHED);
        assert_eq!(
            AggregateRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
    }

    #[test]
    fn consecutive_indices_travel_as_one_run() {
        let pairs: Vec<(u32, u32)> = (10..18).map(|i| (i, i * 3)).chain([(20, 1)]).collect();
        let r = AggregateRepr {
            total: 9,
            pairs: pairs.clone(),
            ..part()
        };
        let b = r.to_bytes();
        assert_eq!(b.len(), 40 + (6 + 8 * 4) + (6 + 4));
        assert_eq!(&b[40..46], &[0, 0, 0, 10, 0, 8]);
        let back = AggregateRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(back.pairs, pairs);
        assert_eq!(runs_len(&pairs), b.len() - 40);
    }

    #[test]
    fn split_parts_respects_the_budget_and_keeps_every_pair() {
        let pairs: Vec<(u32, u32)> = (0..100u32)
            .filter(|i| i % 7 != 3)
            .map(|i| (i, i))
            .chain((1000..1050).map(|i| (i, 1)))
            .collect();
        for budget in [10, 11, 24, 50, 152, 1432] {
            let parts = split_parts(&pairs, budget);
            assert_eq!(parts.concat(), pairs, "budget {budget}");
            for p in &parts {
                assert!(runs_len(p) <= budget, "budget {budget}: {}", runs_len(p));
                assert!(!p.is_empty());
            }
            for w in parts.windows(2) {
                let (a, b) = (w[0], w[1][0]);
                let used = runs_len(a);
                let extra = if a.last().unwrap().0 + 1 == b.0 {
                    4
                } else {
                    10
                };
                assert!(used + extra > budget, "budget {budget}: a part ended early");
            }
        }
        assert_eq!(split_parts(&[], 152), vec![&[][..]]);
    }

    #[test]
    fn malformed_runs_are_errors() {
        let good = AggregateRepr {
            total: 3,
            pairs: vec![(4, 7), (5, 8), (9, 1)],
            ..part()
        }
        .to_bytes();
        assert!(Packet::new_checked(&good[..]).is_ok());
        let with = |at: usize, v: &[u8]| {
            let mut b = good.clone();
            b[at..at + v.len()].copy_from_slice(v);
            Packet::new_checked(b).map(|_| ())
        };
        // An empty run.
        assert_eq!(with(44, &[0, 0]), Err(Error::Invalid("empty run")));
        // The second run starts inside (or right after) the first.
        assert_eq!(
            with(54, &[0, 0, 0, 6]),
            Err(Error::Invalid("runs not ascending and apart"))
        );
        // A run past u32::MAX.
        assert!(with(54, &[0xff, 0xff, 0xff, 0xff]).is_ok());
        let mut b = good.clone();
        b[54..58].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        b[58..60].copy_from_slice(&[0, 2]);
        b[34..36].copy_from_slice(&[0, 4]);
        b[36..40].copy_from_slice(&[0, 0, 0, 4]);
        b.extend_from_slice(&[0; 4]);
        assert_eq!(
            Packet::new_checked(&b[..]).map(|_| ()),
            Err(Error::Invalid("run past the last hot index"))
        );
        // Count disagrees with the runs; a run cut short.
        assert!(with(34, &[0, 2]).is_err());
        assert!(Packet::new_checked(&good[..good.len() - 2]).is_err());
        assert!(Packet::new_checked(&good[..good.len() - 4]).is_err());
    }

    #[test]
    fn inconsistent_numbers_are_errors() {
        let b = AggregateRepr { part: 2, ..part() }.to_bytes();
        assert!(Packet::new_checked(&b[..]).is_err());
        let b = AggregateRepr { total: 1, ..part() }.to_bytes();
        assert!(Packet::new_checked(&b[..]).is_err());
        let mut b = part().to_bytes();
        b[33] = 1;
        assert!(Packet::new_checked(&b[..]).is_err());
        b[33] = 0;
        b[32] = 0x10;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            Error::ReservedFlags(0x10)
        );
        assert!(Packet::new_checked(&part().to_bytes()[..50]).is_err());
    }
}
