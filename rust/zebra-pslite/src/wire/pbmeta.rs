//! The protobuf meta of dmlc/ps-lite, as embedded in MXNet 1.9.1.
//!
//! Field numbers (`src/meta.proto`; confirmed on messages captured from
//! MXNet 1.9.1, see `tests/data/README.md`):
//!
//! ```text
//! PBMeta                          PBControl                PBNode
//!  1 head        int32             1 cmd      int32 req.    1 role        int32 req.
//!  2 body        bytes             2 node     PBNode rep.   2 id          int32
//!  3 control     PBControl         3 barrier_group int32    3 hostname    string
//!  4 request     bool              4 msg_sig  uint64        4 port        int32
//!  5 push        bool                                       5 is_recovery bool
//!  6 simple_app  bool                                      10 customer_id int32
//!  7 app_id      int32
//!  8 timestamp   int32
//!  9 data_type   int32, repeated, packed
//! 10 customer_id int32
//! 11 data_size   int32  (never set by MXNet's PackMeta)
//! 12 pull        bool
//! 13 priority    int32
//! ```
//!
//! PS-lite's `PackMeta` always sets head, request, push, pull, simple_app,
//! priority and customer_id (older versions lack pull and priority); it
//! sets app_id and timestamp unless they are `kEmpty`, body and data_type
//! unless empty, control unless its command is EMPTY, barrier_group only
//! for BARRIER and msg_sig only for ACK, and every node field. The C++
//! serializer writes fields in number order.
//!
//! [`parse`] records which of the always-set fields were present and keeps
//! unknown fields; [`emit`] writes a field if it was present or differs
//! from the value its absence means, and puts unknown fields back in
//! number order. So a meta serialized by protobuf's C++ code re-emits byte
//! for byte. The parser is stricter than protobuf's: a known field with the
//! wrong wire type, a repeated non-repeated field, an int32 outside its
//! range or a bool other than 0/1 is an error (C++ never writes them).

use crate::data_type::DataType;
use crate::error::{Error, Result};
use crate::meta::{Command, Control, Meta, MetaExtra, Node, NodeExtra, Role, EMPTY};
use crate::wire::pb::{self, Reader, Value};

/// `PBMeta` field numbers.
pub mod field {
    /// head
    pub const HEAD: u32 = 1;
    /// body
    pub const BODY: u32 = 2;
    /// control
    pub const CONTROL: u32 = 3;
    /// request
    pub const REQUEST: u32 = 4;
    /// push
    pub const PUSH: u32 = 5;
    /// simple_app
    pub const SIMPLE_APP: u32 = 6;
    /// app_id
    pub const APP_ID: u32 = 7;
    /// timestamp
    pub const TIMESTAMP: u32 = 8;
    /// data_type
    pub const DATA_TYPE: u32 = 9;
    /// customer_id
    pub const CUSTOMER_ID: u32 = 10;
    /// data_size
    pub const DATA_SIZE: u32 = 11;
    /// pull
    pub const PULL: u32 = 12;
    /// priority
    pub const PRIORITY: u32 = 13;
}

/// `PBControl` field numbers.
pub mod control_field {
    /// cmd
    pub const CMD: u32 = 1;
    /// node
    pub const NODE: u32 = 2;
    /// barrier_group
    pub const BARRIER_GROUP: u32 = 3;
    /// msg_sig
    pub const MSG_SIG: u32 = 4;
}

/// `PBNode` field numbers.
pub mod node_field {
    /// role
    pub const ROLE: u32 = 1;
    /// id
    pub const ID: u32 = 2;
    /// hostname
    pub const HOSTNAME: u32 = 3;
    /// port
    pub const PORT: u32 = 4;
    /// is_recovery
    pub const IS_RECOVERY: u32 = 5;
    /// customer_id
    pub const CUSTOMER_ID: u32 = 10;
}

const fn bits(fields: &[u32]) -> u32 {
    let mut b = 0;
    let mut i = 0;
    while i < fields.len() {
        b |= 1 << fields[i];
        i += 1;
    }
    b
}

/// The always-set `PBMeta` fields of dmlc/ps-lite's (and MXNet 1.9.1's)
/// `PackMeta`: what a fresh meta presents.
const META_DEFAULT: u32 = bits(&[
    field::HEAD,
    field::REQUEST,
    field::PUSH,
    field::SIMPLE_APP,
    field::CUSTOMER_ID,
    field::PULL,
    field::PRIORITY,
]);
/// The `PBMeta` fields whose presence [`emit`] honours; the others are
/// written exactly when their value is not what absence means.
const META_TRACKED: u32 = META_DEFAULT | bits(&[field::DATA_SIZE]);
const CONTROL_DEFAULT: u32 = bits(&[control_field::CMD]);
const NODE_DEFAULT: u32 = bits(&[
    node_field::ROLE,
    node_field::ID,
    node_field::HOSTNAME,
    node_field::PORT,
    node_field::IS_RECOVERY,
    node_field::CUSTOMER_ID,
]);

/// What a parsed protobuf message needs for a byte-exact re-emit: which
/// known fields were present, and the unknown fields as they were encoded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PbExtra {
    present: u32,
    unknown: Vec<(u32, Vec<u8>)>,
}

impl PbExtra {
    fn with(present: u32) -> PbExtra {
        PbExtra {
            present,
            unknown: Vec::new(),
        }
    }

    pub(crate) fn has(&self, field: u32) -> bool {
        field < 32 && self.present & (1 << field) != 0
    }

    fn mark(&mut self, message: &'static str, field: u32) -> Result<()> {
        if self.has(field) {
            return Err(Error::DuplicateField { message, field });
        }
        self.present |= 1 << field;
        Ok(())
    }
}

fn varint(message: &'static str, f: &pb::Field<'_>) -> Result<u64> {
    match f.value {
        Value::Varint(v) => Ok(v),
        other => Err(Error::BadWireType {
            message,
            field: f.number,
            wire_type: other.wire_type(),
        }),
    }
}

fn payload<'a>(message: &'static str, f: &pb::Field<'a>) -> Result<&'a [u8]> {
    match f.value {
        Value::Len(p) => Ok(p),
        other => Err(Error::BadWireType {
            message,
            field: f.number,
            wire_type: other.wire_type(),
        }),
    }
}

fn push_data_types(out: &mut Vec<DataType>, codes: &[u64]) -> Result<()> {
    for &c in codes {
        let code = pb::as_int32("data_type", c)?;
        out.push(DataType::from_code(code)?);
    }
    Ok(())
}

/// Parses a `PBMeta`. `sender` and `recver` stay [`EMPTY`].
pub fn parse(buf: &[u8]) -> Result<Meta> {
    const M: &str = "PBMeta";
    let mut meta = Meta::new();
    meta.head = 0;
    meta.customer_id = 0;
    let mut ex = PbExtra::default();
    let mut cex = PbExtra::with(0);
    for f in Reader::new(buf, M) {
        let f = f?;
        match f.number {
            field::DATA_TYPE => {
                ex.present |= 1 << field::DATA_TYPE;
                match f.value {
                    Value::Len(p) => {
                        push_data_types(&mut meta.data_types, &pb::read_packed_varints(p)?)?
                    }
                    Value::Varint(v) => push_data_types(&mut meta.data_types, &[v])?,
                    other => {
                        return Err(Error::BadWireType {
                            message: M,
                            field: f.number,
                            wire_type: other.wire_type(),
                        })
                    }
                }
            }
            field::HEAD..=field::PRIORITY => {
                ex.mark(M, f.number)?;
                match f.number {
                    field::BODY => meta.body = payload(M, &f)?.to_vec(),
                    field::CONTROL => {
                        let (control, extra) = parse_control(payload(M, &f)?)?;
                        if !control.is_empty() {
                            meta.control = control;
                            cex = extra;
                        }
                    }
                    n => {
                        let v = varint(M, &f)?;
                        match n {
                            field::HEAD => meta.head = pb::as_int32("head", v)?,
                            field::REQUEST => meta.request = pb::as_bool("request", v)?,
                            field::PUSH => meta.push = pb::as_bool("push", v)?,
                            field::SIMPLE_APP => meta.simple_app = pb::as_bool("simple_app", v)?,
                            field::APP_ID => meta.app_id = pb::as_int32("app_id", v)?,
                            field::TIMESTAMP => meta.timestamp = pb::as_int32("timestamp", v)?,
                            field::CUSTOMER_ID => {
                                meta.customer_id = pb::as_int32("customer_id", v)?
                            }
                            field::DATA_SIZE => meta.data_size = pb::as_int32("data_size", v)?,
                            field::PULL => meta.pull = pb::as_bool("pull", v)?,
                            _ => meta.priority = pb::as_int32("priority", v)?,
                        }
                    }
                }
            }
            n => ex.unknown.push((n, f.raw.to_vec())),
        }
    }
    ex.present &= META_TRACKED;
    meta.extra = MetaExtra::Protobuf {
        meta: ex,
        control: cex,
    };
    Ok(meta)
}

fn parse_control(buf: &[u8]) -> Result<(Control, PbExtra)> {
    const M: &str = "PBControl";
    let mut control = Control::default();
    let mut ex = PbExtra::default();
    for f in Reader::new(buf, M) {
        let f = f?;
        match f.number {
            control_field::NODE => control.nodes.push(parse_node(payload(M, &f)?)?),
            control_field::CMD | control_field::BARRIER_GROUP | control_field::MSG_SIG => {
                ex.mark(M, f.number)?;
                let v = varint(M, &f)?;
                match f.number {
                    control_field::CMD => control.cmd = Command::from_code(pb::as_int32("cmd", v)?),
                    control_field::BARRIER_GROUP => {
                        control.barrier_group = pb::as_int32("barrier_group", v)?
                    }
                    _ => control.msg_sig = v,
                }
            }
            n => ex.unknown.push((n, f.raw.to_vec())),
        }
    }
    if !ex.has(control_field::CMD) {
        return Err(Error::MissingField {
            message: M,
            field: "cmd",
        });
    }
    match control.cmd {
        Command::Barrier => ex.present &= !(1 << control_field::BARRIER_GROUP),
        Command::Ack => ex.present &= !(1 << control_field::MSG_SIG),
        _ => {}
    }
    Ok((control, ex))
}

fn parse_node(buf: &[u8]) -> Result<Node> {
    const M: &str = "PBNode";
    let mut node = Node {
        port: 0,
        ..Node::default()
    };
    let mut ex = PbExtra::default();
    for f in Reader::new(buf, M) {
        let f = f?;
        match f.number {
            node_field::ROLE..=node_field::IS_RECOVERY | node_field::CUSTOMER_ID => {
                ex.mark(M, f.number)?;
                if f.number == node_field::HOSTNAME {
                    node.hostname = payload(M, &f)?.to_vec();
                    continue;
                }
                let v = varint(M, &f)?;
                match f.number {
                    node_field::ROLE => node.role = Role::from_code(pb::as_int32("role", v)?),
                    node_field::ID => node.id = pb::as_int32("id", v)?,
                    node_field::PORT => node.port = pb::as_int32("port", v)?,
                    node_field::IS_RECOVERY => node.is_recovery = pb::as_bool("is_recovery", v)?,
                    _ => node.customer_id = pb::as_int32("customer_id", v)?,
                }
            }
            n => ex.unknown.push((n, f.raw.to_vec())),
        }
    }
    if !ex.has(node_field::ROLE) {
        return Err(Error::MissingField {
            message: M,
            field: "role",
        });
    }
    node.extra = NodeExtra::Protobuf(ex);
    Ok(node)
}

/// Writes known fields in number order with the unknown ones between them.
struct Writer<'e> {
    out: Vec<u8>,
    unknown: core::slice::Iter<'e, (u32, Vec<u8>)>,
    next: Option<&'e (u32, Vec<u8>)>,
}

impl<'e> Writer<'e> {
    fn new(extra: &'e PbExtra) -> Writer<'e> {
        let mut unknown = extra.unknown.iter();
        let next = unknown.next();
        Writer {
            out: Vec::new(),
            unknown,
            next,
        }
    }

    /// Writes the unknown fields numbered below `field`.
    fn before(&mut self, field: u32) -> &mut Vec<u8> {
        while let Some((n, raw)) = self.next {
            if *n >= field {
                break;
            }
            self.out.extend_from_slice(raw);
            self.next = self.unknown.next();
        }
        &mut self.out
    }

    fn finish(mut self) -> Vec<u8> {
        self.before(u32::MAX);
        self.out
    }
}

/// Emits a meta as a `PBMeta`.
pub fn emit(meta: &Meta) -> Result<Vec<u8>> {
    let fresh_meta = PbExtra::with(META_DEFAULT);
    let fresh_control = PbExtra::with(CONTROL_DEFAULT);
    let (ex, cex) = match &meta.extra {
        MetaExtra::Protobuf { meta, control } => (meta, control),
        _ => (&fresh_meta, &fresh_control),
    };
    let mut w = Writer::new(ex);
    let on = |f: u32, differs: bool| ex.has(f) || differs;
    if on(field::HEAD, meta.head != 0) {
        pb::put_int32(w.before(field::HEAD), field::HEAD, meta.head);
    }
    if !meta.body.is_empty() {
        pb::put_bytes(w.before(field::BODY), field::BODY, &meta.body);
    }
    if !meta.control.is_empty() {
        let c = emit_control(&meta.control, cex);
        pb::put_bytes(w.before(field::CONTROL), field::CONTROL, &c);
    }
    if on(field::REQUEST, meta.request) {
        pb::put_bool(w.before(field::REQUEST), field::REQUEST, meta.request);
    }
    if on(field::PUSH, meta.push) {
        pb::put_bool(w.before(field::PUSH), field::PUSH, meta.push);
    }
    if on(field::SIMPLE_APP, meta.simple_app) {
        pb::put_bool(
            w.before(field::SIMPLE_APP),
            field::SIMPLE_APP,
            meta.simple_app,
        );
    }
    if meta.app_id != EMPTY {
        pb::put_int32(w.before(field::APP_ID), field::APP_ID, meta.app_id);
    }
    if meta.timestamp != EMPTY {
        pb::put_int32(w.before(field::TIMESTAMP), field::TIMESTAMP, meta.timestamp);
    }
    if !meta.data_types.is_empty() {
        let mut packed = Vec::new();
        for t in &meta.data_types {
            pb::put_varint(&mut packed, t.code() as u64);
        }
        pb::put_bytes(w.before(field::DATA_TYPE), field::DATA_TYPE, &packed);
    }
    if on(field::CUSTOMER_ID, meta.customer_id != 0) {
        pb::put_int32(
            w.before(field::CUSTOMER_ID),
            field::CUSTOMER_ID,
            meta.customer_id,
        );
    }
    if on(field::DATA_SIZE, meta.data_size != 0) {
        pb::put_int32(w.before(field::DATA_SIZE), field::DATA_SIZE, meta.data_size);
    }
    if on(field::PULL, meta.pull) {
        pb::put_bool(w.before(field::PULL), field::PULL, meta.pull);
    }
    if on(field::PRIORITY, meta.priority != 0) {
        pb::put_int32(w.before(field::PRIORITY), field::PRIORITY, meta.priority);
    }
    Ok(w.finish())
}

fn emit_control(control: &Control, ex: &PbExtra) -> Vec<u8> {
    let mut w = Writer::new(ex);
    pb::put_int32(
        w.before(control_field::CMD),
        control_field::CMD,
        control.cmd.code(),
    );
    for n in &control.nodes {
        let bytes = emit_node(n);
        pb::put_bytes(w.before(control_field::NODE), control_field::NODE, &bytes);
    }
    if control.cmd == Command::Barrier || ex.has(control_field::BARRIER_GROUP) {
        pb::put_int32(
            w.before(control_field::BARRIER_GROUP),
            control_field::BARRIER_GROUP,
            control.barrier_group,
        );
    }
    if control.cmd == Command::Ack || ex.has(control_field::MSG_SIG) {
        pb::put_uint64(
            w.before(control_field::MSG_SIG),
            control_field::MSG_SIG,
            control.msg_sig,
        );
    }
    w.finish()
}

fn emit_node(node: &Node) -> Vec<u8> {
    let fresh = PbExtra::with(NODE_DEFAULT);
    let ex = match &node.extra {
        NodeExtra::Protobuf(ex) => ex,
        _ => &fresh,
    };
    let on = |f: u32, differs: bool| ex.has(f) || differs;
    let mut w = Writer::new(ex);
    pb::put_int32(
        w.before(node_field::ROLE),
        node_field::ROLE,
        node.role.code(),
    );
    if on(node_field::ID, node.id != EMPTY) {
        pb::put_int32(w.before(node_field::ID), node_field::ID, node.id);
    }
    if on(node_field::HOSTNAME, !node.hostname.is_empty()) {
        pb::put_bytes(
            w.before(node_field::HOSTNAME),
            node_field::HOSTNAME,
            &node.hostname,
        );
    }
    if on(node_field::PORT, node.port != 0) {
        pb::put_int32(w.before(node_field::PORT), node_field::PORT, node.port);
    }
    if on(node_field::IS_RECOVERY, node.is_recovery) {
        pb::put_bool(
            w.before(node_field::IS_RECOVERY),
            node_field::IS_RECOVERY,
            node.is_recovery,
        );
    }
    if on(node_field::CUSTOMER_ID, node.customer_id != 0) {
        pb::put_int32(
            w.before(node_field::CUSTOMER_ID),
            node_field::CUSTOMER_ID,
            node.customer_id,
        );
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_request() -> Meta {
        let mut m = Meta::new();
        m.head = 0;
        m.app_id = 0;
        m.customer_id = 0;
        m.timestamp = 1;
        m.request = true;
        m.push = true;
        m.data_types = vec![DataType::Uint64, DataType::Other, DataType::Int32];
        m
    }

    #[test]
    fn fresh_meta_looks_like_pack_meta() {
        let bytes = emit(&push_request()).unwrap();
        assert_eq!(
            bytes,
            [
                0x08, 0x00, 0x20, 0x01, 0x28, 0x01, 0x30, 0x00, 0x38, 0x00, 0x40, 0x01, 0x4a, 0x03,
                0x08, 0x0b, 0x03, 0x50, 0x00, 0x60, 0x00, 0x68, 0x00
            ]
        );
        let back = parse(&bytes).unwrap();
        assert_eq!(emit(&back).unwrap(), bytes);
        assert_eq!(back.data_types, push_request().data_types);
        assert!(back.push && back.request && !back.pull);
    }

    #[test]
    fn unknown_fields_are_kept_in_order() {
        let mut bytes = emit(&push_request()).unwrap();
        let at = bytes.iter().position(|&b| b == 0x60).unwrap();
        bytes.splice(at..at, [0x58, 0x2a]);
        bytes.extend_from_slice(&[0xa2, 0x06, 0x02, b'h', b'i']);
        let m = parse(&bytes).unwrap();
        assert_eq!(m.data_size, 42);
        assert_eq!(emit(&m).unwrap(), bytes);
    }

    #[test]
    fn older_metas_without_pull_and_priority_stay_without() {
        let mut b = Vec::new();
        pb::put_int32(&mut b, field::HEAD, 5);
        pb::put_bool(&mut b, field::REQUEST, true);
        pb::put_bool(&mut b, field::PUSH, false);
        let m = parse(&b).unwrap();
        assert_eq!(emit(&m).unwrap(), b);
    }

    #[test]
    fn strictness() {
        assert_eq!(
            parse(&[0x08, 0x01, 0x08, 0x01]),
            Err(Error::DuplicateField {
                message: "PBMeta",
                field: 1
            })
        );
        assert_eq!(
            parse(&[0x22, 0x00]),
            Err(Error::BadWireType {
                message: "PBMeta",
                field: 4,
                wire_type: 2
            })
        );
        assert_eq!(
            parse(&[0x20, 0x02]),
            Err(Error::InvalidBool {
                field: "request",
                value: 2
            })
        );
        assert_eq!(
            parse(&[0x1a, 0x00]),
            Err(Error::MissingField {
                message: "PBControl",
                field: "cmd"
            })
        );
        assert_eq!(
            parse(&[0x1a, 0x04, 0x08, 0x02, 0x12, 0x00]),
            Err(Error::MissingField {
                message: "PBNode",
                field: "role"
            })
        );
        assert_eq!(parse(&[0x4a, 0x01, 0x0c]), Err(Error::UnknownDataType(12)));
        assert_eq!(
            parse(&[0x08, 0x80, 0x80, 0x80, 0x80, 0x08]),
            Err(Error::IntOutOfRange {
                field: "head",
                value: 1 << 31
            })
        );
    }

    #[test]
    fn control_with_nodes_round_trips() {
        let mut m = Meta::new();
        m.timestamp = 0;
        m.control.cmd = Command::AddNode;
        m.control
            .nodes
            .push(Node::new(Role::Worker, EMPTY, "127.0.0.1", 4000));
        let bytes = emit(&m).unwrap();
        let back = parse(&bytes).unwrap();
        assert_eq!(back.control.nodes[0].hostname, b"127.0.0.1");
        assert_eq!(back.control.nodes[0].id, EMPTY);
        assert_eq!(back.control.nodes[0].role, Role::Worker);
        assert_eq!(emit(&back).unwrap(), bytes);
    }
}
