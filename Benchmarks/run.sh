#!/usr/bin/env bash
# Decode benchmarks: Profiles' zero-copy decode against a naive BlueCap-style Foundation decoder,
# one row per SensorTag payload kind; notification benchmarks: recv → decoded Reading through the
# real client stack (EventLoop, ATTBearer, DeviceSession, TagSupervisor) against an emulated tag,
# one row per sensor; publish benchmarks: the daemon's whole per-reading path, notification →
# encode → mosquitto_publish with a real mosquitto on a loopback port, and the PUBACK, one row per
# sensor, plus the same path into the spool; advertisement benchmarks: a device that only
# advertises, from the management socket's read (a Device Found from the emulated kernel) through
# the daemon's listener, fleet and device (repeat check, decode, decryption) to mosquitto_publish
# of each of its readings, and their PUBACKs, one row per format (docs/performance.md explains the
# numbers).
#
#   Benchmarks/run.sh                 build (release), run the self-checks and the suites, print the tables
#   Benchmarks/run.sh --valgrind      also count instructions (cachegrind) and heap allocations
#                                     (memcheck; for publish and advertisement, split into Swift's and
#                                     libmosquitto's) per decode / notification / advertisement outside
#                                     the harness; needs valgrind
#   Benchmarks/run.sh --suite NAME    only one suite: decode, notification, publish or advertisement
#
# Needs the Swift toolchain, and mosquitto + mosquitto-clients for the publish and advertisement
# suites (scripts/install-deps; without them a full run skips those suites). The benchmark package
# and its dependencies resolve like the root package's. The first run builds ordo-one/benchmark in
# release mode, which takes a few minutes. Raw results land in Benchmarks/.build/benchmark-results/
# (JMH JSON, the harness log, the table, valgrind.tsv, cpu.tsv).
set -euo pipefail
cd "$(dirname "$0")"
self=$(basename "$0")

use_valgrind=0
suite=all
while [ $# -gt 0 ]; do
  case "$1" in
    --valgrind) use_valgrind=1 ;;
    --suite=*) suite=${1#--suite=} ;;
    --suite) [ $# -ge 2 ] || { echo "run.sh: --suite needs decode, notification, publish or advertisement" >&2; exit 2; }; suite=$2; shift ;;
    -h|--help) sed -n '2,24p' "$self"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$suite" in
  all|decode|notification|publish|advertisement) ;;
  *) echo "run.sh: --suite takes decode, notification, publish or advertisement, not '$suite'" >&2; exit 2 ;;
esac
if [ "$use_valgrind" -eq 1 ] && ! command -v valgrind >/dev/null; then
  echo "run.sh: --valgrind needs valgrind on PATH (apt-get install valgrind)" >&2
  exit 1
fi
# The publish and advertisement suites start their own mosquitto (and, for their checks, mosquitto_sub).
have_mosquitto=1
for tool in mosquitto mosquitto_sub; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || have_mosquitto=0
done
if [ "$have_mosquitto" -eq 0 ]; then
  if [ "$suite" = publish ] || [ "$suite" = advertisement ]; then
    echo "run.sh: the $suite suite needs mosquitto and mosquitto_sub (scripts/install-deps)" >&2
    exit 1
  fi
  [ "$suite" = all ] && echo "== mosquitto or mosquitto_sub not installed: skipping the publish and advertisement suites (scripts/install-deps)"
fi
run_decode=0 run_notification=0 run_publish=0 run_advertisement=0
case "$suite" in
  all) run_decode=1; run_notification=1; run_publish=$have_mosquitto; run_advertisement=$have_mosquitto ;;
  decode) run_decode=1 ;;
  notification) run_notification=1 ;;
  publish) run_publish=1 ;;
  advertisement) run_advertisement=1 ;;
esac

out=.build/benchmark-results
mkdir -p "$out"
rm -f "$out/Current_run.jmh.json" "$out/valgrind.tsv" "$out/cpu.tsv"

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(swift --version 2>&1 | head -1), $(date -u '+%Y-%m-%d %H:%M UTC')"

products=()
[ "$run_decode" -eq 1 ] && products+=(DecodeProbe)
[ "$run_notification" -eq 1 ] && products+=(NotificationProbe)
[ "$run_publish" -eq 1 ] && products+=(PublishProbe)
[ "$run_advertisement" -eq 1 ] && products+=(AdvertisementProbe)
echo "== building ${products[*]} and BenchmarkReport (release)"
: >"$out/build.log"
for product in "${products[@]}" BenchmarkReport; do
  swift build -c release --product "$product" >>"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
done
bin=$(swift build -c release --show-bin-path)

if [ "$run_decode" -eq 1 ]; then
  echo "== checking every vector against the spec and the two decoders against each other"
  "$bin/DecodeProbe" check
fi
if [ "$run_notification" -eq 1 ]; then
  echo "== checking that every notification sent through the client stack becomes exactly one reading"
  "$bin/NotificationProbe" check
fi
if [ "$run_publish" -eq 1 ]; then
  echo "== checking that every notification becomes one acknowledged PUBLISH that a subscriber receives, in sequence"
  "$bin/PublishProbe" check
fi
if [ "$run_advertisement" -eq 1 ]; then
  echo "== checking that every advertisement gives its readings, each an acknowledged PUBLISH that a subscriber receives, in sequence"
  "$bin/AdvertisementProbe" check
fi

# The benchmark targets of the chosen suites; --target takes a regular expression.
targets=() what=()
[ "$run_decode" -eq 1 ] && { targets+=(DecodeBenchmarks); what+=("DecodeBenchmarks (35 benchmarks)"); }
[ "$run_notification" -eq 1 ] && { targets+=(NotificationBenchmarks); what+=("NotificationBenchmarks (14)"); }
[ "$run_publish" -eq 1 ] && { targets+=(PublishBenchmarks); what+=("PublishBenchmarks (24)"); }
[ "$run_advertisement" -eq 1 ] && { targets+=(AdvertisementBenchmarks); what+=("AdvertisementBenchmarks (6, 3 s each)"); }
target_re="^($(IFS='|'; echo "${targets[*]}"))\$"
echo "== running $(IFS=,; echo "${what[*]}" | sed 's/,/, /g'), about 1 s per benchmark plus setup; log in $out/benchmark.log"
if ! swift package --allow-writing-to-package-directory benchmark --target "$target_re" \
    --format jmh --path "$out" --no-progress >"$out/benchmark.log" 2>&1; then
  cat "$out/benchmark.log"
  exit 1
fi
[ -f "$out/Current_run.jmh.json" ] || { cat "$out/benchmark.log"; echo "run.sh: no JMH export written" >&2; exit 1; }

if [ "$use_valgrind" -eq 1 ]; then
  # Per step = (count at N2 − count at N1) / (N2 − N1): start-up and one-off work (for the
  # notification probe: the whole connection and GATT setup) cancel out.
  n1=1000 n2=11000
  echo "== valgrind: instructions (cachegrind) and allocations (memcheck) per decode / notification / advertisement, N = $n1 and $n2"
  irefs() { valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
              | sed -n 's/.*I *refs: *//p' | tr -d ','; }
  allocs() { valgrind "$@" 2>&1 >/dev/null \
              | sed -n 's/.*total heap usage: *\([0-9,]*\) allocs.*/\1/p' | tr -d ','; }
  # memcheck with an allocation tree: prints "total swift libmosquitto", the blocks allocated in
  # all, by Swift code (everything the Swift runtime allocates goes through swift_slowAlloc) and
  # inside the libmosquitto calls the publisher makes (inclusive).
  xtree="$out/xtree.kcg"
  attributed() {
    valgrind --xtree-memory=full --xtree-memory-file="$xtree" "$@" >/dev/null 2>&1 || return 0
    callgrind_annotate --inclusive=yes --threshold=100 "$xtree" 2>/dev/null | awk '
      { line = $0; gsub(/\([^)]*\)/, "", line); n = split(line, f, " ") }
      n >= 7 && f[1] ~ /^[0-9,]+$/ {
        v = f[4]; gsub(",", "", v)
        if (line ~ /PROGRAM TOTALS/) total = v
        else if (line ~ /:swift_slowAlloc$/) swift += v
        else if (line ~ /:mosquitto_(publish|loop_read|loop_write|loop_misc)$/) mosq += v
      }
      END { if (total != "") printf "%d %d %d\n", total, swift, mosq }'
  }
  probes=()
  [ "$run_decode" -eq 1 ] && probes+=(DecodeProbe)
  [ "$run_notification" -eq 1 ] && probes+=(NotificationProbe)
  [ "$run_publish" -eq 1 ] && probes+=(PublishProbe)
  [ "$run_advertisement" -eq 1 ] && probes+=(AdvertisementProbe)
  for probe in "${probes[@]}"; do
    for name in $("$bin/$probe" list); do
      i1=$(irefs "$bin/$probe" "$name" $n1); i2=$(irefs "$bin/$probe" "$name" $n2)
      if [ "$probe" = PublishProbe ] || [ "$probe" = AdvertisementProbe ]; then
        read -r a1 s1 m1 <<<"$(attributed "$bin/$probe" "$name" $n1)"
        read -r a2 s2 m2 <<<"$(attributed "$bin/$probe" "$name" $n2)"
        [ -n "$m1" ] && [ -n "$m2" ] || { echo "run.sh: memcheck gave no allocation tree for $probe $name" >&2; exit 1; }
      else
        a1=$(allocs "$bin/$probe" "$name" $n1); a2=$(allocs "$bin/$probe" "$name" $n2)
      fi
      [ -n "$i1" ] && [ -n "$i2" ] && [ -n "$a1" ] && [ -n "$a2" ] || { echo "run.sh: valgrind gave no count for $probe $name" >&2; exit 1; }
      if [ "$probe" = PublishProbe ] || [ "$probe" = AdvertisementProbe ]; then
        awk -v n="$name" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" -v s1="$s1" -v s2="$s2" -v m1="$m1" -v m2="$m2" -v d=$((n2 - n1)) \
          'BEGIN { printf "%s\t%.1f\t%.4f\t%.4f\t%.4f\n", n, (i2 - i1) / d, (a2 - a1) / d, (s2 - s1) / d, (m2 - m1) / d }' >>"$out/valgrind.tsv"
      else
        awk -v n="$name" -v i1="$i1" -v i2="$i2" -v a1="$a1" -v a2="$a2" -v d=$((n2 - n1)) \
          'BEGIN { printf "%s\t%.1f\t%.3f\n", n, (i2 - i1) / d, (a2 - a1) / d }' >>"$out/valgrind.tsv"
      fi
    done
  done
  rm -f "$xtree"
fi

if [ "$run_publish" -eq 1 ]; then
  # CPU time of the loop's thread (user + system) and wall time per step, outside the harness and
  # valgrind: what a notification costs this machine, kernel included; 20,000 steps after 1,000.
  # Three rounds, each over every case, so that a burst of other load hits one round of several
  # cases rather than every round of one; the report takes the median.
  echo "== CPU time per notification (PublishProbe cpu, 20,000 steps each, 3 rounds)"
  for round in 1 2 3; do
    for name in $("$bin/PublishProbe" list); do
      "$bin/PublishProbe" cpu "$name" 20000 >>"$out/cpu.tsv" || { echo "run.sh: PublishProbe cpu $name failed" >&2; exit 1; }
    done
  done
fi

if [ "$run_advertisement" -eq 1 ]; then
  # The same for an advertisement: its readings' publishes and PUBACKs, 20,000 steps after 1,000.
  echo "== CPU time per advertisement (AdvertisementProbe cpu, 20,000 steps each, 3 rounds)"
  for round in 1 2 3; do
    for name in $("$bin/AdvertisementProbe" list); do
      "$bin/AdvertisementProbe" cpu "$name" 20000 >>"$out/cpu.tsv" || { echo "run.sh: AdvertisementProbe cpu $name failed" >&2; exit 1; }
    done
  done
fi

echo "== results (one sample = 1,000 decodes, notifications or advertisements; see docs/performance.md for the normalisation)"
echo
report=("$out/Current_run.jmh.json")
[ -f "$out/valgrind.tsv" ] && report+=("$out/valgrind.tsv")
[ -f "$out/cpu.tsv" ] && report+=(--cpu "$out/cpu.tsv")
"$bin/BenchmarkReport" "${report[@]}" | tee "$out/table.md"
