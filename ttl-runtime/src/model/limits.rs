//! Bigtable's limits on what one write may hold, checked before anything is
//! sent so that a write Bigtable would refuse leaves nothing half-written.

/// Bigtable's limit on the length of a row key.
pub const MAX_ROW_KEY_BYTES: usize = 4 * 1024;

/// Bigtable's limit on one cell's value.
pub const MAX_CELL_BYTES: usize = 100 * 1024 * 1024;

/// Bigtable's limit on a column qualifier (a map entry's encoded key).
pub const MAX_QUALIFIER_BYTES: usize = 16 * 1024;

/// Bigtable's limit on the data of one row (256 MiB): a write whose values
/// add up to more is refused before anything is sent.
pub const MAX_ROW_BYTES: usize = 256 * 1024 * 1024;

/// Most mutations Bigtable accepts in one `MutateRows` request (and in one
/// row's entry).
pub const MAX_MUTATIONS_PER_REQUEST: usize = 100_000;

/// The request size a batch aims to stay under. Bigtable's limit is 256 MiB
/// per request, but it recommends batches far smaller, and gRPC channels
/// often cap messages lower; 16 MiB keeps a batch below the 20 MiB that
/// Google's Java client allows a batch (`guide/reliability.md` compares
/// the two). A single row larger than this goes in a request of its own.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;
