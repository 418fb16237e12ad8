//! The files a sharded run reads and shares: read with a size cap before
//! parsing, written aside under a random name and moved into place, so
//! that processes on several hosts, each PID 1 in its container, never
//! write through one another's temporary file nor read a half-written one.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// The largest report or checkpoint read: one holds a year of per-day
/// counts and a part's two keys (Bigtable keys are at most 4 KiB), a few
/// tens of KiB.
pub(crate) const REPORT_MAX_BYTES: u64 = 1 << 20;

/// The largest shared cut read: `MAX_PARTS` parts, each with two keys of
/// at most 4 KiB written as hex and as escaped text.
pub(crate) const CUT_MAX_BYTES: u64 = 64 << 20;

/// A file of a sharded run that could not be read, written or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    // The cause is the source, printed once by the chain.
    #[error("reading {what} {}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} {} is over {max} bytes: not a file this program wrote; refused unread", path.display())]
    TooLarge {
        what: &'static str,
        path: PathBuf,
        max: u64,
    },
    #[error("{what} {} is not valid: {problem}", path.display())]
    Invalid {
        what: &'static str,
        path: PathBuf,
        problem: String,
    },
    #[error("writing {what} {}", path.display())]
    Write {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl FileError {
    /// `problem` with the file `path` holding `what`.
    // Called from `map_err`, which hands over the error it owns.
    #[allow(clippy::needless_pass_by_value)]
    pub(crate) fn invalid(what: &'static str, path: &Path, problem: impl ToString) -> Self {
        Self::Invalid {
            what,
            path: path.to_owned(),
            problem: problem.to_string(),
        }
    }
}

/// The text of `path` (a `what`), refused unread when it is over `max`
/// bytes: a corrupt or crafted file must not size an allocation.
pub(crate) fn read_capped(what: &'static str, path: &Path, max: u64) -> Result<String, FileError> {
    let read = |source| FileError::Read {
        what,
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let too_large = || FileError::TooLarge {
        what,
        path: path.to_owned(),
        max,
    };
    if file.metadata().map_err(read)?.len() > max {
        return Err(too_large());
    }
    // The length can change between the check and the read: read one
    // byte past the cap at most.
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(read)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| FileError::invalid(what, path, e))
}

/// `text` written to a new file beside `path`, under a random name, and
/// flushed to disk.
fn aside(what: &'static str, path: &Path, text: &str) -> Result<NamedTempFile, FileError> {
    let write = |source| FileError::Write {
        what,
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = NamedTempFile::new_in(dir).map_err(write)?;
    file.write_all(text.as_bytes()).map_err(write)?;
    file.as_file().sync_all().map_err(write)?;
    Ok(file)
}

/// Replace `path` with `text` at once: a reader sees the old file or the
/// new one, whole.
pub(crate) fn replace(what: &'static str, path: &Path, text: &str) -> Result<(), FileError> {
    aside(what, path, text)?
        .persist(path)
        .map_err(|e| FileError::Write {
            what,
            path: path.to_owned(),
            source: e.error,
        })?;
    Ok(())
}

/// Create `path` with `text` unless it exists, at once: of processes
/// racing here exactly one creates it, whole. Whether this one did.
pub(crate) fn create_or_keep(
    what: &'static str,
    path: &Path,
    text: &str,
) -> Result<bool, FileError> {
    match aside(what, path, text)?.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(FileError::Write {
            what,
            path: path.to_owned(),
            source: e.error,
        }),
    }
}

/// A file of `ttl-runtime/tests/data`, written by this version of the
/// command, read as `T` and written again: the same JSON, every field.
#[cfg(test)]
pub(crate) fn reads_back_whole<T: serde::de::DeserializeOwned + serde::Serialize>(name: &str) {
    let path = format!(
        "{}/../ttl-runtime/tests/data/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let read: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap(), original, "{path}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_cap_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, vec![b' '; 2_000]).unwrap();
        let err = read_capped("report", &path, 1_000).unwrap_err();
        assert!(
            matches!(err, FileError::TooLarge { max: 1_000, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("over 1000 bytes"), "{err}");
        assert_eq!(read_capped("report", &path, 2_000).unwrap().len(), 2_000);
    }

    #[test]
    fn the_first_file_created_is_kept_and_replacing_leaves_nothing_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.json");
        assert!(create_or_keep("cut", &path, "first").unwrap());
        assert!(!create_or_keep("cut", &path, "second").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        replace("checkpoint", &path, "third").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "third");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
