//! Where the library's write spends its instructions against the null
//! server: the phase under `valgrind --tool=callgrind` (instructions, the
//! same whatever else the machine runs), read back with
//! `callgrind_annotate`, functions by their own instructions and by those
//! of what they call.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::Res;

/// The parts of a write the report names, each the first function (the one
/// with the most instructions, what it calls included) whose name holds
/// the part's needle, whatever the compiler inlined below it.
const WRITE_PARTS: [(&str, &str); 4] = [
    (
        "csv_rows::CsvRows",
        "reading the workload's rows from the CSV file (the bench's own)",
    ),
    (
        "BulkWriter<T>::send",
        "the bulk writer taking each row: encoding it into the request's bytes (key, values, every mutation), batching",
    ),
    (
        "MutationBuilder<T>>::encode_checked",
        "of which the row encoder (`MutationBuilder::encode_checked`)",
    ),
    (
        "telemetry::in_operation",
        "the request tasks: sending, reading the answers (the HTTP/2 connection's task apart)",
    ),
];

/// The functions the JSON names by their own instructions.
const TOP: usize = 12;

/// Whether `valgrind` and `callgrind_annotate` are on the PATH.
pub(crate) fn available() -> bool {
    let runs = |program| Command::new(program).arg("--version").output().is_ok();
    runs("valgrind") && runs("callgrind_annotate")
}

/// One `callgrind_annotate` line: `1,234 (5.6%)  file:function [object]`.
fn parse_line(line: &str) -> Option<(u64, String)> {
    let (count, rest) = line.trim_start().split_once(' ')?;
    let count = count.replace(',', "").parse().ok()?;
    let rest = rest
        .trim_start()
        .strip_prefix('(')?
        .split_once(')')?
        .1
        .trim();
    let function = rest.split_once(':').map_or(rest, |(_, f)| f);
    let function = function.rsplit_once(" [").map_or(function, |(f, _)| f);
    Some((count, function.to_owned()))
}

fn annotate(profile: &Path, inclusive: bool) -> Res<Vec<(u64, String)>> {
    let output = Command::new("callgrind_annotate")
        .arg(format!(
            "--inclusive={}",
            if inclusive { "yes" } else { "no" }
        ))
        .arg("--threshold=100")
        .arg(profile)
        .output()?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(format!("callgrind_annotate: {err}").into());
    }
    let out = String::from_utf8_lossy(&output.stdout);
    Ok(out.lines().filter_map(parse_line).collect())
}

/// `cmd` under `valgrind --tool=callgrind`, its profile written to `out`.
pub(crate) fn callgrind(cmd: &Command, out: &Path) -> std::io::Result<Output> {
    Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .output()
}

/// `write` (the library's write of `rows` rows) under callgrind: its total
/// instructions, the top functions by their own, the parts' (inclusive).
pub(crate) fn profile_write(write: &Command, work: &Path, rows: usize) -> Res<Value> {
    let out = work.join("callgrind-lib-write.out");
    let status = callgrind(write, &out)?.status;
    if !status.success() {
        return Err(format!("callgrind of the library's write failed ({status})").into());
    }
    let (own, inclusive) = (annotate(&out, false)?, annotate(&out, true)?);
    let total = own
        .iter()
        .find(|(_, f)| f == "PROGRAM TOTALS")
        .map_or(0, |t| t.0);
    let top = own.iter().filter(|(_, f)| f != "PROGRAM TOTALS").take(TOP);
    let top: Vec<Value> = top.map(|(n, f)| json!([f, n])).collect();
    let part = |needle| {
        inclusive
            .iter()
            .find(|(_, f)| f.contains(needle))
            .map_or(0, |p| p.0)
    };
    let parts: Vec<Value> = WRITE_PARTS
        .iter()
        .map(|(needle, what)| json!([what, part(needle)]))
        .collect();
    Ok(json!({"rows": rows, "total": total, "top": top, "parts": parts}))
}

#[cfg(test)]
mod tests {
    use super::parse_line;

    #[test]
    fn annotate_lines_parse() {
        let line = "32,940,048 (10.37%)  ???:prost::encoding::varint::encode_varint [/x/ttl-bench]";
        let parsed = (
            32_940_048,
            "prost::encoding::varint::encode_varint".to_owned(),
        );
        assert_eq!(parse_line(line), Some(parsed));
        let line =
            "34,767,815 (10.94%)  ./malloc/./malloc/malloc.c:_int_malloc [/usr/lib/libc.so.6]";
        assert_eq!(
            parse_line(line),
            Some((34_767_815, "_int_malloc".to_owned()))
        );
        let line = "317,707,328 (100.0%)  PROGRAM TOTALS";
        assert_eq!(
            parse_line(line),
            Some((317_707_328, "PROGRAM TOTALS".to_owned()))
        );
        assert_eq!(parse_line("Ir  file:function"), None);
    }
}
