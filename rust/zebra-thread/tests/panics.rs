//! A panic in a thread started by `zebra_thread::spawn` aborts the process with the
//! thread's name and the panic's message on standard error; it does not leave the process
//! waiting for the thread.

use std::sync::mpsc;
use std::time::Duration;

use zebra_thread::testing::in_child;

const TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn a_panicking_thread_aborts_the_process_with_its_name() {
    let Some(child) = in_child(TIMEOUT, || {
        let (_keep, never) = mpsc::channel::<()>();
        let handle =
            zebra_thread::spawn("zebra-test-worker", || panic!("boom at round 7")).expect("spawn");
        // What a caller of the engine does: wait for an answer the thread will never give.
        let _ = never.recv();
        handle.join();
    }) else {
        return;
    };
    assert_eq!(child.signal(), Some(libc::SIGABRT), "{child}");
    assert!(
        child
            .stderr
            .contains("zebra: thread zebra-test-worker panicked: boom at round 7; aborting"),
        "{child}"
    );
}

#[test]
fn a_formatted_panic_message_is_reported() {
    let Some(child) = in_child(TIMEOUT, || {
        let round = 9;
        zebra_thread::spawn("zebra-test-pump", move || panic!("round {round} lost"))
            .expect("spawn")
            .join();
    }) else {
        return;
    };
    assert!(
        child
            .stderr
            .contains("zebra: thread zebra-test-pump panicked: round 9 lost; aborting"),
        "{child}"
    );
}

#[test]
fn a_thread_that_returns_is_joined_with_its_value() {
    let handle = zebra_thread::spawn("zebra-test-sum", || (1..=4).sum::<u32>()).expect("spawn");
    assert_eq!(handle.thread().name(), Some("zebra-test-sum"));
    assert_eq!(handle.join(), 10);
}
