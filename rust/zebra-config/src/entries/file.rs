//! The settings file: TOML, read with the `toml` crate into `(line, key,
//! value)` items in file order, each value as the text a flag would carry.
//!
//! Only a flat table of `key = value` lines is a settings file: strings in
//! double quotes, numbers and booleans bare, a repeatable key (`server_addr`) as an
//! array of strings. A line that is not TOML is reported with its line
//! number and, when quoting its value makes it TOML (the format before
//! 2026-11-27 took values unquoted), the line as it should be written.

use std::path::Path;

use toml::de::{DeTable, DeValue};

/// One `key = value` of the file: its line, its key as typed, and its
/// values as text (one, or each element of an array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Item {
    pub line: usize,
    pub key: String,
    pub values: Vec<String>,
    /// Each value as written in the file (`65`, `"best"`).
    pub typed: Vec<String>,
    /// The value was a TOML array (only repeatable keys take one).
    pub array: bool,
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A scalar as the text a flag would carry: a string as written, a number
/// in decimal, a boolean as `true` or `false`; `None` for a date, an array
/// or a table.
fn scalar(value: &DeValue<'_>) -> Option<String> {
    match value {
        DeValue::String(s) => Some(s.to_string()),
        DeValue::Integer(i) if i.radix() == 10 => Some(i.as_str().to_string()),
        DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix())
            .ok()
            .map(|n| n.to_string()),
        DeValue::Float(f) => Some(f.as_str().to_string()),
        DeValue::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// How `key = value` of line `raw` should be written, when that is what
/// keeps it from being TOML: the value in double quotes.
fn quoted(raw: &str) -> Option<String> {
    let content = raw.split('#').next().unwrap_or("").trim();
    let (key, value) = content.split_once('=')?;
    let (key, value) = (key.trim(), value.trim());
    let line = format!("{key} = {value:?}");
    (!value.is_empty() && !value.starts_with('"') && DeTable::parse(&line).is_ok()).then_some(line)
}

/// The items of the settings file `path`, whose text is `text`, in file
/// order; or every problem, each naming `path:line`.
pub(super) fn items(text: &str, path: &Path) -> Result<Vec<Item>, Vec<String>> {
    let at = |line: usize| format!("{}:{line}", path.display());
    let (table, errors) = DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        let lines: Vec<&str> = text.lines().collect();
        let mut problems: Vec<(usize, String)> = Vec::new();
        for e in &errors {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            if problems.iter().any(|(l, _)| *l == line) {
                continue;
            }
            let raw = lines.get(line - 1).copied().unwrap_or("");
            let key = raw.split('=').next().unwrap_or("").trim();
            let problem = match quoted(raw) {
                Some(fixed) => format!(
                    "{}: not TOML: a text value goes in double quotes: write {fixed}",
                    at(line)
                ),
                // The old format took a repeatable key on several lines.
                None if e.message().contains("duplicate key") => format!(
                    "{}: not TOML: {key} is set twice; several values go in one array: \
                     {key} = [\"first\", \"second\"]",
                    at(line)
                ),
                None => format!("{}: not TOML: {}", at(line), e.message()),
            };
            problems.push((line, problem));
        }
        return Err(problems.into_iter().map(|(_, p)| p).collect());
    }
    let mut items = Vec::new();
    let mut problems = Vec::new();
    let mut entries: Vec<_> = table.get_ref().iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    for (key, value) in entries {
        let line = line_of(text, key.span().start);
        let source = |span: std::ops::Range<usize>| text[span].to_string();
        let (values, typed, array) = match value.get_ref() {
            DeValue::Array(elements) => {
                let texts: Option<Vec<String>> =
                    elements.iter().map(|e| scalar(e.get_ref())).collect();
                match texts {
                    Some(t) => (t, elements.iter().map(|e| source(e.span())).collect(), true),
                    None => {
                        problems.push(format!(
                            "{}: {key}: expected an array of strings or numbers",
                            at(line),
                            key = key.get_ref()
                        ));
                        continue;
                    }
                }
            }
            v => match scalar(v) {
                Some(t) => (vec![t], vec![source(value.span())], false),
                None => {
                    problems.push(format!(
                        "{}: {}: expected a string in double quotes, a number or a boolean, found a {}",
                        at(line),
                        key.get_ref(),
                        v.type_str()
                    ));
                    continue;
                }
            },
        };
        items.push(Item {
            line,
            key: key.get_ref().to_string(),
            values,
            typed,
            array,
        });
    }
    if problems.is_empty() {
        Ok(items)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Item>, Vec<String>> {
        items(text, Path::new("/etc/hot.conf"))
    }

    #[test]
    fn values_become_the_text_a_flag_carries() {
        let items = parse(
            "# comment\nswitch = \"127.0.0.1:9950\"  # the switch\n\nworkers = 4\nround_timeout_ms = 0.5\n\
             online_max_drift = inf\nslots = 0x40\nserver_addr = [\"0=1.2.3.4:5\", \"1=1.2.3.4:6\"]\n\
             worker_window = false\n",
        )
        .unwrap();
        let got: Vec<(usize, &str, Vec<&str>)> = items
            .iter()
            .map(|i| {
                (
                    i.line,
                    i.key.as_str(),
                    i.values.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (2, "switch", vec!["127.0.0.1:9950"]),
                (4, "workers", vec!["4"]),
                (5, "round_timeout_ms", vec!["0.5"]),
                (6, "online_max_drift", vec!["inf"]),
                (7, "slots", vec!["64"]),
                (8, "server_addr", vec!["0=1.2.3.4:5", "1=1.2.3.4:6"]),
                (9, "worker_window", vec!["false"]),
            ]
        );
        assert!(items[5].array && !items[0].array);
        assert_eq!(items[0].typed, ["\"127.0.0.1:9950\""]);
        assert_eq!(items[4].typed, ["0x40"]);
        assert_eq!(items[5].typed, ["\"0=1.2.3.4:5\"", "\"1=1.2.3.4:6\""]);
    }

    #[test]
    fn the_old_unquoted_form_is_refused_with_the_toml_spelling() {
        let problems =
            parse("workers = 2\nswitch = 10.0.0.250:9950\nnumber = fixed:16\n").unwrap_err();
        assert_eq!(
            problems,
            vec![
                "/etc/hot.conf:2: not TOML: a text value goes in double quotes: write switch = \"10.0.0.250:9950\"",
                "/etc/hot.conf:3: not TOML: a text value goes in double quotes: write number = \"fixed:16\"",
            ]
        );
    }

    #[test]
    fn other_toml_is_refused_naming_the_line() {
        let p =
            parse("workers = 2\nserver_addr = \"0=a:1\"\nserver_addr = \"1=b:1\"\n").unwrap_err();
        assert_eq!(
            p,
            [
                "/etc/hot.conf:3: not TOML: server_addr is set twice; several values go in one \
              array: server_addr = [\"first\", \"second\"]"
            ]
        );
        let p = parse("workers = 1979-05-27\n[job]\nid = 1\n").unwrap_err();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].contains(
                "/etc/hot.conf:1: workers: expected a string in double quotes, a number or a \
                 boolean, found a "
            ),
            "{p:?}"
        );
        assert!(p[1].contains("/etc/hot.conf:2: job: "), "{p:?}");
        let p = parse("no equals sign\n").unwrap_err();
        assert!(p[0].starts_with("/etc/hot.conf:1: not TOML: "), "{p:?}");
    }
}
