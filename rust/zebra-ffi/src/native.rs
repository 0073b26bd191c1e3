//! The bridge for `ZEBRA_ENABLE=1`: contexts, sockets and message parts of
//! `zebra-engine`, as the C++ shim's `native.cc` uses them.
//!
//! Calls that can fail return `0` or an errno value instead of a `Result`: a `Result`
//! becomes a C++ exception, and BytePS's van calls `zmq_msg_recv(ZMQ_DONTWAIT)` in a
//! spin loop, so `EAGAIN` must cost no more than a return.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use zebra_engine::consts::{opt, ZMQ_POLLIN};
use zebra_engine::{Context, Error, Part, Socket};

use zebra_runtime::Hook;

use crate::process;

#[allow(unsafe_code)]
#[cxx::bridge(namespace = "zebra::native_ffi")]
mod bridge {
    extern "Rust" {
        type ContextHandle;
        type SocketHandle;
        type RecvPart;

        fn ctx_new() -> Box<ContextHandle>;
        fn ctx_set(ctx: &ContextHandle, option: i32, value: i32) -> i32;
        fn ctx_get(ctx: &ContextHandle, option: i32, value: &mut i32) -> i32;
        fn ctx_shutdown(ctx: &ContextHandle);
        fn ctx_term(ctx: &ContextHandle) -> i32;

        /// A socket, or (on failure) a handle whose `socket_error` is non-zero.
        /// Whether the engine has sockets of this type (else the shim gives
        /// them to the real libzmq).
        fn engine_socket_type(socket_type: i32) -> bool;
        fn socket_new(ctx: &ContextHandle, socket_type: i32) -> Box<SocketHandle>;
        fn socket_error(socket: &SocketHandle) -> i32;
        fn socket_close(socket: &SocketHandle);
        /// `zmq_setsockopt`; `null`: the value pointer was NULL (length 0).
        fn socket_set(socket: &SocketHandle, option: i32, value: &[u8], null: bool) -> i32;
        /// `zmq_getsockopt` into a buffer of `capacity` bytes.
        fn socket_get(
            socket: &SocketHandle,
            option: i32,
            capacity: usize,
            value: &mut Vec<u8>,
        ) -> i32;
        fn socket_bind(socket: &SocketHandle, endpoint: &[u8]) -> i32;
        fn socket_connect(socket: &SocketHandle, endpoint: &[u8]) -> i32;
        fn socket_unbind(socket: &SocketHandle, endpoint: &[u8]) -> i32;
        fn socket_disconnect(socket: &SocketHandle, endpoint: &[u8]) -> i32;
        fn socket_monitor(socket: &SocketHandle, endpoint: &[u8], events: i32) -> i32;
        fn socket_events(socket: &SocketHandle) -> i32;
        fn socket_wait_in(socket: &SocketHandle, timeout_us: u32);

        fn socket_send_copy(socket: &SocketHandle, data: &[u8], more: bool, dontwait: bool) -> i32;
        fn socket_send_part(
            socket: &SocketHandle,
            part: &RecvPart,
            more: bool,
            dontwait: bool,
        ) -> i32;
        /// Sends `len` bytes at `data` without copying them. `token` names the C++ owner
        /// of the bytes; Rust hands it to the release hook once it no longer needs them
        /// (also when the send fails).
        ///
        /// # Safety
        /// `data..data+len` stays valid and unchanged until the hook is called with `token`.
        unsafe fn socket_send_foreign(
            socket: &SocketHandle,
            data: *const u8,
            len: usize,
            token: usize,
            more: bool,
            dontwait: bool,
        ) -> i32;
        /// # Safety
        /// `hook` is the address of an `extern "C" fn(usize)` that stays valid for the
        /// life of the process.
        unsafe fn set_release_hook(hook: usize);

        fn socket_recv(
            socket: &SocketHandle,
            dontwait: bool,
            error_code: &mut i32,
        ) -> Box<RecvPart>;
        fn part_data(part: &RecvPart) -> &[u8];
        fn part_more(part: &RecvPart) -> bool;
        fn part_clone(part: &RecvPart) -> Box<RecvPart>;
    }
}

/// A context as the C++ shim holds it.
pub struct ContextHandle(Context);

/// A socket as the C++ shim holds it; `Err` when creation failed. The hook
/// is the hot path's part in the socket (`zebra-runtime`).
pub struct SocketHandle(Result<Socket, i32>, i32, Hook);

/// A received message part, kept alive while a `zmq_msg_t` refers to its bytes.
pub struct RecvPart(Part);

fn code(result: Result<(), Error>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            if !matches!(e, Error::Again) {
                log::debug!("zebra: {e}");
            }
            e.errno()
        }
    }
}

fn endpoint(bytes: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(bytes).map_err(|_| Error::Invalid("endpoint is not UTF-8".into()))
}

impl SocketHandle {
    fn with<T>(&self, f: impl FnOnce(&Socket) -> Result<T, Error>) -> Result<T, Error> {
        match &self.0 {
            Ok(socket) => f(socket),
            Err(_) => Err(Error::Invalid("socket creation failed".into())),
        }
    }
}

fn ctx_new() -> Box<ContextHandle> {
    Box::new(ContextHandle(Context::new()))
}

fn ctx_set(ctx: &ContextHandle, option: i32, value: i32) -> i32 {
    code(ctx.0.set(option, value))
}

fn ctx_get(ctx: &ContextHandle, option: i32, value: &mut i32) -> i32 {
    code(ctx.0.get(option).map(|v| *value = v))
}

fn ctx_shutdown(ctx: &ContextHandle) {
    ctx.0.shutdown();
}

fn ctx_term(ctx: &ContextHandle) -> i32 {
    code(ctx.0.terminate())
}

fn engine_socket_type(socket_type: i32) -> bool {
    zebra_engine::implements_socket_type(socket_type)
}

fn socket_new(ctx: &ContextHandle, socket_type: i32) -> Box<SocketHandle> {
    let socket = ctx.0.socket(socket_type).map_err(|e| {
        log::warn!("zebra: zmq_socket({socket_type}): {e}");
        e.errno()
    });
    let hook = match &socket {
        Ok(s) => process::hook(s, socket_type),
        Err(_) => Hook::None,
    };
    Box::new(SocketHandle(socket, socket_type, hook))
}

fn socket_error(socket: &SocketHandle) -> i32 {
    socket.0.as_ref().err().copied().unwrap_or(0)
}

fn socket_close(socket: &SocketHandle) {
    if let Ok(s) = &socket.0 {
        s.close();
    }
}

fn socket_set(socket: &SocketHandle, option: i32, value: &[u8], null: bool) -> i32 {
    let rc = code(socket.with(|s| {
        if null {
            s.reset_option(option)
        } else {
            s.set_option(option, value)
        }
    }));
    if rc == 0 {
        process::on_option(socket.1, option, value);
    }
    rc
}

fn socket_get(socket: &SocketHandle, option: i32, capacity: usize, value: &mut Vec<u8>) -> i32 {
    let hooked_more = match (&socket.2, option) {
        (Hook::Router(r), opt::RCVMORE) => Some(r.more()),
        (Hook::Dealer(d), opt::RCVMORE) => Some(d.more()),
        _ => None,
    };
    let got = match hooked_more {
        Some(more) => {
            zebra_engine::fit_option(option, capacity, i32::from(more).to_ne_bytes().to_vec())
        }
        None => socket.with(|s| s.get_option_into(option, capacity)),
    };
    code(got.map(|v| *value = v))
}

fn socket_bind(socket: &SocketHandle, addr: &[u8]) -> i32 {
    code(socket.with(|s| s.bind(endpoint(addr)?)))
}

fn socket_connect(socket: &SocketHandle, addr: &[u8]) -> i32 {
    code(socket.with(|s| s.connect(endpoint(addr)?)))
}

fn socket_unbind(socket: &SocketHandle, addr: &[u8]) -> i32 {
    code(socket.with(|s| s.unbind(endpoint(addr)?)))
}

fn socket_disconnect(socket: &SocketHandle, addr: &[u8]) -> i32 {
    code(socket.with(|s| s.disconnect(endpoint(addr)?)))
}

fn socket_monitor(socket: &SocketHandle, addr: &[u8], events: i32) -> i32 {
    code(socket.with(|s| {
        let addr = if addr.is_empty() {
            None
        } else {
            Some(endpoint(addr)?)
        };
        s.monitor(addr, events)
    }))
}

fn socket_events(socket: &SocketHandle) -> i32 {
    let engine = socket.0.as_ref().map(|s| s.events()).unwrap_or(0);
    match &socket.2 {
        Hook::Router(r) if engine != 0 => (engine & !ZMQ_POLLIN) | r.events(),
        Hook::Dealer(d) => engine | d.events(),
        _ => engine,
    }
}

/// Sleeps until the socket has a part to receive (`ZMQ_POLLIN`), or up to
/// `timeout_us` microseconds: what a thread spinning on `ZMQ_DONTWAIT`
/// receives does instead of spinning.
fn socket_wait_in(socket: &SocketHandle, timeout_us: u32) {
    let deadline = Instant::now() + Duration::from_micros(u64::from(timeout_us));
    loop {
        let seen = zebra_engine::activity();
        if socket_events(socket) & ZMQ_POLLIN != 0 || !zebra_engine::wait_activity(seen, deadline) {
            return;
        }
    }
}

/// Sends one part, through the hook of a worker's DEALER or a server's ROUTER.
fn send(socket: &SocketHandle, data: Bytes, more: bool, dontwait: bool) -> i32 {
    code(socket.with(|s| match &socket.2 {
        Hook::Dealer(d) => d.send(data, more),
        Hook::Router(r) => r.send(data, more),
        _ => s.send(data, more, dontwait),
    }))
}

fn socket_send_copy(socket: &SocketHandle, data: &[u8], more: bool, dontwait: bool) -> i32 {
    send(socket, Bytes::copy_from_slice(data), more, dontwait)
}

fn socket_send_part(socket: &SocketHandle, part: &RecvPart, more: bool, dontwait: bool) -> i32 {
    send(socket, part.0.data.clone(), more, dontwait)
}

static RELEASE_HOOK: OnceLock<extern "C" fn(usize)> = OnceLock::new();

/// Bytes owned by the C++ side (a `zmq_msg_init_data` buffer or a shim allocation).
struct Foreign {
    data: *const u8,
    len: usize,
    token: usize,
}

// SAFETY: the C++ owner keeps `data` valid and unchanged until `release` runs, from
// whichever thread drops the last `Bytes` (its hook is thread-safe: an atomic count).
#[allow(unsafe_code)]
unsafe impl Send for Foreign {}

impl AsRef<[u8]> for Foreign {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: see `socket_send_foreign`: valid for `len` bytes until released.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.data, self.len)
        }
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        if let Some(hook) = RELEASE_HOOK.get() {
            hook(self.token);
        }
    }
}

#[allow(unsafe_code)]
unsafe fn socket_send_foreign(
    socket: &SocketHandle,
    data: *const u8,
    len: usize,
    token: usize,
    more: bool,
    dontwait: bool,
) -> i32 {
    let bytes = Bytes::from_owner(Foreign { data, len, token });
    send(socket, bytes, more, dontwait)
}

#[allow(unsafe_code)]
unsafe fn set_release_hook(hook: usize) {
    // SAFETY: the caller passes the address of an `extern "C" fn(usize)`.
    let hook: extern "C" fn(usize) =
        unsafe { std::mem::transmute::<usize, extern "C" fn(usize)>(hook) };
    let _ = RELEASE_HOOK.set(hook);
}

fn socket_recv(socket: &SocketHandle, dontwait: bool, error_code: &mut i32) -> Box<RecvPart> {
    let received = socket.with(|s| match &socket.2 {
        Hook::Router(r) => r.recv(dontwait),
        Hook::Dealer(d) => d.recv(dontwait),
        _ => s.recv(dontwait),
    });
    match received {
        Ok(part) => {
            *error_code = 0;
            Box::new(RecvPart(part))
        }
        Err(e) => {
            *error_code = e.errno();
            Box::new(RecvPart(Part {
                data: Bytes::new(),
                more: false,
            }))
        }
    }
}

fn part_data(part: &RecvPart) -> &[u8] {
    &part.0.data
}

fn part_more(part: &RecvPart) -> bool {
    part.0.more
}

fn part_clone(part: &RecvPart) -> Box<RecvPart> {
    Box::new(RecvPart(Part {
        data: part.0.data.clone(),
        more: part.0.more,
    }))
}
