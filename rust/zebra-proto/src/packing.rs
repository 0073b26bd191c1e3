//! Packing a worker's hot pairs into packets (paper §III-D, Algorithm 1).
//!
//! The switch can touch each register array once per pipeline pass. Two
//! pairs of one packet that live in the same register cost a second pass (a
//! recirculation). [`pack`] groups a push's pairs by register and fills
//! each packet with the heads of the fullest register queues, so a packet
//! never holds two pairs of one register ([`Packing::Strict`]) or holds as
//! few as it can while every packet but the last is full ([`Packing::Fill`]).
//! [`Packing::Sequential`] (pairs in rank order, cut every `P`) is the
//! layout-blind baseline.

use crate::layout::Layout;

/// How a worker forms packets from its sparse pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Baseline: pairs in the order given, `P` per packet.
    Sequential,
    /// Algorithm 1: no two pairs of a packet share a register (zero
    /// recirculations); packets may be short when few registers are left.
    Strict,
    /// Algorithm 1, then full packets: as many packets as `Sequential`,
    /// with conflicts only where the registers left cannot fill a packet.
    Fill,
}

/// Pipeline passes a packet with these ranks needs: the largest number of
/// its pairs that share a register (1 for an empty packet).
pub fn passes(ranks: impl IntoIterator<Item = u32>, layout: &Layout) -> u32 {
    let mut per_register = vec![0u32; layout.registers() as usize];
    let mut most = 1;
    for r in ranks {
        let c = &mut per_register[layout.register_of(r)];
        *c += 1;
        most = most.max(*c);
    }
    most
}

/// Splits `pairs` into packets of at most `per_packet` pairs.
pub fn pack<T: Copy>(
    pairs: &[(u32, T)],
    layout: &Layout,
    per_packet: usize,
    mode: Packing,
) -> Vec<Vec<(u32, T)>> {
    let per_packet = per_packet.max(1);
    if mode == Packing::Sequential {
        return pairs.chunks(per_packet).map(<[_]>::to_vec).collect();
    }
    let mut queues: Vec<std::collections::VecDeque<(u32, T)>> = (0..layout.registers())
        .map(|_| Default::default())
        .collect();
    for &p in pairs {
        queues[layout.register_of(p.0)].push_back(p);
    }
    let mut left = pairs.len();
    let mut packets = Vec::with_capacity(left.div_ceil(per_packet));
    let mut order: Vec<usize> = (0..queues.len()).collect();
    while left > 0 {
        let mut packet = Vec::with_capacity(per_packet.min(left));
        loop {
            order.sort_by_key(|&r| (std::cmp::Reverse(queues[r].len()), r));
            let before = packet.len();
            for &r in &order {
                if packet.len() == per_packet {
                    break;
                }
                if let Some(p) = queues[r].pop_front() {
                    packet.push(p);
                }
            }
            let took = packet.len() - before;
            left -= took;
            if mode == Packing::Strict || packet.len() == per_packet || took == 0 || left == 0 {
                break;
            }
        }
        packets.push(packet);
    }
    packets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::LayoutKind;

    fn heat(r: u16, k: u32) -> Layout {
        Layout::new(LayoutKind::Heat, r, k)
    }

    #[test]
    fn strict_packets_never_conflict() {
        let l = heat(4, 64);
        let pairs: Vec<(u32, f32)> = [0u32, 4, 8, 12, 16, 1, 5, 2, 3]
            .iter()
            .map(|&r| (r, r as f32))
            .collect();
        let packets = pack(&pairs, &l, 3, Packing::Strict);
        for p in &packets {
            assert_eq!(passes(p.iter().map(|x| x.0), &l), 1, "{p:?}");
        }
        let mut all: Vec<u32> = packets.iter().flatten().map(|x| x.0).collect();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 2, 3, 4, 5, 8, 12, 16]);
        assert_eq!(packets.len(), 5, "register 0 holds five pairs");
    }

    #[test]
    fn fill_keeps_packet_count_and_minimises_conflicts() {
        let l = heat(4, 64);
        let pairs: Vec<(u32, ())> = [0u32, 4, 8, 12, 16, 1, 5, 2, 3]
            .iter()
            .map(|&r| (r, ()))
            .collect();
        let packets = pack(&pairs, &l, 3, Packing::Fill);
        assert_eq!(packets.len(), 3);
        let total: u32 = packets
            .iter()
            .map(|p| passes(p.iter().map(|x| x.0), &l) - 1)
            .sum();
        let seq: u32 = pack(&pairs, &l, 3, Packing::Sequential)
            .iter()
            .map(|p| passes(p.iter().map(|x| x.0), &l) - 1)
            .sum();
        assert!(total <= seq, "fill {total} vs sequential {seq}");
        assert_eq!(packets.iter().map(Vec::len).sum::<usize>(), 9);
    }

    #[test]
    fn sequential_cuts_in_order_and_empty_input_gives_no_packet() {
        let l = heat(4, 64);
        let pairs: Vec<(u32, ())> = (0..7).map(|r| (r, ())).collect();
        let packets = pack(&pairs, &l, 3, Packing::Sequential);
        assert_eq!(
            packets.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3, 3, 1]
        );
        assert!(pack::<()>(&[], &l, 3, Packing::Strict).is_empty());
        assert_eq!(passes([], &l), 1);
    }
}
