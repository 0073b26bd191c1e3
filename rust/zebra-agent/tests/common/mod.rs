//! Reads the PS-lite messages captured from real BytePS and MXNet jobs in
//! `rust/zebra-pslite/tests/data/` (their README gives the file format:
//! `format`, `route` and one `frame <hex>` line per frame).

#![allow(dead_code)]

use std::path::Path;

use zebra_pslite::{Format, Route};

/// One captured message.
pub struct Captured {
    pub name: String,
    pub format: Format,
    pub route: Route,
    pub frames: Vec<Vec<u8>>,
}

impl Captured {
    /// The frames after the identities (what a DEALER sends).
    pub fn body(&self) -> &[Vec<u8>] {
        &self.frames[self.route.identity_frames()..]
    }

    /// The body as a ROUTER receives it from `identity`.
    pub fn received_from(&self, identity: &[u8]) -> Vec<Vec<u8>> {
        std::iter::once(identity.to_vec())
            .chain(self.body().iter().cloned())
            .collect()
    }
}

pub fn refs<F: AsRef<[u8]>>(frames: &[F]) -> Vec<&[u8]> {
    frames.iter().map(AsRef::as_ref).collect()
}

fn data_dir() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../zebra-pslite/tests/data"
    ))
}

fn unhex(text: &str) -> Vec<u8> {
    let digit = |c: u8| (c as char).to_digit(16).expect("hex digit") as u8;
    text.as_bytes()
        .chunks(2)
        .map(|pair| digit(pair[0]) << 4 | digit(pair[1]))
        .collect()
}

/// `name` is e.g. `byteps/push-w9`.
pub fn captured(name: &str) -> Captured {
    let path = data_dir().join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut format, mut route, mut frames) = (None, None, Vec::new());
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("format"), Some("byteps")) => format = Some(Format::Byteps),
            (Some("format"), Some("protobuf")) => format = Some(Format::Protobuf),
            (Some("route"), Some("dealer-send")) => route = Some(Route::DealerSend),
            (Some("route"), Some("router-recv")) => route = Some(Route::RouterRecv),
            (Some("route"), Some("router-send")) => route = Some(Route::RouterSend),
            (Some("route"), Some("dealer-recv")) => route = Some(Route::DealerRecv),
            (Some("frame"), Some(hex)) => frames.push(unhex(hex)),
            (Some("frame"), None) => frames.push(Vec::new()),
            _ => panic!("{}: unexpected line {line:?}", path.display()),
        }
    }
    Captured {
        name: name.to_string(),
        format: format.expect("a format line"),
        route: route.expect("a route line"),
        frames,
    }
}

/// Every captured message.
pub fn every_capture() -> Vec<Captured> {
    let mut names = Vec::new();
    for dir in ["byteps", "mxnet"] {
        for entry in std::fs::read_dir(data_dir().join(dir)).expect("fixture directory") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            if let Some(stem) = name.strip_suffix(".txt") {
                names.push(format!("{dir}/{stem}"));
            }
        }
    }
    names.sort();
    names.iter().map(|n| captured(n)).collect()
}
