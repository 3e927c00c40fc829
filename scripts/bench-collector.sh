#!/usr/bin/env bash
# Measures the collector's gRPC intake against a floor, in one run, with
# tools/bench/src/bin/loadgen.rs as the client:
#   (a) floor: tools/bench/src/bin/decode_floor.rs, a bare tonic
#       ProfilesService that decodes each request and answers OK;
#   (b) `profbridge serve` with the `nop` exporter;
#   (c) `profbridge serve` with the pprof `file` exporter into a temp dir;
#   (d) overload: (c) with `queue: {max_bytes: QUEUE}` at twice the
#       sustainable rate (--rate); the peak resident memory is the
#       collector's VmHWM.
#   (e) the sustainable rate of (c): offered rates (--rate) from (c)'s
#       written rate upwards in 10% steps, each for SECONDS/2 s against a
#       fresh collector; the highest that is taken (at least 99% answered
#       OK, and all written within 5 s of the run's end), narrowed to 2.5%
#       by halving the last step twice, is the sustainable throughput the
#       target is checked against.
# (a)–(c) send as fast as one request in flight per connection allows.
# Every row checks ok + refused_retryable + errors = requests; (d) also
# checks errors = 0, and, from the collector's /metrics once its queue has
# drained, that every accepted profile was written (none dropped after OK).
#
# Usage: scripts/bench-collector.sh [SECONDS] [CONNECTIONS] [STACKS] [QUEUE] [SHAPE]
#   (defaults 15 s, 4 connections, generated requests of 2000 stacks, 64MiB,
#   SHAPE tree: stacks from a call tree; random: frames drawn at random)
# With PPROF=FILE in the environment, every request is that pprof (or legacy
# profile) converted to OTLP instead of a generated one; with GZIP_LEVEL=N
# the file exporter compresses at that level instead of its default (1).
# The file sink writes under a scratch folder from mktemp, so TMPDIR=DIR
# moves it: on the benchmark machine's ext4 (no journal), creating files
# near thousands deleted in the last minutes cost up to 1 ms of system time
# each, so a run right after another's clean-up in the same folder measured
# the filesystem more than the collector (docs/benchmarks.md, "Where the file sink's files go").
# Needs: cargo, curl.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-15}
connections=${2:-4}
stacks=${3:-2000}
queue=${4:-64MiB}
shape=${5:-tree}

# shellcheck source=scripts/bench-common.sh
. "$root/scripts/bench-common.sh"

cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p profbridge
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p profbridge-bench \
  --bin loadgen --bin decode_floor
profbridge="$target/release/profbridge"
loadgen="$target/release/loadgen"
floor="$target/release/decode_floor"

# Starts `profbridge serve` with EXPORTER (nop or file) and QUEUE_BYTES
# (empty: the default); sets pid, grpc and metrics.
start_collector() {
  local name=$1 exporter=$2 queue_bytes=$3
  local config="$work/$name.yaml" out="$work/$name.out"
  {
    echo "receivers:"
    echo "  otlp:"
    echo "    protocols:"
    echo "      grpc:"
    echo "        endpoint: 127.0.0.1:0"
    echo "exporters:"
    if [ "$exporter" = file ]; then
      echo "  file:"
      echo "    path: $work/$name-data"
      if [ -n "${GZIP_LEVEL:-}" ]; then echo "    gzip_level: $GZIP_LEVEL"; fi
    else
      echo "  nop:"
    fi
    echo "service:"
    echo "  pipelines:"
    echo "    profiles:"
    echo "      receivers: [otlp]"
    echo "      exporters: [$exporter]"
    if [ -n "$queue_bytes" ]; then
      echo "      queue:"
      echo "        max_bytes: $queue_bytes"
    fi
    echo "  telemetry:"
    echo "    metrics:"
    echo "      address: 127.0.0.1:0"
    echo "    logs:"
    echo "      level: error" # refusals are logged at warn, one line each
  } >"$config"
  "$profbridge" serve --config "$config" >"$out" 2>"$work/$name.err" &
  pid=$!
  pids+=("$pid")
  wait_line "$out" "profbridge: ready" >/dev/null
  grpc=$(sed -n 's/.*OTLP gRPC listening on //p' "$out")
  metrics=$(sed -n 's/.*telemetry.*listening on //p' "$out")
}

# Sum of a counter or gauge over its label sets.
metric() { metric_at "$metrics" "$1"; }

# Runs loadgen against ADDRESS with extra arguments; prints its line and
# checks that every request is counted once.
load() {
  local address=$1 line
  shift
  line=$("$loadgen" --endpoint "http://$address" --connections "$connections" \
    --duration "$seconds" --stacks "$stacks" --shape "$shape" ${PPROF:+--pprof "$PPROF"} "$@")
  local requests ok refused errors
  requests=$(field requests <<<"$line"); ok=$(field ok <<<"$line")
  refused=$(field refused_retryable <<<"$line"); errors=$(field errors <<<"$line")
  if [ $((ok + refused + errors)) -ne "$requests" ]; then
    echo "loadgen miscounted: $line" >&2
    exit 1
  fi
  echo "$line"
}

row() {
  local label=$1 line=$2
  awk -v l="$label" -v r="$(field req_per_s <<<"$line")" -v o="$(field ok_req_per_s <<<"$line")" \
    -v mb="$(field ok_mb_per_s <<<"$line")" -v p50="$(field p50_ms <<<"$line")" \
    -v p99="$(field p99_ms <<<"$line")" -v ok="$(field ok <<<"$line")" \
    -v ref="$(field refused_retryable <<<"$line")" -v err="$(field errors <<<"$line")" \
    'BEGIN { printf "%-34s %8.1f %8.1f %9.1f %8.1f %8.1f %7d %8d %6d\n", l, r, o, mb, p50, p99, ok, ref, err }'
}

if [ -n "${PPROF:-}" ]; then
  echo "load: $connections connections, ${seconds} s, requests made from $PPROF"
else
  echo "load: $connections connections, ${seconds} s, $shape-shaped requests of $stacks stacks"
fi
printf "%-34s %8s %8s %9s %8s %8s %7s %8s %6s\n" \
  "" "req/s" "ok req/s" "ok MB/s" "p50 ms" "p99 ms" "ok" "refused" "errors"

# (a) floor
"$floor" >"$work/floor.out" &
pid=$!
pids+=("$pid")
floor_addr=$(wait_line "$work/floor.out" "listening on" | sed 's/listening on //')
line_a=$(load "$floor_addr")
stop "$pid"
row "(a) floor: decode + OK" "$line_a"

# (b) nop exporter
start_collector nop nop ""
line_b=$(load "$grpc")
stop "$pid"
row "(b) serve, nop exporter" "$line_b"

# (c) pprof file exporter; the sustainable rate is what the exporter wrote
# during the run (less than what was accepted if the queue filled).
start_collector file file ""
line_c=$(load "$grpc")
written=$(metric profbridge_exporter_sent_profiles_total)
accepted=$(metric profbridge_receiver_accepted_profiles_total)
stop "$pid"
row "(c) serve, pprof file exporter" "$line_c"
ok_c=$(field ok <<<"$line_c")
sustainable=$(awk -v ok="$ok_c" -v w="$written" -v a="$accepted" -v s="$seconds" \
  'BEGIN { per = (ok > 0) ? a / ok : 1; x = (per > 0) ? w / per / s : 0; y = ok / s; printf "%.1f", (x < y) ? x : y }')
echo "    (c) exporter wrote $written of $accepted accepted profiles during the run;" \
  "sustainable rate ${sustainable} req/s"

# (e) the highest offered rate the pprof exporter keeps up with.
step_seconds=$(awk -v s="$seconds" 'BEGIN { printf "%.1f", (s / 2 < 5) ? 5 : s / 2 }')
# Whether the collector took and wrote every request of a paced run.
keeps_up() {
  local line=$1 ok requests
  ok=$(field ok <<<"$line"); requests=$(field requests <<<"$line")
  # A refusal or two is a burst of the four paced connections meeting,
  # not a rate the exporter cannot keep up with.
  awk -v ok="$ok" -v r="$requests" 'BEGIN { exit !(ok >= 0.99 * r) }' || return 1
  for _ in $(seq 50); do
    [ "$(metric profbridge_exporter_sent_profiles_total)" = "$(metric profbridge_receiver_accepted_profiles_total)" ] && return 0
    sleep 0.1
  done
  return 1
}
# Tries one offered rate against a fresh collector; succeeds if it kept up.
try_rate() {
  local rate=$1 line taken
  start_collector search file ""
  line=$(seconds=$step_seconds load "$grpc" --rate "$rate")
  if keeps_up "$line"; then taken=1; else taken=0; fi
  stop "$pid"
  echo "    (e) ${rate} req/s offered: $(field ok <<<"$line") of $(field requests <<<"$line") taken$([ "$taken" = 1 ] && echo ", all written" || echo "; falls behind")"
  [ "$taken" = 1 ]
}
search_rate=$(awk -v s="$sustainable" 'BEGIN { printf "%.1f", (s > 1) ? s : 1 }')
kept=0
while try_rate "$search_rate"; do
  kept=$search_rate
  search_rate=$(awk -v r="$search_rate" 'BEGIN { printf "%.1f", r * 1.1 }')
done
# Two halvings of the last 10% step narrow the rate to 2.5%.
if awk -v k="$kept" 'BEGIN { exit !(k > 0) }'; then
  failed=$search_rate
  for _ in 1 2; do
    middle=$(awk -v k="$kept" -v f="$failed" 'BEGIN { printf "%.1f", (k + f) / 2 }')
    if try_rate "$middle"; then kept=$middle; else failed=$middle; fi
  done
fi
if awk -v k="$kept" -v s="$sustainable" 'BEGIN { exit !(k > s) }'; then
  sustainable=$kept
fi
echo "    sustainable rate of the pprof file exporter: ${sustainable} req/s"

# (d) overload: twice the sustainable rate, small queue.
rate=$(awk -v s="$sustainable" 'BEGIN { printf "%.1f", 2 * s }')
start_collector overload file "$queue"
idle_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
line_d=$(load "$grpc" --rate "$rate")
written_run_d=$(metric profbridge_exporter_sent_profiles_total)
# Let the queue drain (at most 60 s), then compare what was written with
# what was accepted.
for _ in $(seq 600); do
  [ "$(metric profbridge_pipeline_queue_size_bytes)" = 0 ] && break
  sleep 0.1
done
accepted_d=$(metric profbridge_receiver_accepted_profiles_total)
written_d=$(metric profbridge_exporter_sent_profiles_total)
failed_d=$(metric profbridge_exporter_send_failed_profiles_total)
# The kernel's high-water mark of the collector's resident memory.
peak_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
stop "$pid"
row "(d) overload, ${rate} req/s offered" "$line_d"
echo "    (d) exporter wrote $written_run_d profiles during the run"

echo
awk -v a="$(field ok_req_per_s <<<"$line_a")" -v b="$(field ok_req_per_s <<<"$line_b")" \
  -v c="$(field ok_req_per_s <<<"$line_c")" -v s="$sustainable" 'BEGIN {
    printf "(b)/(a) throughput: %.2f\n", b / a
    printf "(c)/(a) throughput under overload, requests answered OK: %.2f\n", c / a
    printf "(e)/(a) throughput, sustainable (taken and written): %.2f   target >= 0.75 (issue 30): %s\n", s / a, (s / a >= 0.75) ? "met" : "NOT met"
  }'
awk -v kb="$peak_kb" -v idle="$idle_kb" -v q="$queue" 'BEGIN {
    n = q + 0; u = substr(q, length(n "") + 1)
    m = (u == "GiB") ? 1024 : (u == "MiB") ? 1 : (u == "KiB") ? 1 / 1024 : \
        (u == "GB") ? 1e9 / 1048576 : (u == "MB") ? 1e6 / 1048576 : (u == "KB") ? 1e3 / 1048576 : 1 / 1048576
    limit = n * m + 100; peak = kb / 1024
    printf "(d) peak RSS: %.1f MiB (%.1f MiB before the load); queue budget + 100 MiB = %.1f MiB: %s\n", peak, idle / 1024, limit, (peak < limit) ? "met" : "NOT met"
  }'
errors_d=$(field errors <<<"$line_d")
echo "(d) requests=$(field requests <<<"$line_d") ok=$(field ok <<<"$line_d")" \
  "refused_retryable=$(field refused_retryable <<<"$line_d") errors=$errors_d:" \
  "$([ "$errors_d" = 0 ] && echo "no errors" || echo "ERRORS")"
echo "(d) after draining: accepted $accepted_d profiles, wrote $written_d, failed $failed_d:" \
  "$([ "$accepted_d" = "$written_d" ] && [ "$failed_d" = 0 ] && echo "none dropped after OK" || echo "DROPPED")"
