//! Runs every wire parser on arbitrary bytes; whatever parses must emit
//! and parse again to the same value.

#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use zebra_zmtp::wire::{Command, Frame, FrameHeader, GreetingRepr, Metadata};

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = GreetingRepr::from_bytes(data) {
        assert_eq!(GreetingRepr::from_bytes(&g.to_bytes()), Ok(g));
    }
    if let Ok((h, n)) = FrameHeader::parse(data) {
        assert_eq!(n, h.header_len());
        let mut out = BytesMut::new();
        h.emit(&mut out);
        assert_eq!(FrameHeader::parse(&out), Ok((h, n)));
    }
    if let Ok((f, _)) = Frame::parse(data) {
        let mut out = BytesMut::new();
        f.emit(&mut out);
        assert_eq!(Frame::parse(&out).map(|(g, _)| g), Ok(f));
    }
    let body = Bytes::copy_from_slice(data);
    if let Ok(c) = Command::parse(&body) {
        let mut out = BytesMut::new();
        if c.emit_frame(&mut out).is_ok() {
            let (f, _) = Frame::parse(&out).expect("emitted frame parses");
            assert_eq!(Command::parse(&f.body), Ok(c));
        }
    }
    if let Ok(m) = Metadata::parse(&body) {
        let mut out = BytesMut::new();
        m.emit(&mut out);
        assert_eq!(&out[..], data);
    }
});
