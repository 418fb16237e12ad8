//! The Kubernetes manifests of `examples/ops/` parse as YAML (saphyr), and
//! the commands they run are `bigtable-ttl` command lines this version
//! accepts: the shards' `--shard INDEX/N` agrees with the Job's
//! completions, every shard keeps its state on the shared volume, and the
//! merge Job reads exactly the reports the shards write; the reaper's
//! `CronJob` never runs two passes at once and keeps its checkpoint and its
//! events on its volume.

use bigtable_ttl_cli::Cli;
use clap::Parser as _;
use saphyr::{LoadableYamlNode, Yaml};

const MIGRATE_JOB: &str = include_str!("../../../examples/ops/migrate-job.yaml");
const MERGE_JOB: &str = include_str!("../../../examples/ops/merge-job.yaml");
const REAP_CRONJOB: &str = include_str!("../../../examples/ops/reap-cronjob.yaml");

fn documents(text: &str) -> Vec<Yaml<'_>> {
    Yaml::load_from_str(text).unwrap_or_else(|e| panic!("not YAML: {e}"))
}

fn kind<'a>(docs: &'a [Yaml<'a>], kind: &str) -> &'a Yaml<'a> {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind}"))
}

fn strings(node: &Yaml<'_>) -> Vec<String> {
    node.as_vec()
        .unwrap_or_else(|| panic!("not a list: {node:?}"))
        .iter()
        .map(|a| a.as_str().expect("a string").to_owned())
        .collect()
}

fn int(node: &Yaml<'_>) -> i64 {
    node.as_integer()
        .unwrap_or_else(|| panic!("not an integer: {node:?}"))
}

/// `args` as Kubernetes expands them for the pod of completion `index`.
fn expand(args: &[String], index: i64) -> Vec<String> {
    args.iter()
        .map(|a| a.replace("$(JOB_COMPLETION_INDEX)", &index.to_string()))
        .collect()
}

/// The value after `flag` in `args`.
fn value<'a>(args: &'a [String], flag: &str) -> &'a str {
    let at = args
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("no {flag} in {args:?}"));
    &args[at + 1]
}

#[test]
fn the_indexed_job_runs_one_shard_per_completion_index() {
    let docs = documents(MIGRATE_JOB);
    let claim = kind(&docs, "PersistentVolumeClaim");
    assert_eq!(strings(&claim["spec"]["accessModes"]), ["ReadWriteMany"]);
    let job = kind(&docs, "Job");
    assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let shards = int(&spec["completions"]);
    assert_eq!(int(&spec["parallelism"]), shards, "every shard at once");
    let pod = &spec["template"]["spec"];
    let container = &pod["containers"][0];
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    let volume = &pod["volumes"][0];
    assert_eq!(
        volume["name"].as_str(),
        container["volumeMounts"][0]["name"].as_str()
    );
    assert_eq!(
        volume["persistentVolumeClaim"]["claimName"].as_str(),
        claim["metadata"]["name"].as_str()
    );
    let image = container["image"].as_str().expect("an image");
    assert!(
        image.starts_with("bigtable-ttl:") && image.len() > "bigtable-ttl:".len(),
        "a tagged bigtable-ttl image: {image}"
    );
    let args = strings(&container["args"]);
    // Every pod's own shard, checkpoint and report come from the index
    // the Job controller sets; the cut is the one file they all share.
    for flag in ["--shard", "--checkpoint", "--report"] {
        assert!(
            value(&args, flag).contains("$(JOB_COMPLETION_INDEX)"),
            "{flag} is per pod"
        );
    }
    assert!(
        !value(&args, "--cut").contains('$'),
        "one cut for every pod"
    );
    let mut checkpoints = Vec::new();
    for index in 0..shards {
        let argv = expand(&args, index);
        assert_eq!(value(&argv, "--shard"), format!("{index}/{shards}"));
        for flag in ["--cut", "--checkpoint", "--report"] {
            assert!(
                value(&argv, flag).starts_with(&format!("{mount}/")),
                "{flag} is not on the volume"
            );
        }
        assert!(argv.iter().any(|a| a == "--resume-if-present"));
        checkpoints.push(value(&argv, "--checkpoint").to_owned());
        let line = std::iter::once("bigtable-ttl".to_owned()).chain(argv);
        if let Err(e) = Cli::try_parse_from(line) {
            panic!("shard {index}: {e}");
        }
    }
    checkpoints.sort();
    checkpoints.dedup();
    assert_eq!(
        i64::try_from(checkpoints.len()).unwrap(),
        shards,
        "a checkpoint per shard"
    );
}

#[test]
fn the_merge_job_reads_every_shards_report() {
    let shard_args = strings(
        &kind(&documents(MIGRATE_JOB), "Job")["spec"]["template"]["spec"]["containers"][0]["args"],
    );
    let shards = int(&kind(&documents(MIGRATE_JOB), "Job")["spec"]["completions"]);
    let reports: Vec<String> = (0..shards)
        .map(|i| value(&expand(&shard_args, i), "--report").to_owned())
        .collect();
    let migrate = documents(MIGRATE_JOB);
    let shard_pod = &kind(&migrate, "Job")["spec"]["template"]["spec"];
    let docs = documents(MERGE_JOB);
    let job = kind(&docs, "Job");
    let pod = &job["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(
        container["image"].as_str(),
        shard_pod["containers"][0]["image"].as_str(),
        "the merge runs the shards' version"
    );
    // The reports are read from the volume the shards wrote them to.
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"].as_str(),
        shard_pod["volumes"][0]["persistentVolumeClaim"]["claimName"].as_str()
    );
    assert_eq!(
        container["volumeMounts"][0]["mountPath"].as_str(),
        shard_pod["containers"][0]["volumeMounts"][0]["mountPath"].as_str()
    );
    let args = strings(&container["args"]);
    let at = args.iter().position(|a| a == "--merge").unwrap();
    assert_eq!(args[at + 1..], reports[..]);
    // The same migration as the shards'.
    for flag in ["--from", "--to", "--policy"] {
        assert_eq!(value(&args, flag), value(&shard_args, flag), "{flag}");
    }
    assert!(args.iter().any(|a| a == "--verify"));
    let line = std::iter::once("bigtable-ttl".to_owned()).chain(args);
    if let Err(e) = Cli::try_parse_from(line) {
        panic!("merge: {e}");
    }
}

#[test]
fn the_reaper_cronjob_runs_one_resumable_pass_at_a_time() {
    let docs = documents(REAP_CRONJOB);
    let claim = kind(&docs, "PersistentVolumeClaim");
    let cron = kind(&docs, "CronJob");
    assert_eq!(cron["apiVersion"].as_str(), Some("batch/v1"));
    let spec = &cron["spec"];
    assert_eq!(
        spec["concurrencyPolicy"].as_str(),
        Some("Forbid"),
        "two passes would share one checkpoint"
    );
    let schedule = spec["schedule"].as_str().expect("a schedule");
    assert_eq!(schedule.split_whitespace().count(), 5, "cron: {schedule}");
    let pod = &spec["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    let container = &pod["containers"][0];
    let image = container["image"].as_str().expect("an image");
    assert!(
        image.starts_with("bigtable-ttl:") && image.len() > "bigtable-ttl:".len(),
        "a tagged bigtable-ttl image: {image}"
    );
    let mount = &container["volumeMounts"][0];
    let volume = &pod["volumes"][0];
    assert_eq!(volume["name"].as_str(), mount["name"].as_str());
    assert_eq!(
        volume["persistentVolumeClaim"]["claimName"].as_str(),
        claim["metadata"]["name"].as_str()
    );
    let mount = mount["mountPath"].as_str().unwrap();
    let args = strings(&container["args"]);
    assert_eq!(args[0], "reap");
    for flag in ["--checkpoint", "--events"] {
        assert!(
            value(&args, flag).starts_with(&format!("{mount}/")),
            "{flag} is not on the volume"
        );
    }
    assert!(
        args.iter().any(|a| a == "--resume-if-present"),
        "a pod replaced mid-pass resumes"
    );
    // What clap leaves to the command, checked as the command checks it.
    assert!(
        bigtable_ttl::ops::parse_duration(value(&args, "--grace")).is_ok(),
        "--grace"
    );
    assert!(bigtable_ttl::ops::parse_policy(value(&args, "--policy")).is_ok());
    assert!(args.iter().any(|a| a == "--rate"), "a paced reaper");
    let line = std::iter::once("bigtable-ttl".to_owned()).chain(args);
    if let Err(e) = Cli::try_parse_from(line) {
        panic!("reap: {e}");
    }
}
