//! Sharded runs: which part of the key space this process works on
//! (`--shard I/N`, or `--parts N --part I`), the cut shared between shards
//! (`--cut FILE`), parts as they are written into checkpoints and reports,
//! and reading the reports back for `--merge`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use bigtable_ttl_runtime::ops::{self, Part};
use bigtable_ttl_runtime::Connection;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::output::Fallible;

/// Which shard of a sharded run this process is.
#[derive(Debug, Args, Default)]
pub(crate) struct ShardArgs {
    /// Work on shard I of N (from 0): the table's key space is cut at the
    /// keys Bigtable samples (SampleRowKeys) into N contiguous parts, the
    /// same cut for the same samples. Each shard needs its own
    /// --checkpoint; combine the shards' --json reports with --merge.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, conflicts_with_all = ["parts", "part"])]
    shard: Option<(usize, usize)>,
    /// How many parts the key space is cut into (with --part).
    #[arg(long, value_name = "N", requires = "part")]
    parts: Option<usize>,
    /// Which part this process works on, from 0 (with --parts).
    #[arg(long, value_name = "I", requires = "parts")]
    part: Option<usize>,
    /// The cut shared by every shard: read from FILE when it exists, else
    /// taken from the samples and written there (the first shard to write
    /// it wins; the others read it). Needed where samples differ from call
    /// to call (Google's emulator picks them at random).
    #[arg(long, value_name = "FILE")]
    cut: Option<PathBuf>,
}

fn parse_shard(text: &str) -> Result<(usize, usize), String> {
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| format!("`{text}`: expected I/N, e.g. 0/4"))?;
    let parse = |s: &str| {
        s.trim()
            .parse::<usize>()
            .map_err(|e| format!("`{text}`: {e}"))
    };
    let (i, n) = (parse(i)?, parse(n)?);
    check_index(i, n)?;
    Ok((i, n))
}

fn check_index(i: usize, n: usize) -> Result<(), String> {
    if n == 0 {
        return Err("the number of shards must be at least 1".to_owned());
    }
    if i >= n {
        return Err(format!(
            "shard {i} of {n} does not exist: shards are numbered 0 to {}",
            n - 1
        ));
    }
    Ok(())
}

impl ShardArgs {
    /// `(index, count)` when a shard was asked for.
    pub(crate) fn shard(&self) -> Fallible<Option<(usize, usize)>> {
        match (self.shard, self.parts, self.part) {
            (Some(s), _, _) => Ok(Some(s)),
            (None, Some(n), Some(i)) => {
                check_index(i, n)?;
                Ok(Some((i, n)))
            }
            _ if self.cut.is_some() => {
                Err("--cut shares the cut between shards: pass --shard I/N with it".into())
            }
            _ => Ok(None),
        }
    }

    /// The part this process works on: the whole table without a shard;
    /// else part I of the shared cut (`--cut`) or of a fresh one.
    pub(crate) async fn resolve(&self, conn: &Connection, table: &str) -> Fallible<Part> {
        let Some((index, count)) = self.shard()? else {
            return Ok(Part::whole());
        };
        let parts = match &self.cut {
            Some(path) => shared_cut(conn, table, count, path).await?,
            None => ops::plan_parts(conn, table, count).await?,
        };
        Ok(parts[index].clone())
    }
}

/// The cut in `path`, or a fresh one written there when there is none.
async fn shared_cut(
    conn: &Connection,
    table: &str,
    count: usize,
    path: &Path,
) -> Fallible<Vec<Part>> {
    if path.exists() {
        return CutFile::read(path, table, count);
    }
    let parts = ops::plan_parts(conn, table, count).await?;
    let file = CutFile {
        table: table.to_owned(),
        count,
        parts: parts.iter().map(PartJson::from).collect(),
    };
    let text = serde_json::to_string_pretty(&file)? + "\n";
    // Written aside, then linked into place: `hard_link` fails when the
    // file exists, so of shards racing here exactly one cut wins and every
    // shard reads that one.
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .map_err(|e| format!("writing cut {}: {e}", tmp.display()))?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(parts),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            CutFile::read(path, table, count)
        }
        Err(e) => Err(format!("writing cut {}: {e}", path.display()).into()),
    }
}

/// `--cut FILE`: the parts of one cut.
#[derive(Debug, Serialize, Deserialize)]
struct CutFile {
    table: String,
    count: usize,
    parts: Vec<PartJson>,
}

impl CutFile {
    fn read(path: &Path, table: &str, count: usize) -> Fallible<Vec<Part>> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading cut {}: {e}", path.display()))?;
        let file: CutFile = serde_json::from_str(&text)
            .map_err(|e| format!("cut {} is not valid: {e}", path.display()))?;
        if file.table != table || file.count != count {
            return Err(format!(
                "cut {} is for {} parts of table `{}`, not {count} parts of `{table}`",
                path.display(),
                file.count,
                file.table
            )
            .into());
        }
        let parts = file
            .parts
            .iter()
            .map(PartJson::to_part)
            .collect::<Fallible<Vec<Part>>>()?;
        ops::check_cover(&parts).map_err(|e| format!("cut {}: {e}", path.display()))?;
        Ok(parts)
    }
}

/// A part as checkpoints and reports write it: keys in hex (exact) and as
/// text (to read).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartJson {
    pub(crate) index: usize,
    pub(crate) count: usize,
    pub(crate) start_hex: String,
    pub(crate) end_hex: Option<String>,
    #[serde(default)]
    pub(crate) start: String,
    #[serde(default)]
    pub(crate) end: Option<String>,
}

impl From<&Part> for PartJson {
    fn from(p: &Part) -> Self {
        Self {
            index: p.index,
            count: p.count,
            start_hex: hex::encode(&p.start),
            end_hex: p.end.as_deref().map(hex::encode),
            start: String::from_utf8_lossy(&p.start).into_owned(),
            end: p
                .end
                .as_deref()
                .map(|k| String::from_utf8_lossy(k).into_owned()),
        }
    }
}

impl PartJson {
    pub(crate) fn to_part(&self) -> Fallible<Part> {
        let key = |h: &str| hex::decode(h).map_err(|e| format!("part key `{h}` is not hex: {e}"));
        check_index(self.index, self.count)?;
        Ok(Part::new(
            self.index,
            self.count,
            key(&self.start_hex)?,
            self.end_hex.as_deref().map(key).transpose()?,
        ))
    }
}

/// The JSON reports in `paths`, parsed as `T`.
pub(crate) fn read_reports<T: for<'de> Deserialize<'de>>(paths: &[PathBuf]) -> Fallible<Vec<T>> {
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("reading report {}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| {
                format!("report {} is not a --json report: {e}", path.display()).into()
            })
        })
        .collect()
}

/// Check that the reports' parts are the shards of one cut, every one
/// present once.
pub(crate) fn check_shards(parts: &[Option<PartJson>]) -> Fallible<()> {
    let parts = parts
        .iter()
        .map(|p| {
            p.as_ref()
                .map_or_else(|| Ok(Part::whole()), PartJson::to_part)
        })
        .collect::<Fallible<Vec<Part>>>()?;
    ops::check_cover(&parts).map_err(|e| format!("the reports do not cover the table: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_as_i_of_n() {
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert!(parse_shard("4/4").unwrap_err().contains("0 to 3"));
        assert!(parse_shard("0/0").unwrap_err().contains("at least 1"));
        assert!(parse_shard("2").unwrap_err().contains("I/N"));
    }

    #[test]
    fn parts_round_trip_through_json() {
        let parts = ops::cut(&[b"m\xff".to_vec(), b"t".to_vec()], 3);
        for part in &parts {
            assert_eq!(&PartJson::from(part).to_part().unwrap(), part);
        }
        let json: Vec<Option<PartJson>> = parts.iter().map(|p| Some(p.into())).collect();
        check_shards(&json).unwrap();
        let err = check_shards(&json[..2]).unwrap_err().to_string();
        assert!(err.contains("missing part 2/3"), "{err}");
    }
}
