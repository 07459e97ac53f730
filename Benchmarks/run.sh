#!/usr/bin/env bash
# Decode benchmarks: Profiles' zero-copy decode against a naive BlueCap-style Foundation decoder,
# one row per SensorTag payload kind; notification benchmarks: recv → decoded Reading through the
# real client stack (EventLoop, ATTBearer, SensorTagSession, TagSupervisor) against an emulated tag,
# one row per sensor (docs/performance.md explains the numbers).
#
#   Benchmarks/run.sh                 build (release), run the self-checks and the suites, print the tables
#   Benchmarks/run.sh --valgrind      also count instructions (cachegrind) and heap allocations
#                                     (memcheck) per decode / notification outside the harness; needs valgrind
#   Benchmarks/run.sh --suite NAME    only one suite: decode or notification
#
# Needs only the Swift toolchain: the benchmark package and its dependencies resolve like the root
# package's. The first run builds ordo-one/benchmark in release mode, which takes a few minutes.
# Raw results land in Benchmarks/.build/benchmark-results/ (JMH JSON, the harness log, the table).
set -euo pipefail
cd "$(dirname "$0")"

use_valgrind=0
suite=all
while [ $# -gt 0 ]; do
  case "$1" in
    --valgrind) use_valgrind=1 ;;
    --suite=*) suite=${1#--suite=} ;;
    --suite) [ $# -ge 2 ] || { echo "run.sh: --suite needs decode or notification" >&2; exit 2; }; suite=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$suite" in
  all|decode|notification) ;;
  *) echo "run.sh: --suite takes decode or notification, not '$suite'" >&2; exit 2 ;;
esac
if [ "$use_valgrind" -eq 1 ] && ! command -v valgrind >/dev/null; then
  echo "run.sh: --valgrind needs valgrind on PATH (apt-get install valgrind)" >&2
  exit 1
fi

out=.build/benchmark-results
mkdir -p "$out"
rm -f "$out/Current_run.jmh.json" "$out/valgrind.tsv"

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(swift --version 2>&1 | head -1), $(date -u '+%Y-%m-%d %H:%M UTC')"

echo "== building DecodeProbe, NotificationProbe and BenchmarkReport (release)"
: >"$out/build.log"
for product in DecodeProbe NotificationProbe BenchmarkReport; do
  swift build -c release --product "$product" >>"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
done
bin=$(swift build -c release --show-bin-path)

if [ "$suite" != notification ]; then
  echo "== checking every vector against the spec and the two decoders against each other"
  "$bin/DecodeProbe" check
fi
if [ "$suite" != decode ]; then
  echo "== checking that every notification sent through the client stack becomes exactly one reading"
  "$bin/NotificationProbe" check
fi

# Both benchmark targets by default; --target takes a regular expression.
case "$suite" in
  all) targets=(); what="DecodeBenchmarks (35 benchmarks) and NotificationBenchmarks (14)" ;;
  decode) targets=(--target '^DecodeBenchmarks$'); what="DecodeBenchmarks (35 benchmarks)" ;;
  notification) targets=(--target '^NotificationBenchmarks$'); what="NotificationBenchmarks (14 benchmarks)" ;;
esac
echo "== running $what, about 1 s per benchmark plus setup; log in $out/benchmark.log"
if ! swift package --allow-writing-to-package-directory benchmark "${targets[@]}" \
    --format jmh --path "$out" --no-progress >"$out/benchmark.log" 2>&1; then
  cat "$out/benchmark.log"
  exit 1
fi
[ -f "$out/Current_run.jmh.json" ] || { cat "$out/benchmark.log"; echo "run.sh: no JMH export written" >&2; exit 1; }

if [ "$use_valgrind" -eq 1 ]; then
  # Per step = (count at N2 − count at N1) / (N2 − N1): start-up and one-off work (for the
  # notification probe: the whole connection and GATT setup) cancel out.
  n1=1000 n2=11000
  echo "== valgrind: instructions (cachegrind) and allocations (memcheck) per decode / notification, N = $n1 and $n2"
  irefs() { valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
              | sed -n 's/.*I *refs: *//p' | tr -d ','; }
  allocs() { valgrind "$@" 2>&1 >/dev/null \
              | sed -n 's/.*total heap usage: *\([0-9,]*\) allocs.*/\1/p' | tr -d ','; }
  probes=()
  [ "$suite" != notification ] && probes+=(DecodeProbe)
  [ "$suite" != decode ] && probes+=(NotificationProbe)
  for probe in "${probes[@]}"; do
    for name in $("$bin/$probe" list); do
      i1=$(irefs "$bin/$probe" "$name" $n1); i2=$(irefs "$bin/$probe" "$name" $n2)
      a1=$(allocs "$bin/$probe" "$name" $n1); a2=$(allocs "$bin/$probe" "$name" $n2)
      [ -n "$i1" ] && [ -n "$i2" ] && [ -n "$a1" ] && [ -n "$a2" ] || { echo "run.sh: valgrind gave no count for $probe $name" >&2; exit 1; }
      awk -v n="$name" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" -v d=$((n2 - n1)) \
        'BEGIN { printf "%s\t%.1f\t%.3f\n", n, (i2 - i1) / d, (a2 - a1) / d }' >>"$out/valgrind.tsv"
    done
  done
fi

echo "== results (one sample = 1,000 decodes or notifications; see docs/performance.md for the normalisation)"
echo
if [ -f "$out/valgrind.tsv" ]; then
  "$bin/BenchmarkReport" "$out/Current_run.jmh.json" "$out/valgrind.tsv" | tee "$out/table.md"
else
  "$bin/BenchmarkReport" "$out/Current_run.jmh.json" | tee "$out/table.md"
fi
