//! Tests of what happens to a whole process (a panic that aborts it, a signal's default
//! action) run in a child process: [`in_child`] runs the calling test again, alone, in a
//! child copy of the test binary, where the test's body runs; the parent checks how the
//! child ended.
//!
//! ```no_run
//! # use std::time::Duration;
//! #[test]
//! fn aborts() {
//!     let Some(child) = zebra_thread::testing::in_child(Duration::from_secs(30), || {
//!         std::process::abort();
//!     }) else {
//!         return; // the child
//!     };
//!     assert_eq!(child.signal(), Some(libc::SIGABRT), "{child}");
//! }
//! ```

use std::fmt;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Names, in the child's environment, the test the child runs the body of.
pub const CHILD_VAR: &str = "TEST_IN_CHILD";

/// How a child run by [`in_child`] ended.
#[derive(Debug)]
pub struct ChildRun {
    /// `None`: still running at the timeout (then killed).
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl ChildRun {
    /// The child exited with status 0: its test passed.
    pub fn passed(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The signal that killed the child.
    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }
}

impl fmt::Display for ChildRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(s) => write!(f, "child ended ({s})")?,
            None => write!(f, "child still running at the timeout (killed)")?,
        }
        write!(
            f,
            "\n--- its stdout:\n{}\n--- its stderr:\n{}",
            self.stdout, self.stderr
        )
    }
}

/// Called by a test. In the test's process: runs this test alone in a child copy of the
/// test binary, killed if it runs longer than `timeout`, and returns how the child ended.
/// In that child: runs `body` and returns `None`.
pub fn in_child(timeout: Duration, body: impl FnOnce()) -> Option<ChildRun> {
    let current = std::thread::current();
    let test = current
        .name()
        .expect("called by a test (the test harness names each test's thread after it)");
    if std::env::var(CHILD_VAR).as_deref() == Ok(test) {
        body();
        return None;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([test, "--exact", "--include-ignored", "--nocapture"])
        .env(CHILD_VAR, test)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the test binary again");
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            child.kill().expect("kill the child");
            child.wait().expect("wait for the killed child");
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let run = ChildRun {
        status,
        stdout: stdout.join(),
        stderr: stderr.join(),
    };
    assert!(
        run.stdout.contains("running 1 test"),
        "the child did not run the test {test}: {run}"
    );
    Some(run)
}

/// Reads a child's pipe to its end on a thread (so that a child writing more than a pipe
/// holds does not block).
fn drain(pipe: Option<impl Read + Send + 'static>) -> crate::Handle<String> {
    let mut pipe = pipe.expect("a piped output");
    crate::spawn("test-child-output", move || {
        let mut bytes = Vec::new();
        // A read error ends the output early; what was read is still worth showing.
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
    .expect("start a thread reading the child's output")
}
