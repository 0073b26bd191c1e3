//! PS-lite message codecs, as pure logic: no sockets, no threads.
//!
//! A PS-lite message over ZeroMQ is a multipart message: identity frames
//! (by socket and direction, see [`Route`]), a meta frame, then data
//! frames; a KV message's data frames are keys (`u64`), values and
//! optionally lens (`i32`). The meta comes in two formats:
//!
//! - [`Format::Byteps`]: BytePS's PS-lite copies a C struct
//!   ([`wire::byteps`] has the layout);
//! - [`Format::Protobuf`]: dmlc/ps-lite and MXNet serialize a protobuf
//!   `PBMeta` ([`wire::pbmeta`] has the field numbers; [`wire::pb`] is a
//!   small checked protobuf reader and writer).
//!
//! [`detect`] tells them apart (or [`Detector`] learns the format once and
//! sticks to it, or takes a fixed [`FormatChoice`]); anything that fits
//! neither is [`Error::UnknownFormat`]. Both parse into one [`Meta`] in
//! PS-lite's own terms, and re-emit an unchanged meta byte for byte.
//! [`KvView`] and [`KvData`] check KV payloads; [`Message::split_push`],
//! [`with_kv`], [`synthesize_push`] and [`response`] are what a hot/cold
//! splitter needs.
//!
//! ```
//! use zebra_pslite::{with_kv, DataType, Format, KvData, Message, Meta};
//!
//! let mut meta = Meta::new();
//! (meta.head, meta.app_id, meta.customer_id, meta.timestamp) = (0, 0, 0, 1);
//! (meta.request, meta.push) = (true, true);
//! let kv = KvData {
//!     keys: vec![3, 70_000],
//!     vals: [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
//!     lens: None,
//!     val_type: DataType::Float,
//! };
//! let frames = with_kv(&meta, &kv).unwrap().to_frames(Format::Byteps).unwrap();
//!
//! let (meta_frame, data) = (&frames[0], frames[1..].iter().map(|f| &f[..]).collect::<Vec<_>>());
//! let format = zebra_pslite::detect(meta_frame).unwrap();
//! let msg = Message::parse(format, meta_frame, &data).unwrap();
//! let split = msg.split_push(|key| key < 1000).unwrap();
//! assert_eq!(split.hot.keys, [3]);
//! assert_eq!(split.cold.kv().unwrap().unwrap().to_owned().keys, [70_000]);
//! ```

#![deny(unsafe_code)]

pub mod data_type;
pub mod error;
pub mod format;
pub mod kv;
pub mod message;
pub mod meta;
pub mod split;
pub mod wire;

pub use data_type::DataType;
pub use error::{Error, Result};
pub use format::{detect, Detector, Format, FormatChoice};
pub use kv::{KvData, KvView};
pub use message::{
    identity, kv_in_place, node_id, rank_of, role_of, server_answer, server_id, worker_id,
    Envelope, Message, Route, SCHEDULER_ID,
};
pub use meta::{Command, Control, Meta, Node, Role, EMPTY};
pub use split::{response, response_meta, split_kv, synthesize_push, with_kv, PushSplit};
