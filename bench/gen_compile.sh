#!/usr/bin/env bash
# The compile-cost crates in DIR: 50 structs with #[derive(BigtableRow)]
# (DIR/derive) and the same 50 with serde's Serialize + Deserialize
# (DIR/serde). Usage: gen_compile.sh DIR REPO_ROOT
set -euo pipefail
dir=$1 root=$2
chrono='chrono = { version = "0.4", default-features = false, features = ["clock", "std"'
for kind in derive serde; do
  mkdir -p "$dir/$kind/src"
  if [[ $kind == derive ]]; then
    deps="bigtable-ttl = { path = \"$root\" }
$chrono] }"
    use="use bigtable_ttl::BigtableRow;"
  else
    deps="serde = { version = \"1\", features = [\"derive\"] }
$chrono, \"serde\"] }"
    use="use serde::{Deserialize, Serialize};"
  fi
  cat > "$dir/$kind/Cargo.toml" <<TOML
[package]
name = "compile-$kind"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
$deps
TOML
  {
    printf '#![allow(dead_code)]\n%s\nuse chrono::{DateTime, Utc};\n' "$use"
    for i in $(seq 1 50); do
      expires="DateTime<Utc>"
      (( i % 2 )) && expires="Option<DateTime<Utc>>"
      if [[ $kind == derive ]]; then
        printf '#[derive(BigtableRow)]\n#[bigtable(table = "t%s", family = "f")]\n' "$i"
        (( i % 2 )) && echo '#[ttl(default = "2d", written_at)]'
        key="    #[bigtable(key)]" expire_at="    #[ttl(expire_at)]"$'\n'
      else
        echo "#[derive(Serialize, Deserialize)]"
        key="" expire_at=""
      fi
      cat <<RS
pub struct S$i {
$key
    pub id: String,
$expire_at    pub expires: $expires,
    pub name: String,
    pub count: i64,
    pub score: f64,
    pub flag: bool,
    pub note: Option<String>,
    pub at: DateTime<Utc>,
}
RS
    done
  } > "$dir/$kind/src/lib.rs"
done
