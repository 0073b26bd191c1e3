//! Protocol Buffers wire format, the subset `PBMeta` needs: varints,
//! length-delimited fields (packed repeated fields, strings, nested
//! messages), fixed 32/64-bit fields. Reading is checked; writing emits the
//! canonical encoding protobuf's C++ serializer produces.

use crate::error::{Error, Result};

/// Wire type 0.
pub const VARINT: u8 = 0;
/// Wire type 1.
pub const FIXED64: u8 = 1;
/// Wire type 2.
pub const LEN: u8 = 2;
/// Wire type 5.
pub const FIXED32: u8 = 5;

/// Largest field number protobuf allows.
pub const MAX_FIELD: u64 = (1 << 29) - 1;

/// Reads a varint at `*pos`, advancing it. At most 10 bytes, and the tenth
/// may only hold the top bit of a 64-bit value.
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64> {
    let start = *pos;
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = buf.get(start + i) else {
            return Err(Error::Truncated {
                what: "protobuf varint",
                needed: start + i + 1,
                available: buf.len(),
            });
        };
        if i == 9 && b > 1 {
            return Err(Error::BadVarint { offset: start });
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *pos = start + i + 1;
            return Ok(value);
        }
    }
    Err(Error::BadVarint { offset: start })
}

/// Appends `value` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a tag.
pub fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

/// Appends an `int32` field (negative values take 10 bytes, as in C++).
pub fn put_int32(out: &mut Vec<u8>, field: u32, value: i32) {
    put_tag(out, field, VARINT);
    put_varint(out, i64::from(value) as u64);
}

/// Appends a `uint64` field.
pub fn put_uint64(out: &mut Vec<u8>, field: u32, value: u64) {
    put_tag(out, field, VARINT);
    put_varint(out, value);
}

/// Appends a `bool` field.
pub fn put_bool(out: &mut Vec<u8>, field: u32, value: bool) {
    put_tag(out, field, VARINT);
    out.push(u8::from(value));
}

/// Appends a length-delimited field.
pub fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A varint as an `int32`: C++ writes negative int32s sign-extended to 64
/// bits, so a valid value is one whose 64-bit reading is in i32 range.
pub fn as_int32(field: &'static str, value: u64) -> Result<i32> {
    i32::try_from(value as i64).map_err(|_| Error::IntOutOfRange { field, value })
}

/// A varint as a `bool`: only 0 and 1, which is all C++ writes.
pub fn as_bool(field: &'static str, value: u64) -> Result<bool> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::InvalidBool { field, value }),
    }
}

/// The value of one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: the payload.
    Len(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl Value<'_> {
    /// The wire type.
    pub fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => VARINT,
            Value::Fixed64(_) => FIXED64,
            Value::Len(_) => LEN,
            Value::Fixed32(_) => FIXED32,
        }
    }
}

/// One field as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// Field number.
    pub number: u32,
    /// Value.
    pub value: Value<'a>,
    /// The whole field as encoded: tag and value.
    pub raw: &'a [u8],
}

/// Iterates over the fields of an encoded message; stops at the first error.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    message: &'static str,
    failed: bool,
}

impl<'a> Reader<'a> {
    /// Reads the fields of `buf`, naming `message` in errors.
    pub fn new(buf: &'a [u8], message: &'static str) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            message,
            failed: false,
        }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(Error::Truncated {
                what,
                needed: self.pos.saturating_add(n),
                available: self.buf.len(),
            });
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn read_field(&mut self) -> Result<Field<'a>> {
        let start = self.pos;
        let tag = read_varint(self.buf, &mut self.pos)?;
        let number = tag >> 3;
        if number == 0 || number > MAX_FIELD {
            return Err(Error::BadTag { tag, offset: start });
        }
        let number = number as u32;
        let wire_type = (tag & 7) as u8;
        let value = match wire_type {
            VARINT => Value::Varint(read_varint(self.buf, &mut self.pos)?),
            FIXED64 => {
                let b = self.take(8, "protobuf fixed64")?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Fixed64(u64::from_le_bytes(a))
            }
            LEN => {
                let len = read_varint(self.buf, &mut self.pos)?;
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                Value::Len(self.take(len, "protobuf length-delimited field")?)
            }
            FIXED32 => {
                let b = self.take(4, "protobuf fixed32")?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                Value::Fixed32(u32::from_le_bytes(a))
            }
            other => {
                return Err(Error::BadWireType {
                    message: self.message,
                    field: number,
                    wire_type: other,
                })
            }
        };
        Ok(Field {
            number,
            value,
            raw: &self.buf[start..self.pos],
        })
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Field<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let r = self.read_field();
        self.failed = r.is_err();
        Some(r)
    }
}

/// Reads a packed run of varints.
pub fn read_packed_varints(payload: &[u8]) -> Result<Vec<u64>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < payload.len() {
        out.push(read_varint(payload, &mut pos)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn varints_round_trip() {
        for v in [0, 1, 127, 128, 300, 1 << 31, u64::from(u32::MAX), u64::MAX] {
            let b = varint(v);
            let mut pos = 0;
            assert_eq!(read_varint(&b, &mut pos), Ok(v));
            assert_eq!(pos, b.len());
        }
        assert_eq!(varint(300), [0xac, 0x02]);
        assert_eq!(varint(u64::MAX).len(), 10);
    }

    #[test]
    fn negative_int32_takes_ten_bytes() {
        let mut out = Vec::new();
        put_int32(&mut out, 3, -1);
        assert_eq!(
            out,
            [0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        let mut pos = 1;
        let v = read_varint(&out, &mut pos).unwrap();
        assert_eq!(as_int32("x", v), Ok(-1));
    }

    #[test]
    fn bad_varints() {
        let mut pos = 0;
        assert_eq!(
            read_varint(&[0x80, 0x80], &mut pos),
            Err(Error::Truncated {
                what: "protobuf varint",
                needed: 3,
                available: 2
            })
        );
        let eleven = [0xff; 11];
        assert_eq!(
            read_varint(&eleven, &mut 0),
            Err(Error::BadVarint { offset: 0 })
        );
        let mut ten = [0xff; 10];
        ten[9] = 0x02;
        assert_eq!(
            read_varint(&ten, &mut 0),
            Err(Error::BadVarint { offset: 0 })
        );
    }

    #[test]
    fn int32_and_bool_ranges() {
        assert_eq!(
            as_int32("f", 1 << 31),
            Err(Error::IntOutOfRange {
                field: "f",
                value: 1 << 31
            })
        );
        assert_eq!(as_int32("f", (-5i64) as u64), Ok(-5));
        assert_eq!(
            as_bool("b", 2),
            Err(Error::InvalidBool {
                field: "b",
                value: 2
            })
        );
    }

    #[test]
    fn reader_fields_and_errors() {
        let mut m = Vec::new();
        put_int32(&mut m, 1, 7);
        put_bytes(&mut m, 2, b"hi");
        m.extend_from_slice(&[0x1d, 1, 2, 3, 4]);
        m.extend_from_slice(&[0x21, 1, 2, 3, 4, 5, 6, 7, 8]);
        let f: Vec<_> = Reader::new(&m, "T").collect::<Result<_>>().unwrap();
        assert_eq!(f[0].value, Value::Varint(7));
        assert_eq!(f[1].value, Value::Len(b"hi"));
        assert_eq!(f[1].raw, [0x12, 2, b'h', b'i']);
        assert_eq!(f[2].value, Value::Fixed32(0x04030201));
        assert_eq!(f[3].number, 4);
        assert_eq!(f[3].value, Value::Fixed64(0x0807060504030201));

        let err = |b: &[u8]| Reader::new(b, "T").find_map(|r| r.err()).unwrap();
        assert_eq!(err(&[0x00]), Error::BadTag { tag: 0, offset: 0 });
        assert_eq!(
            err(&[0x0b]),
            Error::BadWireType {
                message: "T",
                field: 1,
                wire_type: 3
            }
        );
        assert!(matches!(err(&[0x12, 5, 1]), Error::Truncated { .. }));
        assert!(matches!(
            err(&[0x12, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            Error::Truncated { .. }
        ));
    }
}
