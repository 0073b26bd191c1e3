//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::time::Duration;

use zebra_engine::consts::opt;
use zebra_engine::{Bytes, Context, Error, Socket};

/// How long a test waits for one message before failing instead of hanging.
pub const TIMEOUT_MS: i32 = 10_000;

pub fn init_log() {
    let _ = env_logger::builder().is_test(true).try_init();
}

pub fn set_int(s: &Socket, option: i32, v: i32) {
    s.set_option(option, &v.to_ne_bytes()).unwrap();
}

pub fn get_int(s: &Socket, option: i32) -> i32 {
    let v = s.get_option(option).unwrap();
    i32::from_ne_bytes(v.try_into().unwrap())
}

/// A socket whose blocking receives give up after [`TIMEOUT_MS`].
pub fn socket(ctx: &Context, socket_type: i32) -> Socket {
    let s = ctx.socket(socket_type).unwrap();
    set_int(&s, opt::RCVTIMEO, TIMEOUT_MS);
    s
}

pub fn last_endpoint(s: &Socket) -> String {
    let mut v = s.get_option(opt::LAST_ENDPOINT).unwrap();
    assert_eq!(v.pop(), Some(0), "LAST_ENDPOINT ends with NUL");
    String::from_utf8(v).unwrap()
}

pub fn send_msg(s: &Socket, parts: &[&[u8]]) {
    let last = parts.len() - 1;
    for (i, p) in parts.iter().enumerate() {
        s.send(Bytes::copy_from_slice(p), i < last, false).unwrap();
    }
}

pub fn send_parts(s: &Socket, parts: Vec<Bytes>) -> Result<(), Error> {
    let last = parts.len() - 1;
    for (i, p) in parts.into_iter().enumerate() {
        s.send(p, i < last, false)?;
    }
    Ok(())
}

/// Receives one whole message (blocking, with the test timeout).
pub fn recv_msg(s: &Socket) -> Vec<Bytes> {
    let mut parts = Vec::new();
    loop {
        let p = s
            .recv(false)
            .unwrap_or_else(|e| panic!("recv after {} parts: {e}", parts.len()));
        parts.push(p.data);
        if !p.more {
            return parts;
        }
    }
}

pub fn strs(parts: &[Bytes]) -> Vec<&[u8]> {
    parts.iter().map(|b| &b[..]).collect()
}

/// A TCP port that was free a moment ago.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

pub fn ipc_path(tag: &str) -> String {
    format!(
        "ipc://{}/zebra-test-{}-{tag}.ipc",
        std::env::temp_dir().display(),
        std::process::id()
    )
}

/// Polls `f` until it returns true or `ms` pass.
pub fn eventually(ms: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + Duration::from_millis(ms);
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}
