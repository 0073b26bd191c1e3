//! The P4 program (`p4/*.p4`) against zebra-proto: the two must share every
//! number of the wire format and of the switch geometry, so that a change to
//! one without the other fails here.
//!
//! The P4 sources are read as text (no P4 compiler is needed): constants,
//! typedefs, enums, headers and the header stacks of `header_t` are parsed,
//! constant expressions evaluated, and then compared with `consts`, the
//! `wire::*::field` byte ranges and flag bits, `FallbackReason` and the
//! default `Config`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use zebra_proto::consts::{self, packet_type};
use zebra_proto::packing::pack;
use zebra_proto::wire::{self, FallbackReason};
use zebra_proto::{Config, JobConfig, Layout, LayoutKind, Packing};

fn p4_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../p4")
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(u128),
    Punct(String),
}

fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else if (b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'/')
            || (b[i] == b'#' && (i == 0 || b[i - 1] == b'\n'))
        {
            // A line comment, or a preprocessor line.
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Integer literal: decimal or 0x hex, optionally width-prefixed (`32w0x5`, `8s3`).
fn parse_number(text: &str) -> u128 {
    let body = match text.find(['w', 's']) {
        Some(p) if text[..p].bytes().all(|c| c.is_ascii_digit()) && p > 0 => &text[p + 1..],
        _ => text,
    };
    let body = body.replace('_', "");
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u128::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("bad hex literal {text}"))
    } else if let Some(bin) = body.strip_prefix("0b") {
        u128::from_str_radix(bin, 2).unwrap_or_else(|_| panic!("bad binary literal {text}"))
    } else {
        body.parse()
            .unwrap_or_else(|_| panic!("bad literal {text}"))
    }
}

fn tokenize(src: &str) -> Vec<Tok> {
    let src = strip_comments(src);
    let b = src.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric()
                || i < b.len() && b[i] == b'_'
            {
                i += 1;
            }
            toks.push(Tok::Num(parse_number(&src[start..i])));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            toks.push(Tok::Ident(src[start..i].to_string()));
        } else {
            let two = if i + 1 < b.len() { &src[i..i + 2] } else { "" };
            if ["<<", ">>", "==", "!=", "<=", ">=", "&&", "||", ".."].contains(&two) {
                toks.push(Tok::Punct(two.to_string()));
                i += 2;
            } else {
                toks.push(Tok::Punct(c.to_string()));
                i += 1;
            }
        }
    }
    toks
}

/// What the P4 sources declare.
#[derive(Debug, Default)]
struct P4 {
    consts: BTreeMap<String, u128>,
    /// typedef name -> width in bits
    typedefs: BTreeMap<String, u32>,
    /// enum name -> (width, members in order)
    enums: BTreeMap<String, (u32, Vec<(String, u128)>)>,
    /// header name -> fields (name, width) in order
    headers: BTreeMap<String, Vec<(String, u32)>>,
    /// struct name -> fields (type, stack size if a stack, name)
    structs: BTreeMap<String, Vec<(String, Option<u128>, String)>>,
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
}

impl std::fmt::Debug for Parser<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parser at {} of {}", self.pos, self.toks.len())
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> &'a Tok {
        let t = &self.toks[self.pos];
        self.pos += 1;
        t
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(x)) if x == p)
    }

    fn expect_punct(&mut self, p: &str) {
        match self.next() {
            Tok::Punct(x) if x == p => {}
            other => panic!("expected {p:?}, found {other:?} at token {}", self.pos - 1),
        }
    }

    fn ident(&mut self) -> String {
        match self.next() {
            Tok::Ident(s) => s.clone(),
            other => panic!("expected a name, found {other:?} at token {}", self.pos - 1),
        }
    }

    // expr := or ; or := shift ('|' shift)* ; shift := add (('<<'|'>>') add)* ;
    // add := mul (('+'|'-') mul)* ; mul := atom ('*' atom)* ; atom := num | name | '(' expr ')'
    fn expr(&mut self, p4: &P4) -> u128 {
        let mut v = self.shift(p4);
        while self.is_punct("|") {
            self.next();
            v |= self.shift(p4);
        }
        v
    }

    fn shift(&mut self, p4: &P4) -> u128 {
        let mut v = self.add(p4);
        loop {
            if self.is_punct("<<") {
                self.next();
                v <<= self.add(p4);
            } else if self.is_punct(">>") {
                self.next();
                v >>= self.add(p4);
            } else {
                return v;
            }
        }
    }

    fn add(&mut self, p4: &P4) -> u128 {
        let mut v = self.mul(p4);
        loop {
            if self.is_punct("+") {
                self.next();
                v += self.mul(p4);
            } else if self.is_punct("-") {
                self.next();
                v -= self.mul(p4);
            } else {
                return v;
            }
        }
    }

    fn mul(&mut self, p4: &P4) -> u128 {
        let mut v = self.atom(p4);
        while self.is_punct("*") {
            self.next();
            v *= self.atom(p4);
        }
        v
    }

    fn atom(&mut self, p4: &P4) -> u128 {
        match self.next() {
            Tok::Num(n) => *n,
            Tok::Ident(name) => *p4
                .consts
                .get(name)
                .unwrap_or_else(|| panic!("constant {name} used before it is declared")),
            Tok::Punct(p) if p == "(" => {
                // A cast such as (bit<16>) or (int<32>) is skipped.
                if matches!(self.peek(), Some(Tok::Ident(t)) if t == "bit" || t == "int") {
                    self.ty(p4);
                    self.expect_punct(")");
                    return self.atom(p4);
                }
                let v = self.expr(p4);
                self.expect_punct(")");
                v
            }
            other => panic!("unexpected {other:?} in a constant expression"),
        }
    }

    /// A type; returns its width in bits (0 for `bool` and unknown names).
    fn ty(&mut self, p4: &P4) -> u32 {
        let name = self.ident();
        match name.as_str() {
            "int" if !self.is_punct("<") => 0,
            "bit" | "int" => {
                self.expect_punct("<");
                let w = if self.is_punct("(") {
                    self.next();
                    let w = self.expr(p4);
                    self.expect_punct(")");
                    w
                } else {
                    match self.next() {
                        Tok::Num(n) => *n,
                        Tok::Ident(c) => p4.consts[c],
                        other => panic!("bad width {other:?}"),
                    }
                };
                self.expect_punct(">");
                w as u32
            }
            "bool" => 1,
            other => p4
                .typedefs
                .get(other)
                .copied()
                .or_else(|| p4.enums.get(other).map(|e| e.0))
                .unwrap_or(0),
        }
    }

    fn skip_block(&mut self) {
        let mut depth = 0;
        loop {
            match self.next() {
                Tok::Punct(p) if p == "{" => depth += 1,
                Tok::Punct(p) if p == "}" => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }
}

fn parse_p4(files: &[PathBuf]) -> P4 {
    let mut p4 = P4::default();
    for file in files {
        let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let toks = tokenize(&text);
        let mut p = Parser {
            toks: &toks,
            pos: 0,
        };
        while let Some(t) = p.peek() {
            match t {
                Tok::Ident(kw) if kw == "const" => {
                    p.next();
                    p.ty(&p4);
                    let name = p.ident();
                    p.expect_punct("=");
                    let v = p.expr(&p4);
                    p.expect_punct(";");
                    p4.consts.insert(name, v);
                }
                Tok::Ident(kw) if kw == "typedef" => {
                    p.next();
                    let w = p.ty(&p4);
                    let name = p.ident();
                    p.expect_punct(";");
                    p4.typedefs.insert(name, w);
                }
                Tok::Ident(kw) if kw == "enum" => {
                    p.next();
                    let w = p.ty(&p4);
                    let name = p.ident();
                    p.expect_punct("{");
                    let mut members = Vec::new();
                    while !p.is_punct("}") {
                        let m = p.ident();
                        p.expect_punct("=");
                        let v = p.expr(&p4);
                        members.push((m, v));
                        if p.is_punct(",") {
                            p.next();
                        }
                    }
                    p.next();
                    p4.enums.insert(name, (w, members));
                }
                Tok::Ident(kw) if kw == "header" || kw == "struct" => {
                    let is_header = kw == "header";
                    p.next();
                    let name = p.ident();
                    p.expect_punct("{");
                    let mut fields = Vec::new();
                    let mut members = Vec::new();
                    while !p.is_punct("}") {
                        let type_name = match p.peek() {
                            Some(Tok::Ident(t)) => t.clone(),
                            other => panic!("{name}: bad field start {other:?}"),
                        };
                        let w = p.ty(&p4);
                        let stack = if p.is_punct("[") {
                            p.next();
                            let n = p.expr(&p4);
                            p.expect_punct("]");
                            Some(n)
                        } else {
                            None
                        };
                        let field = p.ident();
                        p.expect_punct(";");
                        fields.push((field.clone(), w));
                        members.push((type_name, stack, field));
                    }
                    p.next();
                    if is_header {
                        p4.headers.insert(name, fields);
                    } else {
                        p4.structs.insert(name, members);
                    }
                }
                Tok::Punct(b) if b == "{" => p.skip_block(),
                _ => {
                    p.next();
                }
            }
        }
    }
    p4
}

fn program() -> P4 {
    let dir = p4_dir();
    let order = [
        "configuration.p4",
        "types.p4",
        "headers.p4",
        "parsers.p4",
        "accumulate.p4",
        "replicate.p4",
    ];
    let files: Vec<PathBuf> = order.iter().map(|f| dir.join(f)).collect();
    for f in &files {
        assert!(f.exists(), "{} is missing", f.display());
    }
    parse_p4(&files)
}

impl P4 {
    fn konst(&self, name: &str) -> u128 {
        *self
            .consts
            .get(name)
            .unwrap_or_else(|| panic!("p4/: no constant {name}"))
    }

    fn enum_members(&self, name: &str) -> &[(String, u128)] {
        &self
            .enums
            .get(name)
            .unwrap_or_else(|| panic!("p4/: no enum {name}"))
            .1
    }

    /// The header's fields as (name, first byte, end byte), laid out from `base`.
    fn layout(&self, header: &str, base: usize) -> Vec<(String, usize, usize)> {
        let fields = self
            .headers
            .get(header)
            .unwrap_or_else(|| panic!("p4/: no header {header}"));
        let mut bit = base * 8;
        let mut out = Vec::new();
        for (name, w) in fields {
            assert!(
                w.is_multiple_of(8) && bit.is_multiple_of(8),
                "{header}.{name}: {w} bits at bit {bit}; every Zebra wire field is whole bytes"
            );
            out.push((name.clone(), bit / 8, (bit + *w as usize) / 8));
            bit += *w as usize;
        }
        out
    }
}

fn range(name: &str, r: std::ops::Range<usize>) -> (String, usize, usize) {
    (name.to_string(), r.start, r.end)
}

fn byte(name: &str, at: usize) -> (String, usize, usize) {
    (name.to_string(), at, at + 1)
}

fn assert_layout(p4: &P4, header: &str, base: usize, want: &[(String, usize, usize)], end: usize) {
    let got = p4.layout(header, base);
    assert_eq!(
        got, want,
        "p4/headers.p4 {header}: field order, names or widths differ from zebra-proto's wire layout"
    );
    let last = got.last().map_or(base, |f| f.2);
    assert_eq!(
        last, end,
        "{header} ends at byte {last}, the wire header at {end}"
    );
}

#[test]
fn common_header_is_bytes_0_to_5() {
    let p4 = program();
    let f = &wire::field::MAGIC;
    assert_layout(
        &p4,
        "zebra_common_h",
        0,
        &[
            range("magic", f.clone()),
            byte("version", wire::field::VERSION),
            byte("type", wire::field::TYPE),
            range("job", wire::field::JOB),
        ],
        6,
    );
}

#[test]
fn hot_headers_match_the_wire() {
    use wire::hot::field as h;
    let p4 = program();
    assert_layout(
        &p4,
        "zebra_hot_h",
        6,
        &[
            range("worker", h::WORKER),
            range("round", h::ROUND),
            range("seq", h::SEQ),
            byte("flags", h::FLAGS),
            byte("count", h::COUNT),
            range("token", h::TOKEN),
        ],
        consts::HOT_HEADER_LEN,
    );
    assert_layout(
        &p4,
        "zebra_dense_h",
        consts::HOT_HEADER_LEN,
        &[range("base", h::BASE)],
        consts::HOT_DENSE_HEADER_LEN,
    );
    assert_layout(
        &p4,
        "zebra_pair_h",
        0,
        // The big-endian u32 index in two halves: the same bytes.
        &[
            range("index_hi", 0..2),
            range("index", 2..4),
            range("value", 4..8),
        ],
        consts::PAIR_LEN,
    );
    // A routed pair keeps the index's low half (the parser skips the high
    // half, which it requires to be 0).
    assert_layout(&p4, "zebra_index_h", 2, &[range("index", 2..4)], 4);
    assert_layout(
        &p4,
        "zebra_value_h",
        0,
        &[range("value", 0..consts::VALUE_LEN)],
        consts::VALUE_LEN,
    );
}

#[test]
fn response_header_matches_the_wire() {
    use wire::response::field as r;
    let p4 = program();
    assert_layout(
        &p4,
        "zebra_response_h",
        6,
        &[
            range("worker", r::WORKER),
            range("round", r::ROUND),
            range("seq", r::SEQ),
            byte("flags", r::FLAGS),
            byte("reason", r::REASON),
            range("token", r::TOKEN),
        ],
        consts::RESPONSE_LEN,
    );
}

#[test]
fn server_headers_match_the_wire() {
    let p4 = program();
    {
        use wire::aggregate::field as a;
        assert_layout(
            &p4,
            "zebra_aggregate_h",
            6,
            &[
                range("server", a::SERVER),
                range("round", a::ROUND),
                range("part", a::PART),
                range("parts", a::PARTS),
                range("contributed", a::CONTRIBUTED),
                range("complete", a::COMPLETE),
                byte("flags", a::FLAGS),
                byte("reserved", a::RESERVED),
                range("count", a::COUNT),
                range("total", a::TOTAL),
            ],
            consts::AGGREGATE_HEADER_LEN,
        );
    }
    {
        use wire::coverage::field as c;
        assert_layout(
            &p4,
            "zebra_coverage_h",
            6,
            &[
                range("server", c::SERVER),
                range("round", c::ROUND),
                range("part", c::PART),
                range("parts", c::PARTS),
                range("worker", c::WORKER),
                range("first_seq", c::FIRST_SEQ),
                range("nbits", c::NBITS),
                byte("flags", c::FLAGS),
                byte("reserved", c::RESERVED),
            ],
            consts::COVERAGE_HEADER_LEN,
        );
    }
    {
        use wire::aggregate_ack::field as k;
        assert_layout(
            &p4,
            "zebra_aggregate_ack_h",
            6,
            &[
                range("server", k::SERVER),
                range("round", k::ROUND),
                range("part", k::PART),
                range("reserved", k::RESERVED),
                range("token", k::TOKEN),
            ],
            consts::AGGREGATE_ACK_LEN,
        );
    }
    {
        use wire::register::field as g;
        assert_layout(
            &p4,
            "zebra_register_h",
            6,
            &[range("server", g::SERVER), range("token", g::TOKEN)],
            consts::REGISTER_LEN,
        );
    }
}

#[test]
fn update_headers_match_the_wire() {
    // The parser extracts an UPDATE through its target and an UPDATE_ACK
    // through its worker (what the switch routes by); the rest is payload.
    let p4 = program();
    {
        use wire::update::field as u;
        assert_layout(
            &p4,
            "zebra_update_h",
            6,
            &[
                range("server", u::SERVER),
                range("seq", u::SEQ),
                range("round", u::ROUND),
                range("part", u::PART),
                range("parts", u::PARTS),
                range("target", u::TARGET),
            ],
            u::TARGET.end,
        );
    }
    {
        use wire::update_ack::field as k;
        assert_layout(
            &p4,
            "zebra_update_ack_h",
            6,
            &[
                range("server", k::SERVER),
                range("seq", k::SEQ),
                range("part", k::PART),
                range("worker", k::WORKER),
            ],
            k::WORKER.end,
        );
    }
    // UPDATE_WORKER_ENTRIES: a (job, worker) address for every rank of every job.
    let want = [
        ("UPDATE_TARGET_ALL", usize::from(consts::UPDATE_TARGET_ALL)),
        ("UPDATE_HEADER_LEN", consts::UPDATE_HEADER_LEN),
        ("UPDATE_ACK_LEN", consts::UPDATE_ACK_LEN),
        ("HOT_HEADER_LEN", consts::HOT_HEADER_LEN),
        ("HOT_DENSE_HEADER_LEN", consts::HOT_DENSE_HEADER_LEN),
        ("RESPONSE_LEN", consts::RESPONSE_LEN),
        (
            "UPDATE_WORKER_ENTRIES",
            p4.konst("MAX_JOBS") as usize * consts::MAX_WORKERS,
        ),
    ];
    for (name, want) in want {
        assert_eq!(p4.konst(name) as usize, want, "{name}");
    }
}

#[test]
fn magic_version_port_and_packet_types() {
    let p4 = program();
    assert_eq!(p4.konst("ZEBRA_MAGIC"), u128::from(consts::MAGIC), "magic");
    assert_eq!(
        p4.konst("ZEBRA_VERSION"),
        u128::from(consts::VERSION),
        "version"
    );
    assert_eq!(
        p4.konst("DEFAULT_UDP_PORT"),
        u128::from(consts::DEFAULT_UDP_PORT),
        "default UDP port"
    );
    let want = [
        ("HOT", packet_type::HOT),
        ("HOT_DENSE", packet_type::HOT_DENSE),
        ("ACK", packet_type::ACK),
        ("FALLBACK", packet_type::FALLBACK),
        ("AGGREGATE", packet_type::AGGREGATE),
        ("COVERAGE", packet_type::COVERAGE),
        ("AGGREGATE_ACK", packet_type::AGGREGATE_ACK),
        ("REGISTER", packet_type::REGISTER),
        ("REGISTER_ACK", packet_type::REGISTER_ACK),
        ("UPDATE", packet_type::UPDATE),
        ("UPDATE_ACK", packet_type::UPDATE_ACK),
    ];
    let got: Vec<(String, u128)> = p4.enum_members("zebra_type_t").to_vec();
    let want: Vec<(String, u128)> = want
        .iter()
        .map(|(n, v)| (n.to_string(), u128::from(*v)))
        .collect();
    assert_eq!(got, want, "zebra_type_t against consts::packet_type");
    assert_eq!(p4.enums["zebra_type_t"].0, 8, "the type byte");
}

#[test]
fn flag_bits() {
    let p4 = program();
    let checks: [(&str, u8); 13] = [
        ("HOT_FLAG_RETX", wire::hot::flags::RETX),
        ("HOT_FLAG_DONE", wire::hot::flags::DONE),
        ("HOT_FLAG_FIXED", wire::hot::flags::FIXED),
        ("HOT_FLAGS_RESERVED", wire::hot::flags::RESERVED),
        ("RESPONSE_FLAG_DUP", wire::response::flags::DUP),
        ("RESPONSE_FLAGS_RESERVED", wire::response::flags::RESERVED),
        ("AGGREGATE_FLAG_FIXED", wire::aggregate::flags::FIXED),
        ("AGGREGATE_FLAG_FLUSHED", wire::aggregate::flags::FLUSHED),
        ("AGGREGATE_FLAGS_RESERVED", wire::aggregate::flags::RESERVED),
        ("COVERAGE_FLAG_ALL", wire::coverage::flags::ALL),
        ("COVERAGE_FLAGS_RESERVED", wire::coverage::flags::RESERVED),
        ("HOT_FLAG_RETX", 0x01),
        ("HOT_FLAG_DONE", 0x02),
    ];
    for (name, want) in checks {
        assert_eq!(p4.konst(name), u128::from(want), "{name}");
    }
}

#[test]
fn fallback_reasons() {
    let p4 = program();
    let names = |r: FallbackReason| match r {
        FallbackReason::Late => "LATE",
        FallbackReason::WindowFull => "WINDOW_FULL",
        FallbackReason::OutOfRange => "OUT_OF_RANGE",
        FallbackReason::SeqOverflow => "SEQ_OVERFLOW",
        FallbackReason::BadFormat => "BAD_FORMAT",
        FallbackReason::UnknownJob => "UNKNOWN_JOB",
        FallbackReason::BadWorker => "BAD_WORKER",
        FallbackReason::FarAhead => "FAR_AHEAD",
        FallbackReason::Unopened => "UNOPENED",
    };
    let mut want = vec![("ADDED".to_string(), 0u128)];
    want.extend(
        FallbackReason::ALL
            .iter()
            .map(|&r| (names(r).to_string(), u128::from(r as u8))),
    );
    assert_eq!(
        p4.enum_members("fallback_reason_t").to_vec(),
        want,
        "fallback_reason_t against FallbackReason (and ADDED = the ACK's 0)"
    );
}

#[test]
fn geometry() {
    let p4 = program();
    // R is a setting (`registers`) every party reads; the P4 program is
    // compiled with its own, which its controller requires of the settings
    // (p4/controller/zebra_ctl/plan.py), so it must be one a Config takes.
    let r = p4.konst("REGISTERS");
    assert!(r.is_power_of_two(), "REGISTERS is a power of two");
    assert!(
        r as usize <= consts::MAX_REGISTERS,
        "REGISTERS <= MAX_REGISTERS"
    );
    let mut config = Config::new(vec![JobConfig::new(1, 2, 1000, 1)]);
    config.registers = r as u16;
    assert_eq!(config.validate(), Ok(()), "a Config with R = REGISTERS");
    assert_eq!(1u128 << p4.konst("REGISTER_BITS"), r, "REGISTER_BITS");

    let entries = p4.konst("REGISTER_ENTRIES");
    assert!(
        entries as usize <= consts::MAX_REGISTER_ENTRIES,
        "REGISTER_ENTRIES"
    );
    assert!(
        entries >= u128::from(consts::DEFAULT_COPIES) * u128::from(consts::DEFAULT_SLOTS),
        "the default copies x slots fit a register"
    );
    // A job's ranks are below 2^(SLOT_BITS + REGISTER_BITS) (the controller
    // refuses more hot keys), so a rank's low 16 bits hold it with bit 15 to
    // spare for the range check, and its slot fits an entry index.
    let rank_bits = p4.konst("SLOT_BITS") + p4.konst("REGISTER_BITS");
    assert!(rank_bits < 16, "a rank fits 16 bits with one to spare");
    assert!(
        1u128 << p4.konst("SLOT_BITS") <= entries,
        "a job's slots fit a register"
    );
    assert!(
        1u128 << p4.typedefs["acc_index_t"] >= entries,
        "acc_index_t addresses every entry"
    );
    assert_eq!(
        u128::from(p4.typedefs["slot_t"]),
        p4.konst("SLOT_BITS"),
        "slot_t is SLOT_BITS wide"
    );

    // Register entries: a 32-bit round tag and a 32-bit raw value.
    assert_eq!(
        p4.typedefs["value_t"] as usize,
        consts::VALUE_LEN * 8,
        "value_t"
    );
    assert_eq!(
        p4.structs["acc_entry_t"]
            .iter()
            .map(|(t, _, n)| (t.clone(), n.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("bit".to_string(), "round".to_string()),
            ("int".to_string(), "sum".to_string())
        ]
    );

    let route = p4.konst("RANK_ROUTE_MASK");
    let low = p4.konst("REGISTER_BITS");
    let high = p4.konst("SLOT_BITS") + low;
    assert_eq!(
        route,
        (0xFFFF_FFFFu128 & !((1u128 << high) - 1)) | ((1u128 << low) - 1),
        "RANK_ROUTE_MASK keeps the register bits and the bits above the slot"
    );

    assert_eq!(p4.konst("MAX_WORKERS") as usize, consts::MAX_WORKERS);
    assert_eq!(1usize << p4.konst("WORKER_BITS"), consts::MAX_WORKERS);
    assert_eq!(p4.typedefs["worker_bitmap_t"] as usize, consts::MAX_WORKERS);
    assert_eq!(p4.konst("MAX_COPIES") as usize, consts::MAX_COPIES);
    assert_eq!(1usize << p4.konst("COPY_BITS"), consts::MAX_COPIES);
    assert_eq!(
        p4.konst("COVER_WORD_BITS") as usize,
        consts::COVER_WORD_BITS
    );
    assert_eq!(
        p4.konst("MAX_PAIRS_PER_PACKET") as usize,
        consts::MAX_PAIRS_PER_PACKET
    );
}

#[test]
fn pairs_per_packet_at_the_default_packet_size() {
    let p4 = program();
    let mut config = Config::new(vec![JobConfig::new(1, 2, 1000, 1)]);
    config.registers = p4.konst("REGISTERS") as u16;
    assert_eq!(config.packet_size, consts::DEFAULT_PACKET_SIZE);
    // A pass holds PAIRS_PER_PASS pairs. Workers pack strictly by default:
    // no two pairs of one register in a packet, so at most R pairs whatever
    // the packet size (the controller allows larger packets only then).
    let per_pass = p4.konst("PAIRS_PER_PASS") as usize;
    assert!(
        config.registers as usize <= per_pass && per_pass <= config.pairs_per_packet(),
        "R <= PAIRS_PER_PASS <= what a default-sized HOT packet carries"
    );
    let layout = Layout::new(LayoutKind::Heat, config.registers, 1000);
    let pairs: Vec<(u32, u32)> = (0..1000).map(|r| (r, 1)).collect();
    let packets = pack(&pairs, &layout, config.pairs_per_packet(), Packing::Strict);
    assert_eq!(packets.iter().map(Vec::len).sum::<usize>(), pairs.len());
    assert_eq!(
        packets.iter().map(Vec::len).max(),
        Some(config.registers as usize),
        "strict packing of a default-sized packet: at most R pairs, which a pass holds"
    );
    assert_eq!(
        p4.konst("DENSE_PER_PASS") as usize,
        config.dense_values_per_packet(),
        "DENSE_PER_PASS is what a default-sized HOT_DENSE packet carries with R = REGISTERS"
    );
    let stacks: BTreeMap<String, (String, Option<u128>)> = p4.structs["header_t"]
        .iter()
        .map(|(t, n, f)| (f.clone(), (t.clone(), *n)))
        .collect();
    let expect = |field: &str, ty: &str, n: u128| {
        assert_eq!(
            stacks.get(field),
            Some(&(ty.to_string(), Some(n))),
            "header_t.{field}"
        );
    };
    expect("pairs", "zebra_pair_h", p4.konst("PAIRS_PER_PASS"));
    expect("slot_index", "zebra_index_h", p4.konst("REGISTERS"));
    expect("slot_value", "zebra_value_h", p4.konst("REGISTERS"));
}

#[test]
fn the_parser_routes_each_register_to_its_own_slot() {
    let text = fs::read_to_string(p4_dir().join("parsers.p4")).unwrap();
    let toks = tokenize(&text);
    let p4 = program();
    let registers = p4.konst("REGISTERS");
    // "0x000000KK &&& RANK_ROUTE_MASK : route_KK" for every register, and each
    // route_KK state extracts into slot_index[KK] and slot_value[KK].
    let mut routed = Vec::new();
    for w in toks.windows(6) {
        if let [Tok::Num(v), Tok::Punct(a), Tok::Punct(b), Tok::Ident(mask), Tok::Punct(colon), Tok::Ident(state)] =
            w
        {
            if a == "&&" && b == "&" && mask == "RANK_ROUTE_MASK" && colon == ":" {
                routed.push((*v, state.clone()));
            }
        }
    }
    let want: Vec<(u128, String)> = (0..registers)
        .map(|k| (k, format!("route_{k:02}")))
        .collect();
    assert_eq!(routed, want, "route_pick's transitions");
    for k in 0..registers {
        let state =
            format!("state route_{k:02} {{ pkt.advance(16); pkt.extract(hdr.slot_index[{k}]);");
        let value = format!("pkt.extract(hdr.slot_value[{k}]);");
        let line = text
            .lines()
            .find(|l| l.contains(&state))
            .unwrap_or_else(|| panic!("parsers.p4: no {state}"));
        assert!(
            line.contains(&value),
            "route_{k:02} must extract slot_value[{k}]"
        );
    }
}

#[test]
fn the_parser_reads_ports_from_value_sets() {
    let text = strip_comments(&fs::read_to_string(p4_dir().join("parsers.p4")).unwrap());
    assert!(
        text.contains("value_set<udp_port_t>"),
        "the hot-path port is a value set"
    );
    assert!(
        !text.contains(&consts::DEFAULT_UDP_PORT.to_string()),
        "the UDP port must not be a literal in the parser"
    );
}

#[test]
fn one_accumulator_per_register_all_in_egress() {
    let p4 = program();
    let text = strip_comments(&fs::read_to_string(p4_dir().join("accumulate.p4")).unwrap());
    let start = text
        .find("control Accumulators(")
        .expect("accumulate.p4: no control Accumulators");
    let end = text[start..]
        .find("\n}\n")
        .map_or(text.len(), |e| start + e);
    let instances: Vec<u128> = text[start..end]
        .split("Accumulator() acc")
        .skip(1)
        .map(|rest| rest[..2].parse().expect("accNN"))
        .collect();
    assert_eq!(
        instances,
        (0..p4.konst("REGISTERS")).collect::<Vec<_>>(),
        "registers 0..REGISTERS"
    );
    let zebra = strip_comments(&fs::read_to_string(p4_dir().join("zebra.p4")).unwrap());
    let egress = zebra.find("control Egress(").expect("zebra.p4: no Egress");
    let at = zebra
        .find("Accumulators() accumulators;")
        .expect("zebra.p4: Accumulators not instantiated");
    assert!(at > egress, "the accumulators are in Egress");
    assert_eq!(
        zebra.matches("Accumulators() accumulators;").count(),
        1,
        "one set of accumulators"
    );
}
