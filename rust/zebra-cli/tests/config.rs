//! `zebra config` checks what the library checks at start-up, hot-path settings
//! included, and answers in the names the user typed.

use std::process::Command;

/// `zebra config` in an environment of exactly `env` (plus `PATH`): its exit
/// code, standard output and standard error.
fn config(env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zebra"))
        .arg("config")
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const ON: (&str, &str) = ("ZEBRA_ENABLE", "1");
const SWITCH: (&str, &str) = ("ZEBRA_SWITCH", "127.0.0.1:9950");
const WORKERS: (&str, &str) = ("DMLC_NUM_WORKER", "2");
const SERVERS: (&str, &str) = ("DMLC_NUM_SERVER", "1");

/// Jobs the library refuses (`zmq_ctx_new` fails with EINVAL) and that
/// `zebra config` said OK to until it checked the hot path too.
#[test]
fn a_job_the_library_refuses_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("hot.conf");
    std::fs::write(&conf, "packing = \"best\"\nworker_rto_ms = 200\n").unwrap();
    let conf = conf.to_str().unwrap();
    let old = dir.path().join("old.conf");
    std::fs::write(&old, "number = fixed:16\n").unwrap();
    let old = old.to_str().unwrap();
    for (env, want) in [
        (
            vec![ON, SWITCH, WORKERS, SERVERS, ("ZEBRA_HOT_CONFIG", conf)],
            format!("{conf}:1: packing = \"best\": expected strict, fill or sequential"),
        ),
        (
            vec![ON, SWITCH, WORKERS, SERVERS, ("ZEBRA_HOT_CONFIG", old)],
            format!("{old}:1: not TOML: a text value goes in double quotes: write number = \"fixed:16\""),
        ),
        (
            vec![ON, SWITCH, WORKERS, SERVERS, ("ZEBRA_HOT_KEYS", "/nonexistent.keys")],
            "hot keys: /nonexistent.keys: ".to_string(),
        ),
        (
            vec![ON, SWITCH, ("DMLC_NUM_WORKER", "99"), SERVERS],
            "DMLC_NUM_WORKER=\"99\": expected an integer in 1..=64".to_string(),
        ),
        (
            vec![ON, SWITCH],
            "ZEBRA_SWITCH is set but DMLC_NUM_WORKER is not".to_string(),
        ),
    ] {
        let (code, out, err) = config(&env);
        assert_eq!(code, Some(2), "{env:?}: {out}{err}");
        assert!(
            err.starts_with("zebra config: invalid hot-path configuration:"),
            "{err}"
        );
        assert!(err.contains(&want), "{want} not in {err}");
        assert!(out.is_empty(), "{out}");
    }
    // A bad variable, as before.
    let (code, _, err) = config(&[("ZEBRA_DELIVERY", "both")]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("ZEBRA_DELIVERY=\"both\": expected per-worker or merged"),
        "{err}"
    );
}

#[test]
fn a_good_job_is_shown_in_the_names_typed() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("hot.conf");
    std::fs::write(&conf, "# slow machine\nworker_rto_ms = 200\n").unwrap();
    let conf = conf.to_str().unwrap();
    let (code, out, err) = config(&[
        ON,
        SWITCH,
        WORKERS,
        SERVERS,
        ("ZEBRA_HOT_CONFIG", conf),
        ("ZEBRA_JOB_KEY", "s3cret"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    for want in [
        "ZEBRA_SWITCH=\"127.0.0.1:9950\"",
        "DMLC_NUM_WORKER=\"2\"",
        &format!("{conf}:2: worker_rto_ms = 200"),
        "ZEBRA_JOB_KEY is set (never shown)",
        "hot path: aggregation through the switch at 127.0.0.1:9950 for 2 workers and 1 servers",
        "note: DMLC_ROLE is not set here",
        "zebra config: OK",
    ] {
        assert!(out.contains(want), "{want} not in {out}");
    }
    for debug in ["Config {", "Some(", "None", "s3cret", "--worker-rto-ms"] {
        assert!(!out.contains(debug), "{debug} in {out}");
    }
    let (code, out, _) = config(&[("ZEBRA_SWITCH", "127.0.0.1:9950")]);
    assert_eq!(code, Some(0));
    assert!(out.contains("mode: off"), "{out}");
    assert!(out.contains("not used in mode off"), "{out}");
}

/// Zero configuration: the switch's job ids of the job's servers come from the
/// scheduler's address, which PS-lite's launchers give every process.
#[test]
fn a_zero_configuration_job_shows_the_job_id_derived_from_its_scheduler() {
    let root = [
        ("DMLC_PS_ROOT_URI", "10.0.0.1"),
        ("DMLC_PS_ROOT_PORT", "9000"),
    ];
    let (code, out, err) = config(&[
        ON,
        SWITCH,
        WORKERS,
        ("DMLC_NUM_SERVER", "2"),
        root[0],
        root[1],
    ]);
    assert_eq!(code, Some(0), "{err}");
    let id = zebra_runtime::derived_job("10.0.0.1:9000", 2).unwrap();
    for want in [
        "DMLC_PS_ROOT_URI=\"10.0.0.1\"",
        "DMLC_PS_ROOT_PORT=\"9000\"",
        &format!(
            "switch jobs {id}..={}, derived from the scheduler's address 10.0.0.1:9000",
            id + 1
        ),
    ] {
        assert!(out.contains(want), "{want} not in {out}");
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("hot.conf");
    std::fs::write(&conf, "job = 11\n").unwrap();
    let conf = ("ZEBRA_HOT_CONFIG", conf.to_str().unwrap());
    let (code, out, err) = config(&[ON, SWITCH, WORKERS, SERVERS, root[0], root[1], conf]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("switch job 11\n"), "{out}");
}
