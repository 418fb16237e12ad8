//! Where a Rust contender's time goes against the null server: its phase
//! run under `valgrind --tool=callgrind` (instructions, the same whatever
//! else the machine runs), then `callgrind_annotate`'s functions, by their
//! own instructions and by the instructions of what they call.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::Res;

/// The parts of a write that the report names, each the first function
/// (the one with the most instructions, what it calls included) whose name
/// holds the part's needle, whatever the compiler inlined below it.
pub(crate) const WRITE_PARTS: [(&str, &str); 4] = [
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

/// The functions whose own instructions a read's report names.
const TOP: usize = 12;

/// `valgrind` and `callgrind_annotate`, when both run. (The latter says its
/// version and exits 255.)
pub(crate) fn available() -> bool {
    let says = |cmd: &str| {
        Command::new(cmd).arg("--version").output().is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout).contains(cmd)
                || String::from_utf8_lossy(&o.stderr).contains(cmd)
        })
    };
    says("valgrind") && says("callgrind_annotate")
}

/// One `callgrind_annotate` line: `1,234 (5.6%)  file:function [object]`.
fn parse_line(line: &str) -> Option<(u64, String)> {
    let line = line.trim_start();
    let (count, rest) = line.split_once(' ')?;
    let count: u64 = count.replace(',', "").parse().ok()?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('(')?.split_once(')')?.1.trim();
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
        return Err(format!(
            "callgrind_annotate: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(parse_line)
        .collect())
}

/// Profile `cmd` (a contender's phase of `rows` rows): its total
/// instructions, the top functions by their own, and for each of `parts`
/// the instructions of the first function whose name holds the part's.
pub(crate) fn profile(
    cmd: &Command,
    label: &str,
    work: &Path,
    rows: usize,
    parts: &[(&str, &str)],
) -> Res<Value> {
    let out = work.join(format!("callgrind-{label}.out"));
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
    let envs: Vec<_> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(program)
        .args(args)
        .envs(envs)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("callgrind of {label} failed ({status})").into());
    }
    let own = annotate(&out, false)?;
    let inclusive = annotate(&out, true)?;
    let total = own
        .iter()
        .find(|(_, f)| f == "PROGRAM TOTALS")
        .map_or(0, |(n, _)| *n);
    let top: Vec<Value> = own
        .iter()
        .filter(|(_, f)| f != "PROGRAM TOTALS")
        .take(TOP)
        .map(|(n, f)| json!([f, n]))
        .collect();
    let parts: Vec<Value> = parts
        .iter()
        .map(|(needle, what)| {
            let n = inclusive
                .iter()
                .find(|(_, f)| f.contains(needle))
                .map_or(0, |(n, _)| *n);
            json!([what, n])
        })
        .collect();
    Ok(json!({"rows": rows, "total": total, "top": top, "parts": parts}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotate_lines_parse() {
        let (n, f) = parse_line(
            "32,940,048 (10.37%)  ???:prost::encoding::varint::encode_varint [/x/ttl-bench]",
        )
        .unwrap();
        assert_eq!(n, 32_940_048);
        assert_eq!(f, "prost::encoding::varint::encode_varint");
        let (n, f) = parse_line(
            "34,767,815 (10.94%)  ./malloc/./malloc/malloc.c:_int_malloc [/usr/lib/libc.so.6]",
        )
        .unwrap();
        assert_eq!((n, f.as_str()), (34_767_815, "_int_malloc"));
        let (n, f) = parse_line("317,707,328 (100.0%)  PROGRAM TOTALS").unwrap();
        assert_eq!((n, f.as_str()), (317_707_328, "PROGRAM TOTALS"));
        assert!(parse_line("Ir  file:function").is_none());
    }
}
