//! The two PS-lite meta formats, and telling them apart from the bytes.

use core::fmt;
use core::str::FromStr;

use crate::error::{Error, Result};
use crate::meta::{Command, Meta};
use crate::wire::{byteps, pb, pbmeta};

/// A PS-lite meta format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// BytePS's PS-lite: the raw C struct (see [`crate::wire::byteps`]).
    Byteps,
    /// dmlc/ps-lite and MXNet: protobuf `PBMeta` (see [`crate::wire::pbmeta`]).
    Protobuf,
}

impl Format {
    /// Parses a meta frame in this format.
    pub fn parse(self, meta: &[u8]) -> Result<Meta> {
        match self {
            Format::Byteps => byteps::parse(meta),
            Format::Protobuf => pbmeta::parse(meta),
        }
    }

    /// Emits a meta in this format.
    pub fn emit(self, meta: &Meta) -> Result<Vec<u8>> {
        match self {
            Format::Byteps => byteps::emit(meta),
            Format::Protobuf => pbmeta::emit(meta),
        }
    }

    /// The name [`FromStr`] accepts.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Byteps => "byteps",
            Format::Protobuf => "protobuf",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format setting: detect, or a fixed format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FormatChoice {
    /// Detect from the first meta that fits exactly one format.
    #[default]
    Auto,
    /// Always this format.
    Fixed(Format),
}

impl FromStr for FormatChoice {
    type Err = Error;

    /// `auto` (or empty), `byteps`, `protobuf` (also `pb`, `dmlc`,
    /// `mxnet`); case-insensitive.
    fn from_str(s: &str) -> Result<FormatChoice> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(FormatChoice::Auto),
            "byteps" => Ok(FormatChoice::Fixed(Format::Byteps)),
            "protobuf" | "pb" | "dmlc" | "mxnet" => Ok(FormatChoice::Fixed(Format::Protobuf)),
            _ => Err(Error::UnknownFormatName(s.to_string())),
        }
    }
}

/// Whether `meta` is a BytePS meta as `PackMeta` writes it: it parses,
/// its padding is zero and its command is one BytePS knows.
fn looks_byteps(meta: &[u8]) -> bool {
    let Ok(raw) = byteps::RawMeta::new_checked(meta) else {
        return false;
    };
    raw.padding_is_zero()
        && !matches!(Command::from_code(raw.cmd()), Command::Other(_))
        && byteps::parse(meta).is_ok()
}

/// Whether `meta` is a `PBMeta` as `PackMeta` writes it: it parses, and
/// starts with `head` (every PS-lite version sets it, and the C++
/// serializer writes field 1 first).
fn looks_protobuf(meta: &[u8]) -> bool {
    let mut pos = 0;
    let first_is_head = pb::read_varint(meta, &mut pos)
        .map(|tag| tag == u64::from(pbmeta::field::HEAD << 3))
        .unwrap_or(false);
    first_is_head && pbmeta::parse(meta).is_ok()
}

/// The format of a meta frame: the one it fits, [`Error::UnknownFormat`]
/// if none, [`Error::AmbiguousFormat`] if both.
///
/// Real messages never fit both: as protobuf, a BytePS meta must start
/// with the tag of `head` (its head's low byte 0x08), which no control
/// message does (head `kEmpty` starts 0xFF), and a data message's zero
/// `body_size` at bytes 4..8 is not a valid protobuf field. A contrived
/// frame can fit both (see the tests), hence [`Error::AmbiguousFormat`].
pub fn detect(meta: &[u8]) -> Result<Format> {
    match (looks_byteps(meta), looks_protobuf(meta)) {
        (true, false) => Ok(Format::Byteps),
        (false, true) => Ok(Format::Protobuf),
        (true, true) => Err(Error::AmbiguousFormat { len: meta.len() }),
        (false, false) => Err(Error::UnknownFormat { len: meta.len() }),
    }
}

/// Detects the format once per process (one PS-lite build per process) and
/// then sticks to it, unless a fixed format is set.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    choice: FormatChoice,
    learned: Option<Format>,
}

impl Detector {
    /// A detector with a setting.
    pub fn new(choice: FormatChoice) -> Detector {
        Detector {
            choice,
            learned: None,
        }
    }

    /// The format in force, if known yet.
    pub fn format(&self) -> Option<Format> {
        match self.choice {
            FormatChoice::Fixed(f) => Some(f),
            FormatChoice::Auto => self.learned,
        }
    }

    /// Parses a meta frame in the format in force, learning it from this
    /// frame if it is not known yet.
    pub fn parse(&mut self, meta: &[u8]) -> Result<(Format, Meta)> {
        let format = match self.format() {
            Some(f) => f,
            None => {
                let f = detect(meta)?;
                self.learned = Some(f);
                f
            }
        };
        Ok((format, format.parse(meta)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::EMPTY;

    fn data_meta() -> Meta {
        let mut m = Meta::new();
        m.head = 0;
        m.app_id = 0;
        m.customer_id = 0;
        m.timestamp = 3;
        m.request = true;
        m.push = true;
        m
    }

    #[test]
    fn detects_both() {
        let b = Format::Byteps.emit(&data_meta()).unwrap();
        let p = Format::Protobuf.emit(&data_meta()).unwrap();
        assert_eq!(detect(&b), Ok(Format::Byteps));
        assert_eq!(detect(&p), Ok(Format::Protobuf));
        let mut ctl = Meta::new();
        ctl.control.cmd = Command::Terminate;
        assert_eq!(
            detect(&Format::Byteps.emit(&ctl).unwrap()),
            Ok(Format::Byteps)
        );
        assert_eq!(
            detect(&Format::Protobuf.emit(&ctl).unwrap()),
            Ok(Format::Protobuf)
        );
        assert_eq!(detect(b"hello"), Err(Error::UnknownFormat { len: 5 }));
        assert_eq!(detect(b""), Err(Error::UnknownFormat { len: 0 }));
        assert_eq!(ctl.head, EMPTY);
    }

    /// A contrived frame that is both: as protobuf, head 0, request false, an
    /// 82-byte body holding the rest of the 88-byte struct, and an unknown
    /// field holding the BytePS body; as BytePS, head 0x00200008 and a
    /// 21010-byte body (bytes 4..8 read 0x12, 82, 0, 0).
    #[test]
    fn a_frame_can_fit_both() {
        let body_size = 0x12 + 82 * 256;
        let mut b = vec![0u8; byteps::HEADER_LEN + body_size];
        b[..6].copy_from_slice(&[0x08, 0x00, 0x20, 0x00, 0x12, 82]);
        let rest = body_size - 4;
        let mut at = byteps::HEADER_LEN;
        b[at] = (15 << 3) | pb::LEN;
        at += 1;
        let mut len = Vec::new();
        pb::put_varint(&mut len, rest as u64);
        assert_eq!(len.len(), 3);
        b[at..at + 3].copy_from_slice(&len);
        assert!(Format::Byteps.parse(&b).is_ok());
        assert!(Format::Protobuf.parse(&b).is_ok());
        assert_eq!(detect(&b), Err(Error::AmbiguousFormat { len: b.len() }));
    }

    #[test]
    fn choice_names() {
        assert_eq!("auto".parse(), Ok(FormatChoice::Auto));
        assert_eq!("BytePS".parse(), Ok(FormatChoice::Fixed(Format::Byteps)));
        assert_eq!("mxnet".parse(), Ok(FormatChoice::Fixed(Format::Protobuf)));
        assert_eq!(
            "grpc".parse::<FormatChoice>(),
            Err(Error::UnknownFormatName("grpc".into()))
        );
    }

    #[test]
    fn detector_learns_and_sticks() {
        let mut d = Detector::new(FormatChoice::Auto);
        assert_eq!(d.format(), None);
        assert!(d.parse(b"junk").is_err());
        let p = Format::Protobuf.emit(&data_meta()).unwrap();
        assert_eq!(d.parse(&p).unwrap().0, Format::Protobuf);
        let b = Format::Byteps.emit(&data_meta()).unwrap();
        assert!(d.parse(&b).is_err());
        let mut fixed = Detector::new(FormatChoice::Fixed(Format::Byteps));
        assert_eq!(fixed.parse(&b).unwrap().0, Format::Byteps);
    }
}
