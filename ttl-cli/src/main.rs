//! `bigtable-ttl`: see `bigtable-ttl --help`.

fn main() {
    std::process::exit(bigtable_ttl_cli::run(std::env::args_os()));
}
