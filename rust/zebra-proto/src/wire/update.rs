//! Server → switch → workers: one part of an update, the server's values of
//! a round's hot keys as its pull answers hold them (`docs/PULL.md`).
//!
//! ```text
//!  0..2  magic     2 version    3 type (10)
//!  4..6  job       6..8 server  8..12 seq (from 1, +1 per update)
//! 12..16 round (0: a BREAK)    16..18 part   18..20 parts
//! 20..22 target (a worker rank, or 0xFFFF: every worker of the job)
//! 22     flags (0x01 RETX, 0x02 LENS, 0x04 BREAK)   23 reserved (0)
//! 24..26 count   26..28 reserved (0)
//! 28..   count × (key u64, offset u32, len u16, len bytes)
//! ```
//!
//! An entry is a fragment of one key's value bytes, at byte `offset` of the
//! value. Entries of a part are in key order; a key's fragments are in
//! offset order and contiguous, within a part and across the parts of an
//! update (a value larger than a datagram is split: [`split_parts`]; put
//! back together by [`reassemble`]).

use super::{
    check_common, emit_common, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, Error, Field,
    Result,
};
use crate::consts::{
    packet_type, MAX_PACKET_SIZE, UPDATE_ENTRY_HEADER_LEN, UPDATE_HEADER_LEN, UPDATE_TARGET_ALL,
};

/// Byte ranges of an update part.
pub mod field {
    use super::Field;
    /// Server index of the job.
    pub const SERVER: Field = 6..8;
    /// The server's update number (from 1).
    pub const SEQ: Field = 8..12;
    /// The round after which these are the server's values (0: a BREAK).
    pub const ROUND: Field = 12..16;
    /// Index of this part.
    pub const PART: Field = 16..18;
    /// Parts of this update.
    pub const PARTS: Field = 18..20;
    /// A worker rank, or `0xFFFF` for every worker of the job.
    pub const TARGET: Field = 20..22;
    /// Flags.
    pub const FLAGS: usize = 22;
    /// Reserved, zero.
    pub const RESERVED: usize = 23;
    /// Entries in this part.
    pub const COUNT: Field = 24..26;
    /// Reserved, zero.
    pub const RESERVED2: Field = 26..28;
}

/// Flag bits.
pub mod flags {
    /// A resend (to the target worker, or to every worker).
    pub const RETX: u8 = 0x01;
    /// The server's pull answers carry a lens frame.
    pub const LENS: u8 = 0x02;
    /// Values changed outside rounds: drop every row held for this server.
    pub const BREAK: u8 = 0x04;
    /// Must be zero.
    pub const RESERVED: u8 = 0xF8;
}

super::packet_view!("an update part", "a well-formed update part");

/// One entry's header fields at byte `at` of `b` (at least
/// [`UPDATE_ENTRY_HEADER_LEN`] bytes from `at`): key, offset, length.
fn entry_at(b: &[u8], at: usize) -> (u64, u32, usize) {
    (
        get_u64(b, at..at + 8),
        get_u32(b, at + 8..at + 12),
        get_u16(b, at + 12..at + 14) as usize,
    )
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks header, flags, numbers, the entries' order and the exact length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        check_common(b, &[packet_type::UPDATE], UPDATE_HEADER_LEN)?;
        if b.len() > MAX_PACKET_SIZE {
            return Err(Error::Invalid("longer than the largest datagram"));
        }
        let f = b[field::FLAGS];
        if f & flags::RESERVED != 0 {
            return Err(Error::ReservedFlags(f));
        }
        if b[field::RESERVED] != 0 || get_u16(b, field::RESERVED2) != 0 {
            return Err(Error::Invalid("reserved bytes set"));
        }
        if get_u32(b, field::SEQ) == 0 {
            return Err(Error::Invalid("update seq 0"));
        }
        let (part, parts) = (get_u16(b, field::PART), get_u16(b, field::PARTS));
        if part >= parts {
            return Err(Error::Invalid("part index not below part count"));
        }
        let count = get_u16(b, field::COUNT) as usize;
        let brk = f & flags::BREAK != 0;
        if brk != (get_u32(b, field::ROUND) == 0) {
            return Err(Error::Invalid("round 0 is a BREAK's, and only a BREAK's"));
        }
        if brk && (count != 0 || parts != 1) {
            return Err(Error::Invalid("a BREAK is one part without entries"));
        }
        let (mut at, mut entries) = (UPDATE_HEADER_LEN, 0usize);
        let mut prev: Option<(u64, u32, usize)> = None;
        while at < b.len() {
            if b.len() - at < UPDATE_ENTRY_HEADER_LEN {
                return Err(Error::Truncated {
                    needed: at + UPDATE_ENTRY_HEADER_LEN,
                    available: b.len(),
                });
            }
            let (key, offset, len) = entry_at(b, at);
            if u64::from(offset) + len as u64 > u64::from(u32::MAX) {
                return Err(Error::Invalid("fragment past the largest offset"));
            }
            match prev {
                Some((k, o, l))
                    if k == key
                        && (l == 0 || len == 0 || u64::from(offset) != u64::from(o) + l as u64) =>
                {
                    return Err(Error::Invalid("a key's fragments not contiguous"));
                }
                Some((k, ..)) if k == key => {}
                Some((k, ..)) if k > key => {
                    return Err(Error::Invalid("entries not in key order"));
                }
                _ if len == 0 && offset != 0 => {
                    return Err(Error::Invalid("an empty fragment inside a value"));
                }
                _ => {}
            }
            prev = Some((key, offset, len));
            entries += 1;
            at += UPDATE_ENTRY_HEADER_LEN + len;
        }
        if entries != count {
            return Err(Error::Invalid("count disagrees with the entries"));
        }
        super::check_exact(b.len(), at)
    }

    /// Job id.
    pub fn job(&self) -> u16 {
        get_u16(self.buffer.as_ref(), super::field::JOB)
    }
    /// Server index.
    pub fn server(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SERVER)
    }
    /// Update number.
    pub fn seq(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SEQ)
    }
    /// Target worker rank, or [`UPDATE_TARGET_ALL`].
    pub fn target(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::TARGET)
    }
    /// Flag byte.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the target (a resend to one worker, in place).
    pub fn set_target(&mut self, target: u16) {
        put_u16(self.buffer.as_mut(), field::TARGET, target);
    }
    /// Sets the flag byte (marks a resend in place).
    pub fn set_flags(&mut self, f: u8) {
        self.buffer.as_mut()[field::FLAGS] = f;
    }
}

/// One fragment of a key's value bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// The key (a PS-lite key).
    pub key: u64,
    /// Where in the value these bytes start.
    pub offset: u32,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// A parsed update part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateRepr {
    /// Job id.
    pub job: u16,
    /// Server index.
    pub server: u16,
    /// The server's update number (from 1).
    pub seq: u32,
    /// The round after which these are the server's values (0: a BREAK).
    pub round: u32,
    /// Index of this part.
    pub part: u16,
    /// Parts of this update.
    pub parts: u16,
    /// A worker rank, or [`UPDATE_TARGET_ALL`].
    pub target: u16,
    /// A resend.
    pub retx: bool,
    /// The server's pull answers carry a lens frame.
    pub lens: bool,
    /// Drop every row held for this server (round 0, no entries).
    pub brk: bool,
    /// Fragments in key order.
    pub entries: Vec<Fragment>,
}

impl UpdateRepr {
    /// The first part of update `seq` of `server` of `job` after `round`, to
    /// every worker, no flag, no entry: a header for [`with_parts`](Self::with_parts).
    pub fn header(job: u16, server: u16, seq: u32, round: u32) -> UpdateRepr {
        UpdateRepr {
            job,
            server,
            seq,
            round,
            part: 0,
            parts: 1,
            target: UPDATE_TARGET_ALL,
            retx: false,
            lens: false,
            brk: false,
            entries: Vec::new(),
        }
    }

    /// The update's parts: this header with each part's index, the number
    /// of parts and its entries (at most 65535 parts: the caller checks).
    pub fn with_parts(&self, parts: Vec<Vec<Fragment>>) -> Vec<UpdateRepr> {
        let n = parts.len() as u16;
        parts
            .into_iter()
            .enumerate()
            .map(|(i, entries)| UpdateRepr {
                part: i as u16,
                parts: n,
                entries,
                ..self.clone()
            })
            .collect()
    }

    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<UpdateRepr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        let f = b[field::FLAGS];
        let mut entries = Vec::with_capacity(get_u16(b, field::COUNT) as usize);
        let mut at = UPDATE_HEADER_LEN;
        while at < b.len() {
            let (key, offset, len) = entry_at(b, at);
            at += UPDATE_ENTRY_HEADER_LEN;
            entries.push(Fragment {
                key,
                offset,
                bytes: b[at..at + len].to_vec(),
            });
            at += len;
        }
        Ok(UpdateRepr {
            job: get_u16(b, super::field::JOB),
            server: get_u16(b, field::SERVER),
            seq: get_u32(b, field::SEQ),
            round: get_u32(b, field::ROUND),
            part: get_u16(b, field::PART),
            parts: get_u16(b, field::PARTS),
            target: get_u16(b, field::TARGET),
            retx: f & flags::RETX != 0,
            lens: f & flags::LENS != 0,
            brk: f & flags::BREAK != 0,
            entries,
        })
    }

    /// Whether the part goes to every worker of the job.
    pub fn to_all(&self) -> bool {
        self.target == UPDATE_TARGET_ALL
    }

    /// The flag byte.
    pub fn flag_byte(&self) -> u8 {
        (if self.retx { flags::RETX } else { 0 })
            | (if self.lens { flags::LENS } else { 0 })
            | (if self.brk { flags::BREAK } else { 0 })
    }

    /// Bytes this part takes.
    pub fn buffer_len(&self) -> usize {
        UPDATE_HEADER_LEN + entries_len(&self.entries)
    }

    /// Writes the part into `buf` ([`buffer_len`](Self::buffer_len) bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        emit_common(buf, packet_type::UPDATE);
        put_u16(buf, super::field::JOB, self.job);
        put_u16(buf, field::SERVER, self.server);
        put_u32(buf, field::SEQ, self.seq);
        put_u32(buf, field::ROUND, self.round);
        put_u16(buf, field::PART, self.part);
        put_u16(buf, field::PARTS, self.parts);
        put_u16(buf, field::TARGET, self.target);
        buf[field::FLAGS] = self.flag_byte();
        buf[field::RESERVED] = 0;
        put_u16(buf, field::COUNT, self.entries.len() as u16);
        put_u16(buf, field::RESERVED2, 0);
        let mut at = UPDATE_HEADER_LEN;
        for e in &self.entries {
            put_u64(buf, at..at + 8, e.key);
            put_u32(buf, at + 8..at + 12, e.offset);
            put_u16(buf, at + 12..at + 14, e.bytes.len() as u16);
            at += UPDATE_ENTRY_HEADER_LEN;
            buf[at..at + e.bytes.len()].copy_from_slice(&e.bytes);
            at += e.bytes.len();
        }
    }

    /// The part as a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v);
        v
    }
}

/// Bytes `entries` take after the header.
pub fn entries_len(entries: &[Fragment]) -> usize {
    entries
        .iter()
        .map(|e| UPDATE_ENTRY_HEADER_LEN + e.bytes.len())
        .sum()
}

/// Cuts `values` (whole values, keys strictly ascending) into the entries
/// of parts that take at most `budget` bytes each after the header (at
/// least one part, possibly empty; `budget` must hold an entry of one byte).
/// Greedy: a part is filled before the next starts, and a value that does
/// not fit is split, so a value larger than a datagram spans parts.
pub fn split_parts(values: &[(u64, Vec<u8>)], budget: usize) -> Vec<Vec<Fragment>> {
    assert!(
        budget > UPDATE_ENTRY_HEADER_LEN,
        "budget below one entry of one byte"
    );
    let mut parts = vec![Vec::new()];
    let mut used = 0;
    for (key, value) in values {
        let mut offset = 0;
        loop {
            let rest = value.len() - offset;
            let need = UPDATE_ENTRY_HEADER_LEN + usize::from(rest > 0);
            if used + need > budget {
                parts.push(Vec::new());
                used = 0;
            }
            let take = rest.min(budget - used - UPDATE_ENTRY_HEADER_LEN);
            if let Some(last) = parts.last_mut() {
                last.push(Fragment {
                    key: *key,
                    offset: offset as u32,
                    bytes: value[offset..offset + take].to_vec(),
                });
            }
            used += UPDATE_ENTRY_HEADER_LEN + take;
            offset += take;
            if offset == value.len() {
                break;
            }
        }
    }
    parts
}

/// The whole values of an update from its parts' entries, in part order:
/// `(key, bytes)` in key order. Refused when keys go back, or a key's
/// fragments overlap, leave a gap or do not start at offset 0.
pub fn reassemble<'a>(
    parts: impl IntoIterator<Item = &'a [Fragment]>,
) -> Result<Vec<(u64, Vec<u8>)>> {
    let mut values: Vec<(u64, Vec<u8>)> = Vec::new();
    for e in parts.into_iter().flatten() {
        match values.last_mut() {
            Some((key, bytes)) if *key == e.key => {
                if bytes.is_empty() || e.bytes.is_empty() || e.offset as usize != bytes.len() {
                    return Err(Error::Invalid("a key's fragments overlap or leave a gap"));
                }
                bytes.extend_from_slice(&e.bytes);
            }
            Some((key, _)) if *key > e.key => {
                return Err(Error::Invalid("keys not ascending across parts"));
            }
            _ if e.offset != 0 => {
                return Err(Error::Invalid("a value's first fragment not at offset 0"));
            }
            _ => values.push((e.key, e.bytes.clone())),
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Message;

    fn frag(key: u64, offset: u32, bytes: &[u8]) -> Fragment {
        Fragment {
            key,
            offset,
            bytes: bytes.to_vec(),
        }
    }

    fn part() -> UpdateRepr {
        UpdateRepr {
            job: 3,
            server: 1,
            seq: 7,
            round: 42,
            part: 1,
            parts: 3,
            target: UPDATE_TARGET_ALL,
            retx: false,
            lens: true,
            brk: false,
            entries: vec![
                frag(5, 4, &[1, 2]),
                frag(9, 0, &[]),
                frag(11, 0, &[3, 4, 5]),
            ],
        }
    }

    fn check(b: &[u8]) -> Result<()> {
        Packet::new_checked(b).map(|_| ())
    }

    #[test]
    fn round_trip_and_layout() {
        let r = part();
        let b = r.to_bytes();
        assert_eq!(b.len(), 28 + 3 * 14 + 5);
        assert_eq!(
            &b[..28],
            &[
                0x5A,
                0x42,
                2,
                10,
                0,
                3,
                0,
                1,
                0,
                0,
                0,
                7,
                0,
                0,
                0,
                42,
                0,
                1,
                0,
                3,
                0xFF,
                0xFF,
                flags::LENS,
                0,
                0,
                3,
                0,
                0
            ]
        );
        assert_eq!(&b[28..42], &[0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 0, 2]);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.job(), p.server(), p.seq(), p.target(), p.flags()),
            (3, 1, 7, UPDATE_TARGET_ALL, flags::LENS)
        );
        assert_eq!(UpdateRepr::parse(&p).unwrap(), r);
        let brk = UpdateRepr {
            round: 0,
            part: 0,
            parts: 1,
            brk: true,
            lens: false,
            target: 2,
            retx: true,
            entries: vec![],
            ..part()
        };
        let b = brk.to_bytes();
        assert_eq!(b[22], flags::RETX | flags::BREAK);
        assert_eq!(
            UpdateRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            brk
        );
    }

    #[test]
    fn a_resend_is_marked_in_place() {
        let mut b = part().to_bytes();
        let mut p = Packet::new_unchecked(&mut b[..]);
        p.set_target(2);
        p.set_flags(p.flags() | flags::RETX);
        let r = UpdateRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!((r.target, r.retx, r.lens), (2, true, true));
        assert!(!r.to_all());
    }

    #[test]
    fn inconsistent_headers_are_errors() {
        let bad = |r: UpdateRepr| check(&r.to_bytes());
        assert_eq!(
            bad(UpdateRepr { seq: 0, ..part() }),
            Err(Error::Invalid("update seq 0"))
        );
        assert!(bad(UpdateRepr { part: 3, ..part() }).is_err());
        assert!(bad(UpdateRepr {
            parts: 0,
            part: 0,
            ..part()
        })
        .is_err());
        assert!(
            bad(UpdateRepr { round: 0, ..part() }).is_err(),
            "round 0 without BREAK"
        );
        assert!(
            bad(UpdateRepr {
                brk: true,
                ..part()
            })
            .is_err(),
            "BREAK with a round"
        );
        assert!(
            bad(UpdateRepr {
                brk: true,
                round: 0,
                ..part()
            })
            .is_err(),
            "BREAK with entries"
        );
        let good = part().to_bytes();
        for (at, v) in [(22, 0x08), (23, 1), (27, 1)] {
            let mut b = good.clone();
            b[at] = v;
            assert!(check(&b).is_err(), "byte {at} = {v}");
        }
        let mut b = good.clone();
        b[22] = 0x80;
        assert_eq!(check(&b), Err(Error::ReservedFlags(0x80)));
        let mut b = good.clone();
        b[25] = 2;
        assert!(check(&b).is_err(), "count disagrees");
        assert!(check(&good[..good.len() - 1]).is_err());
        assert!(check(&good[..30]).is_err());
        let mut long = good.clone();
        long.push(0);
        assert!(check(&long).is_err());
        let huge = UpdateRepr {
            entries: vec![frag(1, 0, &[0; 1500])],
            ..part()
        };
        assert!(bad(huge).is_err(), "longer than any datagram");
    }

    #[test]
    fn entries_out_of_order_are_errors() {
        let with = |entries: Vec<Fragment>| check(&UpdateRepr { entries, ..part() }.to_bytes());
        assert!(with(vec![frag(1, 0, &[1]), frag(1, 1, &[2]), frag(2, 9, &[3])]).is_ok());
        assert_eq!(
            with(vec![frag(2, 0, &[1]), frag(1, 0, &[2])]),
            Err(Error::Invalid("entries not in key order"))
        );
        let gap = Err(Error::Invalid("a key's fragments not contiguous"));
        assert_eq!(with(vec![frag(1, 0, &[1]), frag(1, 2, &[2])]), gap);
        assert_eq!(with(vec![frag(1, 0, &[1, 2]), frag(1, 1, &[2])]), gap);
        assert_eq!(with(vec![frag(1, 0, &[]), frag(1, 0, &[2])]), gap);
        assert_eq!(with(vec![frag(1, 0, &[1]), frag(1, 1, &[])]), gap);
        assert_eq!(
            with(vec![frag(1, 3, &[])]),
            Err(Error::Invalid("an empty fragment inside a value"))
        );
        assert_eq!(
            with(vec![frag(1, u32::MAX, &[1])]),
            Err(Error::Invalid("fragment past the largest offset"))
        );
    }

    #[test]
    fn the_fuzz_seeds_parse() {
        let seed = |b: &[u8]| Message::parse(b).unwrap();
        let all = seed(include_bytes!("../../fuzz/seeds/wire/update-all"));
        let Message::Update(all) = all else {
            panic!("{all:?}")
        };
        assert_eq!(
            (all.seq, all.round, all.lens, all.to_all()),
            (1, 3, true, true)
        );
        assert_eq!(
            all.entries,
            vec![frag(7, 0, &[1, 2, 3, 4]), frag(9, 0, &[5, 6, 7, 8, 9])]
        );
        let one = seed(include_bytes!(
            "../../fuzz/seeds/wire/update-retx-one-worker"
        ));
        assert!(matches!(one, Message::Update(u) if u.retx && u.target == 1));
        let brk = seed(include_bytes!("../../fuzz/seeds/wire/update-break"));
        assert!(matches!(brk, Message::Update(u) if u.brk));
        let ack = seed(include_bytes!("../../fuzz/seeds/wire/update-ack"));
        assert!(matches!(ack, Message::UpdateAck(a) if a.worker == 1));
    }

    fn values(sizes: &[usize]) -> Vec<(u64, Vec<u8>)> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let key = 1000 + 3 * i as u64;
                (key, (0..n).map(|b| (b as u64 * 7 + key) as u8).collect())
            })
            .collect()
    }

    #[test]
    fn split_fills_parts_and_reassembles_a_value_larger_than_a_datagram() {
        let vals = values(&[8, 0, 3000, 4, 100, 1, 1444, 1445]);
        let budget = MAX_PACKET_SIZE - UPDATE_HEADER_LEN;
        let parts = split_parts(&vals, budget);
        assert!(parts.len() >= 4, "{} parts", parts.len());
        let big: Vec<&Fragment> = parts.iter().flatten().filter(|f| f.key == 1006).collect();
        assert!(big.len() >= 3, "3000 bytes span three datagrams");
        for (i, p) in parts.iter().enumerate() {
            assert!(entries_len(p) <= budget);
            let r = UpdateRepr {
                part: i as u16,
                parts: parts.len() as u16,
                entries: p.clone(),
                ..part()
            };
            let b = r.to_bytes();
            assert!(b.len() <= MAX_PACKET_SIZE);
            assert_eq!(
                UpdateRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
                r
            );
            if i + 1 < parts.len() {
                let free = budget - entries_len(p);
                assert!(free <= UPDATE_ENTRY_HEADER_LEN, "part {i} ended early");
            }
        }
        assert_eq!(reassemble(parts.iter().map(|p| &p[..])).unwrap(), vals);
        for budget in [15, 16, 40, 100, 1444] {
            let parts = split_parts(&vals, budget);
            assert!(parts
                .iter()
                .all(|p| entries_len(p) <= budget && !p.is_empty()));
            assert_eq!(reassemble(parts.iter().map(|p| &p[..])).unwrap(), vals);
        }
        assert_eq!(split_parts(&[], 100), vec![Vec::new()]);
        assert_eq!(reassemble([&[][..]]).unwrap(), vec![]);
    }

    #[test]
    fn reassembly_refuses_overlaps_gaps_and_disorder() {
        let whole = |parts: &[Vec<Fragment>]| reassemble(parts.iter().map(|p| &p[..]));
        assert_eq!(
            whole(&[
                vec![frag(1, 0, &[1, 2])],
                vec![frag(1, 2, &[3]), frag(4, 0, &[])]
            ])
            .unwrap(),
            vec![(1, vec![1, 2, 3]), (4, vec![])]
        );
        assert!(whole(&[vec![frag(1, 0, &[1, 2])], vec![frag(1, 1, &[3])]]).is_err());
        assert!(whole(&[vec![frag(1, 0, &[1, 2])], vec![frag(1, 3, &[3])]]).is_err());
        assert!(whole(&[vec![frag(1, 2, &[1])]]).is_err());
        assert!(whole(&[vec![frag(5, 0, &[1])], vec![frag(4, 0, &[1])]]).is_err());
        assert!(whole(&[vec![frag(5, 0, &[])], vec![frag(5, 0, &[1])]]).is_err());
    }
}
