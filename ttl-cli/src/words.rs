//! The library's errors in the command's words. The library's messages
//! name its API (`MigratePlan::with_ttl`, a `Connection`); where the
//! command has a flag for the same thing (`--ttl`, `--project`), the user
//! of the command reads the flag instead.

use bigtable_ttl_runtime::{Error, MigrationProblem};

/// `level`'s message as the command says it, where it names something the
/// command spells as a flag; `None` to print the library's own.
pub(crate) fn in_flags(level: &(dyn std::error::Error + 'static)) -> Option<String> {
    let Some(Error::Migration(migration)) = level.downcast_ref::<Error>() else {
        return None;
    };
    let problem = match &migration.problem {
        MigrationProblem::SameFamily => "--from and --to name the same family".to_owned(),
        MigrationProblem::NoTtl => {
            "one-second expiration has no default TTL: say how long copied cells live (--ttl)"
                .to_owned()
        }
        MigrationProblem::ShadowColumnTaken { family, qualifier } => format!(
            "source family `{family}` has a column `{qualifier}`, the shadow column's name: pass another (--written-at)"
        ),
        MigrationProblem::OtherInstance {
            checkpoint,
            connection,
        } => format!(
            "the checkpoint was taken in `{checkpoint}`, this run is connected to `{connection}`: \
             resume it connected to `{checkpoint}` (--project, --instance), or migrate `{connection}` \
             with a checkpoint of its own"
        ),
        MigrationProblem::CheckpointOutsidePart {
            last_row_key,
            part,
            past,
        } => format!(
            "the checkpoint's last row \"{}\" lies {} its part {part}, so it is not that part's checkpoint: \
             resume with the part's own checkpoint, or start the part again without --resume",
            last_row_key.escape_ascii(),
            if *past { "past" } else { "before" }
        ),
        _ => return None,
    };
    Some(format!(
        "migration in table `{}`: {problem}",
        migration.table
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every problem the library words by its API is worded by flag, and
    /// no flag is left in the library's own message.
    #[test]
    fn the_library_names_its_api_and_the_command_its_flags() {
        let plan = bigtable_ttl_runtime::ops::MigratePlan::new(
            "t",
            "raw",
            "raw",
            bigtable_ttl_runtime::Policy::CellExpiry,
        );
        let err = plan.check().unwrap_err();
        assert!(err.to_string().contains("MigratePlan::new"), "{err}");
        assert!(!err.to_string().contains("--"), "{err}");
        assert_eq!(
            in_flags(&err).as_deref(),
            Some("migration in table `t`: --from and --to name the same family")
        );
        let plan = bigtable_ttl_runtime::ops::MigratePlan::new(
            "t",
            "raw",
            "ttl",
            bigtable_ttl_runtime::Policy::CellExpiry,
        );
        let err = plan.effective_ttl().unwrap_err();
        assert!(err.to_string().contains("MigratePlan::with_ttl"), "{err}");
        assert!(
            in_flags(&err).is_some_and(|t| t.ends_with("(--ttl)")),
            "{err}"
        );
    }
}
