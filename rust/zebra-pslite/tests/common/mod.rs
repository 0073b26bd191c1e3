//! Loads the captured fixtures in `tests/data/` (see its README).

#![allow(dead_code)]

use std::path::PathBuf;

use zebra_pslite::{Envelope, Format, Message, Route};

/// One captured multipart message.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub name: String,
    pub format: Format,
    pub route: Route,
    pub frames: Vec<Vec<u8>>,
}

impl Fixture {
    pub fn refs(&self) -> Vec<&[u8]> {
        self.frames.iter().map(|f| &f[..]).collect()
    }

    /// The meta frame.
    pub fn meta_frame(&self) -> &[u8] {
        &self.frames[self.route.identity_frames()]
    }

    pub fn parse(&self) -> Envelope {
        Message::parse_frames(self.format, self.route, &self.refs())
            .unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }

    pub fn message(&self) -> Message {
        self.parse().message
    }
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn route(name: &str) -> Route {
    match name {
        "dealer-send" => Route::DealerSend,
        "router-recv" => Route::RouterRecv,
        "router-send" => Route::RouterSend,
        "dealer-recv" => Route::DealerRecv,
        other => panic!("unknown route {other}"),
    }
}

/// Loads `tests/data/<name>.txt`, e.g. `byteps/push-w9`.
pub fn load(name: &str) -> Fixture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut format = None;
    let mut r = None;
    let mut frames = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "format" => {
                format = Some(match value {
                    "byteps" => Format::Byteps,
                    "protobuf" => Format::Protobuf,
                    other => panic!("unknown format {other}"),
                })
            }
            "route" => r = Some(route(value)),
            "frame" => frames.push(hex(value)),
            other => panic!("{}: unknown line {other}", path.display()),
        }
    }
    Fixture {
        name: name.to_string(),
        format: format.expect("format line"),
        route: r.expect("route line"),
        frames,
    }
}

/// Every fixture, sorted by name.
pub fn all() -> Vec<Fixture> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut names = Vec::new();
    for dir in ["byteps", "mxnet"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "txt") {
                let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
                names.push(format!("{dir}/{stem}"));
            }
        }
    }
    names.sort();
    assert!(names.len() >= 30, "fixtures missing: {names:?}");
    names.iter().map(|n| load(n)).collect()
}

/// Little-endian f32s.
pub fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
