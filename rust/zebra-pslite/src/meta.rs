//! The PS-lite message meta both formats carry, in PS-lite's own terms
//! (`ps::Meta`, `ps::Control`, `ps::Node` of `include/ps/internal/message.h`).
//!
//! A [`Meta`] also remembers, privately, what its wire format needs to
//! re-emit an unchanged meta byte for byte: the padding of a BytePS raw
//! struct and which optional protobuf fields were present, with any unknown
//! protobuf fields. Changing a public field changes the emitted bytes
//! exactly as PS-lite's `PackMeta` would.

use crate::data_type::DataType;
use crate::format::Format;

/// PS-lite's `kEmpty` (`Meta::kEmpty`, `Node::kEmpty`): `INT_MAX`.
pub const EMPTY: i32 = i32::MAX;

/// A control command (`Control::Command`). Numbers 0–5 are common to all
/// PS-lite versions; 6–8 are BytePS's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Command {
    /// 0: not a control message.
    #[default]
    Empty,
    /// 1
    Terminate,
    /// 2
    AddNode,
    /// 3
    Barrier,
    /// 4
    Ack,
    /// 5
    Heartbeat,
    /// 6 (BytePS)
    Bootstrap,
    /// 7 (BytePS)
    AddrRequest,
    /// 8 (BytePS)
    AddrResolved,
    /// Any other number, kept as is.
    Other(i32),
}

impl Command {
    /// The command with number `code`.
    pub fn from_code(code: i32) -> Command {
        match code {
            0 => Command::Empty,
            1 => Command::Terminate,
            2 => Command::AddNode,
            3 => Command::Barrier,
            4 => Command::Ack,
            5 => Command::Heartbeat,
            6 => Command::Bootstrap,
            7 => Command::AddrRequest,
            8 => Command::AddrResolved,
            other => Command::Other(other),
        }
    }

    /// The command's number.
    pub fn code(self) -> i32 {
        match self {
            Command::Empty => 0,
            Command::Terminate => 1,
            Command::AddNode => 2,
            Command::Barrier => 3,
            Command::Ack => 4,
            Command::Heartbeat => 5,
            Command::Bootstrap => 6,
            Command::AddrRequest => 7,
            Command::AddrResolved => 8,
            Command::Other(code) => code,
        }
    }
}

/// A node role (`Node::Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// 0
    Server,
    /// 1
    Worker,
    /// 2
    Scheduler,
    /// Any other number, kept as is.
    Other(i32),
}

impl Role {
    /// The role with number `code`.
    pub fn from_code(code: i32) -> Role {
        match code {
            0 => Role::Server,
            1 => Role::Worker,
            2 => Role::Scheduler,
            other => Role::Other(other),
        }
    }

    /// The role's number.
    pub fn code(self) -> i32 {
        match self {
            Role::Server => 0,
            Role::Worker => 1,
            Role::Scheduler => 2,
            Role::Other(code) => code,
        }
    }
}

/// Wire residue of a node: what its format needs for a byte-exact re-emit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum NodeExtra {
    /// Made here, not parsed.
    #[default]
    Fresh,
    /// The 168-byte `RawNode` it was parsed from (padding, bytes after the
    /// hostname's NUL).
    Byteps(Box<[u8; crate::wire::byteps::NODE_LEN]>),
    /// Presence bits and unknown fields of a `PBNode`.
    Protobuf(crate::wire::pbmeta::PbExtra),
}

/// A node in a control message (`ps::Node`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Role.
    pub role: Role,
    /// Node id, [`EMPTY`] before the scheduler assigns one.
    pub id: i32,
    /// Host name or address, without NUL.
    pub hostname: Vec<u8>,
    /// Port of the node's ROUTER socket.
    pub port: i32,
    /// Whether the node was started by failover.
    pub is_recovery: bool,
    /// Customer id.
    pub customer_id: i32,
    /// BytePS only: auxiliary id (fabric van), -1 by default.
    pub aux_id: i32,
    /// BytePS only: the 64-byte endpoint name (fabric van).
    pub endpoint_name: [u8; 64],
    /// BytePS only: used length of `endpoint_name`.
    pub endpoint_name_len: u64,
    pub(crate) extra: NodeExtra,
}

impl Default for Node {
    fn default() -> Node {
        Node {
            role: Role::Server,
            id: EMPTY,
            hostname: Vec::new(),
            port: EMPTY,
            is_recovery: false,
            customer_id: 0,
            aux_id: -1,
            endpoint_name: [0; 64],
            endpoint_name_len: 0,
            extra: NodeExtra::Fresh,
        }
    }
}

impl Node {
    /// A node as PS-lite's `Node()` constructor leaves it, with a role,
    /// id, host and port.
    pub fn new(role: Role, id: i32, hostname: &str, port: i32) -> Node {
        Node {
            role,
            id,
            hostname: hostname.as_bytes().to_vec(),
            port,
            ..Node::default()
        }
    }

    /// The host name as text (lossy for non-UTF-8 bytes).
    pub fn hostname_str(&self) -> String {
        String::from_utf8_lossy(&self.hostname).into_owned()
    }
}

/// A control part (`ps::Control`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Control {
    /// The command; [`Command::Empty`] for data and SimpleApp messages.
    pub cmd: Command,
    /// Nodes (ADD_NODE, HEARTBEAT, ...).
    pub nodes: Vec<Node>,
    /// Barrier group (BARRIER); PS-lite leaves it uninitialised in barrier
    /// replies, so any value may arrive.
    pub barrier_group: i32,
    /// Message signature (ACK).
    pub msg_sig: u64,
}

impl Control {
    /// Whether this is not a control message.
    pub fn is_empty(&self) -> bool {
        self.cmd == Command::Empty
    }
}

/// Wire residue of a meta: what its format needs for a byte-exact re-emit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum MetaExtra {
    /// Made here, not parsed.
    #[default]
    Fresh,
    /// The 88-byte `RawMeta` header it was parsed from (its padding).
    Byteps(Box<[u8; crate::wire::byteps::HEADER_LEN]>),
    /// Presence bits and unknown fields of the `PBMeta` and its `PBControl`.
    Protobuf {
        /// `PBMeta`.
        meta: crate::wire::pbmeta::PbExtra,
        /// `PBControl`.
        control: crate::wire::pbmeta::PbExtra,
    },
}

/// The meta of a PS-lite message (`ps::Meta`).
///
/// Fields mean what they mean in PS-lite; [`EMPTY`] marks an unset id or
/// timestamp. `sender` and `recver` are not in either wire format (PS-lite
/// takes them from ZeroMQ identities); [`crate::message`] fills them from
/// the identity frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// `head`: the command of a KV request (`cmd` of `ZPush`), or of a
    /// SimpleApp request.
    pub head: i32,
    /// Application id.
    pub app_id: i32,
    /// Customer id.
    pub customer_id: i32,
    /// Request timestamp; a response carries its request's.
    pub timestamp: i32,
    /// Request (true) or response (false).
    pub request: bool,
    /// Push (true) or pull (false).
    pub push: bool,
    /// Pull. Protobuf format: its own field (a PushPull has both `push` and
    /// `pull`). BytePS format has no such field: parsing sets it to
    /// `!push` for data messages, and emitting ignores it.
    pub pull: bool,
    /// A SimpleApp message (not KV).
    pub simple_app: bool,
    /// Protobuf format only: priority.
    pub priority: i32,
    /// Sender node id (from the envelope, not the meta frame).
    pub sender: i32,
    /// Receiver node id (from the envelope, not the meta frame).
    pub recver: i32,
    /// Body (SimpleApp payload, e.g. MXNet's pickled optimizer).
    pub body: Vec<u8>,
    /// Type of each data frame.
    pub data_types: Vec<DataType>,
    /// Control part.
    pub control: Control,
    /// Total bytes of the data frames. BytePS always carries it; the
    /// protobuf format only when the sender sets it (MXNet 1.9.1 never
    /// does): see [`Meta::carries_data_size`].
    pub data_size: i32,
    /// BytePS only: `key` (unset by workers: whatever was in memory).
    pub key: u64,
    /// BytePS only: the worker's value buffer address.
    pub addr: u64,
    /// BytePS only: number of values of the request (push: values sent;
    /// pull: size of the caller's output buffer).
    pub val_len: i32,
    /// BytePS only: `option` (unset by workers).
    pub option: i32,
    pub(crate) extra: MetaExtra,
}

impl Default for Meta {
    fn default() -> Meta {
        Meta::new()
    }
}

impl Meta {
    /// A meta as PS-lite's `Meta()` constructor leaves it (its
    /// uninitialised `key`, `val_len` and `option` as 0).
    pub fn new() -> Meta {
        Meta {
            head: EMPTY,
            app_id: EMPTY,
            customer_id: EMPTY,
            timestamp: EMPTY,
            request: false,
            push: false,
            pull: false,
            simple_app: false,
            priority: 0,
            sender: EMPTY,
            recver: EMPTY,
            body: Vec::new(),
            data_types: Vec::new(),
            control: Control::default(),
            data_size: 0,
            key: 0,
            addr: 0,
            val_len: 0,
            option: 0,
            extra: MetaExtra::Fresh,
        }
    }

    /// The format this meta was parsed from, if any.
    pub fn format(&self) -> Option<Format> {
        match self.extra {
            MetaExtra::Fresh => None,
            MetaExtra::Byteps(_) => Some(Format::Byteps),
            MetaExtra::Protobuf { .. } => Some(Format::Protobuf),
        }
    }

    /// Whether emitting in the format it came from carries `data_size`
    /// (always for BytePS; for protobuf only if the parsed meta had it, or
    /// for a fresh meta if it is non-zero).
    pub fn carries_data_size(&self) -> bool {
        match &self.extra {
            MetaExtra::Fresh => self.data_size != 0,
            MetaExtra::Byteps(_) => true,
            MetaExtra::Protobuf { meta, .. } => {
                meta.has(crate::wire::pbmeta::field::DATA_SIZE) || self.data_size != 0
            }
        }
    }

    /// A data message: no control command and not SimpleApp (PS-lite's
    /// `IsValidPushpull`).
    pub fn is_data(&self) -> bool {
        self.control.is_empty() && !self.simple_app
    }

    /// A KV push request (a PushPull counts).
    pub fn is_push_request(&self) -> bool {
        self.is_data() && self.request && self.push
    }
}
