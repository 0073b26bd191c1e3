//! One Zebra frame from arbitrary bytes (`FRAMES.md`): `ZebraFrame::parse`
//! and the typed parsers must agree, and whatever parses must re-emit to
//! bytes that parse back to the same frame. SETTLE, HOTSET and RESTART have
//! one encoding, so they re-emit byte for byte (their values compared as bytes:
//! a SETTLE's f32 may be a NaN); a PUSH trailer re-emits as the shorter of
//! list and bitmap, never longer than what was parsed. The seeds in
//! `seeds/frame/` are valid frames of each type.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zebra_agent::frame::has_magic;
use zebra_agent::{FrameError, HotSetFrame, PushTrailer, Settle, ZebraFrame};

fn agree<T: std::fmt::Debug>(
    typed: Result<T, FrameError>,
    via_frame: Option<&T>,
    same: fn(&T, &T) -> bool,
) {
    match (typed, via_frame) {
        (Ok(t), Some(f)) => assert!(same(&t, f), "typed parse {t:?} differs from {f:?}"),
        (Err(_), None) => {}
        (t, f) => panic!("typed parse {t:?}, ZebraFrame::parse {f:?}"),
    }
}

fn same_settle(a: &Settle, b: &Settle) -> bool {
    a.to_bytes().unwrap() == b.to_bytes().unwrap()
}

fuzz_target!(|data: &[u8]| {
    let parsed = ZebraFrame::parse(data);
    if parsed.is_ok() {
        assert!(has_magic(data));
    }
    let push = match &parsed {
        Ok(ZebraFrame::Push(t)) => Some(t),
        _ => None,
    };
    let settle = match &parsed {
        Ok(ZebraFrame::Settle(s)) => Some(s),
        _ => None,
    };
    let hotset = match &parsed {
        Ok(ZebraFrame::HotSet(h)) => Some(h),
        _ => None,
    };
    agree(PushTrailer::parse(data), push, PartialEq::eq);
    agree(Settle::parse(data), settle, same_settle);
    agree(HotSetFrame::parse(data), hotset, PartialEq::eq);

    let Ok(frame) = parsed else { return };
    assert_eq!(frame.kind(), data[5]);
    match &frame {
        ZebraFrame::Push(t) => {
            assert!(t.previous < t.round);
            assert!(
                t.hot.windows(2).all(|w| w[0] < w[1]),
                "hot keys not increasing"
            );
            let bytes = t.to_bytes().expect("a parsed trailer emits");
            assert_eq!(bytes.len(), t.len());
            assert!(bytes.len() <= data.len(), "re-emitted trailer is longer");
            let back = PushTrailer::parse(&bytes).expect("an emitted trailer parses");
            assert_eq!(&back, t);
            assert_eq!(back.to_bytes().unwrap(), bytes);
        }
        ZebraFrame::Settle(s) => {
            let bytes = s.to_bytes().expect("a parsed SETTLE emits");
            assert_eq!(bytes, data);
            assert_eq!(s.len(), data.len());
            for b in &s.batches {
                assert_eq!((b.job, b.worker, b.round), (s.job, s.worker, s.round));
            }
        }
        ZebraFrame::HotSet(h) => {
            assert!(h.change || h.keys.is_empty());
            let bytes = h.to_bytes().expect("a parsed HOTSET emits");
            assert_eq!(bytes, data);
            assert_eq!(h.len(), data.len());
            assert_eq!(HotSetFrame::parse(&bytes).as_ref(), Ok(h));
        }
        ZebraFrame::Restart(r) => {
            assert_eq!(r.to_bytes(), data);
            assert_eq!(ZebraFrame::parse(data), Ok(ZebraFrame::Restart(*r)));
        }
    }
});
