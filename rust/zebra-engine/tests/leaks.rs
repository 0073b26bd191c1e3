//! Contexts leave no threads or file descriptors behind once terminated.
//! (Its own test binary: it counts the whole process's threads and fds.)

mod common;

use common::*;
use zebra_engine::consts::{opt, ZMQ_DEALER, ZMQ_IO_THREADS, ZMQ_ROUTER};
use zebra_engine::Context;

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn terminate_joins_threads_and_closes_descriptors() {
    init_log();
    let (threads, fds) = (count("/proc/self/task"), count("/proc/self/fd"));
    for round in 0..10 {
        let ctx = Context::new();
        ctx.set(ZMQ_IO_THREADS, 3).unwrap();
        let router = socket(&ctx, ZMQ_ROUTER);
        router.bind("tcp://127.0.0.1:*").unwrap();
        router.bind(&ipc_path(&format!("leak{round}"))).unwrap();
        router.bind("inproc://leak").unwrap();
        let ep = last_endpoint(&router);
        let dealers: Vec<_> = (0..8)
            .map(|i| {
                let d = socket(&ctx, ZMQ_DEALER);
                set_int(&d, opt::LINGER, 0);
                d.connect(&ep).unwrap();
                d.connect(&format!("tcp://127.0.0.1:{}", free_port()))
                    .unwrap();
                send_msg(&d, &[format!("{i}").as_bytes()]);
                d
            })
            .collect();
        for _ in 0..8 {
            recv_msg(&router);
        }
        for d in dealers {
            d.close();
        }
        router.close();
        ctx.terminate().unwrap();
    }
    assert_eq!(count("/proc/self/task"), threads, "threads");
    assert_eq!(count("/proc/self/fd"), fds, "file descriptors");

    // Reconnecting to nobody, many times, holds at most one socket at once.
    let ctx = Context::new();
    let d = socket(&ctx, ZMQ_DEALER);
    set_int(&d, opt::RECONNECT_IVL, 2);
    set_int(&d, opt::LINGER, 0);
    d.connect(&format!("tcp://127.0.0.1:{}", free_port()))
        .unwrap();
    d.connect(&ipc_path("nobody")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let during = count("/proc/self/fd");
    assert!(during <= fds + 5, "{during} descriptors open, {fds} before");
    d.close();
    ctx.terminate().unwrap();
    assert_eq!(count("/proc/self/fd"), fds, "file descriptors");
}
