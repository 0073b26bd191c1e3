//! The 64-byte ZMTP 3.x greeting.
//!
//! ```text
//! offset  size  field
//!      0     1  signature start, 0xFF
//!      1     8  padding (not significant; libzmq writes identity length + 1, big endian)
//!      9     1  signature end, 0x7F
//!     10     1  version major (3)
//!     11     1  version minor (0 for ZMTP 3.0, 1 for 3.1)
//!     12    20  mechanism name, ASCII, NUL padded ("NULL", "PLAIN", "CURVE")
//!     32     1  as-server (0 or 1)
//!     33    31  filler (zeros)
//! ```

use crate::error::{Error, Result};

/// Length of a ZMTP 3.x greeting.
pub const GREETING_LEN: usize = 64;
/// Length of the signature (first part of the greeting).
pub const SIGNATURE_LEN: usize = 10;
/// Length of the mechanism field.
pub const MECHANISM_LEN: usize = 20;

mod field {
    use core::ops::Range;
    pub const SIGNATURE_START: usize = 0;
    pub const PADDING: Range<usize> = 1..9;
    pub const SIGNATURE_END: usize = 9;
    pub const MAJOR: usize = 10;
    pub const MINOR: usize = 11;
    pub const MECHANISM: Range<usize> = 12..32;
    pub const AS_SERVER: usize = 32;
    pub const FILLER: Range<usize> = 33..64;
}

/// A security mechanism name: 1 to 20 characters of `A-Z 0-9 - _ . +`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mechanism {
    field: [u8; MECHANISM_LEN],
}

impl Mechanism {
    /// The NULL mechanism, the only one this crate implements.
    pub const NULL: Mechanism = Mechanism::from_static(b"NULL");
    /// The PLAIN mechanism (RFC 24).
    pub const PLAIN: Mechanism = Mechanism::from_static(b"PLAIN");
    /// The CURVE mechanism (RFC 26).
    pub const CURVE: Mechanism = Mechanism::from_static(b"CURVE");

    const fn from_static(name: &[u8]) -> Mechanism {
        let mut field = [0u8; MECHANISM_LEN];
        let mut i = 0;
        while i < name.len() {
            field[i] = name[i];
            i += 1;
        }
        Mechanism { field }
    }

    /// A mechanism by name, checked against the grammar.
    pub fn new(name: &str) -> Result<Mechanism> {
        let bytes = name.as_bytes();
        if bytes.len() > MECHANISM_LEN {
            return Err(Error::InvalidMechanism("name longer than 20 bytes"));
        }
        let mut field = [0u8; MECHANISM_LEN];
        field[..bytes.len()].copy_from_slice(bytes);
        Mechanism::from_field(&field)
    }

    /// Parses the 20-byte greeting field: a non-empty name, then only NULs.
    pub fn from_field(field: &[u8; MECHANISM_LEN]) -> Result<Mechanism> {
        let len = field.iter().position(|&b| b == 0).unwrap_or(MECHANISM_LEN);
        if len == 0 {
            return Err(Error::InvalidMechanism("empty name"));
        }
        if field[len..].iter().any(|&b| b != 0) {
            return Err(Error::InvalidMechanism("non-NUL byte after the name"));
        }
        let valid = |b: &u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b"-_.+".contains(b);
        if !field[..len].iter().all(valid) {
            return Err(Error::InvalidMechanism(
                "name has characters outside A-Z 0-9 - _ . +",
            ));
        }
        Ok(Mechanism { field: *field })
    }

    /// The 20-byte NUL-padded field.
    pub const fn field(&self) -> &[u8; MECHANISM_LEN] {
        &self.field
    }

    /// The name without padding.
    pub fn name(&self) -> &str {
        let len = self
            .field
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(MECHANISM_LEN);
        core::str::from_utf8(&self.field[..len]).unwrap_or("?")
    }
}

impl core::fmt::Debug for Mechanism {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Mechanism({})", self.name())
    }
}

/// Checks as much of a greeting as `prefix` holds, so a non-ZMTP peer is
/// rejected as soon as its first wrong byte arrives. The checks run in byte
/// order, so any split of the stream reports the same first error.
pub fn check_prefix(prefix: &[u8]) -> Result<()> {
    if let Some(&b) = prefix.get(field::SIGNATURE_START) {
        if b != 0xFF {
            return Err(Error::BadSignature {
                offset: field::SIGNATURE_START,
                byte: b,
            });
        }
    }
    if let Some(&b) = prefix.get(field::SIGNATURE_END) {
        if b != 0x7F {
            return Err(Error::BadSignature {
                offset: field::SIGNATURE_END,
                byte: b,
            });
        }
    }
    if let Some(&major) = prefix.get(field::MAJOR) {
        if major < 3 {
            return Err(Error::UnsupportedVersion { major });
        }
    }
    if let Some(raw) = prefix.get(field::MECHANISM) {
        let mut f = [0u8; MECHANISM_LEN];
        f.copy_from_slice(raw);
        Mechanism::from_field(&f)?;
    }
    Ok(())
}

/// A read/write view of a greeting in a byte buffer (smoltcp style).
#[derive(Debug, Clone)]
pub struct Greeting<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Greeting<T> {
    /// Wraps a buffer without checking it; accessors may panic if it is short.
    pub const fn new_unchecked(buffer: T) -> Greeting<T> {
        Greeting { buffer }
    }

    /// Wraps a buffer after checking its length, signature, version and
    /// mechanism field.
    pub fn new_checked(buffer: T) -> Result<Greeting<T>> {
        let g = Greeting::new_unchecked(buffer);
        g.check_len()?;
        check_prefix(g.buffer.as_ref())?;
        Ok(g)
    }

    /// Ensures the buffer holds a whole greeting.
    pub fn check_len(&self) -> Result<()> {
        let available = self.buffer.as_ref().len();
        if available < GREETING_LEN {
            return Err(Error::Truncated {
                needed: GREETING_LEN,
                available,
            });
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The 8 signature padding bytes.
    pub fn padding(&self) -> [u8; 8] {
        let mut p = [0u8; 8];
        p.copy_from_slice(&self.buffer.as_ref()[field::PADDING]);
        p
    }

    /// Major version.
    pub fn version_major(&self) -> u8 {
        self.buffer.as_ref()[field::MAJOR]
    }

    /// Minor version.
    pub fn version_minor(&self) -> u8 {
        self.buffer.as_ref()[field::MINOR]
    }

    /// The raw 20-byte mechanism field.
    pub fn mechanism_field(&self) -> [u8; MECHANISM_LEN] {
        let mut f = [0u8; MECHANISM_LEN];
        f.copy_from_slice(&self.buffer.as_ref()[field::MECHANISM]);
        f
    }

    /// The as-server byte; any non-zero value counts as set.
    pub fn as_server(&self) -> bool {
        self.buffer.as_ref()[field::AS_SERVER] != 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Greeting<T> {
    fn set_signature(&mut self, padding: [u8; 8]) {
        let b = self.buffer.as_mut();
        b[field::SIGNATURE_START] = 0xFF;
        b[field::PADDING].copy_from_slice(&padding);
        b[field::SIGNATURE_END] = 0x7F;
    }

    fn set_version(&mut self, major: u8, minor: u8) {
        let b = self.buffer.as_mut();
        b[field::MAJOR] = major;
        b[field::MINOR] = minor;
    }

    fn set_mechanism(&mut self, m: &Mechanism) {
        self.buffer.as_mut()[field::MECHANISM].copy_from_slice(m.field());
    }

    fn set_as_server(&mut self, as_server: bool) {
        let b = self.buffer.as_mut();
        b[field::AS_SERVER] = u8::from(as_server);
        b[field::FILLER].fill(0);
    }
}

/// A parsed greeting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GreetingRepr {
    /// Signature padding. Not significant to ZMTP 3.x, kept so that parsing
    /// and emitting round-trip and so we can write what libzmq writes.
    pub padding: [u8; 8],
    /// Major version (3 or more).
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Security mechanism.
    pub mechanism: Mechanism,
    /// The as-server flag.
    pub as_server: bool,
}

impl GreetingRepr {
    /// The greeting we send: ZMTP 3.1, NULL mechanism, libzmq's padding for
    /// an identity of `identity_len` bytes.
    pub fn ours(identity_len: usize, as_server: bool) -> GreetingRepr {
        GreetingRepr {
            padding: libzmq_padding(identity_len),
            major: 3,
            minor: 1,
            mechanism: Mechanism::NULL,
            as_server,
        }
    }

    /// Parses a checked greeting view.
    pub fn parse<T: AsRef<[u8]>>(g: &Greeting<T>) -> Result<GreetingRepr> {
        g.check_len()?;
        check_prefix(g.buffer.as_ref())?;
        Ok(GreetingRepr {
            padding: g.padding(),
            major: g.version_major(),
            minor: g.version_minor(),
            mechanism: Mechanism::from_field(&g.mechanism_field())?,
            as_server: g.as_server(),
        })
    }

    /// Parses a greeting from the start of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<GreetingRepr> {
        GreetingRepr::parse(&Greeting::new_checked(bytes)?)
    }

    /// Writes the greeting into a view whose buffer is at least 64 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, g: &mut Greeting<T>) {
        g.set_signature(self.padding);
        g.set_version(self.major, self.minor);
        g.set_mechanism(&self.mechanism);
        g.set_as_server(self.as_server);
    }

    /// The 64 bytes of this greeting.
    pub fn to_bytes(&self) -> [u8; GREETING_LEN] {
        let mut g = Greeting::new_unchecked([0u8; GREETING_LEN]);
        self.emit(&mut g);
        g.into_inner()
    }
}

/// libzmq fills the signature padding with the ZMTP 1.0 length of its
/// identity message (identity length + 1, 64-bit big endian) so that
/// unversioned peers can read it; ZMTP 3.x ignores it.
pub fn libzmq_padding(identity_len: usize) -> [u8; 8] {
    (identity_len as u64 + 1).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> [u8; GREETING_LEN] {
        GreetingRepr::ours(0, false).to_bytes()
    }

    #[test]
    fn ours_is_signature_version_null() {
        let g = good();
        assert_eq!(&g[..10], &[0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F]);
        assert_eq!(&g[10..12], &[3, 1]);
        assert_eq!(&g[12..16], b"NULL");
        assert!(g[16..].iter().all(|&b| b == 0));
    }

    #[test]
    fn parse_round_trip() {
        let repr = GreetingRepr {
            padding: [9, 8, 7, 6, 5, 4, 3, 2],
            major: 3,
            minor: 0,
            mechanism: Mechanism::new("X-TEST.1+_").unwrap(),
            as_server: true,
        };
        let bytes = repr.to_bytes();
        assert_eq!(GreetingRepr::from_bytes(&bytes), Ok(repr));
        let view = Greeting::new_checked(&bytes[..]).unwrap();
        assert_eq!(view.version_minor(), 0);
        assert!(view.as_server());
        assert_eq!(view.padding(), [9, 8, 7, 6, 5, 4, 3, 2]);
    }

    #[test]
    fn any_padding_is_accepted() {
        let mut g = good();
        g[1..9].copy_from_slice(&[0xAA; 8]);
        assert!(GreetingRepr::from_bytes(&g).is_ok());
    }

    #[test]
    fn truncated() {
        let g = good();
        for n in 0..GREETING_LEN {
            assert_eq!(
                GreetingRepr::from_bytes(&g[..n]),
                Err(Error::Truncated {
                    needed: 64,
                    available: n
                })
            );
            assert_eq!(check_prefix(&g[..n]), Ok(()));
        }
    }

    #[test]
    fn bad_signature() {
        let mut g = good();
        g[0] = b'G';
        assert_eq!(
            check_prefix(&g[..1]),
            Err(Error::BadSignature {
                offset: 0,
                byte: b'G'
            })
        );
        let mut g = good();
        g[9] = 0x7E;
        assert_eq!(check_prefix(&g[..9]), Ok(()));
        assert_eq!(
            GreetingRepr::from_bytes(&g),
            Err(Error::BadSignature {
                offset: 9,
                byte: 0x7E
            })
        );
    }

    #[test]
    fn old_versions_rejected_newer_accepted() {
        for major in [0u8, 1, 2] {
            let mut g = good();
            g[10] = major;
            assert_eq!(
                check_prefix(&g[..11]),
                Err(Error::UnsupportedVersion { major })
            );
        }
        let mut g = good();
        g[10] = 4;
        g[11] = 7;
        let r = GreetingRepr::from_bytes(&g).unwrap();
        assert_eq!((r.major, r.minor), (4, 7));
    }

    #[test]
    fn mechanism_field_checks() {
        let mut g = good();
        g[12..32].fill(0);
        assert_eq!(
            GreetingRepr::from_bytes(&g),
            Err(Error::InvalidMechanism("empty name"))
        );
        let mut g = good();
        g[20] = b'X';
        assert_eq!(
            GreetingRepr::from_bytes(&g),
            Err(Error::InvalidMechanism("non-NUL byte after the name"))
        );
        let mut g = good();
        g[12] = b'n';
        assert!(matches!(
            GreetingRepr::from_bytes(&g),
            Err(Error::InvalidMechanism(_))
        ));
        let mut g = good();
        g[12..32].copy_from_slice(b"ABCDEFGHIJKLMNOPQRST");
        let r = GreetingRepr::from_bytes(&g).unwrap();
        assert_eq!(r.mechanism.name(), "ABCDEFGHIJKLMNOPQRST");
        assert!(Mechanism::new("ABCDEFGHIJKLMNOPQRSTU").is_err());
        assert!(Mechanism::new("").is_err());
        assert_eq!(Mechanism::CURVE.name(), "CURVE");
        assert_eq!(format!("{:?}", Mechanism::PLAIN), "Mechanism(PLAIN)");
    }

    #[test]
    fn filler_and_as_server_are_tolerated() {
        let mut g = good();
        g[32] = 5;
        g[40] = 0xEE;
        let r = GreetingRepr::from_bytes(&g).unwrap();
        assert!(r.as_server);
    }

    #[test]
    fn libzmq_padding_counts_identity() {
        assert_eq!(libzmq_padding(0), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(libzmq_padding(3), [0, 0, 0, 0, 0, 0, 0, 4]);
        assert_eq!(libzmq_padding(255), [0, 0, 0, 0, 0, 0, 1, 0]);
    }
}
