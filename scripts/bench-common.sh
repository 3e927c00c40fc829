# Shared by the benchmark scripts (sourced, not run): a scratch folder
# and the processes to stop on exit, and small helpers.
# Expects $root (the repository) to be set.

# Where cargo builds: CARGO_TARGET_DIR when set, as cargo does.
target=${CARGO_TARGET_DIR:-$root/target}

work=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The value of KEY=value in a loadgen line on stdin.
field() { sed -n "s/.*\b$1=\([0-9.]*\).*/\1/p"; }

# Waits (at most 30 s) until FILE has a line matching PATTERN; prints it.
wait_line() {
  local file=$1 pattern=$2 line
  for _ in $(seq 300); do
    line=$(grep -m1 -- "$pattern" "$file" 2>/dev/null || true)
    if [ -n "$line" ]; then
      echo "$line"
      return 0
    fi
    sleep 0.1
  done
  echo "timed out waiting for '$pattern' in $file" >&2
  return 1
}

stop() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# Sum of a counter or gauge over its label sets, from the /metrics at ADDRESS.
metric_at() {
  curl -s --max-time 5 "http://$1/metrics" |
    awk -v m="$2" '$1 == m || index($1, m "{") == 1 { s += $NF } END { printf "%.0f\n", s }'
}

# Starts "$profbridge" serve on $work/NAME.yaml; sets pid, grpc and
# metrics (the addresses it prints), and stops it on exit.
start_serve() {
  local name=$1
  local config="$work/$name.yaml" out="$work/$name.out"
  "$profbridge" serve --config "$config" >"$out" 2>"$work/$name.err" &
  pid=$!
  pids+=("$pid")
  if ! wait_line "$out" "profbridge: ready" >/dev/null; then
    cat "$work/$name.err" >&2
    exit 1
  fi
  grpc=$(sed -n 's/.*OTLP gRPC listening on //p' "$out")
  metrics=$(sed -n 's/.*telemetry.*listening on //p' "$out")
}

# Sets profbridge and loadgen: the binaries in $BIN when it is set (to
# compare two builds in turn), else release builds of this checkout.
profbridge_and_loadgen() {
  if [ -n "${BIN:-}" ]; then
    profbridge="$BIN/profbridge"
    loadgen="$BIN/loadgen"
  else
    cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p profbridge
    cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p profbridge-bench \
      --bin loadgen
    profbridge="$target/release/profbridge"
    loadgen="$target/release/loadgen"
  fi
}
