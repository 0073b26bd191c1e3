//! `zebra env` and `zebra run` (src/launch.rs): the variables they set, the
//! shim found beside the binary, and their exit codes.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

/// Held while a test writes a copy of the binary and while a test starts a
/// process: a child forked while another test's copy is still open for
/// writing holds that descriptor until it execs, and executing the copy then
/// fails with ETXTBSY ("Text file busy"). `spawn` returns once the child has
/// exec'd, so holding the lock across it is enough.
static FORK: Mutex<()> = Mutex::new(());

fn zebra(bin: &Path, args: &[&str]) -> Output {
    let child = {
        let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
        Command::new(bin)
            .args(args)
            .env_remove("LD_PRELOAD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A PREFIX/bin/zebra beside a PREFIX/lib/libzmq.so.5 (a stand-in file:
/// nothing is preloaded into `zebra` itself).
fn install(dir: &Path) -> (std::path::PathBuf, String) {
    fs::create_dir_all(dir.join("bin")).unwrap();
    fs::create_dir_all(dir.join("lib")).unwrap();
    let bin = dir.join("bin/zebra");
    {
        let _held = FORK.lock().unwrap_or_else(|e| e.into_inner());
        fs::copy(env!("CARGO_BIN_EXE_zebra"), &bin).unwrap();
    }
    let lib = dir.join("lib/libzmq.so.5");
    fs::write(&lib, b"").unwrap();
    (bin, lib.canonicalize().unwrap().display().to_string())
}

#[test]
fn env_prints_exports_with_the_shim_beside_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, lib) = install(dir.path());
    let out = zebra(&bin, &["env", "--switch", "127.0.0.1:9950"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        text(&out.stdout),
        format!(
            "export LD_PRELOAD={lib}\nexport ZEBRA_ENABLE=1\nexport ZEBRA_SWITCH=127.0.0.1:9950\n"
        )
    );
    let out = zebra(&bin, &["env"]);
    assert!(!text(&out.stdout).contains("ZEBRA_SWITCH"), "{out:?}");
}

#[test]
fn run_sets_the_variables_and_exits_as_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, lib) = install(dir.path());
    let out = zebra(
        &bin,
        &[
            "run",
            "--switch",
            "h:1",
            "--",
            "sh",
            "-c",
            "echo \"$LD_PRELOAD $ZEBRA_ENABLE $ZEBRA_SWITCH\"; exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(text(&out.stdout), format!("{lib} 1 h:1\n"));
}

#[test]
fn bad_arguments_exit_2_naming_what_was_typed() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, _) = install(dir.path());
    for (args, want) in [
        (
            &["env", "--switch", "127.0.0.1"][..],
            "--switch \"127.0.0.1\": expected HOST:PORT",
        ),
        (
            &["env", "--lib", "/no/such/libzmq.so.5"],
            "--lib /no/such/libzmq.so.5",
        ),
        (
            &["run", "--", "no-such-command-here"],
            "no-such-command-here: command not found",
        ),
    ] {
        let out = zebra(&bin, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(text(&out.stderr).contains(want), "{args:?}: {out:?}");
    }
    // Without a shim beside it (the build tree's target/release/zebra).
    let out = zebra(Path::new(env!("CARGO_BIN_EXE_zebra")), &["env"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        text(&out.stderr).contains("give it with --lib PATH"),
        "{out:?}"
    );
}
