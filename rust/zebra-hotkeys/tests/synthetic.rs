//! The synthetic traces have the shape they are asked for: the top
//! `hot_fraction` of the keys take `hot_share` of the updates (paper
//! Figure 4), measured on the written trace by the profiler, within
//! [`TOLERANCE`].

use std::path::PathBuf;

use zebra_hotkeys::profile::{scan, Sample};
use zebra_hotkeys::synth::{generate, Model};
use zebra_hotkeys::{Principle1, Shape, SynthSpec, TraceWriter};

/// Largest allowed gap between the measured and the target share of the
/// top `k` keys, in absolute share (3 percentage points).
const TOLERANCE: f64 = 0.03;

fn write_trace(spec: &SynthSpec, dir: &tempfile::TempDir, name: &str) -> (PathBuf, f64) {
    let model = Model::fit(spec).unwrap();
    let path = dir.path().join(name);
    let mut w = TraceWriter::create(&path, u64::MAX).unwrap();
    let g = generate(spec, &model, &mut w).unwrap();
    drop(w);
    assert_eq!(g.records, u64::from(spec.workers * spec.rounds));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), g.bytes);
    (path, g.top_pairs as f64 / g.pairs as f64)
}

#[test]
fn generated_top_k_share_matches_the_target() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, name) in [(Shape::Oa, "oa"), (Shape::Se, "se")] {
        let mut spec = SynthSpec::new(shape, 1_000_000, 250, 4, 100);
        spec.values = 2;
        spec.seed = 11;
        let k = spec.hot_keys() as usize;
        assert_eq!(k, 200);
        let (path, model_share) = write_trace(&spec, &dir, name);
        let mut full = [Sample::new(1.0, 0)];
        let scans = scan(&[path], &mut full, &mut |_| {}).unwrap();
        assert!(scans[0].truncated.is_none());
        let ranking = full[0].counts.rank();
        assert_eq!(ranking.records, 400);
        let (updates, values) = ranking.shares(k);
        println!(
            "{name}: target {:.3}, model ranks {model_share:.3}, profiled top {k} {updates:.3}",
            spec.hot_share
        );
        assert!(
            (updates - spec.hot_share).abs() <= TOLERANCE,
            "{name}: {updates}"
        );
        assert!(
            (model_share - spec.hot_share).abs() <= TOLERANCE,
            "{name}: {model_share}"
        );
        assert!(
            (values - updates).abs() < 1e-12,
            "every key carries 2 values"
        );
        let choice = Principle1 {
            p: spec.hot_share,
            ..Principle1::default()
        }
        .choose(&ranking, |_| true);
        assert!(
            choice.k.abs_diff(k) <= k / 5,
            "{name}: Principle 1 with p = target finds about k: {} vs {k}",
            choice.k
        );
    }
}

#[test]
fn same_seed_same_trace_other_seed_other_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::new(Shape::Oa, 100_000, 30, 2, 5);
    let (a, _) = write_trace(&spec, &dir, "a");
    let (b, _) = write_trace(&spec, &dir, "b");
    spec.seed = 2;
    let (c, _) = write_trace(&spec, &dir, "c");
    let read = |p| std::fs::read(p).unwrap();
    assert_eq!(read(&a), read(&b));
    assert_ne!(read(&a), read(&c));
}

/// A first-rounds sample keeps each worker's first records only, whatever
/// their round numbers and however the workers' records interleave.
#[test]
fn first_rounds_keep_each_workers_first_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.trace");
    let mut w = TraceWriter::create(&path, u64::MAX).unwrap();
    for i in 0..4u32 {
        for worker in [7u32, 2] {
            let early = if i < 2 { 100 + u64::from(worker) } else { 200 };
            w.record(worker, 1000 - i, &[(early, 1), (5, 3)]).unwrap();
        }
    }
    drop(w);
    let mut samples = [
        Sample::new(1.0, 0),
        Sample::first_rounds(2),
        Sample::first_rounds(9),
    ];
    scan(&[path], &mut samples, &mut |_| {}).unwrap();
    let [all, first2, first9] = samples.map(|s| s.counts.rank());
    assert_eq!((all.records, first2.records, first9.records), (8, 4, 8));
    let mut keys: Vec<u64> = first2.keys.iter().map(|k| k.0).collect();
    keys.sort_unstable();
    assert_eq!(keys, [5, 102, 107], "key 200 only comes in rounds 3 and 4");
    assert_eq!(first9.keys, all.keys);
}

/// The byte prediction counts every entry whole (key, length, values),
/// the cold ones again, and each round's hot values once, whichever worker
/// pushed them.
#[test]
fn byte_prediction_counts_each_rounds_hot_values_once() {
    use std::collections::HashSet;
    use zebra_hotkeys::profile::predict_bytes;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rounds.trace");
    let mut w = TraceWriter::create(&path, u64::MAX).unwrap();
    // Round 1: both workers push hot key 1 (4 values); worker 0 also hot key 2
    // (2 values) and cold key 9 (1 value). Round 2: worker 1 pushes hot key 2.
    w.record(0, 1, &[(1, 4), (2, 2), (9, 1)]).unwrap();
    w.record(1, 1, &[(1, 4)]).unwrap();
    w.record(1, 2, &[(2, 2)]).unwrap();
    drop(w);
    let hot: HashSet<u64> = [1, 2].into_iter().collect();
    let one_server: Vec<_> = std::iter::once(0..u64::MAX).collect();
    let p = predict_bytes(&[path], one_server, &hot).unwrap();
    let entry = |values: u64| 12 + 4 * values;
    assert_eq!(p.whole, 2 * entry(4) + 2 * entry(2) + entry(1));
    assert_eq!(p.cold, entry(1));
    assert_eq!(
        p.aggregates,
        4 * (4 + 2) + 4 * 2,
        "round 1: keys 1 and 2; round 2: key 2"
    );
    assert!((p.ratio() - (p.cold + p.aggregates) as f64 / p.whole as f64).abs() < 1e-12);
}
