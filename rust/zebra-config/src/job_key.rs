//! A job's secret key (`ZEBRA_JOB_KEY`, `ZEBRA_JOB_KEY_FILE`): every member
//! and the switch derive the job's membership token from it
//! (`zebra_proto::job_token`, `docs/SECURITY.md`). The key is never printed:
//! `Debug` shows its length only, and no error message quotes it.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The largest key file read (a key is a short string; anything longer is
/// not a key file).
pub const MAX_KEY_BYTES: usize = 4096;

/// A job's secret key, nonempty.
#[derive(Clone, PartialEq, Eq)]
pub struct JobKey(Vec<u8>);

impl fmt::Debug for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JobKey({} bytes, not shown)", self.0.len())
    }
}

impl JobKey {
    /// The key `value` (as given: not trimmed); `var` names where it came
    /// from in the error.
    pub fn from_value(var: &str, value: &str) -> Result<JobKey, String> {
        if value.is_empty() {
            return Err(format!("{var}: the job key is empty"));
        }
        if value.len() > MAX_KEY_BYTES {
            return Err(format!(
                "{var}: the job key is longer than {MAX_KEY_BYTES} bytes"
            ));
        }
        Ok(JobKey(value.as_bytes().to_vec()))
    }

    /// The key held in the file at `path`, one line (a final line break is
    /// not part of it). Refused when anyone may read the file (its mode has
    /// the "other: read" bit), when it is empty, too long or unreadable;
    /// `var` (the variable or setting that named the file) starts the error.
    pub fn from_file(var: &str, path: &Path) -> Result<JobKey, String> {
        let shown = path.display();
        let mut file =
            std::fs::File::open(path).map_err(|e| format!("{var}={shown}: cannot open: {e}"))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("{var}={shown}: cannot read its metadata: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{var}={shown}: not a regular file"));
        }
        check_private(var, path, &meta)?;
        let mut bytes = Vec::new();
        file.by_ref()
            .take(MAX_KEY_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{var}={shown}: cannot read: {e}"))?;
        if bytes.len() > MAX_KEY_BYTES {
            return Err(format!(
                "{var}={shown}: longer than {MAX_KEY_BYTES} bytes: not a key file"
            ));
        }
        if bytes.ends_with(b"\n") {
            bytes.pop();
            if bytes.ends_with(b"\r") {
                bytes.pop();
            }
        }
        if bytes.is_empty() {
            return Err(format!("{var}={shown}: the job key is empty"));
        }
        Ok(JobKey(bytes))
    }

    /// The key's bytes (to derive the token; never to print).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(unix)]
fn check_private(var: &str, path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o004 != 0 {
        return Err(format!(
            "{var}={}: the key file is readable by every user (mode {mode:04o}): anyone on this \
             host could join the job; make it private (chmod 600 {}) and start again",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &str, _: &Path, _: &std::fs::Metadata) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &[u8], mode: u32) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("zebra-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_private_key_file_is_read_without_its_line_break() {
        let p = file("good", b"s3cret\n", 0o600);
        let k = JobKey::from_file("ZEBRA_JOB_KEY_FILE", &p).unwrap();
        assert_eq!(k.as_bytes(), b"s3cret");
        assert!(!format!("{k:?}").contains("s3cret"));
        let g = file("group", b"s3cret\r\n", 0o640);
        assert_eq!(JobKey::from_file("X", &g).unwrap(), k);
    }

    #[test]
    fn a_world_readable_or_empty_key_file_is_refused_by_name() {
        let p = file("open", b"s3cret\n", 0o644);
        let e = JobKey::from_file("ZEBRA_JOB_KEY_FILE", &p).unwrap_err();
        assert!(e.starts_with("ZEBRA_JOB_KEY_FILE="), "{e}");
        assert!(
            e.contains("readable by every user") && e.contains("chmod 600"),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
        let empty = file("empty", b"\n", 0o600);
        let e = JobKey::from_file("job_key_file", &empty).unwrap_err();
        assert!(e.starts_with("job_key_file=") && e.contains("empty"), "{e}");
        let missing = std::env::temp_dir().join("zebra-key-none/nothing");
        let e = JobKey::from_file("ZEBRA_JOB_KEY_FILE", &missing).unwrap_err();
        assert!(e.contains("cannot open"), "{e}");
        let big = file("big", &vec![b'k'; MAX_KEY_BYTES + 1], 0o600);
        assert!(JobKey::from_file("X", &big)
            .unwrap_err()
            .contains("not a key file"));
    }

    #[test]
    fn a_key_value_is_taken_as_given() {
        assert_eq!(
            JobKey::from_value("ZEBRA_JOB_KEY", " k ")
                .unwrap()
                .as_bytes(),
            b" k "
        );
        let e = JobKey::from_value("ZEBRA_JOB_KEY", "").unwrap_err();
        assert_eq!(e, "ZEBRA_JOB_KEY: the job key is empty");
    }

    #[test]
    fn the_configuration_reads_either_variable_and_names_it() {
        // Checked when read; the hot path's settings read it again.
        let key = |cfg: crate::Config| {
            let mut s = crate::Settings::new();
            for (var, typed) in &cfg.hot {
                s.set_from_env(var, typed).unwrap();
            }
            s.values().unwrap().job_key.unwrap()
        };
        let cfg = crate::Config::from_vars([("ZEBRA_JOB_KEY", "k")], 1).unwrap();
        assert_eq!(key(cfg).0.as_bytes(), b"k");
        let p = file("cfg", b"k\n", 0o600);
        let shown = p.display().to_string();
        let cfg = crate::Config::from_vars([("ZEBRA_JOB_KEY_FILE", shown.as_str())], 1).unwrap();
        assert_eq!(
            key(cfg),
            (JobKey(b"k".to_vec()), "ZEBRA_JOB_KEY_FILE".into())
        );
        let both = [
            ("ZEBRA_JOB_KEY", "k"),
            ("ZEBRA_JOB_KEY_FILE", shown.as_str()),
        ];
        let e = crate::Config::from_vars(both, 1).unwrap_err().to_string();
        assert!(
            e.contains("ZEBRA_JOB_KEY and ZEBRA_JOB_KEY_FILE are both set"),
            "{e}"
        );
        let open = file("cfg-open", b"k\n", 0o604);
        let shown = open.display().to_string();
        let e = crate::Config::from_vars([("ZEBRA_JOB_KEY_FILE", shown.as_str())], 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ZEBRA_JOB_KEY_FILE=") && e.contains("readable by every user"),
            "{e}"
        );
        let e = crate::Config::from_vars([("ZEBRA_JOB_KEY", "")], 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ZEBRA_JOB_KEY: the job key is empty"), "{e}");
    }
}
