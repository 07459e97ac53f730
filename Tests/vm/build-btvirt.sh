#!/usr/bin/env bash
# Builds BlueZ's btvirt (virtual LE controllers) from Debian's bluez-source with our patches
# (Tests/vm/btvirt-*.patch: multilink, reset-drops-links, le-read-rssi, scan-first-report,
# adv-data-reports, wedge), by one gcc invocation over the sources btvirt needs (no configure,
# no automake, no glib), after btvirt-scan-report-test.c has checked the patched controller under
# AddressSanitizer. Prints the binary's path on stdout.
#
# Cached in $CACHE (default .build-vm/btvirt) under a key made of the bluez-source version, the
# patches, the check and this script: a second run costs a sha256sum.
#
#   Tests/vm/build-btvirt.sh [CACHE_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${1:-$repo/.build-vm/btvirt}"
tarball=/usr/src/bluez.tar.bz2
patches=("$here/btvirt-multilink.patch" "$here/btvirt-reset-drops-links.patch" "$here/btvirt-le-read-rssi.patch"
         "$here/btvirt-scan-first-report.patch" "$here/btvirt-adv-data-reports.patch"
         "$here/btvirt-wedge.patch" "$here/btvirt-stable-address.patch")

[ -r "$tarball" ] || { echo "build-btvirt: $tarball missing (apt install bluez-source)" >&2; exit 1; }
version="$(dpkg-query -W -f='${Version}' bluez-source)"
check="$here/btvirt-scan-report-test.c"
key="$( { echo "$version"; cat "${patches[@]}" "$check" "$0"; } | sha256sum | cut -c1-16)"
out="$cache/$key"
if [ -x "$out/btvirt" ]; then
  echo "$out/btvirt"
  exit 0
fi

start=$(date +%s.%N)
work="$cache/src.$$"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# Only the members btvirt is built from; bunzip2 of the whole archive dominates the time.
top="$(tar tjf "$tarball" 2>/dev/null | head -1 | cut -d/ -f1)" || true
[ -n "$top" ] || { echo "build-btvirt: cannot read $tarball" >&2; exit 1; }
tar xjf "$tarball" -C "$work" --strip-components=1 \
  "$top/emulator" "$top/src/shared" "$top/lib" "$top/monitor"
t_extract=$(date +%s.%N)

for p in "${patches[@]}"; do
  (cd "$work" && patch -p1 --quiet --forward < "$p") || {
    echo "build-btvirt: $(basename "$p") does not apply to bluez-source $version" >&2; exit 1; }
done

# What configure would have found on Debian; only these are consulted by the sources below.
upstream="${version%%-*}"
cat > "$work/config.h" <<EOF
#define VERSION "${upstream#*:}"
#define HAVE_GETRANDOM 1
#define HAVE_SYS_RANDOM_H 1
#define HAVE_LINUX_TYPES_H 1
#define HAVE_LINUX_IF_ALG_H 1
EOF
# <bluetooth/*.h> as the build tree provides them (lib/ is the public headers' source).
mkdir -p "$work/include/bluetooth"
for h in "$work"/lib/*.h; do ln -s "$h" "$work/include/bluetooth/$(basename "$h")"; done

# Makefile.tools: emulator_btvirt_SOURCES, plus from lib/libbluetooth-internal.la and
# src/libshared-mainloop.la only what those reference.
sources=(
  emulator/main.c emulator/serial.c emulator/server.c emulator/vhci.c emulator/btdev.c
  emulator/bthost.c emulator/smp.c emulator/phy.c emulator/amp.c emulator/le.c
  src/shared/queue.c src/shared/util.c src/shared/crypto.c src/shared/ecc.c
  src/shared/ringbuf.c src/shared/io-mainloop.c src/shared/timeout-mainloop.c
  src/shared/mainloop.c src/shared/mainloop-notify.c
  lib/bluetooth.c lib/hci.c
)
(cd "$work" && gcc -O2 -g0 -w -DHAVE_CONFIG_H -I. -Iinclude -Iemulator \
  -o btvirt "${sources[@]}")
t_build=$(date +%s.%N)

# The patched emulator's own check, under AddressSanitizer, before anything uses it.
(cd "$work" && gcc -O1 -g -w -fsanitize=address -fno-omit-frame-pointer -DHAVE_CONFIG_H -I. -Iinclude -Iemulator \
  -o scan-report-test "$check" emulator/btdev.c src/shared/queue.c src/shared/util.c src/shared/timeout-mainloop.c \
  src/shared/mainloop.c src/shared/mainloop-notify.c src/shared/io-mainloop.c lib/bluetooth.c)
"$work/scan-report-test" >&2 || { echo "build-btvirt: the patched emulator fails its check" >&2; exit 1; }

find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "src.*" -exec rm -rf {} +  # older builds
mkdir -p "$out"
cp "$work/btvirt" "$out/btvirt.tmp"
mv "$out/btvirt.tmp" "$out/btvirt"
awk -v v="$version" -v a="$start" -v b="$t_extract" -v c="$t_build" \
  'BEGIN { printf "btvirt: bluez-source %s, patched; extract %.1f s, compile %.1f s\n", v, b - a, c - b }' \
  > "$out/build.txt"
cat "$out/build.txt" >&2
echo "$out/btvirt"
