//! [`RawRows`]: every stored cell of the rows a scan covers, through a
//! typed table's raw handle, as the tests compare rows.

use bigtable_ttl::{BigtableRow, Table};

/// Every stored cell of the rows a scan covers, unfiltered (all versions,
/// expired or not), as `(key, cells)`: a typed table's raw handle read the
/// way the tests compare rows.
pub trait RawRows {
    fn raw_rows(
        &self,
        scan: bigtable_ttl::Scan,
    ) -> impl std::future::Future<
        Output = bigtable_ttl::Result<Vec<(Vec<u8>, Vec<bigtable_ttl::data::Cell>)>>,
    > + Send;
}

impl<T: BigtableRow> RawRows for Table<T> {
    fn raw_rows(
        &self,
        scan: bigtable_ttl::Scan,
    ) -> impl std::future::Future<
        Output = bigtable_ttl::Result<Vec<(Vec<u8>, Vec<bigtable_ttl::data::Cell>)>>,
    > + Send {
        use futures_util::TryStreamExt as _;
        let raw = self.raw().clone();
        async move {
            let read = bigtable_ttl::data::ReadRows::try_from(scan)?;
            raw.read_rows(read)
                .map_ok(|row| (row.key, row.cells))
                .try_collect()
                .await
        }
    }
}
