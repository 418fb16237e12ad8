//! Which mutations may be sent twice: the rule Google's clients retry by
//! (the Go client's `mutationsAreRetryable`, the Java client's
//! `isRetryable`), so that a write whose answer was lost is re-sent only
//! when a second application leaves the row as one would.

use crate::model::proto::{mutation::Mutation as M, Mutation};

/// The cell timestamp that asks the server to stamp the cell itself.
const SERVER_TIME: i64 = -1;

/// Whether applying `mutations` twice leaves the row as applying them once
/// does. Not so for a `SetCell` at the server's time (each application is a
/// new cell version), an `AddToCell` or a `MergeToCell` (each adds again).
/// A mutation of a kind this build does not know counts as not idempotent.
pub(crate) fn idempotent(mutations: &[Mutation]) -> bool {
    mutations.iter().all(|m| match &m.mutation {
        Some(M::SetCell(set)) => set.timestamp_micros != SERVER_TIME,
        Some(M::DeleteFromColumn(_) | M::DeleteFromFamily(_) | M::DeleteFromRow(_)) | None => true,
        // AddToCell, MergeToCell, and whatever a later proto adds.
        Some(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::mutation::{AddToCell, DeleteFromRow, MergeToCell, SetCell};

    fn set(ts: i64) -> Mutation {
        Mutation {
            mutation: Some(M::SetCell(SetCell {
                family_name: "f".into(),
                column_qualifier: b"q".to_vec(),
                timestamp_micros: ts,
                value: b"v".to_vec(),
            })),
        }
    }

    #[test]
    fn server_time_and_aggregates_are_not_idempotent() {
        let delete = Mutation {
            mutation: Some(M::DeleteFromRow(DeleteFromRow {})),
        };
        assert!(idempotent(&[]));
        assert!(idempotent(&[set(1_000), delete.clone()]));
        assert!(!idempotent(&[set(1_000), set(SERVER_TIME)]));
        let add = Mutation {
            mutation: Some(M::AddToCell(AddToCell::default())),
        };
        let merge = Mutation {
            mutation: Some(M::MergeToCell(MergeToCell::default())),
        };
        assert!(!idempotent(&[delete.clone(), add]));
        assert!(!idempotent(&[merge, delete]));
    }
}
