#!/usr/bin/env bash
# Whole-process measurements of collectord (docs/performance.md, issue #7):
#
#   scripts/measure throughput [--tags N] [--seconds S] [--intervals US ...]
#   scripts/measure compare    [--tags N] [--interval US] [--seconds S]   # vs the Python reference
#   scripts/measure idle       [--seconds S]
#   scripts/measure startup    [--tags N] [--interval US] [--repeat K]
#   scripts/measure reconnect  [--tags N] [--interval US] [--repeat K] [--away S]
#   scripts/measure disk       [--seconds S] [--spool-parent DIR] [steady|outage|stalled ...]
#   scripts/measure memory     [--spool-parent DIR] [flood|stalled|replay|files ...]
#   scripts/measure advertisements [--devices N] [--seconds S]   # devices that only advertise, vs Theengs
#   scripts/measure commands   [--tags N] [--commands N]   # /set to the write and to the /result (commands.py)
#   scripts/measure all                                                   # each with its defaults
#   scripts/measure smoke      [MODE ...]   # each mode (or those named) for a few seconds, checked
#
# smoke is what scripts/test runs (about 2 minutes): every mode above with tiny parameters, failing
# (exit 1) if one does not run to the end or its result is not sane (no readings counted, readings
# lost, tags not back, the spool not replayed, no JSON written); results in
# .build-static/results/smoke/ (smoke.py).
#
# Measures the binary the Debian package ships: a release build with the Swift standard library
# linked statically, stripped (built here into .build-static/). The Python side (the sequence-
# checking subscriber and the reference pipeline) runs in a virtualenv at
# ~/.cache/collectord/venv with paho-mqtt from PyPI. Results go to stderr as a table and to
# .build-static/results/<what>.json. disk and memory (durability.py: bytes written
# per hour from /proc/PID/io, and RSS in bounded scenarios) put their spools under /var/tmp, which
# must be a disk (tmpfs writes are not counted); they take about 6 minutes each.
#
# advertisements (advertisements.py) also builds the benchmark package's AdvertisementProbe (release),
# whose emulators make the stream of advertisements both sides get, and installs TheengsDecoder
# from PyPI into the same environment.
#
# scripts/measure runs this file, which works from the top of the clone wherever it is started.
set -euo pipefail
cd "$(dirname "$0")/../.."
source Benchmarks/process/prepare.sh
# perf gives software event counts where the kernel allows (optional: measurements go on without).
if ! command -v perf >/dev/null; then
  as_root=(); [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends linux-perf >/dev/null 2>&1 || true
fi

what=${1:-all}
[ $# -gt 0 ] && shift
run() {
  local w=$1; shift
  echo "== measure $w" >&2
  local script=Benchmarks/process/measure.py
  case $w in
    disk|memory) script=Benchmarks/process/durability.py ;;
    commands)
      "$python" Benchmarks/process/commands.py --binary "$binary" --out "$scratch/results/$w.json" "$@" >/dev/null
      return ;;
    advertisements)
      # The Python peer's decoder, at the version the advertisement oracles use (Tests/oracles).
      "$python" -c "import TheengsDecoder" 2>/dev/null || "$python" -m pip install -q theengsdecoder==2.5.0 >&2
      swift build -c release --package-path Benchmarks --product AdvertisementProbe >&2
      "$python" Benchmarks/process/advertisements.py --binary "$binary" --out "$scratch/results/$w.json" \
        --probe "$(swift build -c release --package-path Benchmarks --show-bin-path)/AdvertisementProbe" "$@" >/dev/null
      return ;;
  esac
  "$python" "$script" --binary "$binary" --out "$scratch/results/$w.json" "$w" "$@" >/dev/null
}
if [ "$what" = smoke ]; then
  exec "$python" Benchmarks/process/smoke.py --binary "$binary" --out-dir "$scratch/results/smoke" "$@" >/dev/null
elif [ "$what" = all ]; then
  for w in idle startup reconnect throughput compare disk memory advertisements; do run "$w"; done
else
  run "$what" "$@"
fi
