//! Every socket option libzmq 4.3 takes on a PAIR, DEALER or ROUTER socket:
//! how libzmq passes and checks its value (measured against the system's
//! libzmq 4.3.4 and its `zmq_setsockopt(3)`/`zmq_getsockopt(3)`), and what
//! the engine does with it. `docs/ZMQ.md` shows this table
//! ([`markdown`]); a test holds the page to it.

use crate::consts::opt::*;

/// The socket types an option applies to, as a bit set.
pub(crate) const PAIR: u8 = 1;
pub(crate) const DEALER: u8 = 2;
pub(crate) const ROUTER: u8 = 4;
const ALL: u8 = PAIR | DEALER | ROUTER;

/// How an option's value is passed, and what libzmq accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A C `int`: exactly 4 bytes, within `min..=max`; read back into
    /// exactly 4 bytes.
    Int { min: i32, max: i32 },
    /// A C `int` taken as a yes/no: any value, read back as 0 or 1.
    Flag,
    /// An `int64_t`/`uint64_t`: exactly 8 bytes, in and out.
    Int64,
    /// Binary, 1 to `max` bytes (routing ids); read back into a buffer at
    /// least as long.
    Id { max: usize },
    /// Text of at most 255 bytes, read back with a terminating NUL;
    /// `null`: `NULL`/0 resets it, `empty`: a non-NULL value of length 0
    /// is taken (else both are `EINVAL`).
    Str { null: bool, empty: bool },
    /// A C `int` added to a set (a pid, uid or gid); `NULL`/0 empties it.
    IntSet,
    /// An IP address with an optional `/bits` mask, added to a list;
    /// `NULL`/0 empties it.
    Cidr,
    /// Read only, answered by the socket's state; `exact`: the buffer must
    /// be exactly the value's size (else at least).
    State { exact: bool },
    /// A CURVE key: 32 bytes, or 40 characters of Z85 (41 with a NUL).
    Key,
}

/// What the engine does with an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    /// As libzmq.
    Acts,
    /// Accepted, checked and kept for `zmq_getsockopt`, with no effect;
    /// the text says why (for most: libzmq uses it only with transports or
    /// socket types Zebra does not have, so it has no effect there either).
    Kept(&'static str),
    /// Accepted while it is left at its default ("off"); any other value
    /// fails with `EINVAL`, logged with the text.
    OffOnly(&'static str),
    /// `EINVAL`, logged with the text, for every value and for reading.
    Refused(&'static str),
}

/// One option.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub id: i32,
    pub name: &'static str,
    pub kind: Kind,
    /// Socket types libzmq takes it on ([`PAIR`], [`DEALER`], [`ROUTER`]).
    pub types: u8,
    /// `zmq_setsockopt` takes it (else `EINVAL`: read only).
    pub set: bool,
    /// `zmq_getsockopt` answers it (else `EINVAL`: write only).
    pub get: bool,
    /// The default of an integer option (what `zmq_getsockopt` reads).
    pub default: i64,
    pub engine: Engine,
}

const fn int(min: i32, max: i32) -> Kind {
    Kind::Int { min, max }
}

const NONNEG: Kind = int(0, i32::MAX);
const FROM_MINUS1: Kind = int(-1, i32::MAX);
const POSITIVE: Kind = int(1, i32::MAX);
const BOOL: Kind = int(0, 1);
const ANY: Kind = int(i32::MIN, i32::MAX);
/// A string that must not be empty.
const STR: Kind = Kind::Str {
    null: false,
    empty: false,
};
/// A string that must not be empty; `NULL` resets it.
const STR_NULL: Kind = Kind::Str {
    null: true,
    empty: false,
};
/// Any string; `NULL` resets it.
const STR_ANY: Kind = Kind::Str {
    null: true,
    empty: true,
};

/// A read-write option of every socket type.
const fn rw(id: i32, name: &'static str, kind: Kind, default: i64, engine: Engine) -> Spec {
    Spec {
        id,
        name,
        kind,
        types: ALL,
        set: true,
        get: true,
        default,
        engine,
    }
}

/// A write-only option of the socket types `types`.
const fn wo(id: i32, name: &'static str, kind: Kind, types: u8, engine: Engine) -> Spec {
    Spec {
        id,
        name,
        kind,
        types,
        set: true,
        get: false,
        default: 0,
        engine,
    }
}

/// A read-only option.
const fn ro(id: i32, name: &'static str, exact: bool) -> Spec {
    Spec {
        id,
        name,
        kind: Kind::State { exact },
        types: ALL,
        set: false,
        get: true,
        default: 0,
        engine: Engine::Acts,
    }
}

const MULTICAST: Engine = Engine::Kept("multicast (pgm, norm) only, in libzmq too");
const NO_SECURITY: &str = "security mechanisms (PLAIN, CURVE, GSSAPI, ZAP) are not implemented by Zebra's engine: run with ZEBRA_ENABLE=0";
const OFF_SECURITY: Engine = Engine::OffOnly(NO_SECURITY);
const OFF_SOCKS: Engine = Engine::OffOnly("SOCKS proxies are not implemented by Zebra's engine");

/// The options, by number.
pub(crate) const SPECS: &[Spec] = &[
    rw(AFFINITY, "ZMQ_AFFINITY", Kind::Int64, 0, Engine::Kept("the engine gives each connection to its least loaded I/O thread")),
    rw(ROUTING_ID, "ZMQ_ROUTING_ID", Kind::Id { max: 255 }, 0, Engine::Acts),
    rw(RATE, "ZMQ_RATE", POSITIVE, 100, MULTICAST),
    rw(RECOVERY_IVL, "ZMQ_RECOVERY_IVL", NONNEG, 10_000, MULTICAST),
    rw(SNDBUF, "ZMQ_SNDBUF", FROM_MINUS1, -1, Engine::Acts),
    rw(RCVBUF, "ZMQ_RCVBUF", FROM_MINUS1, -1, Engine::Acts),
    ro(RCVMORE, "ZMQ_RCVMORE", false),
    ro(FD, "ZMQ_FD", false),
    ro(EVENTS, "ZMQ_EVENTS", false),
    ro(TYPE, "ZMQ_TYPE", true),
    rw(LINGER, "ZMQ_LINGER", FROM_MINUS1, -1, Engine::Acts),
    rw(RECONNECT_IVL, "ZMQ_RECONNECT_IVL", FROM_MINUS1, 100, Engine::Acts),
    rw(BACKLOG, "ZMQ_BACKLOG", NONNEG, 100, Engine::Acts),
    rw(RECONNECT_IVL_MAX, "ZMQ_RECONNECT_IVL_MAX", NONNEG, 0, Engine::Acts),
    rw(MAXMSGSIZE, "ZMQ_MAXMSGSIZE", Kind::Int64, -1, Engine::Acts),
    rw(SNDHWM, "ZMQ_SNDHWM", NONNEG, 1000, Engine::Acts),
    rw(RCVHWM, "ZMQ_RCVHWM", NONNEG, 1000, Engine::Acts),
    rw(MULTICAST_HOPS, "ZMQ_MULTICAST_HOPS", POSITIVE, 1, MULTICAST),
    rw(RCVTIMEO, "ZMQ_RCVTIMEO", FROM_MINUS1, -1, Engine::Acts),
    rw(SNDTIMEO, "ZMQ_SNDTIMEO", FROM_MINUS1, -1, Engine::Acts),
    rw(IPV4ONLY, "ZMQ_IPV4ONLY", BOOL, 1, Engine::Kept("kept as the inverse of ZMQ_IPV6")),
    ro(LAST_ENDPOINT, "ZMQ_LAST_ENDPOINT", false),
    wo(ROUTER_MANDATORY, "ZMQ_ROUTER_MANDATORY", NONNEG, ROUTER, Engine::Acts),
    rw(TCP_KEEPALIVE, "ZMQ_TCP_KEEPALIVE", int(-1, 1), -1, Engine::Acts),
    rw(TCP_KEEPALIVE_CNT, "ZMQ_TCP_KEEPALIVE_CNT", FROM_MINUS1, -1, Engine::Acts),
    rw(TCP_KEEPALIVE_IDLE, "ZMQ_TCP_KEEPALIVE_IDLE", FROM_MINUS1, -1, Engine::Acts),
    rw(TCP_KEEPALIVE_INTVL, "ZMQ_TCP_KEEPALIVE_INTVL", FROM_MINUS1, -1, Engine::Acts),
    wo(TCP_ACCEPT_FILTER, "ZMQ_TCP_ACCEPT_FILTER", Kind::Cidr, ALL, Engine::Acts),
    rw(IMMEDIATE, "ZMQ_IMMEDIATE", BOOL, 0, Engine::Acts),
    wo(ROUTER_RAW, "ZMQ_ROUTER_RAW", NONNEG, ROUTER, Engine::OffOnly("raw TCP on a ROUTER is not implemented by Zebra's engine")),
    rw(IPV6, "ZMQ_IPV6", BOOL, 0, Engine::Kept("addresses are used as given, IPv4 or IPv6")),
    ro(MECHANISM, "ZMQ_MECHANISM", true),
    rw(PLAIN_SERVER, "ZMQ_PLAIN_SERVER", BOOL, 0, OFF_SECURITY),
    rw(PLAIN_USERNAME, "ZMQ_PLAIN_USERNAME", STR_NULL, 0, OFF_SECURITY),
    rw(PLAIN_PASSWORD, "ZMQ_PLAIN_PASSWORD", STR_NULL, 0, OFF_SECURITY),
    rw(CURVE_SERVER, "ZMQ_CURVE_SERVER", BOOL, 0, OFF_SECURITY),
    rw(CURVE_PUBLICKEY, "ZMQ_CURVE_PUBLICKEY", Kind::Key, 0, Engine::Refused(NO_SECURITY)),
    rw(CURVE_SECRETKEY, "ZMQ_CURVE_SECRETKEY", Kind::Key, 0, Engine::Refused(NO_SECURITY)),
    rw(CURVE_SERVERKEY, "ZMQ_CURVE_SERVERKEY", Kind::Key, 0, Engine::Refused(NO_SECURITY)),
    wo(PROBE_ROUTER, "ZMQ_PROBE_ROUTER", NONNEG, DEALER | ROUTER, Engine::Acts),
    rw(CONFLATE, "ZMQ_CONFLATE", BOOL, 0, Engine::OffOnly("ZMQ_CONFLATE is not implemented by Zebra's engine")),
    rw(ZAP_DOMAIN, "ZMQ_ZAP_DOMAIN", STR, 0, OFF_SECURITY),
    wo(ROUTER_HANDOVER, "ZMQ_ROUTER_HANDOVER", NONNEG, ROUTER, Engine::Acts),
    rw(TOS, "ZMQ_TOS", NONNEG, 0, Engine::Acts),
    wo(IPC_FILTER_PID, "ZMQ_IPC_FILTER_PID", Kind::IntSet, ALL, Engine::Acts),
    wo(IPC_FILTER_UID, "ZMQ_IPC_FILTER_UID", Kind::IntSet, ALL, Engine::Acts),
    wo(IPC_FILTER_GID, "ZMQ_IPC_FILTER_GID", Kind::IntSet, ALL, Engine::Acts),
    wo(CONNECT_ROUTING_ID, "ZMQ_CONNECT_ROUTING_ID", Kind::Id { max: usize::MAX }, ROUTER, Engine::Acts),
    rw(GSSAPI_SERVER, "ZMQ_GSSAPI_SERVER", BOOL, 0, OFF_SECURITY),
    rw(GSSAPI_PRINCIPAL, "ZMQ_GSSAPI_PRINCIPAL", STR, 0, OFF_SECURITY),
    rw(GSSAPI_SERVICE_PRINCIPAL, "ZMQ_GSSAPI_SERVICE_PRINCIPAL", STR, 0, OFF_SECURITY),
    rw(GSSAPI_PLAINTEXT, "ZMQ_GSSAPI_PLAINTEXT", BOOL, 0, OFF_SECURITY),
    rw(HANDSHAKE_IVL, "ZMQ_HANDSHAKE_IVL", NONNEG, 30_000, Engine::Acts),
    rw(SOCKS_PROXY, "ZMQ_SOCKS_PROXY", STR_NULL, 0, OFF_SOCKS),
    rw(INVERT_MATCHING, "ZMQ_INVERT_MATCHING", Kind::Flag, 0, Engine::Kept("PUB/SUB only, in libzmq too")),
    rw(HEARTBEAT_IVL, "ZMQ_HEARTBEAT_IVL", NONNEG, 0, Engine::Kept("no ZMTP heartbeats are sent: a dead peer is noticed by TCP")),
    rw(HEARTBEAT_TTL, "ZMQ_HEARTBEAT_TTL", int(-99, 6_553_599), 0, Engine::Kept("no ZMTP heartbeats are sent: a dead peer is noticed by TCP")),
    rw(HEARTBEAT_TIMEOUT, "ZMQ_HEARTBEAT_TIMEOUT", NONNEG, -1, Engine::Kept("no ZMTP heartbeats are sent: a dead peer is noticed by TCP")),
    rw(CONNECT_TIMEOUT, "ZMQ_CONNECT_TIMEOUT", NONNEG, 0, Engine::Kept("a connect waits for the kernel's own timeout")),
    rw(TCP_MAXRT, "ZMQ_TCP_MAXRT", NONNEG, 0, Engine::Acts),
    ro(THREAD_SAFE, "ZMQ_THREAD_SAFE", false),
    rw(MULTICAST_MAXTPDU, "ZMQ_MULTICAST_MAXTPDU", POSITIVE, 1500, MULTICAST),
    rw(USE_FD, "ZMQ_USE_FD", FROM_MINUS1, -1, Engine::OffOnly("ZMQ_USE_FD (a listener made by the application) is not implemented by Zebra's engine")),
    rw(GSSAPI_PRINCIPAL_NAMETYPE, "ZMQ_GSSAPI_PRINCIPAL_NAMETYPE", int(0, 2), 0, Engine::Kept("GSSAPI only")),
    rw(GSSAPI_SERVICE_PRINCIPAL_NAMETYPE, "ZMQ_GSSAPI_SERVICE_PRINCIPAL_NAMETYPE", int(0, 2), 0, Engine::Kept("GSSAPI only")),
    rw(BINDTODEVICE, "ZMQ_BINDTODEVICE", STR_NULL, 0, Engine::Acts),
    rw(ZAP_ENFORCE_DOMAIN, "ZMQ_ZAP_ENFORCE_DOMAIN", Kind::Flag, 0, Engine::Kept("ZAP only (not implemented)")),
    rw(LOOPBACK_FASTPATH, "ZMQ_LOOPBACK_FASTPATH", Kind::Flag, 0, Engine::Kept("Windows only, in libzmq too")),
    rw(MULTICAST_LOOP, "ZMQ_MULTICAST_LOOP", Kind::Flag, 1, MULTICAST),
    rw(SOCKS_USERNAME, "ZMQ_SOCKS_USERNAME", STR_ANY, 0, OFF_SOCKS),
    rw(SOCKS_PASSWORD, "ZMQ_SOCKS_PASSWORD", STR_ANY, 0, OFF_SOCKS),
    rw(RECONNECT_STOP, "ZMQ_RECONNECT_STOP", ANY, 0, Engine::OffOnly("ZMQ_RECONNECT_STOP is a draft option (ZMQ_BUILD_DRAFT_API), not implemented by Zebra's engine")),
];

/// The option numbered `id`.
pub(crate) fn spec(id: i32) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.id == id)
}

/// The default of an integer option (0 for an unknown one).
pub(crate) fn default_of(id: i32) -> i64 {
    spec(id).map_or(0, |s| s.default)
}

fn describe_kind(s: &Spec) -> String {
    match s.kind {
        Kind::Int { min, max } => match (min, max) {
            (i32::MIN, i32::MAX) => "int".to_owned(),
            (0, 1) => "int 0/1".to_owned(),
            (min, i32::MAX) => format!("int ≥ {min}"),
            (min, max) => format!("int {min}..{max}"),
        },
        Kind::Flag => "int (0 or not)".to_owned(),
        Kind::Int64 => "int64".to_owned(),
        Kind::Id { max: 255 } => "binary, 1-255 bytes".to_owned(),
        Kind::Id { .. } => "binary, 1 byte or more".to_owned(),
        Kind::Str { .. } => "string".to_owned(),
        Kind::IntSet => "int (adds to a set; NULL clears)".to_owned(),
        Kind::Cidr => "address[/bits] (adds; NULL clears)".to_owned(),
        Kind::State { .. } => "read only".to_owned(),
        Kind::Key => "CURVE key".to_owned(),
    }
}

fn describe_types(types: u8) -> &'static str {
    match types {
        ALL => "all",
        ROUTER => "ROUTER",
        t if t == DEALER | ROUTER => "DEALER, ROUTER",
        _ => "?",
    }
}

/// The table of `docs/ZMQ.md`: each option, what it takes, on which socket
/// types, and what Zebra's engine does with it.
pub fn markdown() -> String {
    let mut out = String::from(
        "| # | option | value | sockets | get | Zebra's engine |\n|---|---|---|---|---|---|\n",
    );
    for s in SPECS {
        let engine = match s.engine {
            Engine::Acts => "as libzmq".to_owned(),
            Engine::Kept(why) => format!("accepted, no effect: {why}"),
            Engine::OffOnly(why) => format!("only the default; else EINVAL: {why}"),
            Engine::Refused(why) => format!("EINVAL: {why}"),
        };
        let get = match (s.set, s.get) {
            (true, true) => "yes",
            (true, false) => "no (write only)",
            _ => "read only",
        };
        out.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            s.id,
            s.name,
            describe_kind(s),
            describe_types(s.types),
            get,
            engine
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_unique_and_sorted() {
        for w in SPECS.windows(2) {
            assert!(w[0].id < w[1].id, "{} before {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn docs_show_this_table() {
        let doc = include_str!("../../../docs/ZMQ.md");
        assert!(
            doc.contains(&markdown()),
            "docs/ZMQ.md does not hold the option table; print it with \
             `cargo test -p zebra-engine --lib print_option_table -- --ignored --nocapture`"
        );
    }

    #[test]
    #[ignore = "prints the table for docs/ZMQ.md"]
    fn print_option_table() {
        print!("{}", markdown());
    }

    #[test]
    fn write_only_and_read_only_have_no_default() {
        for s in SPECS.iter().filter(|s| !s.get || !s.set) {
            assert_eq!(s.default, 0, "{}", s.name);
        }
    }
}
