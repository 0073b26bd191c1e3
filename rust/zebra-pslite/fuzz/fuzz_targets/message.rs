//! A multipart message from arbitrary bytes: frames as `[u16
//! little-endian length][bytes]` (at most 8), then the rest as one more
//! frame. The seeds in `seeds/message/` are the captured fixtures of
//! `tests/data/` in this encoding. Every format and route is tried; whatever parses must
//! re-emit to a meta that parses back equal, and the KV helpers must hold
//! their invariants.

#![no_main]

use libfuzzer_sys::fuzz_target;
use zebra_pslite::{detect, response, split_kv, Format, Message, Route};

fn frames(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while data.len() >= 2 && out.len() < 8 {
        let len = usize::from(u16::from_le_bytes([data[0], data[1]]));
        data = &data[2..];
        let n = len.min(data.len());
        out.push(&data[..n]);
        data = &data[n..];
    }
    if !data.is_empty() {
        out.push(data);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let frames = frames(data);
    for f in &frames {
        let _ = detect(f);
    }
    for format in [Format::Byteps, Format::Protobuf] {
        for route in [Route::DealerSend, Route::RouterRecv, Route::RouterSend, Route::DealerRecv] {
            let Ok(env) = Message::parse_frames(format, route, &frames) else {
                continue;
            };
            let msg = &env.message;
            let emitted = format.emit(&msg.meta).expect("a parsed meta emits");
            let mut back = format.parse(&emitted).expect("an emitted meta parses");
            assert_eq!(format.emit(&back).unwrap(), emitted);
            (back.sender, back.recver) = (msg.meta.sender, msg.meta.recver);
            assert_eq!(back, msg.meta);
            let _ = response(&msg.meta, None);
            if let Ok(Some(view)) = msg.kv() {
                if let Ok(entries) = view.answer_entries() {
                    let bytes: usize = entries.map(|(_, b, _)| b.len()).sum();
                    assert!(bytes <= view.vals().len());
                }
                if let Ok((hot, cold)) = split_kv(&view, |k| k & 1 == 1) {
                    assert_eq!(hot.keys.len() + cold.keys.len(), view.num_keys());
                    hot.check().expect("a split part is valid");
                    cold.check().expect("a split part is valid");
                }
            }
            if let Ok(split) = msg.split_push(|k| k % 3 == 0) {
                let out = split.cold.to_frames(format).unwrap();
                let r: Vec<&[u8]> = out.iter().map(|f| &f[..]).collect();
                Message::parse(format, r[0], &r[1..]).expect("the cold part parses");
            }
        }
    }
});
