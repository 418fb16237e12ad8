#!/usr/bin/env bash
# Generate the compile-cost crates: 50 structs with #[derive(BigtableRow)]
# (bench-derive) and the same 50 with serde's Serialize + Deserialize
# (bench-serde), in DIR. Usage: gen_compile.sh DIR REPO_ROOT
set -euo pipefail
dir=$1 root=$2
for kind in derive serde; do
  mkdir -p "$dir/$kind/src"
  if [[ $kind == derive ]]; then
    dep="bigtable-ttl = { path = \"$root\" }
chrono = { version = \"0.4\", default-features = false, features = [\"clock\", \"std\"] }"
  else
    dep="serde = { version = \"1\", features = [\"derive\"] }
chrono = { version = \"0.4\", default-features = false, features = [\"clock\", \"std\", \"serde\"] }"
  fi
  cat > "$dir/$kind/Cargo.toml" <<TOML
[package]
name = "compile-$kind"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
$dep
TOML
  {
    echo "#![allow(dead_code)]"
    if [[ $kind == derive ]]; then
      echo "use bigtable_ttl::BigtableRow;"
    else
      echo "use serde::{Deserialize, Serialize};"
    fi
    echo "use chrono::{DateTime, Utc};"
    for i in $(seq 1 50); do
      if [[ $kind == derive ]]; then
        if (( i % 2 )); then
          echo "#[derive(BigtableRow)]
#[bigtable(table = \"t$i\", family = \"f\")]
#[ttl(default = \"2d\", written_at)]"
          expire="    #[ttl(expire_at)]
    pub expires: Option<DateTime<Utc>>,"
        else
          echo "#[derive(BigtableRow)]
#[bigtable(table = \"t$i\", family = \"f\")]"
          expire="    #[ttl(expire_at)]
    pub expires: DateTime<Utc>,"
        fi
        key="    #[bigtable(key)]"
      else
        echo "#[derive(Serialize, Deserialize)]"
        if (( i % 2 )); then
          expire="    pub expires: Option<DateTime<Utc>>,"
        else
          expire="    pub expires: DateTime<Utc>,"
        fi
        key=""
      fi
      cat <<RS
pub struct S$i {
$key
    pub id: String,
$expire
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
