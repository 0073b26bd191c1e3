//! BytePS's PS-lite meta (0.2.5, `3rdparty/ps-lite/src/meta.h`, `van.cc`):
//! the C struct `RawMeta` copied as is (x86-64, little endian, natural
//! alignment), then the body, one `int` per data type and one `RawNode`
//! per control node. `PackMeta` zeroes the `RawMeta` first, so its padding
//! is zero; it does not zero a `RawNode`, only its two char arrays.
//!
//! ```text
//! RawMeta (88 bytes)                      RawNode (168 bytes)
//! offset size field                       offset size field
//!      0    4 head                             0    4 role
//!      4    4 body_size                        4    4 id
//!      8    4 control.cmd                      8   64 hostname (NUL-terminated)
//!     12    4 control.node_size               72    4 port
//!     16    4 control.barrier_group           76    1 is_recovery
//!     20    4 (padding)                       77    3 (padding)
//!     24    8 control.msg_sig                 80    4 customer_id
//!     32    1 request                         84   64 endpoint_name
//!     33    3 (padding)                      148    4 (padding)
//!     36    4 app_id                         152    8 endpoint_name_len
//!     40    4 timestamp                      160    4 aux_id
//!     44    4 data_type_size                 164    4 (padding)
//!     48    4 customer_id
//!     52    1 push
//!     53    1 simple_app
//!     54    2 (padding)
//!     56    4 data_size
//!     60    4 (padding)
//!     64    8 key
//!     72    8 addr
//!     80    4 val_len
//!     84    4 option
//! then: body_size bytes of body, data_type_size x int32, node_size x RawNode
//! ```
//!
//! The frame is exactly that long (`GetPackMetaLen`). There is no `pull`,
//! `priority`, `sender` or `recver` on the wire.

use crate::data_type::DataType;
use crate::error::{Error, Result};
use crate::meta::{Command, Meta, MetaExtra, Node, NodeExtra, Role};

/// Size of `RawMeta`.
pub const HEADER_LEN: usize = 88;
/// Size of `RawNode`.
pub const NODE_LEN: usize = 168;
/// Size of `RawNode::hostname`.
pub const HOSTNAME_LEN: usize = 64;
/// Size of `RawNode::endpoint_name`.
pub const ENDPOINT_NAME_LEN: usize = 64;

/// Byte ranges of `RawMeta`.
pub mod field {
    use core::ops::Range;
    /// head
    pub const HEAD: Range<usize> = 0..4;
    /// body_size
    pub const BODY_SIZE: Range<usize> = 4..8;
    /// control.cmd
    pub const CMD: Range<usize> = 8..12;
    /// control.node_size
    pub const NODE_SIZE: Range<usize> = 12..16;
    /// control.barrier_group
    pub const BARRIER_GROUP: Range<usize> = 16..20;
    /// control.msg_sig
    pub const MSG_SIG: Range<usize> = 24..32;
    /// request
    pub const REQUEST: usize = 32;
    /// app_id
    pub const APP_ID: Range<usize> = 36..40;
    /// timestamp
    pub const TIMESTAMP: Range<usize> = 40..44;
    /// data_type_size
    pub const DATA_TYPE_SIZE: Range<usize> = 44..48;
    /// customer_id
    pub const CUSTOMER_ID: Range<usize> = 48..52;
    /// push
    pub const PUSH: usize = 52;
    /// simple_app
    pub const SIMPLE_APP: usize = 53;
    /// data_size
    pub const DATA_SIZE: Range<usize> = 56..60;
    /// key
    pub const KEY: Range<usize> = 64..72;
    /// addr
    pub const ADDR: Range<usize> = 72..80;
    /// val_len
    pub const VAL_LEN: Range<usize> = 80..84;
    /// option
    pub const OPTION: Range<usize> = 84..88;
    /// Padding bytes (zero in everything `PackMeta` writes).
    pub const PADDING: [Range<usize>; 4] = [20..24, 33..36, 54..56, 60..64];
}

/// Byte ranges of `RawNode`.
pub mod node_field {
    use core::ops::Range;
    /// role
    pub const ROLE: Range<usize> = 0..4;
    /// id
    pub const ID: Range<usize> = 4..8;
    /// hostname
    pub const HOSTNAME: Range<usize> = 8..72;
    /// port
    pub const PORT: Range<usize> = 72..76;
    /// is_recovery
    pub const IS_RECOVERY: usize = 76;
    /// customer_id
    pub const CUSTOMER_ID: Range<usize> = 80..84;
    /// endpoint_name
    pub const ENDPOINT_NAME: Range<usize> = 84..148;
    /// endpoint_name_len
    pub const ENDPOINT_NAME_LEN: Range<usize> = 152..160;
    /// aux_id
    pub const AUX_ID: Range<usize> = 160..164;
}

fn get_i32(b: &[u8], r: core::ops::Range<usize>) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[r]);
    i32::from_le_bytes(a)
}

fn get_u64(b: &[u8], r: core::ops::Range<usize>) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[r]);
    u64::from_le_bytes(a)
}

fn get_bool(b: &[u8], at: usize, name: &'static str) -> Result<bool> {
    match b[at] {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(Error::InvalidBool {
            field: name,
            value: u64::from(v),
        }),
    }
}

fn count(value: i32, name: &'static str) -> Result<usize> {
    usize::try_from(value).map_err(|_| Error::NegativeCount { field: name, value })
}

/// A read/write view of a `RawMeta` header (smoltcp style), for reading or
/// patching fields in place without decoding the whole meta.
#[derive(Debug, Clone)]
pub struct RawMeta<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RawMeta<T> {
    /// Wraps a buffer without checking it; accessors panic if it is
    /// shorter than [`HEADER_LEN`].
    pub const fn new_unchecked(buffer: T) -> RawMeta<T> {
        RawMeta { buffer }
    }

    /// Wraps a buffer after checking it holds a whole header.
    pub fn new_checked(buffer: T) -> Result<RawMeta<T>> {
        let available = buffer.as_ref().len();
        if available < HEADER_LEN {
            return Err(Error::Truncated {
                what: "BytePS RawMeta",
                needed: HEADER_LEN,
                available,
            });
        }
        Ok(RawMeta { buffer })
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// `head`.
    pub fn head(&self) -> i32 {
        get_i32(self.b(), field::HEAD)
    }
    /// `body_size`.
    pub fn body_size(&self) -> i32 {
        get_i32(self.b(), field::BODY_SIZE)
    }
    /// `control.cmd`.
    pub fn cmd(&self) -> i32 {
        get_i32(self.b(), field::CMD)
    }
    /// `control.node_size`.
    pub fn node_size(&self) -> i32 {
        get_i32(self.b(), field::NODE_SIZE)
    }
    /// `control.barrier_group`.
    pub fn barrier_group(&self) -> i32 {
        get_i32(self.b(), field::BARRIER_GROUP)
    }
    /// `control.msg_sig`.
    pub fn msg_sig(&self) -> u64 {
        get_u64(self.b(), field::MSG_SIG)
    }
    /// The `request` byte.
    pub fn request_byte(&self) -> u8 {
        self.b()[field::REQUEST]
    }
    /// `app_id`.
    pub fn app_id(&self) -> i32 {
        get_i32(self.b(), field::APP_ID)
    }
    /// `timestamp`.
    pub fn timestamp(&self) -> i32 {
        get_i32(self.b(), field::TIMESTAMP)
    }
    /// `data_type_size`.
    pub fn data_type_size(&self) -> i32 {
        get_i32(self.b(), field::DATA_TYPE_SIZE)
    }
    /// `customer_id`.
    pub fn customer_id(&self) -> i32 {
        get_i32(self.b(), field::CUSTOMER_ID)
    }
    /// The `push` byte.
    pub fn push_byte(&self) -> u8 {
        self.b()[field::PUSH]
    }
    /// The `simple_app` byte.
    pub fn simple_app_byte(&self) -> u8 {
        self.b()[field::SIMPLE_APP]
    }
    /// `data_size`.
    pub fn data_size(&self) -> i32 {
        get_i32(self.b(), field::DATA_SIZE)
    }
    /// `key`.
    pub fn key(&self) -> u64 {
        get_u64(self.b(), field::KEY)
    }
    /// `addr`.
    pub fn addr(&self) -> u64 {
        get_u64(self.b(), field::ADDR)
    }
    /// `val_len`.
    pub fn val_len(&self) -> i32 {
        get_i32(self.b(), field::VAL_LEN)
    }
    /// `option`.
    pub fn option(&self) -> i32 {
        get_i32(self.b(), field::OPTION)
    }
    /// Whether every padding byte is zero, as `PackMeta` leaves them.
    pub fn padding_is_zero(&self) -> bool {
        field::PADDING
            .iter()
            .all(|r| self.b()[r.clone()].iter().all(|&x| x == 0))
    }

    /// The length the whole meta frame must have (`GetPackMetaLen`).
    pub fn packed_len(&self) -> Result<usize> {
        let body = count(self.body_size(), "body_size")?;
        let types = count(self.data_type_size(), "data_type_size")?;
        let nodes = count(self.node_size(), "control.node_size")?;
        Ok(HEADER_LEN + body + 4 * types + NODE_LEN * nodes)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RawMeta<T> {
    fn put_i32(&mut self, r: core::ops::Range<usize>, v: i32) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_le_bytes());
    }
    /// Sets `data_size`.
    pub fn set_data_size(&mut self, v: i32) {
        self.put_i32(field::DATA_SIZE, v)
    }
    /// Sets `val_len`.
    pub fn set_val_len(&mut self, v: i32) {
        self.put_i32(field::VAL_LEN, v)
    }
    /// Sets `timestamp`.
    pub fn set_timestamp(&mut self, v: i32) {
        self.put_i32(field::TIMESTAMP, v)
    }
    /// Sets `head`.
    pub fn set_head(&mut self, v: i32) {
        self.put_i32(field::HEAD, v)
    }
}

/// Parses a whole BytePS meta frame.
pub fn parse(buf: &[u8]) -> Result<Meta> {
    let raw = RawMeta::new_checked(buf)?;
    let body_len = count(raw.body_size(), "body_size")?;
    let types = count(raw.data_type_size(), "data_type_size")?;
    let nodes = count(raw.node_size(), "control.node_size")?;
    let needed = (body_len as u128)
        + 4 * (types as u128)
        + (NODE_LEN as u128) * (nodes as u128)
        + HEADER_LEN as u128;
    if needed > buf.len() as u128 {
        return Err(Error::Truncated {
            what: "BytePS meta",
            needed: usize::try_from(needed).unwrap_or(usize::MAX),
            available: buf.len(),
        });
    }
    let needed = needed as usize;
    if needed < buf.len() {
        return Err(Error::TrailingBytes {
            what: "BytePS meta",
            extra: buf.len() - needed,
        });
    }
    let mut meta = Meta::new();
    meta.head = raw.head();
    meta.app_id = raw.app_id();
    meta.timestamp = raw.timestamp();
    meta.customer_id = raw.customer_id();
    meta.request = get_bool(buf, field::REQUEST, "request")?;
    meta.push = get_bool(buf, field::PUSH, "push")?;
    meta.simple_app = get_bool(buf, field::SIMPLE_APP, "simple_app")?;
    meta.control.cmd = Command::from_code(raw.cmd());
    meta.control.barrier_group = raw.barrier_group();
    meta.control.msg_sig = raw.msg_sig();
    meta.data_size = raw.data_size();
    meta.key = raw.key();
    meta.addr = raw.addr();
    meta.val_len = raw.val_len();
    meta.option = raw.option();
    meta.pull = meta.is_data() && !meta.push;

    let mut at = HEADER_LEN;
    meta.body = buf[at..at + body_len].to_vec();
    at += body_len;
    for _ in 0..types {
        meta.data_types
            .push(DataType::from_code(get_i32(buf, at..at + 4))?);
        at += 4;
    }
    for _ in 0..nodes {
        meta.control
            .nodes
            .push(parse_node(&buf[at..at + NODE_LEN])?);
        at += NODE_LEN;
    }
    let mut header = Box::new([0u8; HEADER_LEN]);
    header.copy_from_slice(&buf[..HEADER_LEN]);
    meta.extra = MetaExtra::Byteps(header);
    Ok(meta)
}

fn parse_node(b: &[u8]) -> Result<Node> {
    let host = &b[node_field::HOSTNAME];
    let Some(nul) = host.iter().position(|&c| c == 0) else {
        return Err(Error::UnterminatedString { field: "hostname" });
    };
    let mut endpoint_name = [0u8; ENDPOINT_NAME_LEN];
    endpoint_name.copy_from_slice(&b[node_field::ENDPOINT_NAME]);
    let mut raw = Box::new([0u8; NODE_LEN]);
    raw.copy_from_slice(b);
    Ok(Node {
        role: Role::from_code(get_i32(b, node_field::ROLE)),
        id: get_i32(b, node_field::ID),
        hostname: host[..nul].to_vec(),
        port: get_i32(b, node_field::PORT),
        is_recovery: get_bool(b, node_field::IS_RECOVERY, "is_recovery")?,
        customer_id: get_i32(b, node_field::CUSTOMER_ID),
        aux_id: get_i32(b, node_field::AUX_ID),
        endpoint_name,
        endpoint_name_len: get_u64(b, node_field::ENDPOINT_NAME_LEN),
        extra: NodeExtra::Byteps(raw),
    })
}

fn len_i32(field: &'static str, n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::TooLarge {
        field,
        value: n as u64,
    })
}

/// Emits a meta as a BytePS meta frame. Padding comes from the meta it was
/// parsed from, zero otherwise.
pub fn emit(meta: &Meta) -> Result<Vec<u8>> {
    let body_size = len_i32("body_size", meta.body.len())?;
    let types = len_i32("data_type_size", meta.data_types.len())?;
    let nodes = len_i32("control.node_size", meta.control.nodes.len())?;
    let mut out = Vec::with_capacity(
        HEADER_LEN
            + meta.body.len()
            + 4 * meta.data_types.len()
            + NODE_LEN * meta.control.nodes.len(),
    );
    match &meta.extra {
        MetaExtra::Byteps(h) => out.extend_from_slice(&h[..]),
        _ => out.resize(HEADER_LEN, 0),
    }
    let put = |out: &mut Vec<u8>, r: core::ops::Range<usize>, v: &[u8]| out[r].copy_from_slice(v);
    put(&mut out, field::HEAD, &meta.head.to_le_bytes());
    put(&mut out, field::BODY_SIZE, &body_size.to_le_bytes());
    put(&mut out, field::CMD, &meta.control.cmd.code().to_le_bytes());
    put(&mut out, field::NODE_SIZE, &nodes.to_le_bytes());
    put(
        &mut out,
        field::BARRIER_GROUP,
        &meta.control.barrier_group.to_le_bytes(),
    );
    put(
        &mut out,
        field::MSG_SIG,
        &meta.control.msg_sig.to_le_bytes(),
    );
    out[field::REQUEST] = u8::from(meta.request);
    put(&mut out, field::APP_ID, &meta.app_id.to_le_bytes());
    put(&mut out, field::TIMESTAMP, &meta.timestamp.to_le_bytes());
    put(&mut out, field::DATA_TYPE_SIZE, &types.to_le_bytes());
    put(
        &mut out,
        field::CUSTOMER_ID,
        &meta.customer_id.to_le_bytes(),
    );
    out[field::PUSH] = u8::from(meta.push);
    out[field::SIMPLE_APP] = u8::from(meta.simple_app);
    put(&mut out, field::DATA_SIZE, &meta.data_size.to_le_bytes());
    put(&mut out, field::KEY, &meta.key.to_le_bytes());
    put(&mut out, field::ADDR, &meta.addr.to_le_bytes());
    put(&mut out, field::VAL_LEN, &meta.val_len.to_le_bytes());
    put(&mut out, field::OPTION, &meta.option.to_le_bytes());
    out.extend_from_slice(&meta.body);
    for t in &meta.data_types {
        out.extend_from_slice(&t.code().to_le_bytes());
    }
    for n in &meta.control.nodes {
        emit_node(n, &mut out)?;
    }
    Ok(out)
}

fn emit_node(n: &Node, out: &mut Vec<u8>) -> Result<()> {
    if n.hostname.len() >= HOSTNAME_LEN {
        return Err(Error::FieldTooLong {
            field: "hostname",
            len: n.hostname.len(),
            max: HOSTNAME_LEN - 1,
        });
    }
    let mut b = match &n.extra {
        NodeExtra::Byteps(raw) => **raw,
        _ => [0u8; NODE_LEN],
    };
    let put =
        |b: &mut [u8; NODE_LEN], r: core::ops::Range<usize>, v: &[u8]| b[r].copy_from_slice(v);
    put(&mut b, node_field::ROLE, &n.role.code().to_le_bytes());
    put(&mut b, node_field::ID, &n.id.to_le_bytes());
    let host = &b[node_field::HOSTNAME];
    let same_host = host.iter().position(|&c| c == 0) == Some(n.hostname.len())
        && host[..n.hostname.len()] == n.hostname[..];
    if !same_host {
        let h = &mut b[node_field::HOSTNAME];
        h.fill(0);
        h[..n.hostname.len()].copy_from_slice(&n.hostname);
    }
    put(&mut b, node_field::PORT, &n.port.to_le_bytes());
    b[node_field::IS_RECOVERY] = u8::from(n.is_recovery);
    put(
        &mut b,
        node_field::CUSTOMER_ID,
        &n.customer_id.to_le_bytes(),
    );
    put(&mut b, node_field::ENDPOINT_NAME, &n.endpoint_name);
    put(
        &mut b,
        node_field::ENDPOINT_NAME_LEN,
        &n.endpoint_name_len.to_le_bytes(),
    );
    put(&mut b, node_field::AUX_ID, &n.aux_id.to_le_bytes());
    out.extend_from_slice(&b);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::EMPTY;

    #[test]
    fn offsets_match_the_c_struct() {
        let mut m = Meta::new();
        m.head = 0x01020304;
        m.app_id = 7;
        m.timestamp = 9;
        m.customer_id = 3;
        m.request = true;
        m.push = true;
        m.data_size = 64;
        m.key = 0x1122334455667788;
        m.addr = 0xdead;
        m.val_len = 8;
        m.option = -2;
        m.data_types = vec![DataType::Uint64, DataType::Float];
        let b = emit(&m).unwrap();
        assert_eq!(b.len(), HEADER_LEN + 8);
        assert_eq!(&b[0..4], &[4, 3, 2, 1]);
        assert_eq!(b[32], 1);
        assert_eq!(b[36], 7);
        assert_eq!(b[40], 9);
        assert_eq!(b[44], 2);
        assert_eq!(b[48], 3);
        assert_eq!(b[52], 1);
        assert_eq!(b[56], 64);
        assert_eq!(b[64], 0x88);
        assert_eq!(b[72], 0xad);
        assert_eq!(b[80], 8);
        assert_eq!(&b[84..88], &(-2i32).to_le_bytes());
        assert_eq!(&b[88..96], &[8, 0, 0, 0, 9, 0, 0, 0]);
        let v = RawMeta::new_checked(&b[..]).unwrap();
        assert!(v.padding_is_zero());
        assert_eq!(v.packed_len(), Ok(b.len()));
        let back = parse(&b).unwrap();
        assert!(!back.pull && back.push);
        assert_eq!(emit(&back).unwrap(), b);
    }

    #[test]
    fn nodes_keep_their_garbage() {
        let mut m = Meta::new();
        m.control.cmd = Command::AddNode;
        m.control
            .nodes
            .push(Node::new(Role::Worker, EMPTY, "127.0.0.1", 41665));
        let mut b = emit(&m).unwrap();
        assert_eq!(b.len(), HEADER_LEN + NODE_LEN);
        b[HEADER_LEN + 78] = 0xaa;
        b[HEADER_LEN + 8 + 20] = 0xbb;
        let back = parse(&b).unwrap();
        assert_eq!(back.control.nodes[0].hostname, b"127.0.0.1");
        assert_eq!(back.control.nodes[0].aux_id, -1);
        assert_eq!(emit(&back).unwrap(), b);
        let mut renamed = back.clone();
        renamed.control.nodes[0].hostname = b"10.0.0.1".to_vec();
        let r = emit(&renamed).unwrap();
        assert_eq!(&r[HEADER_LEN + 8..HEADER_LEN + 17], b"10.0.0.1\0");
        assert!(r[HEADER_LEN + 17..HEADER_LEN + 72].iter().all(|&x| x == 0));
    }

    #[test]
    fn checked_errors() {
        assert!(matches!(parse(&[0; 87]), Err(Error::Truncated { .. })));
        let mut b = emit(&Meta::new()).unwrap();
        b.push(0);
        assert_eq!(
            parse(&b),
            Err(Error::TrailingBytes {
                what: "BytePS meta",
                extra: 1
            })
        );
        let mut b = emit(&Meta::new()).unwrap();
        b[4..8].copy_from_slice(&(-1i32).to_le_bytes());
        assert_eq!(
            parse(&b),
            Err(Error::NegativeCount {
                field: "body_size",
                value: -1
            })
        );
        let mut b = emit(&Meta::new()).unwrap();
        b[12..16].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(matches!(parse(&b), Err(Error::Truncated { .. })));
        let mut b = emit(&Meta::new()).unwrap();
        b[52] = 2;
        assert_eq!(
            parse(&b),
            Err(Error::InvalidBool {
                field: "push",
                value: 2
            })
        );
        let mut m = Meta::new();
        m.data_types.push(DataType::Float);
        let mut b = emit(&m).unwrap();
        b[88] = 12;
        assert_eq!(parse(&b), Err(Error::UnknownDataType(12)));
        let mut m = Meta::new();
        m.control.cmd = Command::AddNode;
        m.control.nodes.push(Node::new(Role::Worker, 9, "h", 1));
        let mut b = emit(&m).unwrap();
        b[HEADER_LEN + 8..HEADER_LEN + 72].fill(b'x');
        assert_eq!(
            parse(&b),
            Err(Error::UnterminatedString { field: "hostname" })
        );
        m.control.nodes[0].hostname = vec![b'x'; 64];
        assert_eq!(
            emit(&m),
            Err(Error::FieldTooLong {
                field: "hostname",
                len: 64,
                max: 63
            })
        );
    }

    #[test]
    fn view_patches_in_place() {
        let mut b = emit(&Meta::new()).unwrap();
        let mut v = RawMeta::new_checked(&mut b[..]).unwrap();
        v.set_data_size(124);
        v.set_val_len(10);
        v.set_timestamp(5);
        v.set_head(2);
        let m = parse(&b).unwrap();
        assert_eq!(
            (m.data_size, m.val_len, m.timestamp, m.head),
            (124, 10, 5, 2)
        );
    }
}
