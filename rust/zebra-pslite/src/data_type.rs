//! PS-lite's `DataType` enum (`include/ps/internal/message.h`), the type tag
//! of each data frame, with the width of one element.

use crate::error::{Error, Result};

/// The element type of a data frame, numbered as in PS-lite.
///
/// `Other` is what `GetDataType<char>()` returns (`char` is neither
/// `int8_t` nor `uint8_t`), so `KVWorker<char>` (MXNet, BytePS's
/// benchmarks) tags its values `Other`; an `Other` element is one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// 0
    Char,
    /// 1
    Int8,
    /// 2
    Int16,
    /// 3, the type of `lens`
    Int32,
    /// 4
    Int64,
    /// 5
    Uint8,
    /// 6
    Uint16,
    /// 7
    Uint32,
    /// 8, the type of `keys` (`ps::Key` is `uint64_t`)
    Uint64,
    /// 9
    Float,
    /// 10
    Double,
    /// 11, anything else, in practice `char`
    Other,
}

impl DataType {
    /// All types in PS-lite's order.
    pub const ALL: [DataType; 12] = [
        DataType::Char,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Uint8,
        DataType::Uint16,
        DataType::Uint32,
        DataType::Uint64,
        DataType::Float,
        DataType::Double,
        DataType::Other,
    ];

    /// The type with PS-lite's number `code`.
    pub fn from_code(code: i32) -> Result<DataType> {
        usize::try_from(code)
            .ok()
            .and_then(|i| DataType::ALL.get(i).copied())
            .ok_or(Error::UnknownDataType(code))
    }

    /// PS-lite's number for this type.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// Bytes per element.
    pub const fn width(self) -> usize {
        match self {
            DataType::Char | DataType::Int8 | DataType::Uint8 | DataType::Other => 1,
            DataType::Int16 | DataType::Uint16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Double => 8,
        }
    }

    /// PS-lite's name (`DataTypeName`).
    pub const fn name(self) -> &'static str {
        match self {
            DataType::Char => "CHAR",
            DataType::Int8 => "INT8",
            DataType::Int16 => "INT16",
            DataType::Int32 => "INT32",
            DataType::Int64 => "INT64",
            DataType::Uint8 => "UINT8",
            DataType::Uint16 => "UINT16",
            DataType::Uint32 => "UINT32",
            DataType::Uint64 => "UINT64",
            DataType::Float => "FLOAT",
            DataType::Double => "DOUBLE",
            DataType::Other => "OTHER",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for (i, t) in DataType::ALL.iter().enumerate() {
            assert_eq!(t.code(), i as i32);
            assert_eq!(DataType::from_code(i as i32), Ok(*t));
        }
        assert_eq!(DataType::from_code(12), Err(Error::UnknownDataType(12)));
        assert_eq!(DataType::from_code(-1), Err(Error::UnknownDataType(-1)));
    }

    #[test]
    fn widths() {
        assert_eq!(DataType::Uint64.width(), 8);
        assert_eq!(DataType::Int32.width(), 4);
        assert_eq!(DataType::Float.width(), 4);
        assert_eq!(DataType::Other.width(), 1);
        assert_eq!(DataType::Double.width(), 8);
        assert_eq!(DataType::Int16.width(), 2);
    }
}
