//! The hot-keys file: which PS-lite keys are hot, hottest first.
//!
//! ```text
//! # zebra profile, job 1: 6 hot keys
//! 70000          # rank 0, the hottest
//! 12             # rank 1
//! 100-103        # ranks 2..=5: keys 100, 101, 102, 103
//! 5000 16        # rank 6: key 5000, 16 values (an embedding row)
//! ```
//!
//! One entry per line: a key (a decimal `u64`, as PS-lite sends it) or an
//! inclusive range `a-b` (keys `a..=b` in ascending order), optionally
//! followed by the key's number of values (PS-lite's `val_len` in
//! elements; default 1; each value takes one hot index). A key's line
//! order is its hot rank (0 = hottest), which decides its register and slot
//! in the switch. `#` starts a comment; blank lines are skipped; spaces
//! around entries are ignored. A key listed twice, a reversed range, a
//! number that is not a `u64`, an empty file or more keys than a switch can
//! hold (`MAX_REGISTERS × MAX_REGISTER_ENTRIES`) is an error naming the
//! line. The switch, every worker and every server read the same file.

use std::collections::HashMap;
use std::fs;
use std::ops::Range;
use std::path::Path;

use thiserror::Error;
use zebra_proto::consts::{MAX_REGISTERS, MAX_REGISTER_ENTRIES};

/// Most hot keys a file may hold: every entry of every register array.
pub const MAX_HOT_KEYS: usize = MAX_REGISTERS * MAX_REGISTER_ENTRIES;

/// A hot-keys file that cannot be used.
#[derive(Debug, Error)]
pub enum HotKeysError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a key or a range.
    #[error("line {line}: {text:?} is not a key or an inclusive range a-b of decimal u64 keys")]
    Syntax {
        /// 1-based line number.
        line: usize,
        /// The entry.
        text: String,
    },
    /// A range whose end is below its start.
    #[error("line {line}: range {start}-{end} ends before it starts")]
    Reversed {
        /// 1-based line number.
        line: usize,
        /// First key.
        start: u64,
        /// Last key.
        end: u64,
    },
    /// A key listed twice.
    #[error("line {line}: key {key} is already hot rank {rank} (line {first_line})")]
    Duplicate {
        /// 1-based line number.
        line: usize,
        /// The key.
        key: u64,
        /// Its first rank.
        rank: u32,
        /// Where it was first listed.
        first_line: usize,
    },
    /// More keys than a switch can hold.
    #[error("line {line}: more than {max} hot keys")]
    TooMany {
        /// 1-based line number.
        line: usize,
        /// The limit.
        max: usize,
    },
    /// No key at all.
    #[error("no hot key listed")]
    Empty,
}

/// Hot PS-lite keys in rank order, with the reverse look-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotKeys {
    keys: Vec<u64>,
    values: Vec<u32>,
    lines: Vec<u32>,
    rank: HashMap<u64, u32>,
}

impl HotKeys {
    /// Reads and parses a hot-keys file.
    pub fn load(path: &Path) -> Result<HotKeys, HotKeysError> {
        let text = fs::read_to_string(path).map_err(|source| HotKeysError::Io {
            path: path.display().to_string(),
            source,
        })?;
        HotKeys::parse(&text)
    }

    /// Parses the text of a hot-keys file.
    pub fn parse(text: &str) -> Result<HotKeys, HotKeysError> {
        let mut hk = HotKeys {
            keys: Vec::new(),
            values: Vec::new(),
            lines: Vec::new(),
            rank: HashMap::new(),
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let entry = raw.split('#').next().unwrap_or("").trim();
            if entry.is_empty() {
                continue;
            }
            let syntax = || HotKeysError::Syntax {
                line,
                text: entry.to_string(),
            };
            let ((start, end), values) = match keys_of(entry) {
                Some(range) => (range, 1),
                None => {
                    let (head, last) = entry.rsplit_once(char::is_whitespace).ok_or_else(syntax)?;
                    let values = decimal(last)
                        .and_then(|v| u32::try_from(v).ok())
                        .filter(|&v| v > 0)
                        .ok_or_else(syntax)?;
                    (keys_of(head).ok_or_else(syntax)?, values)
                }
            };
            if end < start {
                return Err(HotKeysError::Reversed { line, start, end });
            }
            let room = (MAX_HOT_KEYS - hk.keys.len()) as u64;
            if end - start >= room {
                return Err(HotKeysError::TooMany {
                    line,
                    max: MAX_HOT_KEYS,
                });
            }
            for key in start..=end {
                hk.push(key, values, line)?;
            }
        }
        if hk.keys.is_empty() {
            return Err(HotKeysError::Empty);
        }
        Ok(hk)
    }

    fn push(&mut self, key: u64, values: u32, line: usize) -> Result<(), HotKeysError> {
        let rank = self.keys.len() as u32;
        if let Some(&first) = self.rank.get(&key) {
            return Err(HotKeysError::Duplicate {
                line,
                key,
                rank: first,
                first_line: self.lines[first as usize] as usize,
            });
        }
        self.rank.insert(key, rank);
        self.keys.push(key);
        self.values.push(values);
        self.lines.push(u32::try_from(line).unwrap_or(u32::MAX));
        Ok(())
    }

    /// Number of hot keys `K`.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is no hot key (never true for a parsed file).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys, hottest first (index = hot rank).
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// Each key's number of values, in rank order (`VALUES`, default 1).
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// `(key, values)` in rank order.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.keys.iter().copied().zip(self.values.iter().copied())
    }

    /// The hot rank of `key`, if it is hot.
    pub fn rank(&self, key: u64) -> Option<u32> {
        self.rank.get(&key).copied()
    }

    /// The owning server of every hot rank under PS-lite's default key
    /// ranges for `servers` servers (see [`pslite_server_ranges`]).
    pub fn pslite_owners(&self, servers: u16) -> Vec<u16> {
        zebra_proto::JobConfig::owners_from_key_ranges(&self.keys, &pslite_server_ranges(servers))
    }
}

/// A decimal `u64` with nothing else around it but spaces.
fn decimal(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The keys of an entry: `KEY` or `A-B` (spaces allowed around `-`).
fn keys_of(entry: &str) -> Option<(u64, u64)> {
    match entry.split_once('-') {
        Some((a, b)) => Some((decimal(a)?, decimal(b)?)),
        None => decimal(entry).map(|k| (k, k)),
    }
}

/// PS-lite's server key ranges (`Postoffice::GetServerKeyRanges`, the same
/// in dmlc/ps-lite, MXNet and BytePS): server `i` of `n` owns
/// `[u64::MAX / n · i, u64::MAX / n · (i + 1))`.
pub fn pslite_server_ranges(servers: u16) -> Vec<Range<u64>> {
    let n = u64::from(servers.max(1));
    let width = u64::MAX / n;
    (0..n).map(|i| width * i..width * (i + 1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ranges_comments_in_rank_order() {
        let hk = HotKeys::parse(
            "# header\n\n70000   # hottest\n 12\n100-103\n18446744073709551615\n5 - 6 # spaced range\n",
        )
        .unwrap();
        assert_eq!(hk.keys(), [70000, 12, 100, 101, 102, 103, u64::MAX, 5, 6]);
        assert_eq!(hk.len(), 9);
        assert_eq!(hk.rank(101), Some(3));
        assert_eq!(hk.rank(7), None);
        assert_eq!(HotKeys::parse("42-42").unwrap().keys(), [42]);
        assert_eq!(hk.values(), [1; 9]);
        let v = HotKeys::parse("7 16\n1-3 4 # rows\n9 - 10\n11 - 12 2\n").unwrap();
        assert_eq!(
            v.entries().collect::<Vec<_>>(),
            [
                (7, 16),
                (1, 4),
                (2, 4),
                (3, 4),
                (9, 1),
                (10, 1),
                (11, 2),
                (12, 2)
            ]
        );
    }

    #[test]
    fn every_error_names_its_line() {
        let cases = [
            ("1\nx\n", "line 2: \"x\" is not a key"),
            ("1\n-3\n", "line 2: \"-3\""),
            ("1\n3-\n", "line 2: \"3-\""),
            ("+4\n", "line 1: \"+4\""),
            ("0x10\n", "line 1"),
            ("18446744073709551616\n", "line 1"),
            ("1-2-3\n", "line 1"),
            ("9-3\n", "line 1: range 9-3 ends before it starts"),
            ("7 0\n", "line 1: \"7 0\""),
            ("7 4294967296\n", "line 1"),
            ("7 x\n", "line 1"),
            ("7 4 4\n", "line 1"),
            ("5\n1-10\n", "line 2: key 5 is already hot rank 0 (line 1)"),
            ("0-18446744073709551615\n", "line 1: more than"),
            ("# nothing\n\n", "no hot key listed"),
        ];
        for (text, want) in cases {
            let err = HotKeys::parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        let err = HotKeys::load(Path::new("/nonexistent/hot.keys")).unwrap_err();
        assert!(err.to_string().starts_with("/nonexistent/hot.keys: "));
    }

    #[test]
    fn owners_follow_pslite_key_ranges() {
        let r = pslite_server_ranges(3);
        assert_eq!(r[0], 0..u64::MAX / 3);
        assert_eq!(r[2].end, u64::MAX / 3 * 3);
        let hk = HotKeys::parse(&format!(
            "{}\n0\n{}\n{}\n",
            u64::MAX / 3 * 2,
            u64::MAX / 3,
            u64::MAX / 3 - 1
        ))
        .unwrap();
        assert_eq!(hk.pslite_owners(3), [2, 0, 1, 0]);
        assert_eq!(hk.pslite_owners(1), [0, 0, 0, 0]);
        let top = HotKeys::parse("18446744073709551615").unwrap();
        assert_eq!(
            top.pslite_owners(2),
            [1],
            "beyond the last range: last server"
        );
    }
}
