#!/usr/bin/env bash
# Runs every comparison of docs/benchmarks.md in one run, one after another
# on the same machine, and writes what they print, with the date, the
# commit and the machine's load before and after each part, to
# docs/benchmark-run.md (or OUT):
#   1. scripts/bench-convert.sh: `profbridge convert` against google/pprof's
#      Parse+Write, whole process, and peak memory;
#   2. scripts/bench-vs-go.sh: the same work in-process, in loops;
#   3. scripts/bench-collector.sh: the collector's intake against a bare
#      decoding server, with the nop and the pprof file exporters, on
#      generated requests and on requests made from large.cpu;
#   4. scripts/bench-forward.sh: collector A → collector B against B alone,
#      with A's exporter compressing as its receiver's client did (gzip)
#      and with no compression;
#   5. scripts/bench-kafka.sh: collector A → Kafka (a tansu broker on
#      loopback) → collector B against A → B over OTLP;
#   6. scripts/bench-criterion.sh: the criterion benches of the codecs and
#      translators, shortened.
# Each part is its own script, which can be run alone.
#
# Usage: scripts/bench-all.sh [OUT]
#   SECONDS_PER_LOAD (default 15) is how long each collector load runs.
# Needs what the scripts need: cargo, go, golang-github-google-pprof-dev,
# curl, python3, tansu (as .ci/run installs it), and the corpus
# (PROFBRIDGE_CORPUS, else ../shared/corpus).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/docs/benchmark-run.md}
seconds=${SECONDS_PER_LOAD:-15}
scratch=$(mktemp)
trap 'rm -f "$scratch"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }

commit=$(git -C "$root" rev-parse --short HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  commit="$commit with uncommitted changes"
fi

{
  echo "# Benchmark run"
  echo
  echo "Written by \`scripts/bench-all.sh\`; docs/benchmarks.md explains each"
  echo "table. Compare the ratios within this run, not absolute times across runs."
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- commit: $commit"
  echo "- machine: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
  echo "- load average at the start: $(load)"
} >"$scratch"

# Runs one part, appending its heading, command, output and the load.
# Usage: part HEADING COMMAND...
part() {
  local heading=$1 started
  shift
  started=$(date +%s)
  echo "== $heading: $*" >&2
  {
    echo
    echo "## $heading"
    echo
    echo "\`${*//"$root/"/}\`, load average before: $(load)"
    echo
  } >>"$scratch"
  "$@" >"$scratch.part"
  {
    if grep -q '^| ' "$scratch.part"; then
      cat "$scratch.part"
    else
      echo '```text'
      cat "$scratch.part"
      echo '```'
    fi
    echo
    echo "load average after: $(load); $(($(date +%s) - started)) s"
  } >>"$scratch"
  rm -f "$scratch.part"
}

part "convert against google/pprof, whole process" "$root/scripts/bench-convert.sh" 15
part "codec and translation loops against google/pprof, in-process" "$root/scripts/bench-vs-go.sh" 5
part "collector intake: decode floor, nop, pprof file sink" "$root/scripts/bench-collector.sh" "$seconds" 4
part "collector intake, requests made from large.cpu" \
  env PPROF="${PROFBRIDGE_CORPUS:-$root/../shared/corpus}/pprof/large.cpu" \
  "$root/scripts/bench-collector.sh" "$seconds" 4
part "forwarding A → B, gzip" "$root/scripts/bench-forward.sh" "$seconds" 4 2000 tree nop gzip
part "forwarding A → B, no compression" "$root/scripts/bench-forward.sh" "$seconds" 4 2000 tree nop none
part "forwarding through Kafka against OTLP" "$root/scripts/bench-kafka.sh" "$seconds" 4 2000 2 none
part "criterion benches" "$root/scripts/bench-criterion.sh"

mv "$scratch" "$out"
trap - EXIT
echo "wrote $out" >&2
