#!/usr/bin/env bash
# Measures forwarding through Kafka against forwarding over OTLP, in one
# run, with tools/bench/src/bin/loadgen.rs driving collector A over gRPC:
#   (d) A: `profbridge serve`, OTLP gRPC receiver, `otlp` exporter → B
#       (OTLP gRPC receiver, nop exporter): the direct path;
#   (k) A: OTLP gRPC receiver, `kafka` exporter → a tansu broker on
#       loopback (memory storage, topic of PARTITIONS partitions) → B:
#       `kafka` receiver, nop exporter.
# loadgen sends to A as fast as one request in flight per connection
# allows. The table shows loadgen's view of A (req/s) and what reached B
# during the run (profbridge_receiver_accepted_profiles_total; generated
# requests hold one profile each) in requests and MB of protobuf per
# second. Then A's queue drains, B catches up (at most 120 s), and the
# totals are checked: B took every profile A answered OK for. The last
# column is the requests A answered OK over the run and the drain
# together, in requests per second: what the chain delivered end to end.
#
# Usage: scripts/bench-kafka.sh [SECONDS] [CONNECTIONS] [STACKS] [PARTITIONS] [COMPRESSION]
#   (defaults 15 s, 4 connections, requests of 2000 stacks, 2 partitions,
#   Kafka compression none; gzip, snappy, lz4 or zstd compress the
#   record batches). With BIN=DIR, the profbridge and loadgen binaries in
#   DIR are measured instead of building them.
# Needs: cargo, curl, and tansu 0.6.0 ($PROFBRIDGE_TANSU, or
# $PROFBRIDGE_CACHE/tools/tansu-0.6.0-libsql as .ci/run installs it).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-15}
connections=${2:-4}
stacks=${3:-2000}
partitions=${4:-2}
compression=${5:-none}

# shellcheck source=scripts/bench-common.sh
. "$root/scripts/bench-common.sh"

tansu=${PROFBRIDGE_TANSU:-${PROFBRIDGE_CACHE:-$HOME/.cache/profbridge}/tools/tansu-0.6.0-libsql}
if [ ! -x "$tansu" ]; then
  echo "tansu not found at $tansu; run .ci/run once, or set PROFBRIDGE_TANSU" >&2
  exit 2
fi

profbridge_and_loadgen

# A free port on loopback (tansu takes no port 0).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_broker() {
  local port
  port=$(free_port)
  broker=127.0.0.1:$port
  "$tansu" broker --listener-url "tcp://$broker" --advertised-listener-url "tcp://$broker" \
    --storage-engine memory://tansu/ >"$work/tansu.log" 2>&1 &
  broker_pid=$!
  pids+=("$broker_pid")
  for _ in $(seq 100); do
    if "$tansu" topic create otlp_profiles --broker "tcp://$broker" \
      --partitions "$partitions" >>"$work/topic.log" 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "tansu did not start or create the topic:" >&2
  cat "$work/tansu.log" "$work/topic.log" >&2
  exit 1
}

service_yaml() {
  cat <<EOF
service:
  pipelines:
    profiles:
      receivers: [$1]
      exporters: [$2]
  telemetry:
    metrics:
      address: 127.0.0.1:0
    logs:
      level: error
EOF
}

otlp_receiver_yaml() {
  cat <<EOF
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:0
        max_recv_msg_size_mib: 64
EOF
}

metric() { metric_at "$@"; }

# One variant: loadgen → A for the run, then drain; prints the row and
# the totals. Expects a_metrics and b_metrics, and A's gRPC in a_grpc.
measure() {
  local label=$1 a_pid=$2 b_pid=$3
  local before after line
  before=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  line=$("$loadgen" --endpoint "http://$a_grpc" --connections "$connections" \
    --duration "$seconds" --stacks "$stacks" --shape tree)
  after=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  local ok bytes
  ok=$(field ok <<<"$line")
  bytes=$(field request_bytes <<<"$line")
  local drained=""
  for i in $(seq 1200); do
    if [ "$(metric "$a_metrics" profbridge_exporter_queue_size)" = 0 ] &&
      [ "$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)" -ge "$ok" ]; then
      drained=$i
      break
    fi
    sleep 0.1
  done
  local b_total a_failed
  b_total=$(metric "$b_metrics" profbridge_receiver_accepted_profiles_total)
  a_failed=$(metric "$a_metrics" profbridge_exporter_send_failed_profiles_total)
  stop "$a_pid"
  stop "$b_pid"
  awk -v l="$label" -v r="$(field ok_req_per_s <<<"$line")" -v d=$((after - before)) \
    -v s="$seconds" -v b="$bytes" -v ok="$ok" \
    -v w="$(awk -v i="${drained:-1200}" 'BEGIN { printf "%.1f", (i - 1) / 10 }')" \
    'BEGIN { printf "%-34s %9.1f %11.1f %10.1f %7d %8s %11.1f\n", l, r, d / s, d / s * b / 1e6, ok, w, ok / (s + w) }'
  local verdict="none lost after OK"
  if [ -z "$drained" ]; then
    verdict="B did not catch up within 120 s"
  elif [ "$b_total" -lt "$ok" ] || [ "$a_failed" != 0 ]; then
    verdict="LOST: B took $b_total profiles for $ok answered OK"
  fi
  echo "    totals: A answered OK $ok, failed $a_failed; B took $b_total ($((b_total - ok)) duplicates): $verdict"
}

direct() {
  { otlp_receiver_yaml; printf 'exporters:\n  nop:\n'; service_yaml otlp nop; } >"$work/d-b.yaml"
  start_serve d-b
  local b_pid=$pid
  b_metrics=$metrics
  {
    otlp_receiver_yaml
    printf 'exporters:\n  otlp:\n    endpoint: http://%s\n    compression: none\n    timeout: 30s\n' "$grpc"
    service_yaml otlp otlp
  } >"$work/d-a.yaml"
  start_serve d-a
  a_grpc=$grpc a_metrics=$metrics
  measure "(d) A → B over OTLP gRPC" "$pid" "$b_pid"
}

through_kafka() {
  start_broker
  {
    cat <<EOF
receivers:
  kafka:
    brokers: [$broker]
    initial_offset: earliest
    group_id: bench
    # tansu answers each fetch after the whole wait, data or not (Kafka
    # answers once fetch.min.bytes are there): a short wait, as for Kafka.
    max_fetch_wait: 5ms
    max_partition_fetch_size: 16777216
exporters:
  nop:
EOF
    service_yaml kafka nop
  } >"$work/k-b.yaml"
  start_serve k-b
  local b_pid=$pid
  b_metrics=$metrics
  {
    otlp_receiver_yaml
    cat <<EOF
exporters:
  kafka:
    brokers: [$broker]
    timeout: 30s
    producer:
      compression: $compression
      max_message_bytes: 4000000
EOF
    service_yaml otlp kafka
  } >"$work/k-a.yaml"
  start_serve k-a
  a_grpc=$grpc a_metrics=$metrics
  measure "(k) A → Kafka ($partitions partitions) → B" "$pid" "$b_pid"
  stop "$broker_pid"
}

echo "load: $connections connections, ${seconds} s, tree-shaped requests of $stacks stacks; Kafka compression: $compression"
echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); broker: tansu $("$tansu" --version 2>/dev/null | awk '{print $2}') (memory storage)"
printf "%-34s %9s %11s %10s %7s %8s %11s\n" "path" "A req/s" "B got req/s" "B got MB/s" "ok" "drain s" "end-to-end"
direct
through_kafka
