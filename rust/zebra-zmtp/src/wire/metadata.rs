//! Metadata properties, as carried by READY.
//!
//! ```text
//! property = name-length (1 byte, 1..255) name value-length (4 bytes BE) value
//! name     = 1*255 (ALPHA / DIGIT / "-" / "_" / "." / "+"), case-insensitive
//! ```

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{Error, Result};
use crate::socket_type::SocketType;

/// Property naming the sender's socket type.
pub const SOCKET_TYPE: &str = "Socket-Type";
/// Property carrying the sender's routing identity.
pub const IDENTITY: &str = "Identity";
/// Longest identity ZeroMQ allows.
pub const MAX_IDENTITY_LEN: usize = 255;

/// An ordered list of metadata properties. Unknown properties are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    entries: Vec<(String, Bytes)>,
}

fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() {
        return Err(Error::MalformedMetadata("empty property name"));
    }
    if name.len() > 255 {
        return Err(Error::MalformedMetadata("property name longer than 255"));
    }
    let ok = |b: &u8| b.is_ascii_alphanumeric() || b"-_.+".contains(b);
    if !name.iter().all(ok) {
        return Err(Error::MalformedMetadata(
            "property name has characters outside A-Z a-z 0-9 - _ . +",
        ));
    }
    Ok(())
}

impl Metadata {
    /// An empty list.
    pub fn new() -> Metadata {
        Metadata::default()
    }

    /// The properties a NULL-mechanism READY carries for this socket,
    /// in libzmq's order: `Socket-Type`, then `Identity` for REQ, DEALER and
    /// ROUTER.
    pub fn for_socket(socket_type: SocketType, identity: &Bytes) -> Metadata {
        let mut m = Metadata::new();
        m.entries.push((
            SOCKET_TYPE.to_owned(),
            Bytes::from_static(socket_type.name().as_bytes()),
        ));
        if socket_type.sends_identity() {
            m.entries.push((IDENTITY.to_owned(), identity.clone()));
        }
        m
    }

    /// Appends a property after checking its name and value length.
    pub fn push(&mut self, name: &str, value: Bytes) -> Result<()> {
        check_name(name.as_bytes())?;
        if u32::try_from(value.len()).is_err() {
            return Err(Error::MalformedMetadata("property value longer than 4 GiB"));
        }
        self.entries.push((name.to_owned(), value));
        Ok(())
    }

    /// The first value of the property `name` (ASCII case is ignored).
    pub fn get(&self, name: &str) -> Option<&Bytes> {
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// All properties, in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Bytes)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Number of properties.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no properties.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `Socket-Type` property, parsed.
    pub fn socket_type(&self) -> Result<SocketType> {
        let v = self.get(SOCKET_TYPE).ok_or(Error::MissingSocketType)?;
        SocketType::from_name(v)
    }

    /// The `Identity` property (empty when absent); at most 255 bytes.
    pub fn identity(&self) -> Result<Bytes> {
        let id = self.get(IDENTITY).cloned().unwrap_or_default();
        if id.len() > MAX_IDENTITY_LEN {
            return Err(Error::IdentityTooLong(id.len()));
        }
        Ok(id)
    }

    /// Parses a property list that fills `data` exactly. Values share
    /// `data`'s buffer.
    pub fn parse(data: &Bytes) -> Result<Metadata> {
        let mut m = Metadata::new();
        let mut pos = 0usize;
        while pos < data.len() {
            let name_len = usize::from(data[pos]);
            pos += 1;
            let name = data
                .get(pos..pos + name_len)
                .ok_or(Error::MalformedMetadata("property name runs past the end"))?;
            check_name(name)?;
            pos += name_len;
            let len_bytes = data
                .get(pos..pos + 4)
                .ok_or(Error::MalformedMetadata("value length runs past the end"))?;
            let mut be = [0u8; 4];
            be.copy_from_slice(len_bytes);
            pos += 4;
            let value_len = u32::from_be_bytes(be) as usize;
            if value_len > data.len() - pos {
                return Err(Error::MalformedMetadata("property value runs past the end"));
            }
            let name = core::str::from_utf8(name)
                .map_err(|_| Error::MalformedMetadata("property name is not ASCII"))?
                .to_owned();
            m.entries.push((name, data.slice(pos..pos + value_len)));
            pos += value_len;
        }
        Ok(m)
    }

    /// Encoded length in bytes.
    pub fn encoded_len(&self) -> usize {
        self.entries
            .iter()
            .map(|(n, v)| 1 + n.len() + 4 + v.len())
            .sum()
    }

    /// Appends the encoded properties.
    pub fn emit(&self, out: &mut BytesMut) {
        for (n, v) in &self.entries {
            out.put_u8(n.len() as u8);
            out.extend_from_slice(n.as_bytes());
            out.put_u32(v.len() as u32);
            out.extend_from_slice(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(m: &Metadata) -> Bytes {
        let mut out = BytesMut::new();
        m.emit(&mut out);
        assert_eq!(out.len(), m.encoded_len());
        out.freeze()
    }

    #[test]
    fn dealer_metadata_bytes() {
        let m = Metadata::for_socket(SocketType::Dealer, &Bytes::from_static(b"ps9"));
        let mut want = Vec::new();
        want.push(11u8);
        want.extend_from_slice(b"Socket-Type");
        want.extend_from_slice(&[0, 0, 0, 6]);
        want.extend_from_slice(b"DEALER");
        want.push(8);
        want.extend_from_slice(b"Identity");
        want.extend_from_slice(&[0, 0, 0, 3]);
        want.extend_from_slice(b"ps9");
        assert_eq!(&encode(&m)[..], &want[..]);
    }

    #[test]
    fn pair_has_no_identity() {
        let m = Metadata::for_socket(SocketType::Pair, &Bytes::from_static(b"ignored"));
        assert_eq!(m.len(), 1);
        assert_eq!(m.identity(), Ok(Bytes::new()));
        assert_eq!(m.socket_type(), Ok(SocketType::Pair));
    }

    #[test]
    fn round_trip_with_unknown_properties() {
        let mut m = Metadata::new();
        m.push("Socket-Type", Bytes::from_static(b"ROUTER"))
            .unwrap();
        m.push("X-Custom.1+_", Bytes::from(vec![0u8; 300])).unwrap();
        m.push("Identity", Bytes::new()).unwrap();
        m.push("Resource", Bytes::from_static(b"/a")).unwrap();
        let parsed = Metadata::parse(&encode(&m)).unwrap();
        assert_eq!(parsed, m);
        assert_eq!(parsed.socket_type(), Ok(SocketType::Router));
        assert_eq!(parsed.get("x-custom.1+_").map(|v| v.len()), Some(300));
        assert_eq!(parsed.iter().count(), 4);
        assert!(!parsed.is_empty());
    }

    #[test]
    fn names_are_case_insensitive() {
        let mut m = Metadata::new();
        m.push("socket-type", Bytes::from_static(b"dealer"))
            .unwrap();
        m.push("IDENTITY", Bytes::from_static(b"me")).unwrap();
        let parsed = Metadata::parse(&encode(&m)).unwrap();
        assert_eq!(parsed.socket_type(), Ok(SocketType::Dealer));
        assert_eq!(parsed.identity(), Ok(Bytes::from_static(b"me")));
    }

    #[test]
    fn empty_is_valid_but_lacks_socket_type() {
        let m = Metadata::parse(&Bytes::new()).unwrap();
        assert!(m.is_empty());
        assert_eq!(m.socket_type(), Err(Error::MissingSocketType));
    }

    #[test]
    fn bad_bytes() {
        let cases: &[(&[u8], &str)] = &[
            (&[0], "empty property name"),
            (&[5, b'a'], "property name runs past the end"),
            (&[1, b'a', 0, 0], "value length runs past the end"),
            (
                &[1, b'a', 0, 0, 0, 2, b'x'],
                "property value runs past the end",
            ),
            (
                &[1, b'a', 0xFF, 0xFF, 0xFF, 0xFF],
                "property value runs past the end",
            ),
            (
                &[1, b' ', 0, 0, 0, 0],
                "property name has characters outside A-Z a-z 0-9 - _ . +",
            ),
            (
                &[1, 0xC3, 0, 0, 0, 0],
                "property name has characters outside A-Z a-z 0-9 - _ . +",
            ),
        ];
        for (bytes, why) in cases {
            assert_eq!(
                Metadata::parse(&Bytes::copy_from_slice(bytes)),
                Err(Error::MalformedMetadata(why)),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn push_checks_names() {
        let mut m = Metadata::new();
        assert!(m.push("", Bytes::new()).is_err());
        assert!(m.push("a b", Bytes::new()).is_err());
        assert!(m.push(&"x".repeat(256), Bytes::new()).is_err());
        assert!(m.push(&"x".repeat(255), Bytes::new()).is_ok());
    }

    #[test]
    fn identity_limits() {
        let mut m = Metadata::new();
        m.push("Identity", Bytes::from(vec![1u8; 256])).unwrap();
        assert_eq!(m.identity(), Err(Error::IdentityTooLong(256)));
        let mut m = Metadata::new();
        m.push("Socket-Type", Bytes::from_static(b"STREAM"))
            .unwrap();
        assert_eq!(
            m.socket_type(),
            Err(Error::UnknownSocketType("STREAM".into()))
        );
    }
}
