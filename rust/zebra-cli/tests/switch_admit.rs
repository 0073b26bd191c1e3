//! `zebra switch --admit` as a process: the software switch's admission of
//! a REGISTER, for the jobs a control plane says it holds (what the P4
//! control plane asks), and a bad document refused with exit 2.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn admit(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zebra"))
        .args([&["switch", "--admit"], args].concat())
        .env_remove("ZEBRA_HOT_LOSS")
        .env_remove("ZEBRA_JOB_KEY")
        .env_remove("ZEBRA_JOB_KEY_FILE")
        .env("ZEBRA_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The answer for `jobs` held (`(id, workers, hot_keys, base)`) and a
/// REGISTER `(job, server, workers, capacity, token)`, on a switch of 8
/// registers of `slots` slots that admits jobs.
fn decide(slots: u32, jobs: &[(u16, u16, u32, u32)], r: (u16, u16, u16, u32, u32)) -> Value {
    let doc = json!({
        "jobs": jobs.iter().map(|&(id, workers, hot_keys, base)| json!({
            "id": id, "workers": workers, "hot_keys": hot_keys, "base": base
        })).collect::<Vec<_>>(),
        "register": {"job": r.0, "server": r.1, "workers": r.2, "capacity": r.3, "token": r.4},
    });
    let slots = format!("--slots={slots}");
    let out = admit(&["--registers=8", &slots], &doc.to_string());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "zebra switch --admit: {stderr}");
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[test]
fn a_new_job_goes_to_the_lowest_hole_that_holds_it() {
    // Jobs at 0..10 and 20..30 of 64 slots: 80 values (10 slots) fit the hole.
    let held = [(1, 2, 80, 0), (2, 2, 80, 20)];
    let a = decide(64, &held, (3, 0, 2, 80, 0));
    assert_eq!(
        (a["capacity"].as_u64(), a["base"].as_u64()),
        (Some(80), Some(10))
    );
    assert_eq!(a["job"]["region_slots"], 10);
    assert_eq!(a["job"]["servers"], 1);
    // 88 values (11 slots) do not: after the last job.
    let b = decide(64, &held, (3, 0, 2, 88, 0));
    assert_eq!(b["base"], 30);
    // 300 values (38 slots) fit nowhere: refused with the reason.
    let c = decide(64, &held, (3, 0, 2, 300, 0));
    assert_eq!(
        (c["capacity"].as_u64(), c["base"].is_null()),
        (Some(0), true)
    );
    assert!(c["reason"].as_str().unwrap().contains("slots"), "{c}");
}

#[test]
fn a_held_job_is_granted_its_size_and_nothing_else() {
    let held = [(1, 2, 80, 0)];
    let same = decide(64, &held, (1, 0, 2, 80, 0));
    assert_eq!(
        (same["capacity"].as_u64(), same["job"].is_null()),
        (Some(80), true)
    );
    for other in [(1, 0, 3, 80, 0), (1, 1, 2, 80, 0)] {
        let refused = decide(64, &held, other);
        assert_eq!(refused["capacity"], 0, "{refused}");
        assert!(refused["reason"].is_string());
    }
    let second_server = decide(64, &held, (4, 1, 2, 8, 0));
    assert_eq!(
        second_server["capacity"], 0,
        "an admitted job has one server"
    );
}

#[test]
fn settings_that_size_a_job_admit_none_and_bad_input_is_refused() {
    let sized = [
        "--registers=8",
        "--job=7",
        "--workers=2",
        "--hot-key-count=8",
    ];
    let ask = |job: u16, workers: u16| -> Value {
        let doc = json!({"jobs": [], "register": {"job": job, "server": 0, "workers": workers, "capacity": 8, "token": 0}});
        let out = admit(&sized, &doc.to_string());
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(ask(9, 2)["capacity"], 0, "a job the settings do not have");
    assert_eq!(ask(7, 3)["capacity"], 0, "the job, of another size");
    let granted = ask(7, 2);
    assert_eq!(
        (granted["capacity"].as_u64(), granted["job"].is_null()),
        (Some(8), true)
    );
    let out = admit(&["--registers=8"], "{\"jobs\": []}");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--admit"));
}
