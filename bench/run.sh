#!/usr/bin/env bash
# Every benchmark of issue 5, run BENCH_RUNS times (3), each run's JSON in
# bench/target/results/runN, then BENCHMARKS.md's tables rewritten from all
# the runs (`ttl-bench report`; the prose is written by hand).
#   bench/run.sh                 # 100,000 rows end to end, three runs
#   BENCH_ROWS=10000 BENCH_RUNS=1 bench/run.sh
#   BENCH_ROUNDS=9 (default): end-to-end rounds, medians reported
# Needs Google's Bigtable emulator and python3 (a venv with
# google-cloud-bigtable is made under bench/target/). Google's Go client
# (`cbt`, on the PATH) and Node.js client (npm) are skipped, said so, when
# missing. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rows=${BENCH_ROWS:-100000}
work=$root/bench/target
bench=$root/target/release/ttl-bench

echo "== Python client: venv with google-cloud-bigtable" >&2
venv=$work/venv
if ! "$venv/bin/python" -c 'import google.cloud.bigtable' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip google-cloud-bigtable
fi

echo "== Node.js client: @google-cloud/bigtable from npm" >&2
# 6.x: the newest line that runs on Node 18 and 20 (7.x needs Node 22).
node_modules=$work/node/node_modules
if [[ ! -d $node_modules/@google-cloud/bigtable ]] && command -v npm >/dev/null; then
  npm install --prefix "$work/node" --no-audit --no-fund --no-save \
    @google-cloud/bigtable@6.5.1 >&2 || echo "  npm install failed" >&2
fi
if ! command -v node >/dev/null || [[ ! -d $node_modules/@google-cloud/bigtable ]]; then
  echo "  no node or no client: the Node.js client is skipped" >&2
  node_modules=
fi

cargo build --release -p ttl-bench >&2
# Loopback only, in a network namespace of its own where the machine allows
# one; else the contenders are held to loopback by their own settings.
isolate=()
if unshare --net sh -c 'ip link set lo up' 2>/dev/null; then
  isolate=(unshare --net sh -c 'ip link set lo up && exec "$@"' isolate)
else
  echo "  (no network namespace here: the contenders run in the machine's own)" >&2
fi
# Go's CSV reading alone, when a Go toolchain is on the PATH (or GO names
# one): standard library only, so it builds offline.
go_csv=
go=${GO:-$(command -v go || true)}
if [[ -n $go ]] && GOTOOLCHAIN=local GOCACHE=$work/gocache GOPATH=$work/gopath \
  "$go" build -o "$work/go_csv" bench/go_csv/main.go >&2; then
  go_csv=$work/go_csv
else
  echo "  no Go toolchain: Go's CSV cost is not measured alone" >&2
fi
peers=(${node_modules:+--node-modules "$node_modules"})

one_run() {
  local results=$1
  mkdir -p "$results"
  echo "== criterion: derive vs hand-written builders and decoders" >&2
  rm -rf "$root/target/criterion"
  cargo bench -p ttl-bench --bench codec >&2
  rm -rf "$results/criterion" && cp -r "$root/target/criterion" "$results/criterion"

  echo "== end to end on a dedicated emulator ($rows rows), filtering bytes" >&2
  "$bench" e2e --rows "$rows" --python "$venv/bin/python" --out "$results/e2e.json"

  # Not rendered: BENCHMARKS.md's "Expiry feed and reaper" is written by hand.
  echo "== expiry feed and reaper" >&2
  "$bench" expiry --rows "$rows" --feed-rows "$rows" --out "$results/expiry.json"

  echo "== parallel scan vs single stream ($rows rows)" >&2
  "$bench" parallel --rows "$rows" --out "$results/parallel.json"

  echo "== client instructions (callgrind): lib vs raw, 20,000 rows" >&2
  "$bench" instructions --rows 20000 --out "$results/instructions.json"

  echo "== single-row latency, library vs hand-written" >&2
  "$bench" latency --ops 20000 --rounds 5 --out "$results/latency.json"

  echo "== compile cost: 50 structs, BigtableRow vs serde" >&2
  local cc=$work/compile kind
  rm -rf "$cc/derive/src" "$cc/serde/src"
  bench/gen_compile.sh "$cc" "$root"
  declare -A secs
  build() { (cd "$cc/$kind" && CARGO_TARGET_DIR="$cc/target-$kind" cargo build --quiet); }
  for kind in derive serde; do
    build # the dependencies, untimed
    secs[$kind]=
    for _ in 1 2 3; do
      touch "$cc/$kind/src/lib.rs"
      local start=$EPOCHREALTIME
      build
      secs[$kind]=$(awk -v a="$start" -v b="$EPOCHREALTIME" -v best="${secs[$kind]}" \
        'BEGIN { t = b - a; if (best != "" && best < t) t = best; printf "%.3f", t }')
    done
    echo "  $kind: ${secs[$kind]}s (best of 3)" >&2
  done
  printf '{"derive_s": %s, "serde_s": %s}\n' "${secs[derive]}" "${secs[serde]}" \
    > "$results/compile.json"

  # Last: the measures that need a quiet machine most.
  echo "== null server: the clients' own cost ($rows rows)" >&2
  "${isolate[@]}" "$bench" null --rows "$rows" "${peers[@]}" --out "$results/null.json"

  echo "== null server, like for like: CSV alone, each peer's best batching, TLS" >&2
  "${isolate[@]}" "$bench" fair --rows "$rows" "${peers[@]}" ${go_csv:+--go-csv "$go_csv"} \
    --out "$results/fair.json"

  echo "== point calls with 1, 16, 256 in flight; Node and Python; the pool" >&2
  "${isolate[@]}" "$bench" concurrency --calls 20000 --rounds 5 "${peers[@]}" \
    --python "$venv/bin/python" --out "$results/concurrency.json"
}

report=()
for n in $(seq "${BENCH_RUNS:-3}"); do
  echo "==== run $n of ${BENCH_RUNS:-3}" >&2
  one_run "$work/results/run$n"
  report+=(--results "$work/results/run$n")
done
"$bench" report "${report[@]}" --update "$root/BENCHMARKS.md"
echo "BENCHMARKS.md's tables rewritten: read its prose against them (git diff BENCHMARKS.md)" >&2
