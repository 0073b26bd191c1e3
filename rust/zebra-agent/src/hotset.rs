//! Which PS-lite keys are hot, and where their values live in the switch.
//!
//! A hot key is listed in heat order (the first is the hottest) with its
//! number of values `L`. Its owning server is the PS-lite server whose key
//! range holds it ([`KeyRanges`]); each server is its own zebra-proto job,
//! so hot indices are numbered per server: the server's hot keys in heat
//! order, each taking `L` consecutive indices. Value `e` of key `k` is hot
//! index `base(k) + e` of job `job_base + server(k)`. The heat order is
//! kept within each server, so the switch's heat layout (`index mod R`)
//! still spreads the hottest values over the registers.
//!
//! Every worker, server and the switch must use the same hot set: it fixes
//! the hot indices and the size of each job's switch memory before the
//! first round, which is why `L` is given rather than learned by each
//! process from the pushes it happens to see ([`LenLearner`] learns it
//! from a recorded trace, offline). A push whose value count for a hot key
//! differs from `L` sends that key cold: a wrong `L` costs speed, never
//! exactness.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use thiserror::Error;
use zebra_proto::JobConfig;

use crate::config::AgentConfig;

/// The key range of each PS-lite server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRanges {
    ranges: Vec<Range<u64>>,
}

impl KeyRanges {
    /// PS-lite's own ranges (`Postoffice::GetServerKeyRanges`, the same in
    /// dmlc/ps-lite, MXNet and BytePS): server `i` of `n` holds
    /// `[kMaxKey / n * i, kMaxKey / n * (i + 1))`, `kMaxKey = u64::MAX`.
    pub fn pslite(servers: u16) -> KeyRanges {
        let n = u64::from(servers.max(1));
        let step = u64::MAX / n;
        KeyRanges {
            ranges: (0..n).map(|i| step * i..step * (i + 1)).collect(),
        }
    }

    /// Explicit ranges, server `i` holding `ranges[i]`.
    pub fn new(ranges: Vec<Range<u64>>) -> KeyRanges {
        KeyRanges { ranges }
    }

    /// Number of servers.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there is no server.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The range of server `server`.
    pub fn range(&self, server: u16) -> Option<&Range<u64>> {
        self.ranges.get(server as usize)
    }

    /// The server whose range holds `key`.
    pub fn server_of(&self, key: u64) -> Option<u16> {
        self.ranges
            .iter()
            .position(|r| r.contains(&key))
            .and_then(|i| u16::try_from(i).ok())
    }
}

/// A hot key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotKey {
    /// The PS-lite key.
    pub key: u64,
    /// Heat rank in the whole list (0 = hottest).
    pub rank: u32,
    /// Owning server rank.
    pub server: u16,
    /// Its place among the server's hot keys, in hot-index order (what a
    /// PUSH trailer lists).
    pub ordinal: u32,
    /// First hot index in the server's job.
    pub base: u32,
    /// Values per push (`L`).
    pub len: u32,
}

impl HotKey {
    /// The hot indices of its values.
    pub fn indices(&self) -> Range<u32> {
        self.base..self.base + self.len
    }
}

/// A hot-key list that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HotSetError {
    /// A key listed twice.
    #[error("hot key {key} is listed twice (ranks {first} and {second})")]
    Duplicate {
        /// The key.
        key: u64,
        /// Its first rank.
        first: u32,
        /// The repeated rank.
        second: u32,
    },
    /// A key with no values.
    #[error("hot key {0} has length 0")]
    ZeroLen(u64),
    /// A key in no server's range.
    #[error("hot key {0} is in no server's key range")]
    NoServer(u64),
    /// A key of another server's range in a server's new hot keys.
    #[error("hot key {key} is not in server {server}'s key range")]
    WrongServer {
        /// The key.
        key: u64,
        /// The server whose keys were replaced.
        server: u16,
    },
    /// A server's new hot keys need more hot indices than its job has.
    #[error("server {server}: new hot keys need {indices} hot values, its job has {capacity}")]
    OverCapacity {
        /// Server rank.
        server: u16,
        /// Hot indices the new keys need.
        indices: u32,
        /// The job's hot indices.
        capacity: u32,
    },
    /// More hot values for one server than a switch holds.
    #[error("server {server}: {indices} hot values, a switch holds at most {max}")]
    TooMany {
        /// Server rank.
        server: u16,
        /// Hot indices it would need.
        indices: u64,
        /// The limit.
        max: u64,
    },
}

/// Most hot indices one job can have: every entry of every register array.
pub const MAX_INDICES: u64 =
    (zebra_proto::consts::MAX_REGISTERS * zebra_proto::consts::MAX_REGISTER_ENTRIES) as u64;

/// Hot keys with their lengths, owners and hot indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotSet {
    by_key: HashMap<u64, HotKey>,
    /// Per server: its hot keys in index order.
    per_server: Vec<Vec<HotKey>>,
    /// Per server: its job's hot indices, at least what its keys use (more
    /// with [`HotSet::with_capacity`], for keys found online).
    capacity: Vec<u32>,
    ranges: KeyRanges,
}

impl HotSet {
    /// A hot set from `(key, L)` in heat order.
    pub fn new(
        keys: impl IntoIterator<Item = (u64, u32)>,
        ranges: KeyRanges,
    ) -> Result<HotSet, HotSetError> {
        let mut by_key: HashMap<u64, HotKey> = HashMap::new();
        let mut per_server: Vec<Vec<HotKey>> = vec![Vec::new(); ranges.len()];
        let mut next: Vec<u64> = vec![0; ranges.len()];
        for (rank, (key, len)) in keys.into_iter().enumerate() {
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            if let Some(first) = by_key.get(&key) {
                return Err(HotSetError::Duplicate {
                    key,
                    first: first.rank,
                    second: rank,
                });
            }
            if len == 0 {
                return Err(HotSetError::ZeroLen(key));
            }
            let server = ranges.server_of(key).ok_or(HotSetError::NoServer(key))?;
            let base = next[server as usize];
            let end = base + u64::from(len);
            if end > MAX_INDICES {
                return Err(HotSetError::TooMany {
                    server,
                    indices: end,
                    max: MAX_INDICES,
                });
            }
            next[server as usize] = end;
            let hk = HotKey {
                key,
                rank,
                server,
                ordinal: per_server[server as usize].len() as u32,
                base: base as u32,
                len,
            };
            by_key.insert(key, hk);
            per_server[server as usize].push(hk);
        }
        Ok(HotSet {
            capacity: next.iter().map(|&n| n as u32).collect(),
            by_key,
            per_server,
            ranges,
        })
    }

    /// This set with every server's job holding at least `values` hot
    /// indices: room for keys that online re-ranking may install
    /// (`crate::online`), also for a server that starts with none.
    pub fn with_capacity(mut self, values: u32) -> Result<HotSet, HotSetError> {
        if u64::from(values) > MAX_INDICES {
            return Err(HotSetError::TooMany {
                server: 0,
                indices: u64::from(values),
                max: MAX_INDICES,
            });
        }
        for c in &mut self.capacity {
            *c = (*c).max(values);
        }
        Ok(self)
    }

    /// A hot set whose keys all have `len` values.
    pub fn uniform(keys: &[u64], len: u32, ranges: KeyRanges) -> Result<HotSet, HotSetError> {
        HotSet::new(keys.iter().map(|&k| (k, len)), ranges)
    }

    /// This set with server `server`'s hot keys replaced by `keys` (hottest
    /// first), the other servers' unchanged. The new keys must be in the
    /// server's key range and fit the hot indices its job has now (the
    /// switch's memory for the job is fixed when the job starts).
    pub fn replace_server(&self, server: u16, keys: &[(u64, u32)]) -> Result<HotSet, HotSetError> {
        if let Some(&(key, _)) = keys
            .iter()
            .find(|(k, _)| self.ranges.server_of(*k) != Some(server))
        {
            return Err(HotSetError::WrongServer { key, server });
        }
        let list = self.per_server.iter().enumerate().flat_map(|(s, old)| {
            let mine: Box<dyn Iterator<Item = (u64, u32)>> = if s == server as usize {
                Box::new(keys.iter().copied())
            } else {
                Box::new(old.iter().map(|k| (k.key, k.len)))
            };
            mine
        });
        let mut set = HotSet::new(list, self.ranges.clone())?;
        let (indices, capacity) = (set.used(server), self.indices(server));
        if indices > capacity {
            return Err(HotSetError::OverCapacity {
                server,
                indices,
                capacity,
            });
        }
        set.capacity.clone_from(&self.capacity);
        Ok(set)
    }

    /// Server `server`'s hot keys, hottest first.
    pub fn server_keys(&self, server: u16) -> &[HotKey] {
        self.per_server
            .get(server as usize)
            .map_or(&[], Vec::as_slice)
    }

    /// The hot key `key`, if hot.
    pub fn get(&self, key: u64) -> Option<&HotKey> {
        self.by_key.get(&key)
    }

    /// Whether `key` is a hot key of server `server`.
    pub fn is_hot(&self, server: u16, key: u64) -> bool {
        self.get(key).is_some_and(|h| h.server == server)
    }

    /// Number of hot keys.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no key is hot.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The servers' key ranges.
    pub fn ranges(&self) -> &KeyRanges {
        &self.ranges
    }

    /// Hot indices of server `server`'s job (0: the server has no job):
    /// what its keys use, or more ([`HotSet::with_capacity`]).
    pub fn indices(&self, server: u16) -> u32 {
        self.capacity.get(server as usize).copied().unwrap_or(0)
    }

    /// Hot indices server `server`'s keys use.
    pub fn used(&self, server: u16) -> u32 {
        self.per_server
            .get(server as usize)
            .and_then(|keys| keys.last())
            .map_or(0, |k| k.base + k.len)
    }

    /// Server `server`'s hot key number `ordinal` (in hot-index order).
    pub fn key_at(&self, server: u16, ordinal: u32) -> Option<&HotKey> {
        self.per_server.get(server as usize)?.get(ordinal as usize)
    }

    /// The hot key and value position of hot index `index` of server
    /// `server`'s job.
    pub fn locate(&self, server: u16, index: u32) -> Option<(&HotKey, u32)> {
        let keys = self.per_server.get(server as usize)?;
        let i = keys.partition_point(|k| k.base <= index).checked_sub(1)?;
        let k = &keys[i];
        (index < k.base + k.len).then_some((k, index - k.base))
    }

    /// The zebra-proto jobs of a PS-lite job: one per server that owns a hot
    /// key, id `job_base + server`, `agent.workers` workers, one server
    /// (index 0), the server's hot indices; the other settings at
    /// zebra-proto's defaults (the switch, workers and servers must then
    /// agree on the rest of `zebra_proto::Config`).
    pub fn job_configs(&self, agent: &AgentConfig) -> Vec<JobConfig> {
        (0..agent.servers)
            .filter(|&s| self.indices(s) > 0)
            .map(|s| JobConfig::new(agent.job(s), agent.workers, self.indices(s), 1))
            .collect()
    }
}

/// Learns each hot key's value count from pushes (a recorded trace, for
/// writing a hot-keys file offline): the first push carrying a key wins;
/// later pushes with another count are counted as conflicts.
#[derive(Debug, Clone, Default)]
pub struct LenLearner {
    lens: BTreeMap<u64, u32>,
    conflicts: u64,
}

impl LenLearner {
    /// A learner that knows nothing.
    pub fn new() -> LenLearner {
        LenLearner::default()
    }

    /// Records a key pushed with `len` values.
    pub fn observe(&mut self, key: u64, len: u32) {
        match self.lens.get(&key) {
            None => {
                self.lens.insert(key, len);
            }
            Some(&l) if l != len => self.conflicts += 1,
            Some(_) => {}
        }
    }

    /// Records every key of a push's KV data, reading `OTHER` values as
    /// `f32` (4 bytes a value).
    pub fn observe_kv(&mut self, kv: &zebra_pslite::KvView<'_>) -> zebra_pslite::Result<()> {
        let width = match kv.val_type() {
            zebra_pslite::DataType::Other => 4,
            t => t.width(),
        };
        for (key, vals, _) in kv.entries()? {
            self.observe(key, u32::try_from(vals.len() / width).unwrap_or(u32::MAX));
        }
        Ok(())
    }

    /// Pushes whose count differed from the first one seen.
    pub fn conflicts(&self) -> u64 {
        self.conflicts
    }

    /// `(key, L)` for the keys of `hot` (in that order) that were seen, and
    /// the keys never seen.
    pub fn lens(&self, hot: &[u64]) -> (Vec<(u64, u32)>, Vec<u64>) {
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for &k in hot {
            match self.lens.get(&k) {
                Some(&l) if l > 0 => found.push((k, l)),
                _ => missing.push(k),
            }
        }
        (found, missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pslite_ranges() {
        let r = KeyRanges::pslite(2);
        assert_eq!(r.server_of(0), Some(0));
        assert_eq!(r.server_of(u64::MAX / 2 - 1), Some(0));
        assert_eq!(r.server_of(u64::MAX / 2), Some(1));
        assert_eq!(r.server_of(u64::MAX - 2), Some(1));
        assert_eq!(r.server_of(u64::MAX - 1), None);
        assert_eq!(KeyRanges::pslite(1).server_of(0x100_0000), Some(0));
    }

    #[test]
    fn indices_per_server_in_heat_order() {
        let hi = u64::MAX / 2;
        let h = HotSet::new(
            [(5, 2), (hi + 1, 3), (7, 1), (hi + 9, 1), (3, 4)],
            KeyRanges::pslite(2),
        )
        .unwrap();
        let k = |key| *h.get(key).unwrap();
        assert_eq!((k(5).server, k(5).base, k(5).rank), (0, 0, 0));
        assert_eq!((k(7).base, k(3).base), (2, 3));
        assert_eq!((k(hi + 1).server, k(hi + 1).base), (1, 0));
        assert_eq!(k(hi + 9).base, 3);
        assert_eq!((h.indices(0), h.indices(1), h.indices(2)), (7, 4, 0));
        assert_eq!(h.locate(0, 1).map(|(k, e)| (k.key, e)), Some((5, 1)));
        assert_eq!(h.locate(0, 6).map(|(k, e)| (k.key, e)), Some((3, 3)));
        assert_eq!(h.locate(0, 7), None);
        assert_eq!(h.locate(1, 3).map(|(k, e)| (k.key, e)), Some((hi + 9, 0)));
        let jobs = h.job_configs(&AgentConfig::new(20, 4, 2));
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[1].id, jobs[1].hot_keys, jobs[1].servers), (21, 4, 1));
    }

    #[test]
    fn bad_lists() {
        let r = KeyRanges::pslite(1);
        assert_eq!(
            HotSet::new([(1, 1), (1, 2)], r.clone()),
            Err(HotSetError::Duplicate {
                key: 1,
                first: 0,
                second: 1
            })
        );
        assert_eq!(
            HotSet::new([(1, 0)], r.clone()),
            Err(HotSetError::ZeroLen(1))
        );
        assert_eq!(
            HotSet::new([(u64::MAX, 1)], r.clone()),
            Err(HotSetError::NoServer(u64::MAX))
        );
        assert!(matches!(
            HotSet::new([(1, u32::MAX)], r),
            Err(HotSetError::TooMany { server: 0, .. })
        ));
    }

    #[test]
    fn one_servers_keys_are_replaced() {
        let hi = u64::MAX / 2;
        let h = HotSet::new([(5, 2), (hi + 1, 3), (7, 1)], KeyRanges::pslite(2)).unwrap();
        let n = h.replace_server(0, &[(9, 1), (5, 2)]).unwrap();
        assert_eq!(n.get(7), None);
        assert_eq!((n.get(9).unwrap().base, n.get(9).unwrap().ordinal), (0, 0));
        assert_eq!((n.get(5).unwrap().base, n.get(5).unwrap().ordinal), (1, 1));
        assert_eq!(n.get(hi + 1).map(|k| (k.server, k.base)), Some((1, 0)));
        assert_eq!(
            n.server_keys(0).iter().map(|k| k.key).collect::<Vec<_>>(),
            [9, 5]
        );
        assert_eq!(
            h.replace_server(0, &[(hi + 2, 1)]),
            Err(HotSetError::WrongServer {
                key: hi + 2,
                server: 0
            })
        );
        assert_eq!(
            h.replace_server(0, &[(9, 4)]),
            Err(HotSetError::OverCapacity {
                server: 0,
                indices: 4,
                capacity: 3
            })
        );
        let roomy = h.clone().with_capacity(5).unwrap();
        assert_eq!(
            (roomy.indices(0), roomy.used(0), roomy.indices(1)),
            (5, 3, 5)
        );
        let n = roomy.replace_server(0, &[(9, 4)]).unwrap();
        assert_eq!((n.indices(0), n.used(0)), (5, 4), "the capacity stays");
        let empty = HotSet::new([], KeyRanges::pslite(2))
            .unwrap()
            .with_capacity(8)
            .unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.job_configs(&AgentConfig::new(20, 4, 2)).len(), 2);
        assert!(HotSet::new([], KeyRanges::pslite(1))
            .unwrap()
            .with_capacity(u32::MAX)
            .is_err());
    }

    #[test]
    fn learner_keeps_the_first_count() {
        let mut l = LenLearner::new();
        l.observe(4, 3);
        l.observe(4, 2);
        l.observe(9, 1);
        assert_eq!(l.conflicts(), 1);
        assert_eq!(l.lens(&[9, 4, 5]), (vec![(9, 1), (4, 3)], vec![5]));
    }
}
