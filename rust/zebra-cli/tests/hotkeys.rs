//! `zebra trace gen`, `zebra profile` and `zebra precision` as processes:
//! a generated trace split over two files profiles into a hot-keys file the
//! hot path loads, with the predicted share and Principle 1's limits in its
//! header; bad input is refused with a message.

use std::path::Path;
use std::process::{Command, Output};

use zebra_hotpath::HotKeys;

fn zebra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zebra"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> (String, String) {
    let out = zebra(args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    (text(&out.stdout), text(&out.stderr))
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn gen(dir: &Path, name: &str, seed: &str) -> String {
    let out = path(dir, name);
    let (stdout, _) = ok(&[
        "trace",
        "gen",
        "--out",
        &out,
        "--keys",
        "200000",
        "--keys-per-push",
        "60",
        "--workers",
        "2",
        "--rounds",
        "100",
        "--values",
        "4",
        "--seed",
        seed,
    ]);
    assert!(
        stdout.contains("top 40 keys expected to take 50.00 %"),
        "{stdout}"
    );
    out
}

#[test]
fn profile_of_two_traces_is_a_hot_keys_file_with_its_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let a = gen(dir.path(), "a.trace", "1");
    let b = gen(dir.path(), "b.trace", "2");
    let keys = path(dir.path(), "hot.keys");
    let cdf = path(dir.path(), "cdf.csv");
    let (_, stderr) = ok(&[
        "profile",
        &a,
        &b,
        "--out",
        &keys,
        "--p",
        "0.5",
        "--cdf",
        &cdf,
        "--servers",
        "2",
    ]);
    assert!(stderr.contains("predicted hot share: "), "{stderr}");
    let text = std::fs::read_to_string(&keys).unwrap();
    assert!(
        text.contains("(400 records)") || text.contains("(200 records)"),
        "{text}"
    );
    assert!(text.contains("reached p"), "{text}");
    let hk = HotKeys::load(Path::new(&keys)).unwrap();
    assert!(
        (30..=60).contains(&hk.len()),
        "k near the model's 40: {}",
        hk.len()
    );
    let entries: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(entries.iter().all(|l| l.ends_with(" 4")), "{entries:?}");
    let share: f64 = text
        .split("predicted hot share: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap();
    assert!((50.0..60.0).contains(&share), "{share}");
    let per_server = text.lines().find(|l| l.contains("per server")).unwrap();
    let counts: Vec<usize> = per_server
        .split("server ")
        .skip(2)
        .map(|t| t.split(": ").nth(1).unwrap().split(' ').next().unwrap())
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 2, "{per_server}");
    assert_eq!(counts.iter().sum::<usize>(), hk.len());
    assert!(
        counts.iter().all(|&c| c > 0),
        "keys spread over both servers"
    );
    let csv = std::fs::read_to_string(&cdf).unwrap();
    assert!(csv.starts_with("k,key_share,update_share,value_share\n"));
    assert!(csv
        .lines()
        .any(|l| l.starts_with(&format!("{},", hk.len()))));

    let tight = path(dir.path(), "tight.keys");
    let (_, stderr) = ok(&[
        "profile",
        &a,
        "--out",
        &tight,
        "--p",
        "0.9",
        "--switch-mem",
        "160",
    ]);
    assert!(
        stderr.contains("at most 1 of the 1024 slots a register"),
        "{stderr}"
    );
    assert!(stderr.contains("limited by the switch"), "{stderr}");
    assert_eq!(
        HotKeys::load(Path::new(&tight)).unwrap().len(),
        8,
        "160 B / (4 B x 32 registers) = 1 slot a register: 32 values, 8 keys of 4"
    );

    let sampled = path(dir.path(), "sampled.keys");
    let (_, stderr) = ok(&[
        "profile",
        &a,
        "--out",
        &sampled,
        "--sample-rate",
        "10",
        "--seed",
        "3",
    ]);
    assert!(
        stderr.contains("sampling: 10 % of the rounds (seed 3;"),
        "{stderr}"
    );
}

#[test]
fn precision_rises_with_the_sampling_rate() {
    let dir = tempfile::tempdir().unwrap();
    let a = gen(dir.path(), "a.trace", "5");
    let csv = path(dir.path(), "p.csv");
    let (stdout, _) = ok(&[
        "precision",
        &a,
        "--rates",
        "5,50,100",
        "--repeats",
        "3",
        "--csv",
        &csv,
    ]);
    assert!(stdout.contains("kendall tau"), "{stdout}");
    let rows: Vec<Vec<f64>> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 3);
    assert!(rows[0][2] < rows[1][2], "{rows:?}");
    assert_eq!(
        (rows[2][2], rows[2][4]),
        (1.0, 0.0),
        "all records: the same set and order"
    );
}

#[test]
fn bad_input_is_refused_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let junk = path(dir.path(), "junk.trace");
    std::fs::write(&junk, b"not a trace at all").unwrap();
    let out_keys = path(dir.path(), "x.keys");
    for (args, want) in [
        (
            vec!["profile", &junk, "--out", &out_keys],
            "not a Zebra trace",
        ),
        (
            vec!["profile", "/nonexistent.trace", "--out", &out_keys],
            "no such trace file",
        ),
        (
            vec!["precision", &junk, "--rates", "0"],
            "must be in (0, 100]",
        ),
        (
            vec![
                "trace",
                "gen",
                "--out",
                &out_keys,
                "--keys",
                "1000",
                "--keys-per-push",
                "100",
            ],
            "cannot take",
        ),
    ] {
        let out = zebra(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(want),
            "{args:?}: {stderr}"
        );
    }
}
