#!/usr/bin/env bash
# Decode benchmarks: Profiles' zero-copy decode against a naive BlueCap-style Foundation decoder,
# one row per SensorTag payload kind (docs/performance.md explains the numbers).
#
#   Benchmarks/run.sh              build (release), check the vectors, run the suite, print the table
#   Benchmarks/run.sh --valgrind   also count instructions (cachegrind) and heap allocations
#                                  (memcheck) per decode outside the harness; needs valgrind
#
# Needs only the Swift toolchain: the benchmark package and its dependencies resolve like the root
# package's. The first run builds ordo-one/benchmark in release mode, which takes a few minutes.
# Raw results land in Benchmarks/.build/benchmark-results/ (JMH JSON, the harness log, the table).
set -euo pipefail
cd "$(dirname "$0")"

use_valgrind=0
for arg in "$@"; do
  case "$arg" in
    --valgrind) use_valgrind=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done
if [ "$use_valgrind" -eq 1 ] && ! command -v valgrind >/dev/null; then
  echo "run.sh: --valgrind needs valgrind on PATH (apt-get install valgrind)" >&2
  exit 1
fi

out=.build/benchmark-results
mkdir -p "$out"
rm -f "$out/Current_run.jmh.json" "$out/valgrind.tsv"

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(swift --version 2>&1 | head -1), $(date -u '+%Y-%m-%d %H:%M UTC')"

echo "== building DecodeProbe and BenchmarkReport (release)"
swift build -c release --product DecodeProbe >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
swift build -c release --product BenchmarkReport >>"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
bin=$(swift build -c release --show-bin-path)

echo "== checking every vector against the spec and the two decoders against each other"
"$bin/DecodeProbe" check

echo "== running DecodeBenchmarks (about 1 s per benchmark, 35 benchmarks; log in $out/benchmark.log)"
if ! swift package --allow-writing-to-package-directory benchmark \
    --format jmh --path "$out" --no-progress >"$out/benchmark.log" 2>&1; then
  cat "$out/benchmark.log"
  exit 1
fi
[ -f "$out/Current_run.jmh.json" ] || { cat "$out/benchmark.log"; echo "run.sh: no JMH export written" >&2; exit 1; }

if [ "$use_valgrind" -eq 1 ]; then
  # Per decode = (count at N2 − count at N1) / (N2 − N1): start-up and one-off work cancel out.
  n1=1000 n2=11000
  echo "== valgrind: instructions (cachegrind) and allocations (memcheck) per decode, N = $n1 and $n2"
  irefs() { valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$bin/DecodeProbe" "$1" "$2" 2>&1 >/dev/null \
              | sed -n 's/.*I *refs: *//p' | tr -d ','; }
  allocs() { valgrind "$bin/DecodeProbe" "$1" "$2" 2>&1 >/dev/null \
              | sed -n 's/.*total heap usage: *\([0-9,]*\) allocs.*/\1/p' | tr -d ','; }
  for name in $("$bin/DecodeProbe" list); do
    i1=$(irefs "$name" $n1); i2=$(irefs "$name" $n2)
    a1=$(allocs "$name" $n1); a2=$(allocs "$name" $n2)
    awk -v n="$name" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" -v d=$((n2 - n1)) \
      'BEGIN { printf "%s\t%.1f\t%.3f\n", n, (i2 - i1) / d, (a2 - a1) / d }' >>"$out/valgrind.tsv"
  done
fi

echo "== results (one sample = 1,000 decodes; see docs/performance.md for the normalisation)"
echo
if [ -f "$out/valgrind.tsv" ]; then
  "$bin/BenchmarkReport" "$out/Current_run.jmh.json" "$out/valgrind.tsv" | tee "$out/table.md"
else
  "$bin/BenchmarkReport" "$out/Current_run.jmh.json" | tee "$out/table.md"
fi
