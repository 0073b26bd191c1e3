//! libzmq's numeric constants (`/usr/include/zmq.h`, libzmq 4.3) as the
//! C API passes them. The engine takes raw numbers so that the C shim can
//! forward its arguments unchanged.

/// Base of libzmq's own errno values.
pub const ZMQ_HAUSNUMERO: i32 = 156_384_712;
/// The context was terminated.
pub const ETERM: i32 = ZMQ_HAUSNUMERO + 53;
/// The transport does not go with the socket type.
pub const ENOCOMPATPROTO: i32 = ZMQ_HAUSNUMERO + 52;

/// Socket type `ZMQ_PAIR`.
pub const ZMQ_PAIR: i32 = 0;
/// Socket type `ZMQ_DEALER`.
pub const ZMQ_DEALER: i32 = 5;
/// Socket type `ZMQ_ROUTER`.
pub const ZMQ_ROUTER: i32 = 6;

/// Context option: number of I/O threads.
pub const ZMQ_IO_THREADS: i32 = 1;
/// Context option: most sockets open at once.
pub const ZMQ_MAX_SOCKETS: i32 = 2;
/// Context option (get only): the largest `ZMQ_MAX_SOCKETS` accepted.
pub const ZMQ_SOCKET_LIMIT: i32 = 3;
/// Default of `ZMQ_IO_THREADS`.
pub const ZMQ_IO_THREADS_DFLT: i32 = 1;
/// Default of `ZMQ_MAX_SOCKETS`.
pub const ZMQ_MAX_SOCKETS_DFLT: i32 = 1023;
/// What `ZMQ_SOCKET_LIMIT` reports on Linux (epoll).
pub const SOCKET_LIMIT: i32 = 65535;

/// Socket options (`zmq_setsockopt(3)`, `zmq_getsockopt(3)`): each number
/// libzmq 4.3 takes on a PAIR, DEALER or ROUTER socket. What each takes and
/// what the engine does with it: `options_table.rs`.
pub mod opt {
    /// `ZMQ_AFFINITY`.
    pub const AFFINITY: i32 = 4;
    /// `ZMQ_ROUTING_ID`.
    pub const ROUTING_ID: i32 = 5;
    /// `ZMQ_RATE`.
    pub const RATE: i32 = 8;
    /// `ZMQ_RECOVERY_IVL`.
    pub const RECOVERY_IVL: i32 = 9;
    /// `ZMQ_SNDBUF`.
    pub const SNDBUF: i32 = 11;
    /// `ZMQ_RCVBUF`.
    pub const RCVBUF: i32 = 12;
    /// `ZMQ_RCVMORE`.
    pub const RCVMORE: i32 = 13;
    /// `ZMQ_FD`.
    pub const FD: i32 = 14;
    /// `ZMQ_EVENTS`.
    pub const EVENTS: i32 = 15;
    /// `ZMQ_TYPE`.
    pub const TYPE: i32 = 16;
    /// `ZMQ_LINGER`.
    pub const LINGER: i32 = 17;
    /// `ZMQ_RECONNECT_IVL`.
    pub const RECONNECT_IVL: i32 = 18;
    /// `ZMQ_BACKLOG`.
    pub const BACKLOG: i32 = 19;
    /// `ZMQ_RECONNECT_IVL_MAX`.
    pub const RECONNECT_IVL_MAX: i32 = 21;
    /// `ZMQ_MAXMSGSIZE`.
    pub const MAXMSGSIZE: i32 = 22;
    /// `ZMQ_SNDHWM`.
    pub const SNDHWM: i32 = 23;
    /// `ZMQ_RCVHWM`.
    pub const RCVHWM: i32 = 24;
    /// `ZMQ_MULTICAST_HOPS`.
    pub const MULTICAST_HOPS: i32 = 25;
    /// `ZMQ_RCVTIMEO`.
    pub const RCVTIMEO: i32 = 27;
    /// `ZMQ_SNDTIMEO`.
    pub const SNDTIMEO: i32 = 28;
    /// `ZMQ_IPV4ONLY`.
    pub const IPV4ONLY: i32 = 31;
    /// `ZMQ_LAST_ENDPOINT`.
    pub const LAST_ENDPOINT: i32 = 32;
    /// `ZMQ_ROUTER_MANDATORY`.
    pub const ROUTER_MANDATORY: i32 = 33;
    /// `ZMQ_TCP_KEEPALIVE`.
    pub const TCP_KEEPALIVE: i32 = 34;
    /// `ZMQ_TCP_KEEPALIVE_CNT`.
    pub const TCP_KEEPALIVE_CNT: i32 = 35;
    /// `ZMQ_TCP_KEEPALIVE_IDLE`.
    pub const TCP_KEEPALIVE_IDLE: i32 = 36;
    /// `ZMQ_TCP_KEEPALIVE_INTVL`.
    pub const TCP_KEEPALIVE_INTVL: i32 = 37;
    /// `ZMQ_TCP_ACCEPT_FILTER`.
    pub const TCP_ACCEPT_FILTER: i32 = 38;
    /// `ZMQ_IMMEDIATE`.
    pub const IMMEDIATE: i32 = 39;
    /// `ZMQ_ROUTER_RAW`.
    pub const ROUTER_RAW: i32 = 41;
    /// `ZMQ_IPV6`.
    pub const IPV6: i32 = 42;
    /// `ZMQ_MECHANISM`.
    pub const MECHANISM: i32 = 43;
    /// `ZMQ_PLAIN_SERVER`.
    pub const PLAIN_SERVER: i32 = 44;
    /// `ZMQ_PLAIN_USERNAME`.
    pub const PLAIN_USERNAME: i32 = 45;
    /// `ZMQ_PLAIN_PASSWORD`.
    pub const PLAIN_PASSWORD: i32 = 46;
    /// `ZMQ_CURVE_SERVER`.
    pub const CURVE_SERVER: i32 = 47;
    /// `ZMQ_CURVE_PUBLICKEY`.
    pub const CURVE_PUBLICKEY: i32 = 48;
    /// `ZMQ_CURVE_SECRETKEY`.
    pub const CURVE_SECRETKEY: i32 = 49;
    /// `ZMQ_CURVE_SERVERKEY`.
    pub const CURVE_SERVERKEY: i32 = 50;
    /// `ZMQ_PROBE_ROUTER`.
    pub const PROBE_ROUTER: i32 = 51;
    /// `ZMQ_CONFLATE`.
    pub const CONFLATE: i32 = 54;
    /// `ZMQ_ZAP_DOMAIN`.
    pub const ZAP_DOMAIN: i32 = 55;
    /// `ZMQ_ROUTER_HANDOVER`.
    pub const ROUTER_HANDOVER: i32 = 56;
    /// `ZMQ_TOS`.
    pub const TOS: i32 = 57;
    /// `ZMQ_IPC_FILTER_PID`.
    pub const IPC_FILTER_PID: i32 = 58;
    /// `ZMQ_IPC_FILTER_UID`.
    pub const IPC_FILTER_UID: i32 = 59;
    /// `ZMQ_IPC_FILTER_GID`.
    pub const IPC_FILTER_GID: i32 = 60;
    /// `ZMQ_CONNECT_ROUTING_ID`.
    pub const CONNECT_ROUTING_ID: i32 = 61;
    /// `ZMQ_GSSAPI_SERVER`.
    pub const GSSAPI_SERVER: i32 = 62;
    /// `ZMQ_GSSAPI_PRINCIPAL`.
    pub const GSSAPI_PRINCIPAL: i32 = 63;
    /// `ZMQ_GSSAPI_SERVICE_PRINCIPAL`.
    pub const GSSAPI_SERVICE_PRINCIPAL: i32 = 64;
    /// `ZMQ_GSSAPI_PLAINTEXT`.
    pub const GSSAPI_PLAINTEXT: i32 = 65;
    /// `ZMQ_HANDSHAKE_IVL`.
    pub const HANDSHAKE_IVL: i32 = 66;
    /// `ZMQ_SOCKS_PROXY`.
    pub const SOCKS_PROXY: i32 = 68;
    /// `ZMQ_INVERT_MATCHING`.
    pub const INVERT_MATCHING: i32 = 74;
    /// `ZMQ_HEARTBEAT_IVL`.
    pub const HEARTBEAT_IVL: i32 = 75;
    /// `ZMQ_HEARTBEAT_TTL`.
    pub const HEARTBEAT_TTL: i32 = 76;
    /// `ZMQ_HEARTBEAT_TIMEOUT`.
    pub const HEARTBEAT_TIMEOUT: i32 = 77;
    /// `ZMQ_CONNECT_TIMEOUT`.
    pub const CONNECT_TIMEOUT: i32 = 79;
    /// `ZMQ_TCP_MAXRT`.
    pub const TCP_MAXRT: i32 = 80;
    /// `ZMQ_THREAD_SAFE`.
    pub const THREAD_SAFE: i32 = 81;
    /// `ZMQ_MULTICAST_MAXTPDU`.
    pub const MULTICAST_MAXTPDU: i32 = 84;
    /// `ZMQ_USE_FD`.
    pub const USE_FD: i32 = 89;
    /// `ZMQ_GSSAPI_PRINCIPAL_NAMETYPE`.
    pub const GSSAPI_PRINCIPAL_NAMETYPE: i32 = 90;
    /// `ZMQ_GSSAPI_SERVICE_PRINCIPAL_NAMETYPE`.
    pub const GSSAPI_SERVICE_PRINCIPAL_NAMETYPE: i32 = 91;
    /// `ZMQ_BINDTODEVICE`.
    pub const BINDTODEVICE: i32 = 92;
    /// `ZMQ_ZAP_ENFORCE_DOMAIN`.
    pub const ZAP_ENFORCE_DOMAIN: i32 = 93;
    /// `ZMQ_LOOPBACK_FASTPATH`.
    pub const LOOPBACK_FASTPATH: i32 = 94;
    /// `ZMQ_MULTICAST_LOOP`.
    pub const MULTICAST_LOOP: i32 = 96;
    /// `ZMQ_SOCKS_USERNAME`.
    pub const SOCKS_USERNAME: i32 = 99;
    /// `ZMQ_SOCKS_PASSWORD`.
    pub const SOCKS_PASSWORD: i32 = 100;
    /// `ZMQ_RECONNECT_STOP`.
    pub const RECONNECT_STOP: i32 = 109;
}

/// `zmq_poll` / `ZMQ_EVENTS` bits.
pub const ZMQ_POLLIN: i32 = 1;
/// `zmq_poll` / `ZMQ_EVENTS` bits.
pub const ZMQ_POLLOUT: i32 = 2;

/// Socket monitor events (`zmq_socket_monitor`).
pub mod event {
    /// A connection to a remote peer was established.
    pub const CONNECTED: u16 = 0x0001;
    /// A connect attempt is in progress.
    pub const CONNECT_DELAYED: u16 = 0x0002;
    /// A reconnect is scheduled; the value is the interval in ms.
    pub const CONNECT_RETRIED: u16 = 0x0004;
    /// The socket listens on an endpoint.
    pub const LISTENING: u16 = 0x0008;
    /// A listener could not be set up.
    pub const BIND_FAILED: u16 = 0x0010;
    /// A connection from a remote peer was accepted.
    pub const ACCEPTED: u16 = 0x0020;
    /// Accepting a connection failed.
    pub const ACCEPT_FAILED: u16 = 0x0040;
    /// A listener or a half-open connection was closed.
    pub const CLOSED: u16 = 0x0080;
    /// An established connection ended.
    pub const DISCONNECTED: u16 = 0x0200;
    /// Monitoring stopped (last event on the monitor endpoint).
    pub const MONITOR_STOPPED: u16 = 0x0400;
    /// A handshake failed for an unspecified reason.
    pub const HANDSHAKE_FAILED_NO_DETAIL: u16 = 0x0800;
    /// The ZMTP handshake completed.
    pub const HANDSHAKE_SUCCEEDED: u16 = 0x1000;
    /// A handshake failed on a protocol error.
    pub const HANDSHAKE_FAILED_PROTOCOL: u16 = 0x2000;
    /// Every event.
    pub const ALL: i32 = 0xFFFF;
}
