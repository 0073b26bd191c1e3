//! Recirculations per packet (paper Fig. 10): heat-based layout with
//! Algorithm 1 against a random layout, on a Zipf workload, measured by the
//! switch model itself. The paper reports < 1 for heat + Algorithm 1 and
//! about 10 for random placement; our target is ≤ 0.5 and "much more" for
//! random. `cargo test --release -p zebra-proto --test recirculation --
//! --nocapture` prints the table quoted in `docs/HOTKEYS.md`.

use zebra_proto::rng::SplitMix64;
use zebra_proto::{
    Config, JobConfig, LayoutKind, Packing, Switch, Timestamp, Worker, WorkerAction,
};

const UNIVERSE: usize = 200_000;
const HOT_KEYS: u32 = 30_000;
const ROUNDS: u32 = 20;

/// Zipf(s) over `0..n` by inverse CDF; rank 0 is the most frequent key, so
/// a key's rank is its heat rank.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Zipf {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|k| {
                acc += 1.0 / (k as f64).powf(s);
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf { cdf }
    }

    fn sample(&self, rng: &mut SplitMix64) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

#[derive(Debug)]
struct Measure {
    packets: u64,
    pairs: u64,
    recirc_per_packet: f64,
}

fn measure(layout: LayoutKind, packing: Packing, pushes: &[Vec<(u32, f32)>]) -> Measure {
    let mut job = JobConfig::new(1, 1, HOT_KEYS, 1);
    job.layout = layout;
    let mut c = Config::new(vec![job]);
    c.packing = packing;
    c.max_seqs = 8192;
    c.worker_max_in_flight = usize::MAX;
    let mut switch = Switch::new(c.clone()).unwrap();
    let mut worker = Worker::new(&c, 1, 0).unwrap();
    for (i, pairs) in pushes.iter().enumerate() {
        let now = Timestamp(i as u64 * 1_000_000);
        // In the order sent: the first answer hands the worker the job's
        // token, and once a packet showed it, packets sent before without it
        // are refused (they would be sent again, with it, on a timeout).
        let mut queue: std::collections::VecDeque<WorkerAction> = worker
            .push(now, i as u32 + 1, pairs.clone())
            .unwrap()
            .into();
        while let Some(a) = queue.pop_front() {
            if let WorkerAction::Send(bytes) = a {
                for r in switch.handle_packet(now, &bytes) {
                    if let zebra_proto::SwitchAction::Ack { payload, .. } = r {
                        queue.extend(worker.handle_packet(now, &payload));
                    }
                }
            }
        }
        assert!(worker.is_idle());
    }
    let st = switch.stats();
    assert_eq!(st.added_packets, worker.stats().packets);
    assert_eq!(st.recirculations, worker.stats().planned_recirculations);
    Measure {
        packets: st.added_packets,
        pairs: st.added_pairs,
        recirc_per_packet: st.recirculations_per_packet(),
    }
}

fn workload(draws: usize, seed: u64) -> Vec<Vec<(u32, f32)>> {
    let zipf = Zipf::new(UNIVERSE, 1.05);
    let mut rng = SplitMix64::new(seed);
    (0..ROUNDS)
        .map(|_| {
            let mut hot = std::collections::BTreeSet::new();
            for _ in 0..draws {
                let k = zipf.sample(&mut rng) as u32;
                if k < HOT_KEYS {
                    hot.insert(k);
                }
            }
            hot.into_iter().map(|k| (k, 1.0)).collect()
        })
        .collect()
}

fn table(draws: usize) -> Vec<((&'static str, &'static str), Measure)> {
    let pushes = workload(draws, 2024 + draws as u64);
    let mean_pairs = pushes.iter().map(Vec::len).sum::<usize>() / pushes.len();
    println!();
    println!("Zipf(1.05) over {UNIVERSE} keys, {HOT_KEYS} hot, {draws} draws per push: {mean_pairs} hot pairs per push");
    let c = Config::new(vec![JobConfig::new(1, 1, HOT_KEYS, 1)]);
    println!(
        "R = {} registers, {}-byte packets ({} pairs), {ROUNDS} pushes",
        c.registers,
        c.packet_size,
        c.pairs_per_packet()
    );
    println!(
        "{:<8} {:<11} {:>8} {:>10} {:>14}",
        "layout", "packing", "packets", "pairs/pkt", "recirc/packet"
    );
    let mut results = Vec::new();
    for (lname, layout) in [
        ("heat", LayoutKind::Heat),
        ("random", LayoutKind::Random { seed: 7 }),
    ] {
        for (pname, packing) in [
            ("sequential", Packing::Sequential),
            ("strict", Packing::Strict),
            ("fill", Packing::Fill),
        ] {
            let m = measure(layout, packing, &pushes);
            println!(
                "{lname:<8} {pname:<11} {:>8} {:>10.2} {:>14.3}",
                m.packets,
                m.pairs as f64 / m.packets as f64,
                m.recirc_per_packet
            );
            results.push(((lname, pname), m));
        }
    }
    results
}

#[test]
fn heat_layout_and_algorithm_1_keep_recirculations_low() {
    for draws in [6_000, 400] {
        let results = table(draws);
        let get = |l: &str, p: &str| &results.iter().find(|r| r.0 == (l, p)).unwrap().1;
        assert_eq!(get("heat", "strict").recirc_per_packet, 0.0);
        assert!(get("heat", "fill").recirc_per_packet <= 0.5);
        let random = get("random", "sequential").recirc_per_packet;
        assert!(random >= 1.0, "random layout without Algorithm 1: {random}");
        assert!(random >= 4.0 * get("heat", "fill").recirc_per_packet.max(0.05));
        let (strict, fill) = (get("heat", "strict"), get("heat", "fill"));
        assert!(
            (strict.packets as f64) <= 1.2 * fill.packets as f64,
            "heat layout: conflict-free packets cost few extra packets ({} vs {})",
            strict.packets,
            fill.packets
        );
    }
}
