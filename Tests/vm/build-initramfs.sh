#!/usr/bin/env bash
# Builds the guest's initramfs: busybox, the kernel modules the guest needs (9p over virtio for
# the host's root, Bluetooth with hci_vhci for btvirt, the crypto btvirt and the kernel's ECDH
# self-test need, and for the power cut runs a virtio disk with ext4 and a virtio network card),
# a /sbin/modprobe stub and Tests/vm/init. Prints "KERNEL INITRAMFS".
#
#   Tests/vm/build-initramfs.sh [CACHE_DIR [KERNEL_ROOT]]
#
# Without KERNEL_ROOT the kernel is Debian's linux-image-amd64 installed on the host: the newest
# /boot/vmlinuz-* whose modules include hci_vhci. With it, the kernel and its modules come from
# that root (KERNEL_ROOT/boot/vmlinuz-KVER, KERNEL_ROOT/lib/modules/KVER with modules.dep, as
# Tests/vm/fetch-kernel.sh makes it), for a kernel not installed here. Cached under a key of
# kernel version and the inputs, one build per kernel.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${1:-$repo/.build-vm/initramfs}"
kroot="${2:-}"
[ -z "$kroot" ] || kroot="$(cd "$kroot" && pwd)"

kver=""
for k in $(ls -1 "$kroot"/boot/vmlinuz-* 2>/dev/null | sed 's|.*/boot/vmlinuz-||' | sort -V -r); do
  if [ -n "$(find "$kroot/lib/modules/$k/kernel/drivers/bluetooth/" -name 'hci_vhci.ko*' 2>/dev/null)" ]; then
    kver=$k
    break
  fi
done
[ -n "$kver" ] || { echo "build-initramfs: no ${kroot:-}/boot/vmlinuz-* with hci_vhci (apt install linux-image-amd64)" >&2; exit 1; }
kernel=$kroot/boot/vmlinuz-$kver
modprobe=(modprobe -S "$kver")
[ -z "$kroot" ] || modprobe+=(-d "$kroot")

# Load order (see docs in Tests/vm/README.md): virtio and 9p first; the random number generators
# before ecdh_generic (it self-tests with them; sha3_generic before jitterentropy_rng); then
# Bluetooth; then the AF_ALG ciphers btvirt opens (ecb(aes), cmac(aes)); then the power cut
# runs' disk (virtio_blk; ext4 with jbd2, mbcache and its soft dependency crc32c, which must be
# loaded beforehand since the modprobe stub answers crypto lookups "no") and network card
# (virtio_net), which the scenarios load too and leave unused. Each module's own dependencies are inserted before it
# from `modprobe --show-depends`.
wanted=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
        9pnet 9pnet_virtio netfs fscache 9p crc16
        ctr sha512_generic sha3_generic jitterentropy_rng drbg ansi_cprng
        ecc ecdh_generic rfkill bluetooth hci_vhci
        ecb cmac af_alg algif_skcipher algif_hash
        virtio_blk ext4 virtio_net)

key="$( { echo "$kver ${wanted[*]}"; cat "$0" "$here/init" "$here/modprobe-stub"; \
          ls -l /bin/busybox "$kernel"; } | sha256sum | cut -c1-16)"
out="$cache/$kver/$key"
if [ -f "$out/initramfs.cpio" ]; then
  echo "$kernel $out/initramfs.cpio"
  exit 0
fi

case "$(ldd /bin/busybox 2>&1)" in
  *'not a dynamic'*) ;;
  *) echo "build-initramfs: no static /bin/busybox (apt install busybox-static)" >&2; exit 1 ;;
esac

root="$cache/root.$$"
rm -rf "$root"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,proc,sys,dev,mnt,newroot,modules}
cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
cp "$here/init" "$root/init"
cp "$here/modprobe-stub" "$root/sbin/modprobe"
chmod +x "$root/init" "$root/sbin/modprobe"

: > "$root/modules/order"
declare -A have=()
for m in "${wanted[@]}"; do
  # "insmod /lib/modules/.../x.ko" lines, dependencies first; builtin modules print "builtin x".
  while read -r verb path _; do
    [ "$verb" = insmod ] || continue
    name="$(basename "$path")"
    name="${name%%.ko*}"
    [ -n "${have[$name]:-}" ] && continue
    have[$name]=1
    case "$path" in
      *.ko.xz)  xz -dc "$path" > "$root/modules/$name.ko" ;;
      *.ko.zst) zstd -qdc "$path" > "$root/modules/$name.ko" ;;
      *.ko.gz)  gzip -dc "$path" > "$root/modules/$name.ko" ;;
      *)        cp "$path" "$root/modules/$name.ko" ;;
    esac
    echo "$name" >> "$root/modules/order"
  done < <("${modprobe[@]}" --show-depends "$m" 2>/dev/null || echo "missing $m")
done
# Where the stub's modprobe finds this kernel's modules in the guest (the host's root).
echo "$kroot" > "$root/modules/root"

find "$cache" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex '.*/[0-9a-f]{16}' \
  -exec rm -rf {} +  # builds of the layout before one folder per kernel
find "$cache/$kver" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} + 2>/dev/null || true  # this kernel's older builds
mkdir -p "$out"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$out/initramfs.cpio.tmp"
mv "$out/initramfs.cpio.tmp" "$out/initramfs.cpio"
echo "initramfs: kernel $kver, $(wc -l < "$root/modules/order") modules, $(du -h "$out/initramfs.cpio" | cut -f1)" >&2
echo "$kernel $out/initramfs.cpio"
