//! The JSON of the statistics: strings escaped, and the `{:?}` rendering of a counters
//! struct turned into JSON (so the counters' JSON follows their Rust definitions).

use std::fmt::Write as _;

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Turns the `{:?}` rendering of a statistics value into JSON: a struct becomes an
/// object of its fields (its type name dropped), a list or tuple an array, `None` null,
/// `Some(x)` and any one-field tuple struct `x`, `true`/`false` booleans, a number a
/// number, and any other word (an enum variant, `1.5ms`) a string. So the counters'
/// JSON follows their Rust definitions with no list of fields to keep in step. Text it
/// does not understand becomes one JSON string: the output is always valid JSON.
pub fn debug_to_json(debug: &str) -> String {
    let mut p = DebugParser {
        s: debug.as_bytes(),
        at: 0,
    };
    let mut out = String::new();
    match p.value(&mut out, 0) {
        Some(())
            if {
                p.skip_ws();
                p.at == p.s.len()
            } =>
        {
            out
        }
        _ => json_string(debug),
    }
}

struct DebugParser<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> DebugParser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// One value into `out`; None on text it does not understand.
    fn value(&mut self, out: &mut String, depth: usize) -> Option<()> {
        if depth > 32 {
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            b'"' => self.string(out),
            b'[' => {
                self.at += 1;
                self.list(out, b']', depth)
            }
            b'(' => {
                self.at += 1;
                self.list(out, b')', depth)
            }
            b'{' => {
                self.at += 1;
                self.fields(out, depth)
            }
            _ => {
                let word = self.word()?;
                if self.eat(b'{') {
                    return self.fields(out, depth);
                }
                if self.eat(b'(') {
                    let mut items = String::new();
                    let n = self.items(&mut items, b')', depth)?;
                    match n {
                        1 => out.push_str(&items),
                        _ => {
                            out.push('[');
                            out.push_str(&items);
                            out.push(']');
                        }
                    }
                    return Some(());
                }
                out.push_str(&scalar(word));
                Some(())
            }
        }
    }

    /// A bare word: up to a delimiter, whitespace or `: `.
    fn word(&mut self) -> Option<&'a str> {
        let start = self.at;
        while let Some(c) = self.peek() {
            let field_colon = c == b':' && self.s.get(self.at + 1).is_none_or(|n| *n == b' ');
            if b",{}[]()\"".contains(&c) || c.is_ascii_whitespace() || field_colon {
                break;
            }
            self.at += 1;
        }
        let s: &'a [u8] = self.s;
        (self.at > start)
            .then(|| std::str::from_utf8(&s[start..self.at]).ok())
            .flatten()
    }

    /// A Rust string literal (`{:?}` of a str) as a JSON string.
    fn string(&mut self, out: &mut String) -> Option<()> {
        self.at += 1;
        let mut text = String::new();
        loop {
            let rest = std::str::from_utf8(&self.s[self.at..]).ok()?;
            let c = rest.chars().next()?;
            self.at += c.len_utf8();
            match c {
                '"' => break,
                '\\' => {
                    let e = self.peek()?;
                    self.at += 1;
                    match e {
                        b'n' => text.push('\n'),
                        b't' => text.push('\t'),
                        b'r' => text.push('\r'),
                        b'0' => text.push('\0'),
                        b'"' | b'\\' | b'\'' => text.push(char::from(e)),
                        b'u' => {
                            let rest = std::str::from_utf8(&self.s[self.at..]).ok()?;
                            let close = rest.find('}')?;
                            let code = u32::from_str_radix(rest.get(1..close)?, 16).ok()?;
                            text.push(char::from_u32(code)?);
                            self.at += close + 1;
                        }
                        _ => return None,
                    }
                }
                c => text.push(c),
            }
        }
        out.push_str(&json_string(&text));
        Some(())
    }

    /// Items up to `close`, as a JSON array.
    fn list(&mut self, out: &mut String, close: u8, depth: usize) -> Option<()> {
        out.push('[');
        self.items(out, close, depth)?;
        out.push(']');
        Some(())
    }

    /// Comma-separated values up to `close` (a trailing comma allowed); their number.
    fn items(&mut self, out: &mut String, close: u8, depth: usize) -> Option<usize> {
        let mut n = 0;
        loop {
            if self.eat(close) {
                return Some(n);
            }
            if n > 0 {
                out.push(',');
            }
            self.value(out, depth + 1)?;
            n += 1;
            if !self.eat(b',') {
                return self.eat(close).then_some(n);
            }
        }
    }

    /// `name: value` pairs up to `}` (a struct, or a map whose keys become strings).
    fn fields(&mut self, out: &mut String, depth: usize) -> Option<()> {
        out.push('{');
        let mut first = true;
        loop {
            if self.eat(b'}') {
                break;
            }
            self.skip_ws();
            if self.s[self.at..].starts_with(b"..") {
                self.at += 2;
                continue;
            }
            let mut key = String::new();
            self.value(&mut key, depth + 1)?;
            if !key.starts_with('"') {
                key = json_string(&key);
            }
            if !self.eat(b':') {
                return None;
            }
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&key);
            out.push(':');
            self.value(out, depth + 1)?;
            if !self.eat(b',') {
                if !self.eat(b'}') {
                    return None;
                }
                break;
            }
        }
        out.push('}');
        Some(())
    }
}

/// A bare word of `{:?}` output as a JSON value.
fn scalar(word: &str) -> String {
    match word {
        "None" => "null".into(),
        "true" | "false" => word.into(),
        w if w.parse::<i128>().is_ok() => w.into(),
        w if w.parse::<f64>().is_ok_and(f64::is_finite)
            && w.bytes()
                .all(|c| c.is_ascii_digit() || b".-eE+".contains(&c))
            && !w.starts_with('.')
            && !w.ends_with('.') =>
        {
            w.into()
        }
        w => json_string(w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[derive(Debug, Default)]
    #[allow(dead_code)]
    struct Inner {
        a: u64,
        b: usize,
    }

    #[derive(Debug, Default)]
    #[allow(dead_code)]
    struct Outer {
        count: u64,
        inner: Inner,
        maybe: Option<u32>,
        none: Option<u32>,
        wait: Duration,
        name: String,
        list: Vec<i32>,
        flag: bool,
        mode: Kind,
        pair: (u8, f32),
    }

    #[derive(Debug, Default)]
    #[allow(dead_code)]
    enum Kind {
        #[default]
        Exact,
        Other(u8),
    }

    #[test]
    fn debug_becomes_json() {
        let o = Outer {
            count: 7,
            inner: Inner { a: 1, b: 2 },
            maybe: Some(3),
            wait: Duration::from_micros(1500),
            name: "a \"q\"\n\u{1}é".into(),
            list: vec![-1, 2],
            flag: true,
            pair: (4, 0.5),
            ..Outer::default()
        };
        assert_eq!(
            debug_to_json(&format!("{o:?}")),
            r#"{"count":7,"inner":{"a":1,"b":2},"maybe":3,"none":null,"wait":"1.5ms","name":"a \"q\"\n\u0001é","list":[-1,2],"flag":true,"mode":"Exact","pair":[4,0.5]}"#
        );
        // Pretty Debug reads the same.
        assert_eq!(
            debug_to_json(&format!("{o:#?}")),
            debug_to_json(&format!("{o:?}"))
        );
        assert_eq!(debug_to_json(&format!("{:?}", Kind::Other(9))), "9");
        let map: std::collections::BTreeMap<u16, Inner> = [(3, Inner::default())].into();
        assert_eq!(debug_to_json(&format!("{map:?}")), r#"{"3":{"a":0,"b":0}}"#);
    }

    #[test]
    fn what_is_not_understood_stays_a_string() {
        for text in ["Foo { a: 1", "{ a: 1 } trailing", "x: 1", "\"open", "[1, 2"] {
            assert_eq!(debug_to_json(text), json_string(text), "{text}");
        }
        assert_eq!(debug_to_json("1.5ms"), "\"1.5ms\"");
        assert_eq!(debug_to_json("10.0.0.1:9950"), "\"10.0.0.1:9950\"");
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\td\u{7f}"), "\"a\\\"b\\\\c\\td\u{7f}\"");
        assert_eq!(json_string("\u{0}"), "\"\\u0000\"");
    }
}
