//! `zebra switch --plan` as a process: the settings `zebra switch` would
//! run with, as JSON (what the P4 control plane loads), and the same refusal
//! and exit code as `zebra switch` for bad ones.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn zebra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zebra"))
        .args(args)
        .env_remove("ZEBRA_HOT_LOSS")
        .env_remove("ZEBRA_JOB_KEY")
        .env_remove("ZEBRA_JOB_KEY_FILE")
        .env("ZEBRA_LOG", "warn")
        .output()
        .unwrap()
}

fn plan(args: &[&str]) -> Value {
    let out = zebra(&[&["switch", "--plan"], args].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zebra switch --plan: {stderr}");
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn the_plan_holds_every_setting_and_the_token_of_the_key() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("job.key"), "s3cret-of-the-job\n", 0o600);
    let conf = dir.path().join("hot.conf");
    write(
        &conf,
        "switch = \"10.0.0.250:9950\"\njob = 7\nworkers = 4\nservers = 2\nhot_key_count = 1000\n\
         number = \"fixed:16\"\nround_timeout_ms = 20\naggregate_max_retries = 3\n\
         server_addr = [\"1=10.0.0.2:9951\"]\njob_key_file = \"job.key\"\n\
         loss = \"drop=0.01,seed=9\"\n",
        0o644,
    );
    let conf = conf.to_str().unwrap();
    let out = zebra(&["switch", "--plan", "--config", conf, "--max-seqs", "512"]);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("s3cret"),
        "the key is never printed"
    );
    let p = plan(&["--config", conf, "--max-seqs", "512"]);
    assert_eq!(p["switch"], "10.0.0.250:9950");
    assert_eq!(
        (p["job_base"].as_u64(), p["keyed"].as_bool()),
        (Some(7), Some(true))
    );
    assert_eq!(
        p["job_per_server"], false,
        "hot_key_count: one job of every server"
    );
    let proto = &p["proto"];
    for (field, want) in [
        ("registers", 32),
        ("slots", 1024),
        ("copies", 2),
        ("packet_size", 192),
        ("aggregate_size", 1472),
        ("max_seqs", 512),
        ("round_timeout_us", 20_000),
        ("aggregate_rto_us", 2_000),
        ("aggregate_max_retries", 3),
        ("uncertain_timeout_us", 5_000_000),
        ("update_window", 8),
    ] {
        assert_eq!(proto[field].as_u64(), Some(want), "{field}");
    }
    assert_eq!(proto["packing"], "strict");
    let derived = zebra_proto::Config {
        max_seqs: 512,
        round_timeout: std::time::Duration::from_millis(20),
        ..zebra_proto::Config::new(Vec::new())
    };
    for (field, want) in [
        (
            "round_timeout_cap_us",
            derived.round_timeout_cap().as_micros() as usize,
        ),
        ("cover_words", derived.cover_words()),
        (
            "coverage_bits_per_packet",
            derived.coverage_bits_per_packet(),
        ),
        (
            "aggregate_run_bytes_per_packet",
            derived.aggregate_run_bytes_per_packet(),
        ),
        ("dense_values_per_packet", derived.dense_values_per_packet()),
    ] {
        assert_eq!(
            proto[field].as_u64(),
            Some(want as u64),
            "{field}: as zebra-proto derives it"
        );
    }
    let jobs = proto["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(
        (
            &job["id"],
            &job["workers"],
            &job["hot_keys"],
            &job["servers"]
        ),
        (
            &Value::from(7),
            &Value::from(4),
            &Value::from(1000),
            &Value::from(2)
        )
    );
    assert_eq!(
        (&job["number"], &job["frac_bits"]),
        (&Value::from("fixed"), &Value::from(16))
    );
    assert_eq!(
        (&job["layout"], &job["layout_seed"]),
        (&Value::from("heat"), &Value::Null)
    );
    assert_eq!(job["region_slots"], 32, "1000 keys over 32 registers");
    assert_eq!(
        job["token"].as_u64(),
        Some(u64::from(zebra_proto::job_token(b"s3cret-of-the-job", 7))),
        "the token every member derives from the key"
    );
    let pinned = &p["server_addrs"][0];
    assert_eq!(
        (
            &pinned["server"],
            &pinned["job"],
            &pinned["index"],
            &pinned["addr"]
        ),
        (
            &Value::from(1),
            &Value::from(7),
            &Value::from(1),
            &Value::from("10.0.0.2:9951")
        )
    );
    assert_eq!(p["loss"]["drop_ppm"], 10_000);
    assert_eq!(p["loss"]["seed"], 9);
    assert_eq!(p["settle_timeout_us"], 30_000_000);

    // ZEBRA_JOB_KEY_FILE as zebra switch reads it: a file anyone may read is refused.
    write(&dir.path().join("open.key"), "k\n", 0o644);
    let open = dir.path().join("open.key");
    let out = Command::new(env!("CARGO_BIN_EXE_zebra"))
        .args(["switch", "--plan", "--workers", "2", "--hot-key-count", "8"])
        .env("ZEBRA_JOB_KEY_FILE", &open)
        .env_remove("ZEBRA_JOB_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("readable by every user"), "{err}");
}

#[test]
fn a_hot_keys_file_makes_one_job_per_owning_server() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("two.keys"),
        "1 32\n9223372036854775808 16\n2 8\n",
        0o644,
    );
    let conf = dir.path().join("two.conf");
    write(
        &conf,
        "job = 7\nworkers = 4\nservers = 2\nhot_keys = \"two.keys\"\nserver_addr = \"1=10.0.0.2:9951\"\n",
        0o644,
    );
    let p = plan(&["--config", conf.to_str().unwrap()]);
    assert_eq!(p["switch"], Value::Null, "no address: the reader decides");
    assert_eq!(p["job_per_server"], true);
    let jobs: Vec<(u64, u64, u64)> = p["proto"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let n = |f: &str| j[f].as_u64().unwrap();
            (n("id"), n("hot_keys"), n("servers"))
        })
        .collect();
    assert_eq!(
        jobs,
        [(7, 40, 1), (8, 16, 1)],
        "a key takes a hot index per value"
    );
    assert_eq!(p["hot_keys"]["keys"], 3);
    assert_eq!(p["hot_keys"]["values"], 56);
    let pinned = &p["server_addrs"][0];
    assert_eq!(
        (&pinned["job"], &pinned["index"]),
        (&Value::from(8), &Value::from(0))
    );
    assert_eq!(
        p["proto"]["jobs"][0]["token"], 0,
        "no key: the switch draws the token"
    );
}

#[test]
fn bad_settings_are_refused_as_zebra_switch_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bad.conf");
    write(
        &conf,
        "switch = \"127.0.0.1:0\"\nworkers = 65\npacking = \"best\"\nhot_key_count = 40\n",
        0o644,
    );
    let conf = conf.to_str().unwrap();
    let planned = zebra(&["switch", "--plan", "--config", conf, "--slots=-1"]);
    let run = zebra(&["switch", "--config", conf, "--slots=-1"]);
    assert_eq!(
        (planned.status.code(), run.status.code()),
        (Some(2), Some(2))
    );
    assert!(planned.stdout.is_empty());
    let err = String::from_utf8(planned.stderr).unwrap();
    assert_eq!(
        err,
        String::from_utf8(run.stderr).unwrap(),
        "the same words"
    );
    for want in [
        "zebra switch: invalid hot-path configuration:",
        "bad.conf:2: workers = 65: expected an integer in 1..=64",
        "bad.conf:3: packing = \"best\": expected strict, fill or sequential",
        "--slots \"-1\": expected an integer in 1..=65536",
    ] {
        assert!(err.contains(want), "{want} in {err}");
    }
    let both = zebra(&["switch", "--plan", "--metrics", "127.0.0.1:0"]);
    assert_eq!(both.status.code(), Some(2), "--plan runs nothing to scrape");
}

#[test]
fn a_reader_that_stops_reading_is_no_error() {
    // `zebra switch --plan | head -1`: the pipe is closed before the plan is
    // written; the process ends as a success, without a panic.
    let mut child = Command::new(env!("CARGO_BIN_EXE_zebra"))
        .args(["switch", "--plan", "--workers", "2", "--servers", "1"])
        .arg("--hot-key-count")
        .arg("64")
        .env("ZEBRA_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
