#!/usr/bin/env bash
# Times `profbridge convert` as a user's process sees it against
# google/pprof's Parse+Write of the same file (scripts/go-roundtrip, one
# iteration: a whole process that reads, parses, validates and writes the
# profile gzipped), in one run, and measures the peak resident memory of
# both. The commands run in turn, A B A B, and each ratio is taken pair by
# pair, so the machine's drift during the run cancels out; the medians are
# printed.
#
#   convert large.cpu --to otlp, --to pprof: against go-roundtrip large.cpu;
#   peak RSS against the raw (ungzipped) profile's size;
#   100 files in one call (the corpus's pprof profiles, repeated): peak RSS
#   against the largest of them alone.
#
# Usage: scripts/bench-convert.sh [RUNS]   (default 15 pairs)
# Needs: cargo, go, golang-github-google-pprof-dev, python3, and the corpus
# (PROFBRIDGE_CORPUS, else ../shared/corpus).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
corpus=${PROFBRIDGE_CORPUS:-$root/../shared/corpus}
target=${CARGO_TARGET_DIR:-$root/target}
runs=${1:-15}
gopath=/usr/share/gocode

[ -f "$gopath/src/github.com/google/pprof/profile/profile.go" ] || {
  echo "missing $gopath/src/github.com/google/pprof: apt-get install golang-github-google-pprof-dev" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p profbridge
profbridge="$target/release/profbridge"
(cd "$root/scripts/go-roundtrip" &&
  GOPATH=$gopath GO111MODULE=off GOFLAGS= GOCACHE="$work/gocache" go build -o "$work/go-roundtrip" .)
go_roundtrip="$work/go-roundtrip"

large="$corpus/pprof/large.cpu"
raw_size=$(gzip -dc "$large" | wc -c)

# One run of a command: "wall_seconds cpu_seconds peak_kib" on stdout,
# from the kernel's accounting of the finished process (wait4's rusage:
# CPU to the microsecond, where GNU time prints hundredths).
measure() {
  python3 - "$@" <<'PY' 2>"$work/stderr" || { cat "$work/stderr" >&2; echo "failed: $*" >&2; exit 1; }
import os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - start
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"exit status {os.waitstatus_to_exitcode(status)}")
print(f"{wall:.5f} {usage.ru_utime + usage.ru_stime:.5f} {usage.ru_maxrss}")
PY
}

# Runs A and B in turn RUNS times after one warm-up each; prints a row with
# the medians of A and B (wall ms, peak MB) and the median pair-by-pair
# ratios B/A of wall and CPU time.
# Usage: pair LABEL "A COMMAND" "B COMMAND"
pair() {
  local label=$1 a=$2 b=$3 i
  # shellcheck disable=SC2086
  measure $a >/dev/null
  # shellcheck disable=SC2086
  measure $b >/dev/null
  : >"$work/pairs"
  for i in $(seq "$runs"); do
    # shellcheck disable=SC2086
    echo "$(measure $a) $(measure $b)" >>"$work/pairs"
  done
  awk -v l="$label" -v raw="$raw_size" '
    function median(values, n,    sorted, k, j) {
      for (k = 1; k <= n; k++) {
        j = k
        while (j > 1 && sorted[j - 1] > values[k]) { sorted[j] = sorted[j - 1]; j-- }
        sorted[j] = values[k]
      }
      return (n % 2) ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
    }
    { n++; aw[n] = $1; ac[n] = $2; am[n] = $3; bw[n] = $4; bc[n] = $5; bm[n] = $6
      rw[n] = ($1 > 0) ? $4 / $1 : 0; rc[n] = ($2 > 0) ? $5 / $2 : 0 }
    END {
      printf "| %s | %.0f ms | %.0f ms | **%.2f×** | %.2f× | %.1f MB (%.1f× raw) | %.1f MB |\n",
        l, 1000 * median(aw, n), 1000 * median(bw, n), median(rw, n), median(rc, n),
        median(am, n) / 1024, median(am, n) * 1024 / raw, median(bm, n) / 1024
    }' "$work/pairs"
}

echo "large.cpu: $(wc -c <"$large") bytes gzipped, $raw_size raw; $runs pairs, medians"
echo
echo "| A against B (google/pprof Parse+Write, whole process) | A wall | B wall | B/A wall | B/A cpu | A peak RSS | B peak RSS |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
pair "convert large.cpu --to otlp" \
  "$profbridge convert $large --to otlp -o $work/large.otlp" "$go_roundtrip $large 1"
pair "convert large.cpu --to pprof" \
  "$profbridge convert $large --to pprof -o $work/large.pb.gz" "$go_roundtrip $large 1"

# 100 files: every binary pprof of the corpus (not the .string dumps), in
# turn, under distinct names.
mkdir -p "$work/many" "$work/many-out"
mapfile -t profiles < <(find "$corpus/pprof" -maxdepth 1 -type f ! -name '*.string' | sort)
for i in $(seq 0 99); do
  cp "${profiles[$((i % ${#profiles[@]}))]}" "$work/many/$i.pprof"
done
largest=$(ls -S "$work/many" | head -1)

peak() {
  local best=
  for _ in $(seq 5); do
    local kib
    kib=$(measure "$@" | cut -d' ' -f3)
    if [ -z "$best" ] || [ "$kib" -lt "$best" ]; then best=$kib; fi
  done
  awk -v k="$best" 'BEGIN { printf "%.1f MB", k / 1024 }'
}

echo
echo "| peak RSS, least of 5 | --to otlp | --to pprof |"
echo "| --- | --- | --- |"
echo "| the largest file alone ($largest) | $(peak "$profbridge" convert "$work/many/$largest" --to otlp -o "$work/one.otlp") | $(peak "$profbridge" convert "$work/many/$largest" --to pprof -o "$work/one.pb.gz") |"
echo "| 100 files in one call, --out-dir | $(peak "$profbridge" convert "$work"/many/*.pprof --to otlp --out-dir "$work/many-out") | $(peak "$profbridge" convert "$work"/many/*.pprof --to pprof --out-dir "$work/many-out") |"
