//! One module per command, each with its arguments (clap) and its `exec`.

pub(crate) mod apply;
pub(crate) mod audit;
pub(crate) mod expired;
pub(crate) mod inspect;
pub(crate) mod migrate;
pub(crate) mod reap;
