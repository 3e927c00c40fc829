#!/usr/bin/env bash
# Measures forwarding between two collectors, A → B, in one run, with
# tools/bench/src/bin/loadgen.rs driving A over gRPC:
#   B: `profbridge serve`, OTLP gRPC receiver, SINK exporter (nop by
#      default; `file` writes OTLP protobuf files into a temp dir);
#   A: `profbridge serve`, OTLP gRPC receiver, `otlp` exporter to B,
#   (m) with its sending queue in memory (the default),
#   (p) with a persistent sending queue (`sending_queue.storage`), every
#       request fsynced before A answers.
# First, as the ceiling, (b): loadgen straight to B.
# For each variant, loadgen sends to A as fast as one request in flight
# per connection allows; the table shows loadgen's view of A (req/s, p50,
# p99) and what reached B: B's profbridge_receiver_accepted_profiles_total
# over the run (generated requests hold one profile each). Then A's queue
# drains (at most 120 s) and the totals are checked: B took every profile
# A answered OK for, and A dropped or failed none of them.
#
# Usage: scripts/bench-forward.sh [SECONDS] [CONNECTIONS] [STACKS] [SHAPE] [SINK] [COMPRESSION]
#   (defaults 15 s, 4 connections, requests of 2000 stacks, SHAPE tree,
#   SINK nop, COMPRESSION gzip: what A's `otlp` exporter uses, gzip, zstd
#   or none). The persistent queue lives under $TMPDIR (or /tmp); set
#   TMPDIR to measure another disk. With BIN=DIR, the profbridge and
#   loadgen binaries in DIR are measured instead of building them (to
#   compare two builds in turn).
# Needs: cargo, curl.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-15}
connections=${2:-4}
stacks=${3:-2000}
shape=${4:-tree}
sink=${5:-nop}
compression=${6:-gzip}
case "$sink" in
  nop | file) ;;
  *) echo "SINK must be nop or file, not $sink" >&2; exit 2 ;;
esac

# shellcheck source=scripts/bench-common.sh
. "$root/scripts/bench-common.sh"

profbridge_and_loadgen

telemetry_yaml() {
  cat <<EOF
  telemetry:
    metrics:
      address: 127.0.0.1:0
    logs:
      level: error
EOF
}

start_sink() {
  local name=$1
  {
    cat <<EOF
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
        max_recv_msg_size_mib: 64
exporters:
EOF
    if [ "$sink" = file ]; then
      printf '  file:\n    path: %s\n    format: otlp\n' "$work/$name-data"
    else
      printf '  nop:\n'
    fi
    cat <<EOF
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [$sink]
EOF
    telemetry_yaml
  } >"$work/$name.yaml"
  start_serve "$name"
}

# A forwarder to B_GRPC; STORAGE empty: the queue is in memory.
start_forwarder() {
  local name=$1 b_grpc=$2 storage=$3
  {
    cat <<EOF
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
        max_recv_msg_size_mib: 64
exporters:
  otlp:
    endpoint: http://$b_grpc
    compression: $compression
    timeout: 30s
EOF
    if [ -n "$storage" ]; then
      printf '    sending_queue:\n      storage: %s\n' "$storage"
    fi
    cat <<EOF
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp]
EOF
    telemetry_yaml
  } >"$work/$name.yaml"
  start_serve "$name"
}

metric() { metric_at "$@"; }

# One variant (ID names its files, LABEL its row; STORAGE as for
# start_forwarder): prints its table row, then a line of totals.
run() {
  local id=$1 label=$2 storage=$3
  local b_pid b_metrics a_pid a_metrics line
  start_sink "$id-b"
  b_pid=$pid b_metrics=$metrics
  local b_grpc=$grpc
  start_forwarder "$id-a" "$b_grpc" "$storage"
  a_pid=$pid a_metrics=$metrics
  local a_grpc=$grpc

  local before after drained_at=""
  before=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  line=$("$loadgen" --endpoint "http://$a_grpc" --connections "$connections" \
    --duration "$seconds" --stacks "$stacks" --shape "$shape")
  after=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  local requests ok refused errors
  requests=$(field requests <<<"$line"); ok=$(field ok <<<"$line")
  refused=$(field refused_retryable <<<"$line"); errors=$(field errors <<<"$line")
  if [ $((ok + refused + errors)) -ne "$requests" ]; then
    echo "loadgen miscounted: $line" >&2
    exit 1
  fi
  # Let A's queue drain into B, then compare totals.
  local waited=0
  for i in $(seq 1200); do
    if [ "$(metric "$a_metrics" profbridge_exporter_queue_size)" = 0 ] &&
      [ "$(metric "$a_metrics" profbridge_pipeline_queue_size_bytes)" = 0 ]; then
      drained_at=$i
      break
    fi
    sleep 0.1
  done
  waited=$(awk -v i="${drained_at:-1200}" 'BEGIN { printf "%.1f", (i - 1) / 10 }')
  local b_total a_sent a_failed a_dropped
  b_total=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  a_sent=$(metric "$a_metrics" profbridge_exporter_sent_profiles_total)
  a_failed=$(metric "$a_metrics" profbridge_exporter_send_failed_profiles_total)
  a_dropped=$(metric "$a_metrics" profbridge_exporter_enqueue_failed_profiles_total)
  local bodies="" body
  for body in as_received recompressed encoded; do
    bodies+=" $body $(metric "$a_metrics" "profbridge_exporter_sent_requests_total{exporter=\"otlp\",body=\"$body\"}"),"
  done
  stop "$a_pid"
  stop "$b_pid"

  awk -v l="$label" -v r="$(field req_per_s <<<"$line")" -v o="$(field ok_req_per_s <<<"$line")" \
    -v p50="$(field p50_ms <<<"$line")" -v p99="$(field p99_ms <<<"$line")" \
    -v ok="$ok" -v ref="$refused" -v err="$errors" -v d=$((after - before)) -v s="$seconds" \
    -v w="$waited" \
    'BEGIN { printf "%-30s %8.1f %8.1f %8.1f %8.1f %11.1f %7d %8d %6d %8s\n", l, r, o, p50, p99, d / s, ok, ref, err, w }'
  local verdict="none lost after OK"
  if [ -z "$drained_at" ]; then
    verdict="A's queue did not drain within 120 s"
  elif [ "$b_total" -lt "$ok" ] || [ "$a_failed" != 0 ]; then
    verdict="LOST: B took $b_total profiles for $ok answered OK"
  fi
  echo "    totals: A answered OK $ok, sent $a_sent, failed $a_failed, dropped by its queue $a_dropped;" \
    "B took $b_total: $verdict"
  echo "    A's requests sent by body:${bodies%,}"
}

# The ceiling: loadgen straight to B, no forwarding.
baseline() {
  local line
  start_sink base-b
  local b_pid=$pid b_metrics=$metrics before after
  before=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  line=$("$loadgen" --endpoint "http://$grpc" --connections "$connections" \
    --duration "$seconds" --stacks "$stacks" --shape "$shape")
  after=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  stop "$b_pid"
  awk -v r="$(field req_per_s <<<"$line")" -v o="$(field ok_req_per_s <<<"$line")" \
    -v p50="$(field p50_ms <<<"$line")" -v p99="$(field p99_ms <<<"$line")" \
    -v ok="$(field ok <<<"$line")" -v ref="$(field refused_retryable <<<"$line")" \
    -v err="$(field errors <<<"$line")" -v d=$((after - before)) -v s="$seconds" \
    'BEGIN { printf "%-30s %8.1f %8.1f %8.1f %8.1f %11.1f %7d %8d %6d %8s\n", "(b) loadgen → B, no A", r, o, p50, p99, d / s, ok, ref, err, "-" }'
  echo "    requests: $(field request_bytes <<<"$line") bytes encoded, $(field gzip_bytes <<<"$line") gzipped"
}

fs_type=$(stat -f -c %T "${TMPDIR:-/tmp}" 2>/dev/null || echo "?")
echo "load: $connections connections, ${seconds} s, $shape-shaped requests of $stacks stacks; B's exporter: $sink; A's compression: $compression"
echo "persistent queue under ${TMPDIR:-/tmp} ($fs_type); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-30s %8s %8s %8s %8s %11s %7s %8s %6s %8s\n" \
  "A → B" "req/s" "ok req/s" "p50 ms" "p99 ms" "B got req/s" "ok" "refused" "errors" "drain s"
baseline
run m "(m) in-memory queue" ""
run p "(p) persistent queue" "$work/queue"
