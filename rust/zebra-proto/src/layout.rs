//! Where each hot rank lives in the switch: the paper's §III-D layout.
//!
//! The switch has `R` register arrays; a job owns a region of `ceil(K/R)`
//! slots in each. With the heat-based layout, hot rank `r` (rank 0 is the
//! hottest key) lives in register `r mod R`, slot `r div R`: the hottest
//! keys, which nearly every worker pushes, are spread over all registers,
//! so one packet of them touches each register at most once. The random
//! layout (a seeded permutation of the region) is the baseline the paper
//! compares against.

use crate::rng::SplitMix64;

/// Which placement a job uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutKind {
    /// Register `r mod R`, slot `r div R`.
    Heat,
    /// A seeded random permutation of the job's region (baseline).
    Random {
        /// Permutation seed; switch and workers must use the same.
        seed: u64,
    },
}

/// Register and slot (within the job's region) of one hot rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Register array index, `0..R`.
    pub register: u16,
    /// Slot within the job's region, `0..region_slots`.
    pub slot: u32,
}

/// The placement of one job's hot ranks.
#[derive(Debug, Clone)]
pub struct Layout {
    registers: u32,
    hot_keys: u32,
    region_slots: u32,
    /// For the random layout: rank → position and position → rank, where a
    /// position is `slot * R + register`.
    table: Option<(Vec<u32>, Vec<u32>)>,
}

const EMPTY: u32 = u32::MAX;

impl Layout {
    /// The layout of `hot_keys` ranks over `registers` register arrays.
    pub fn new(kind: LayoutKind, registers: u16, hot_keys: u32) -> Layout {
        let registers = u32::from(registers.max(1));
        let region_slots = hot_keys.div_ceil(registers);
        let table = match kind {
            LayoutKind::Heat => None,
            LayoutKind::Random { seed } => {
                let positions = (region_slots * registers) as usize;
                let mut order: Vec<u32> = (0..positions as u32).collect();
                SplitMix64::new(seed).shuffle(&mut order);
                let to_pos: Vec<u32> = order[..hot_keys as usize].to_vec();
                let mut to_rank = vec![EMPTY; positions];
                for (rank, &pos) in to_pos.iter().enumerate() {
                    to_rank[pos as usize] = rank as u32;
                }
                Some((to_pos, to_rank))
            }
        };
        Layout {
            registers,
            hot_keys,
            region_slots,
            table,
        }
    }

    /// Number of register arrays.
    pub fn registers(&self) -> u32 {
        self.registers
    }

    /// Number of hot ranks placed.
    pub fn hot_keys(&self) -> u32 {
        self.hot_keys
    }

    /// Slots per register the job's region has.
    pub fn region_slots(&self) -> u32 {
        self.region_slots
    }

    /// Where hot rank `rank` lives (`rank < hot_keys`).
    pub fn locate(&self, rank: u32) -> Location {
        let pos = match &self.table {
            None => rank,
            Some((to_pos, _)) => to_pos[rank as usize],
        };
        Location {
            register: (pos % self.registers) as u16,
            slot: pos / self.registers,
        }
    }

    /// Register of hot rank `rank`.
    pub fn register_of(&self, rank: u32) -> usize {
        self.locate(rank).register as usize
    }

    /// The rank stored at `(register, slot)`, if any.
    pub fn rank_at(&self, register: u16, slot: u32) -> Option<u32> {
        let pos = slot * self.registers + u32::from(register);
        match &self.table {
            None => (pos < self.hot_keys).then_some(pos),
            Some((_, to_rank)) => to_rank.get(pos as usize).copied().filter(|&r| r != EMPTY),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_layout_is_mod_and_div() {
        let l = Layout::new(LayoutKind::Heat, 4, 10);
        assert_eq!(l.region_slots(), 3);
        assert_eq!(
            l.locate(0),
            Location {
                register: 0,
                slot: 0
            }
        );
        assert_eq!(
            l.locate(7),
            Location {
                register: 3,
                slot: 1
            }
        );
        assert_eq!(
            l.locate(9),
            Location {
                register: 1,
                slot: 2
            }
        );
        assert_eq!(l.rank_at(1, 2), Some(9));
        assert_eq!(l.rank_at(2, 2), None);
    }

    #[test]
    fn random_layout_is_a_seeded_bijection() {
        let a = Layout::new(LayoutKind::Random { seed: 3 }, 8, 100);
        let b = Layout::new(LayoutKind::Random { seed: 3 }, 8, 100);
        let mut seen = std::collections::HashSet::new();
        for r in 0..100 {
            let loc = a.locate(r);
            assert_eq!(loc, b.locate(r));
            assert!(loc.slot < a.region_slots());
            assert!(seen.insert((loc.register, loc.slot)));
            assert_eq!(a.rank_at(loc.register, loc.slot), Some(r));
        }
        let heat: Vec<_> = (0..8)
            .map(|r| Layout::new(LayoutKind::Heat, 8, 100).register_of(r))
            .collect();
        let rand: Vec<_> = (0..8).map(|r| a.register_of(r)).collect();
        assert_eq!(heat, (0..8).collect::<Vec<_>>());
        assert_ne!(rand, heat);
    }
}
