//! The hot path of this process (`ZEBRA_SWITCH`, `ZEBRA_TRACE`): the bridge's one
//! [`Process`] of `zebra-runtime`, made on first use from the process's plan
//! ([`crate::hot_plan`]) and its clock. A process-wide singleton because the C ABI
//! has no handle to carry it: the shim's sockets reach it through their [`Hook`]s.

use std::sync::OnceLock;

use zebra_engine::Socket;
use zebra_runtime::{Clock, Hook, Process};

static PROCESS: OnceLock<Option<Process>> = OnceLock::new();

fn process() -> Option<&'static Process> {
    PROCESS
        .get_or_init(|| crate::hot_plan().map(|plan| Process::new(plan, Clock::new())))
        .as_ref()
}

/// The hook for a new socket of type `socket_type`.
pub fn hook(socket: &Socket, socket_type: i32) -> Hook {
    process().map_or(Hook::None, |p| p.hook(socket, socket_type))
}

/// A socket option was set (and taken by the engine).
pub fn on_option(socket_type: i32, option: i32, value: &[u8]) {
    if let Some(p) = process() {
        p.on_option(socket_type, option, value);
    }
}

/// The hot path's statistics for the at-exit report (empty without one).
pub fn report() -> String {
    PROCESS
        .get()
        .and_then(Option::as_ref)
        .map_or_else(String::new, Process::report)
}

/// The hot path's statistics as one JSON object (`null` without a hot path): members
/// `worker`, `trace` and `server`, each when this process has one.
pub fn report_json() -> String {
    PROCESS
        .get()
        .and_then(Option::as_ref)
        .map_or_else(|| "null".into(), Process::report_json)
}
