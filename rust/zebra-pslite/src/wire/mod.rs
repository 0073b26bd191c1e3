//! Wire formats: the BytePS raw meta, protobuf primitives and the protobuf
//! `PBMeta`.

pub mod byteps;
pub mod pb;
pub mod pbmeta;
