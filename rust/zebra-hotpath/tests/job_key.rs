//! Issue 20: a job with a secret key (`job_key_file`, `ZEBRA_JOB_KEY`). The
//! key read by the settings gives every job the token `job_token` derives,
//! and a switch built from those settings takes on only members that show
//! it: a stranger that speaks first is not pinned, a member with another
//! key is refused and counted (`docs/SECURITY.md`).

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use zebra_hotpath::{Build, Settings};
use zebra_proto::wire::{HotBody, HotRepr, Message, ResponseKind};
use zebra_proto::{job_token, Role, Switch, SwitchAction, Timestamp};

fn key_file(name: &str, text: &str, mode: u32) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zebra-hotpath-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn settings(key: &Path) -> Settings {
    let mut s = Settings::new();
    s.set("workers", "2").unwrap();
    s.set("hot_key_count", "16").unwrap();
    s.set_from_env("ZEBRA_JOB_KEY_FILE", &key.display().to_string())
        .unwrap();
    s
}

fn hot(job: u16, worker: u16, token: u32) -> Vec<u8> {
    HotRepr {
        job,
        worker,
        round: 1,
        seq: 0,
        retransmission: false,
        done: true,
        fixed: false,
        token,
        body: HotBody::Sparse(vec![(3, 1.0f32.to_bits())]),
    }
    .to_bytes()
}

fn at(port: u16) -> Option<SocketAddr> {
    Some(SocketAddr::from(([10, 0, 0, 1], port)))
}

fn acked(out: &[SwitchAction]) -> bool {
    out.iter().any(|a| {
        matches!(
            Message::parse(a.payload()),
            Ok(Message::Response(r)) if matches!(r.kind, ResponseKind::Ack { .. })
        )
    })
}

#[test]
fn a_key_file_gives_the_job_its_token_and_the_switch_pins_only_who_shows_it() {
    let path = key_file("ours", "our secret\n", 0o600);
    let config = settings(&path).build().unwrap();
    let job = config.job().id;
    let token = job_token(b"our secret", job);
    assert_eq!(config.job().token, token);
    assert!(config.job_key.is_some());
    let mut switch = Switch::new(config.proto.clone()).unwrap();

    // A stranger speaks first, without the token: not pinned, counted.
    let out = switch.handle_datagram(Timestamp(0), at(99), &hot(job, 0, 0));
    assert!(!acked(&out));
    assert_eq!(switch.member_addr(job, Role::Worker, 0), None);
    // A member with another key: refused, counted, not pinned either.
    let other = job_token(b"not our secret", job);
    let out = switch.handle_datagram(Timestamp(1), at(11), &hot(job, 1, other));
    assert!(!acked(&out));
    assert_eq!(switch.member_addr(job, Role::Worker, 1), None);
    assert_eq!(switch.stats().refused_token, 2);
    // The members with the key are taken on.
    assert!(acked(&switch.handle_datagram(
        Timestamp(2),
        at(10),
        &hot(job, 0, token)
    )));
    assert_eq!(switch.member_addr(job, Role::Worker, 0), at(10));
    assert!(acked(&switch.handle_datagram(
        Timestamp(3),
        at(11),
        &hot(job, 1, token)
    )));
}

#[test]
fn key_errors_name_the_variable_or_setting() {
    let open = key_file("open", "our secret\n", 0o644);
    let e = settings(&open).build().unwrap_err().to_string();
    assert!(
        e.contains("ZEBRA_JOB_KEY_FILE=") && e.contains("readable by every user"),
        "{e}"
    );
    assert!(!e.contains("our secret"), "the key is never printed: {e}");

    let path = key_file("twice", "our secret\n", 0o600);
    let mut s = settings(&path);
    s.set_from_env("ZEBRA_JOB_KEY", "k").unwrap();
    let e = s.build().unwrap_err().to_string();
    assert!(
        e.contains("ZEBRA_JOB_KEY and ZEBRA_JOB_KEY_FILE are both set: give one"),
        "{e}"
    );
    let mut s = Settings::new();
    s.set("job_key_file", &path.display().to_string()).unwrap();
    s.set_from_env("ZEBRA_JOB_KEY", "k").unwrap();
    let e = s.build().unwrap_err().to_string();
    assert!(
        e.contains("ZEBRA_JOB_KEY: the job key is given twice (also by --job-key-file)"),
        "{e}"
    );

    let mut flag = Settings::new();
    flag.set("job_key_file", &open.display().to_string())
        .unwrap();
    let e = flag.build().unwrap_err().to_string();
    assert!(e.contains("--job-key-file="), "{e}");
}

#[test]
fn a_switch_that_admits_jobs_gives_each_the_token_of_its_id() {
    let path = key_file("admit", "our secret\n", 0o600);
    let mut s = Settings::new();
    s.set("job_key_file", &path.display().to_string()).unwrap();
    let config = s.build().unwrap();
    assert!(config.admit.is_some());
    let node = config.switch_node_config("127.0.0.1:0".parse().unwrap());
    assert_eq!(node.job_key.unwrap().as_bytes(), b"our secret");
}
