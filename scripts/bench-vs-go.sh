#!/usr/bin/env bash
# Times profbridge against google/pprof on the same files, in one run, and
# prints the ratio. The Go side is scripts/go-roundtrip, built in GOPATH mode
# against Debian's golang-github-google-pprof-dev. Inputs: the corpus's
# large.cpu (pprof), and a generated 64-bit gperftools CPU profile of 200,000
# records (crates/pprof/examples/gen_gperftools.rs), which both sides parse
# with their legacy parsers before writing gzipped pprof.
#
# Usage: scripts/bench-vs-go.sh [ROUNDS]
#   (default 5 rounds; 20 iterations a round for large.cpu, 5 for the
#   gperftools profile)
# Needs: cargo, go, golang-github-google-pprof-dev, and the corpus
# (PROFBRIDGE_CORPUS, else ../shared/corpus).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
corpus=${PROFBRIDGE_CORPUS:-$root/../shared/corpus}
rounds=${1:-5}
iterations=20
gopath=/usr/share/gocode

[ -f "$gopath/src/github.com/google/pprof/profile/profile.go" ] || {
  echo "missing $gopath/src/github.com/google/pprof: apt-get install golang-github-google-pprof-dev" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target=${CARGO_TARGET_DIR:-$root/target}

cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p profbridge-pprof \
  --example roundtrip --example gen_gperftools
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p profbridge-translate \
  --example translate_roundtrip
translate="$target/release/examples/translate_roundtrip"
ebpf_otlp="$work/ebpf-like.otlp.pb"
ebpf_pprof="$work/ebpf-like.pb.gz"
"$translate" --ebpf-like "$ebpf_otlp" "$ebpf_pprof"
ours="$target/release/examples/roundtrip"
gperftools="$work/gperftools-200k.cpu"
"$target/release/examples/gen_gperftools" "$gperftools" 200000 1 >/dev/null
(cd "$root/scripts/go-roundtrip" &&
  GOPATH=$gopath GO111MODULE=off GOFLAGS= GOCACHE="$work/gocache" go build -o "$work/go-roundtrip" .)
theirs="$work/go-roundtrip"

field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p"; }

# Runs both sides alternately, keeps each side's best round, prints a row.
# Usage: compare LABEL FILE GZIP_LEVEL [ITERATIONS]
compare() {
  local label=$1 file=$2 level=$3 iterations=${4:-$iterations}
  local best_ours= best_theirs= out_ours= out_theirs=
  for _ in $(seq "$rounds"); do
    local line ns
    line=$("$theirs" "$file" "$iterations")
    ns=$(field ns_per_op <<<"$line"); out_theirs=$(field bytes_out <<<"$line")
    if [ -z "$best_theirs" ] || [ "$ns" -lt "$best_theirs" ]; then best_theirs=$ns; fi
    line=$("$ours" "$file" "$iterations" "$level")
    ns=$(field ns_per_op <<<"$line"); out_ours=$(field bytes_out <<<"$line")
    if [ -z "$best_ours" ] || [ "$ns" -lt "$best_ours" ]; then best_ours=$ns; fi
  done
  awk -v l="$label" -v o="$best_ours" -v t="$best_theirs" -v ob="$out_ours" -v tb="$out_theirs" \
    'BEGIN { printf "%-40s %10.2f %10.2f %8.2fx %11d %11d\n", l, o/1e6, t/1e6, t/o, ob, tb }'
}

printf "%-40s %10s %10s %9s %11s %11s\n" "parse -> pprof gz" "ours ms" "go ms" "speedup" "ours bytes" "go bytes"
compare "large.cpu, gzip level 1 (default)" "$corpus/pprof/large.cpu" 1
compare "large.cpu, gzip level 6 (go's)" "$corpus/pprof/large.cpu" 6
compare "gperftools 200k records -> pprof gz" "$gperftools" 1 5

# Translation: ours against google/pprof's Parse + Write of the same profile
# as pprof (google/pprof has no OTLP; that is the work it would do instead).
# Usage: compare_translation LABEL OUR_INPUT GO_PPROF DIRECTION
compare_translation() {
  local label=$1 input=$2 pprof=$3 direction=$4
  local best_ours= best_theirs=
  for _ in $(seq "$rounds"); do
    local line ns
    line=$("$theirs" "$pprof" 10)
    ns=$(field ns_per_op <<<"$line")
    if [ -z "$best_theirs" ] || [ "$ns" -lt "$best_theirs" ]; then best_theirs=$ns; fi
    line=$("$translate" "$input" 10)
    ns=$(field "$direction" <<<"$line")
    if [ -z "$best_ours" ] || [ "$ns" -lt "$best_ours" ]; then best_ours=$ns; fi
  done
  awk -v l="$label" -v o="$best_ours" -v t="$best_theirs" \
    'BEGIN { printf "%-40s %10.2f %10.2f %8.2fx\n", l, o/1e6, t/1e6, t/o }'
}

echo
printf "%-40s %10s %10s %9s\n" "translate (go: Parse+Write)" "ours ms" "go ms" "speedup"
compare_translation "large.cpu: pprof.gz -> OTLP bytes" "$corpus/pprof/large.cpu" "$corpus/pprof/large.cpu" to_otlp_ns
compare_translation "large.cpu: OTLP bytes -> pprof.gz" "$corpus/pprof/large.cpu" "$corpus/pprof/large.cpu" to_pprof_ns
compare_translation "ebpf-like: pprof.gz -> OTLP bytes" "$ebpf_otlp" "$ebpf_pprof" to_otlp_ns
compare_translation "ebpf-like: OTLP bytes -> pprof.gz" "$ebpf_otlp" "$ebpf_pprof" to_pprof_ns
