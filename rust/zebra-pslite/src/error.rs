//! Everything that can be wrong with a PS-lite message.
//!
//! Each variant names one defect, so a caller can log it, count it and pass
//! the message through untouched.

use thiserror::Error;

use crate::data_type::DataType;

/// A malformed or unsupported PS-lite message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// The meta frame is neither a BytePS raw meta nor a protobuf `PBMeta`.
    #[error("unknown PS-lite meta format ({len} bytes)")]
    UnknownFormat {
        /// Length of the meta frame.
        len: usize,
    },

    /// The meta frame parses as both formats; refuse to guess.
    #[error("PS-lite meta of {len} bytes fits both the BytePS and the protobuf format")]
    AmbiguousFormat {
        /// Length of the meta frame.
        len: usize,
    },

    /// A format name that is not `byteps` or `protobuf`.
    #[error("unknown PS-lite format name {0:?} (expected auto, byteps or protobuf)")]
    UnknownFormatName(String),

    /// A structure is cut short.
    #[error("truncated {what}: need {needed} bytes, have {available}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },

    /// Bytes follow the end of the structure.
    #[error("{extra} bytes after the end of {what}")]
    TrailingBytes {
        /// What was being read.
        what: &'static str,
        /// Number of extra bytes.
        extra: usize,
    },

    /// A count or size field is negative.
    #[error("negative {field}: {value}")]
    NegativeCount {
        /// The field.
        field: &'static str,
        /// Its value.
        value: i32,
    },

    /// A boolean is neither 0 nor 1.
    #[error("{field} is {value}, not a boolean")]
    InvalidBool {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
    },

    /// A data type number outside PS-lite's `DataType` enum.
    #[error("unknown data type {0}")]
    UnknownDataType(i32),

    /// A C string field (BytePS node hostname) has no terminating NUL.
    #[error("{field} is not NUL-terminated")]
    UnterminatedString {
        /// The field.
        field: &'static str,
    },

    /// A value too long for its field when emitting.
    #[error("{field} of {len} bytes is longer than {max}")]
    FieldTooLong {
        /// The field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The longest length the format allows.
        max: usize,
    },

    /// A protobuf varint longer than 10 bytes or above 2^64.
    #[error("bad varint at offset {offset}")]
    BadVarint {
        /// Offset of the varint in its buffer.
        offset: usize,
    },

    /// A protobuf tag with field number 0 or above 2^29 - 1.
    #[error("bad protobuf tag {tag:#x} at offset {offset}")]
    BadTag {
        /// The tag.
        tag: u64,
        /// Offset of the tag in its buffer.
        offset: usize,
    },

    /// A protobuf wire type that is deprecated (groups), undefined, or wrong
    /// for a known field.
    #[error("{message} field {field} has wire type {wire_type}")]
    BadWireType {
        /// The protobuf message.
        message: &'static str,
        /// Field number.
        field: u32,
        /// Wire type found.
        wire_type: u8,
    },

    /// A non-repeated protobuf field occurs twice.
    #[error("{message} field {field} occurs twice")]
    DuplicateField {
        /// The protobuf message.
        message: &'static str,
        /// Field number.
        field: u32,
    },

    /// A `required` protobuf field is missing.
    #[error("{message} lacks its required field {field}")]
    MissingField {
        /// The protobuf message.
        message: &'static str,
        /// Field name.
        field: &'static str,
    },

    /// An int32 field holds a varint outside the int32 range.
    #[error("{field} = {value:#x} is not an int32")]
    IntOutOfRange {
        /// The field.
        field: &'static str,
        /// The varint.
        value: u64,
    },

    /// The multipart message has fewer frames than its route needs.
    #[error("message of {frames} frames; the route needs at least {needed}")]
    MissingFrames {
        /// Frames in the message.
        frames: usize,
        /// Frames needed (identities + meta).
        needed: usize,
    },

    /// The number of data frames differs from the number of data types in
    /// the meta.
    #[error("{frames} data frames but {types} data types in the meta")]
    FrameCountMismatch {
        /// Data frames.
        frames: usize,
        /// Data types.
        types: usize,
    },

    /// The meta's `data_size` differs from the total size of the data frames.
    #[error("meta data_size {meta} but the data frames hold {frames} bytes")]
    DataSizeMismatch {
        /// `data_size` in the meta.
        meta: i64,
        /// Bytes in the data frames.
        frames: usize,
    },

    /// A control or SimpleApp message where a KV message is needed.
    #[error("not a KV message (control or SimpleApp)")]
    NotKv,

    /// A KV operation on a message that is not a push request.
    #[error("not a push request")]
    NotPushRequest,

    /// KV data must be 2 (keys, vals) or 3 (keys, vals, lens) frames.
    #[error("KV data of {0} frames (need 2 or 3)")]
    KvFrameCount(usize),

    /// A KV frame has the wrong data type.
    #[error("KV {frame} frame has type {found:?}, expected {expected:?}")]
    KvFrameType {
        /// keys or lens.
        frame: &'static str,
        /// Type found.
        found: DataType,
        /// Type required.
        expected: DataType,
    },

    /// A frame's size is not a multiple of its element width.
    #[error("{frame} frame of {len} bytes is not a multiple of {width}")]
    FrameSize {
        /// keys, vals or lens.
        frame: &'static str,
        /// Frame size.
        len: usize,
        /// Element width.
        width: usize,
    },

    /// `lens` does not have one entry per key.
    #[error("{lens} lens for {keys} keys")]
    LensCountMismatch {
        /// Number of keys.
        keys: usize,
        /// Number of lens.
        lens: usize,
    },

    /// A negative entry in `lens`.
    #[error("lens[{index}] = {len} is negative")]
    NegativeLen {
        /// Position.
        index: usize,
        /// Value.
        len: i32,
    },

    /// The lens do not add up to the number of values.
    #[error("lens add up to {sum} but there are {vals} values")]
    LensSumMismatch {
        /// Sum of lens.
        sum: u64,
        /// Number of values.
        vals: usize,
    },

    /// Without lens, every key must have the same number of values.
    #[error("{vals} values do not divide evenly among {keys} keys")]
    ValsPerKeyMismatch {
        /// Number of keys.
        keys: usize,
        /// Number of values.
        vals: usize,
    },

    /// Keys must not decrease (PS-lite slices them by range).
    #[error("keys decrease at index {index}")]
    KeysNotSorted {
        /// First position out of order.
        index: usize,
    },

    /// A value or count that does not fit the wire field when emitting.
    #[error("{field} = {value} does not fit the wire format")]
    TooLarge {
        /// The field.
        field: &'static str,
        /// The value.
        value: u64,
    },
}

/// Result alias for this crate.
pub type Result<T> = core::result::Result<T, Error>;
