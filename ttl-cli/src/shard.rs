//! Sharded runs: which part of the key space this process works on
//! (`--shard I/N`, or `--parts N --part I`), the cut shared between shards
//! (`--cut FILE`), parts as they are written into checkpoints and reports,
//! and reading the reports back for `--merge`.

use std::path::{Path, PathBuf};

use bigtable_ttl_runtime::ops::{self, check_shard, Part};
use bigtable_ttl_runtime::Connection;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::files::{self, FileError, CUT_MAX_BYTES, REPORT_MAX_BYTES};
use crate::output::Fallible;

/// Which shard of a sharded run this process is.
#[derive(Debug, Args, Default)]
pub(crate) struct ShardArgs {
    /// Work on shard I of N (from 0; N at most 1024): the table's key
    /// space is cut at the keys Bigtable samples (SampleRowKeys) into N
    /// contiguous parts, the same cut for the same samples. Each shard
    /// needs its own --checkpoint; combine the shards' --json reports with
    /// --merge.
    #[arg(long, value_name = "I/N", value_parser = parse_shard, conflicts_with_all = ["parts", "part"])]
    shard: Option<(usize, usize)>,
    /// How many parts the key space is cut into (with --part; at most 1024).
    #[arg(long, value_name = "N", requires = "part")]
    parts: Option<usize>,
    /// Which part this process works on, from 0 (with --parts).
    #[arg(long, value_name = "I", requires = "parts")]
    part: Option<usize>,
    /// The cut shared by every shard: read from FILE when it exists, else
    /// taken from the samples and created there at once unless another
    /// shard created it first (then that one is read): the first complete
    /// cut wins. Needed where samples differ from call to call (Google's
    /// emulator picks them at random).
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
    check_shard(i, n).map_err(|e| e.to_string())?;
    Ok((i, n))
}

impl ShardArgs {
    /// What is wrong with the shard options, as a usage error (exit
    /// status 2, like a bad `--shard`): `--parts N --part I` is checked as
    /// `--shard I/N` is.
    pub(crate) fn usage(&self) -> Result<(), String> {
        if let (Some(n), Some(i)) = (self.parts, self.part) {
            check_shard(i, n).map_err(|e| format!("--parts {n} --part {i}: {e}"))?;
        }
        if self.cut.is_some() && self.shard.is_none() && self.parts.is_none() {
            return Err("--cut shares the cut between shards: pass --shard I/N with it".to_owned());
        }
        Ok(())
    }

    /// `(index, count)` when a shard was asked for.
    pub(crate) fn shard(&self) -> Fallible<Option<(usize, usize)>> {
        self.usage()?;
        Ok(match (self.shard, self.parts, self.part) {
            (Some(s), _, _) => Some(s),
            (None, Some(n), Some(i)) => Some((i, n)),
            _ => None,
        })
    }

    /// The part this process works on: the whole table without a shard;
    /// else part I of the shared cut (`--cut`) or of a fresh one (only
    /// that part computed).
    pub(crate) async fn resolve(&self, conn: &Connection, table: &str) -> Fallible<Part> {
        let Some((index, count)) = self.shard()? else {
            return Ok(Part::whole());
        };
        if let Some(path) = &self.cut {
            return shared_cut(conn, table, count, path)
                .await?
                .part(path, index);
        }
        let samples = ops::key_samples(conn, table).await?;
        let keys: Vec<Vec<u8>> = samples.into_iter().map(|s| s.key).collect();
        Ok(ops::part_of(&keys, index, count)?)
    }
}

/// The cut in `path`, or a fresh one created there when there is none (of
/// shards racing here, the first complete one wins and every shard reads
/// that one).
async fn shared_cut(conn: &Connection, table: &str, count: usize, path: &Path) -> Fallible<Cut> {
    let of = CutOf {
        project: conn.project(),
        instance: conn.instance(),
        table,
        count,
    };
    if path.exists() {
        return Ok(CutFile::read(path, &of)?);
    }
    let parts = ops::plan_parts(conn, table, count).await?;
    let file = CutFile {
        project: Some(conn.project().to_owned()),
        instance: Some(conn.instance().to_owned()),
        table: table.to_owned(),
        count,
        parts: parts.clone(),
    };
    let text = serde_json::to_string_pretty(&file)? + "\n";
    if files::create_or_keep("cut", path, &text)? {
        Ok(Cut { parts })
    } else {
        Ok(CutFile::read(path, &of)?)
    }
}

/// What a cut file must be of: this run's instance, table and part count.
struct CutOf<'a> {
    project: &'a str,
    instance: &'a str,
    table: &'a str,
    count: usize,
}

/// A cut checked to cover the table, its parts in any order.
#[derive(Debug)]
struct Cut {
    parts: Vec<Part>,
}

impl Cut {
    /// Part `index`, found by its own index.
    fn part(&self, path: &Path, index: usize) -> Fallible<Part> {
        self.parts
            .iter()
            .find(|p| p.index == index)
            .cloned()
            .ok_or_else(|| FileError::invalid("cut", path, format!("no part {index}")).into())
    }
}

/// `--cut FILE`: the parts of one cut.
#[derive(Debug, Serialize, Deserialize)]
struct CutFile {
    /// The instance whose samples it was cut at; absent from files written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instance: Option<String>,
    table: String,
    count: usize,
    parts: Vec<Part>,
}

impl CutFile {
    fn read(path: &Path, of: &CutOf<'_>) -> Result<Cut, FileError> {
        let &CutOf {
            project,
            instance,
            table,
            count,
        } = of;
        let text = files::read_capped("cut", path, CUT_MAX_BYTES)?;
        let file: CutFile =
            serde_json::from_str(&text).map_err(|e| FileError::invalid("cut", path, e))?;
        if let (Some(p), Some(i)) = (&file.project, &file.instance) {
            if (p.as_str(), i.as_str()) != (project, instance) {
                return Err(FileError::invalid(
                    "cut",
                    path,
                    format!(
                        "it was cut in `projects/{p}/instances/{i}`, this run is connected to \
                         `projects/{project}/instances/{instance}`: give this instance's shards a cut \
                         file of their own (a new path), or connect to `projects/{p}/instances/{i}`"
                    ),
                ));
            }
        }
        if file.table != table || file.count != count {
            return Err(FileError::invalid(
                "cut",
                path,
                format!(
                    "it is for {} parts of table `{}`, not {count} parts of `{table}`",
                    file.count, file.table
                ),
            ));
        }
        let parts = file.parts;
        ops::check_cover(&parts).map_err(|e| FileError::invalid("cut", path, e))?;
        Ok(Cut { parts })
    }
}

/// The JSON reports in `paths`, each read with a size cap and parsed as
/// `T`.
pub(crate) fn read_reports<T: for<'de> Deserialize<'de>>(
    paths: &[PathBuf],
) -> Result<Vec<T>, FileError> {
    paths
        .iter()
        .map(|path| {
            let text = files::read_capped("report", path, REPORT_MAX_BYTES)?;
            serde_json::from_str(&text).map_err(|e| {
                FileError::invalid("report", path, format!("not a --json report: {e}"))
            })
        })
        .collect()
}

/// Check that the reports' parts are the shards of one cut, every one
/// present once, in any order.
pub(crate) fn check_shards(reports: &[&Part]) -> Fallible<()> {
    let parts: Vec<Part> = reports.iter().map(|&p| p.clone()).collect();
    ops::check_cover(&parts).map_err(|e| format!("the reports do not cover the table: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bigtable_ttl_runtime::ops::MAX_PARTS;
    use serde_json::Value;

    #[test]
    fn shards_parse_as_i_of_n() {
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert!(parse_shard("4/4").unwrap_err().contains("0 to 3"));
        assert!(parse_shard("0/0").unwrap_err().contains("at least 1"));
        assert!(parse_shard("2").unwrap_err().contains("I/N"));
        let err = parse_shard("1/999999999").unwrap_err();
        assert!(err.contains(&format!("limit of {MAX_PARTS}")), "{err}");
    }

    #[test]
    fn cuts_of_this_version_read_back_whole() {
        crate::files::reads_back_whole::<CutFile>("cut.json");
    }

    #[test]
    fn parts_cover_in_any_order() {
        let parts = ops::cut(&[b"m\xff".to_vec(), b"t".to_vec()], 3);
        let reports: Vec<&Part> = parts.iter().rev().collect();
        check_shards(&reports).unwrap();
        let err = check_shards(&reports[1..]).unwrap_err().to_string();
        assert!(err.contains("missing part 2/3"), "{err}");
    }

    fn cut_file(parts: &[Part]) -> String {
        let file = CutFile {
            project: None,
            instance: None,
            table: "t".to_owned(),
            count: parts[0].count,
            parts: parts.to_vec(),
        };
        serde_json::to_string(&file).unwrap()
    }

    /// A cut listing its parts in another order still gives each shard
    /// its own part.
    #[test]
    fn a_cut_file_in_any_order_gives_each_shard_its_own_part() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.json");
        let parts = ops::cut(&[b"c".to_vec(), b"m".to_vec(), b"t".to_vec()], 4);
        let mut reversed = parts.clone();
        reversed.reverse();
        std::fs::write(&path, cut_file(&reversed)).unwrap();
        let cut = CutFile::read(&path, &of("p", "i")).unwrap();
        for (index, part) in parts.iter().enumerate() {
            assert_eq!(&cut.part(&path, index).unwrap(), part);
        }
        let twice = [
            parts[0].clone(),
            parts[1].clone(),
            parts[1].clone(),
            parts[3].clone(),
        ];
        std::fs::write(&path, cut_file(&twice)).unwrap();
        let err = CutFile::read(&path, &of("p", "i")).unwrap_err().to_string();
        assert!(err.contains("part 1/4 appears twice"), "{err}");
        assert!(err.contains("cut.json"), "{err}");
    }

    fn of<'a>(project: &'a str, instance: &'a str) -> CutOf<'a> {
        CutOf {
            project,
            instance,
            table: "t",
            count: 4,
        }
    }

    /// A cut records the instance it was taken in; shards of another
    /// instance refuse it, saying what to do.
    #[test]
    fn a_cut_of_another_instance_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.json");
        let parts = ops::cut(&[b"c".to_vec(), b"m".to_vec(), b"t".to_vec()], 4);
        let mut file: Value = serde_json::from_str(&cut_file(&parts)).unwrap();
        file["project"] = "p".into();
        file["instance"] = "i".into();
        std::fs::write(&path, file.to_string()).unwrap();
        CutFile::read(&path, &of("p", "i")).unwrap();
        let err = CutFile::read(&path, &of("p", "staging"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cut in `projects/p/instances/i`")
                && err.contains("connected to `projects/p/instances/staging`")
                && err.contains("a cut file of their own"),
            "{err}"
        );
    }
}
