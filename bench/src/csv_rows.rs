//! The workload's rows as one CSV file, the form Google's `cbt import …
//! timestamp=value-encoded` reads: a family row, a qualifier row, then a
//! line a row, every value `value@micros`. Every contender of `ttl-bench
//! null` reads its rows from it inside its write phase, as `cbt` must, so
//! making the rows costs all alike. No quoting, no comma in a value: a line
//! is split at its commas and each value at its last `@`.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::{event, Event};

/// Write rows `0..n` of the workload as of `now` to `path`.
pub fn write_csv(path: &Path, n: usize, now: DateTime<Utc>) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, ",e,,")?;
    writeln!(out, ",user,url,clicks")?;
    for i in 0..n {
        let e = event(i, now);
        let ts = e.expires_at.timestamp_micros();
        let ts = ts - ts.rem_euclid(1000);
        writeln!(
            out,
            "{},{}@{ts},{}@{ts},{}@{ts}",
            e.id, e.user, e.url, e.clicks
        )?;
    }
    out.flush()
}

/// The rows of a file [`write_csv`] wrote, read one at a time into the same
/// [`Event`]: its strings are reused, so reading a row allocates nothing
/// once they are long enough. Lines are found in the reader's buffer and
/// parsed there, in one pass for the separators.
pub struct CsvRows<R> {
    input: R,
    /// A line cut by the end of the reader's buffer.
    carried: Vec<u8>,
}

impl CsvRows<BufReader<File>> {
    /// The rows of the file at `path`.
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::new(BufReader::with_capacity(1 << 16, file))
    }
}

impl<R: BufRead> CsvRows<R> {
    /// The rows of `input`, its two header rows skipped.
    pub fn new(input: R) -> Result<Self, String> {
        let mut rows = Self {
            input,
            carried: Vec::with_capacity(256),
        };
        for _ in 0..2 {
            if !rows.with_line(|_| Ok(()))? {
                return Err("CSV: no header rows".to_owned());
            }
        }
        Ok(rows)
    }

    /// `parse` of the next line (without its end); `false` at the end.
    fn with_line(
        &mut self,
        parse: impl FnOnce(&[u8]) -> Result<(), String>,
    ) -> Result<bool, String> {
        let buffer = self.input.fill_buf().map_err(|e| e.to_string())?;
        if let Some(end) = memchr::memchr(b'\n', buffer) {
            // The whole line in the buffer: parsed where it is.
            let parsed = parse(&buffer[..end]);
            self.input.consume(end + 1);
            return parsed.map(|()| true);
        }
        self.carried.clear();
        let read = self
            .input
            .read_until(b'\n', &mut self.carried)
            .map_err(|e| e.to_string())?;
        if read == 0 {
            return Ok(false);
        }
        if self.carried.last() == Some(&b'\n') {
            self.carried.pop();
        }
        parse(&self.carried).map(|()| true)
    }

    /// The next row into `e`; `false` at the end.
    pub fn next_into(&mut self, e: &mut Event) -> Result<bool, String> {
        self.with_line(|line| parse_row(line, e))
    }
}

/// `key,user@ts,url@ts,clicks@ts` into `e`: the expiry from the first
/// timestamp (a row's cells share it).
fn parse_row(line: &[u8], e: &mut Event) -> Result<(), String> {
    let bad = || format!("CSV: not a row: {:?}", String::from_utf8_lossy(line));
    // The separators, in one pass: `,` `@` `,` `@` `,` `@`.
    let mut at = [0; 6];
    let mut found = 0;
    for i in memchr::memchr2_iter(b',', b'@', line) {
        let want = if found % 2 == 0 { b',' } else { b'@' };
        if line[i] == want {
            *at.get_mut(found).ok_or_else(bad)? = i;
            found += 1;
        } else if want == b',' {
            // An `@` inside a value: its last one ends it.
            at[found - 1] = i;
        } else {
            return Err(bad());
        }
    }
    if found != 6 {
        return Err(bad());
    }
    // The separators are ASCII, so they cut the checked text at character
    // boundaries.
    let text = std::str::from_utf8(line).map_err(|_| bad())?;
    let field = |from: usize, to: usize| text.get(from..to).ok_or_else(bad);
    let ts = decimal(field(at[1] + 1, at[2])?).ok_or_else(bad)?;
    e.expires_at = DateTime::from_timestamp_micros(ts).ok_or_else(bad)?;
    e.clicks = decimal(field(at[4] + 1, at[5])?).ok_or_else(bad)?;
    for (to, from, end) in [
        (&mut e.id, 0, at[0]),
        (&mut e.user, at[0] + 1, at[1]),
        (&mut e.url, at[2] + 1, at[3]),
    ] {
        to.clear();
        to.push_str(field(from, end)?);
    }
    Ok(())
}

/// A non-negative decimal (the workload's timestamps and counts), digit by
/// digit: `str::parse` handles signs and radixes this file does not have,
/// at several times the cost.
fn decimal(digits: &str) -> Option<i64> {
    if digits.is_empty() {
        return None;
    }
    digits.bytes().try_fold(0_i64, |n, b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        n.checked_mul(10)?.checked_add(i64::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading the file back gives the workload's rows, their expiry to the
    /// millisecond (what the library writes of it).
    #[test]
    fn rows_read_back_are_the_workload_to_the_millisecond() {
        let now = Utc::now();
        let path = std::env::temp_dir().join(format!("ttl-bench-csv-{}.csv", std::process::id()));
        write_csv(&path, 1_500, now).unwrap();
        let mut rows = CsvRows::open(&path).unwrap();
        let mut e = Event::default();
        let mut n = 0;
        while rows.next_into(&mut e).unwrap() {
            let mut expected = event(n, now);
            let ts = expected.expires_at.timestamp_micros();
            expected.expires_at =
                DateTime::from_timestamp_micros(ts - ts.rem_euclid(1000)).unwrap();
            assert_eq!(e, expected);
            n += 1;
        }
        std::fs::remove_file(&path).unwrap();
        assert_eq!(n, 1_500);
        assert_eq!(decimal("9223372036854775807"), Some(i64::MAX));
        for bad in ["", "-1", "9223372036854775808", "1x"] {
            assert_eq!(decimal(bad), None, "{bad}");
        }
        for line in [
            "k,u@1,v@1",
            "k,u@1,v@1,7@1,x",
            "k,u,v@1,7@1",
            "k,u@x,v@1,7@1",
        ] {
            let text = format!(",e,,\n,user,url,clicks\n{line}\n");
            let mut bad = CsvRows::new(text.as_bytes()).unwrap();
            assert!(bad.next_into(&mut e).is_err(), "{line}");
        }
        // A row cut by the end of the reader's buffer, and one without a
        // line end.
        let text = ",e,,\n,user,url,clicks\nk1,u@1,v@1,7@1\nk2,user@me@2,v@2,8@2";
        let mut rows = CsvRows::new(BufReader::with_capacity(30, text.as_bytes())).unwrap();
        assert!(rows.next_into(&mut e).unwrap());
        assert_eq!((e.id.as_str(), e.user.as_str(), e.clicks), ("k1", "u", 7));
        assert!(rows.next_into(&mut e).unwrap());
        assert_eq!(
            (e.id.as_str(), e.user.as_str(), e.clicks),
            ("k2", "user@me", 8)
        );
        assert_eq!(e.expires_at.timestamp_micros(), 2);
        assert!(!rows.next_into(&mut e).unwrap());
    }
}
