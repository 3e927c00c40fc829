#!/usr/bin/env bash
# Runs the criterion benches of the codecs and translators (shortened:
# 1 s warm-up, 3 s of measurement each) and prints one markdown row per
# benchmark: criterion's middle estimate and its spread.
#
# Usage: scripts/bench-criterion.sh
#   the benches read the corpus (PROFBRIDGE_CORPUS, else ../shared/corpus)
#   and, for JFR, a recording the JDK makes (skipped without a JDK).
# Needs: cargo.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

echo "| bench | benchmark | time | ± |"
echo "| --- | --- | --- | --- |"
for bench in profbridge-pprof:codec profbridge-pprof:legacy profbridge-translate:translate \
  profbridge-translate:merge profbridge-jfr:convert; do
  package=${bench%%:*}
  name=${bench#*:}
  cargo bench --quiet --manifest-path "$root/Cargo.toml" -p "$package" --bench "$name" -- \
    --warm-up-time 1 --measurement-time 3 --output-format bencher 2>/dev/null |
    awk -v b="$name" '$1 == "test" {
      line = $0
      sub(/^test /, "", line); sub(/ \.\.\. bench:.*/, "", line)
      ns = $0; sub(/.*bench: */, "", ns); sub(/ ns\/iter.*/, "", ns); gsub(/,/, "", ns)
      pm = $0; sub(/.*\(\+\/- */, "", pm); sub(/\).*/, "", pm); gsub(/,/, "", pm)
      printf "| %s | %s | %.3f ms | %.3f ms |\n", b, line, ns / 1e6, pm / 1e6
    }'
done
