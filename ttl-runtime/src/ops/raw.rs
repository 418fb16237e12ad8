//! Every stored cell of a table by name, unfiltered: what is really there,
//! expired or not, for operators and tests.

use futures_util::TryStreamExt as _;

use crate::client::connection::Connection;
use crate::client::read::{read_rows, ReadOptions};
use crate::model::error::Result;
use crate::model::scan::{RawCell, Scan};

/// Every stored cell of the rows of `table` that `scan` covers,
/// **unfiltered**: all versions of every family, expired or not, until
/// garbage collection removes them ([`crate::Table::raw_rows`] for a typed
/// table). Rows in key order, cells in the server's order (family,
/// qualifier, newest first). Read under the connection's policy
/// ([`Connection::retry`]), its deadline the time without a row.
///
/// ```no_run
/// # async fn run(conn: &bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::{ops, Scan};
///
/// for (key, cells) in ops::raw_rows(conn, "clicks", Scan::prefix("c3#")).await? {
///     println!("{}: {} cells", key.escape_ascii(), cells.len());
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`crate::Error::Server`] (a missing table included);
/// [`crate::Error::InvalidRange`] before anything is sent.
pub async fn raw_rows(
    conn: &Connection,
    table: &str,
    scan: Scan,
) -> Result<Vec<(Vec<u8>, Vec<RawCell>)>> {
    let Some(request) = scan.into_request(conn.table_path(table))? else {
        return Ok(Vec::new());
    };
    let options = ReadOptions::default().with_retry(conn.retry());
    read_rows(conn.data_channel(), request, options, None)
        .map_err(|e| e.into_error(table, None))
        .try_collect()
        .await
}
