# Cached Debian roots, sourced from the top of the clone by scripts/debian-swift,
# scripts/build-deb, packaging/qa/test-deb (scripts/test-deb) and Tests/homeassistant/run
# (scripts/ha-check).
#
# Three kinds of root, all under $COLLECTORD_CACHE (default ~/.cache/collectord), outside any
# clone, so a second run on a machine only unpacks or reuses them:
#   deb/<suite>-minbase-<arch>-root.tar.zst   a clean `debootstrap --variant=minbase` root, packed
#   roots/<name>/                              a root made from one of those plus apt packages,
#                                              rebuilt when its recipe (roots/<name>.recipe) changes
# Roots of another architecture (arm64 here) run under QEMU user emulation (qemu-user-static
# and binfmt_misc), which roots_foreign_arch sets up.
#
# Needs root (debootstrap, chroot, mount namespaces).

roots_home=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
COLLECTORD_CACHE=${COLLECTORD_CACHE:-${XDG_CACHE_HOME:-$roots_home/.cache}/collectord}
COLLECTORD_DEB_CACHE=${COLLECTORD_DEB_CACHE:-$COLLECTORD_CACHE/deb}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export COLLECTORD_CACHE COLLECTORD_DEB_CACHE DEBIAN_MIRROR

roots_say() { printf '%s\n' "roots: $*" >&2; }

# roots_apt_host PACKAGE...: installs host packages that are missing.
roots_apt_host() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  roots_say "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# roots_foreign_arch ARCH: makes programs of ARCH run here (nothing to do for the host's own).
roots_foreign_arch() {
  local arch=$1
  [ "$arch" = "$(dpkg --print-architecture)" ] && return 0
  local q
  case "$arch" in
    arm64) q=aarch64 ;;
    armhf) q=arm ;;
    *) roots_say "no emulation set up for $arch"; return 1 ;;
  esac
  roots_apt_host qemu-user-static binfmt-support || return 1
  # Containers and CI machines often come without binfmt_misc mounted.
  [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || return 1
  local entry="/proc/sys/fs/binfmt_misc/qemu-$q"
  if [ -e "$entry" ]; then
    grep -q '^enabled' "$entry" || echo 1 > "$entry" || return 1
  else
    update-binfmts --enable "qemu-$q" || return 1
  fi
  grep -q '^enabled' "$entry" || { roots_say "qemu-$q could not be enabled"; return 1; }
  # The F (fix binary) flag lets the interpreter work inside chroots that do not contain it.
  grep -q '^flags:.*F' "$entry" || roots_say "warning: qemu-$q lacks the F flag; chroots may not find the interpreter"
}

# roots_base SUITE ARCH: prints the path of the packed clean root, making it when missing.
roots_base() {
  local suite=$1 arch=$2
  local tarball="$COLLECTORD_DEB_CACHE/$suite-minbase-$arch-root.tar.zst"
  if [ ! -s "$tarball" ]; then
    roots_apt_host debootstrap debian-archive-keyring zstd >&2 || return 1
    roots_foreign_arch "$arch" >&2 || return 1
    mkdir -p "$COLLECTORD_DEB_CACHE"
    local tmp; tmp=$(mktemp -d "$COLLECTORD_DEB_CACHE/.debootstrap.XXXXXX")
    local t=$SECONDS
    roots_say "debootstrap --variant=minbase --arch=$arch $suite (once; cached in $tarball)"
    if ! debootstrap --variant=minbase --arch="$arch" "$suite" "$tmp/root" "$DEBIAN_MIRROR" > "$tmp.log" 2>&1; then
      roots_say "debootstrap failed; the end of its log:"; tail -n 20 "$tmp.log" >&2
      rm -rf --one-file-system "$tmp" "$tmp.log"; return 1
    fi
    tar --zstd --numeric-owner -cpf "$tarball.tmp" -C "$tmp/root" . && mv "$tarball.tmp" "$tarball"
    rm -rf --one-file-system "$tmp" "$tmp.log"
    roots_say "$suite $arch root made in $((SECONDS - t)) s ($(du -h "$tarball" | cut -f1))"
  fi
  printf '%s\n' "$tarball"
}

# roots_unpack TARBALL DIR: a fresh copy of a packed root, ready for apt.
roots_unpack() {
  local tarball=$1 dir=$2
  roots_remove "$dir" || return 1
  mkdir -p "$dir"
  tar --zstd --numeric-owner -xpf "$tarball" -C "$dir" || return 1
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  # No /dev/pts in the root: no pseudo-terminal for dpkg's output.
  echo 'Dpkg::Use-Pty "0";' > "$dir/etc/apt/apt.conf.d/99no-pty"
  # Debian unstable's Release file can be "expired" by this machine's clock.
  echo 'Acquire::Check-Valid-Until "false";' > "$dir/etc/apt/apt.conf.d/99no-valid-until"
}

# roots_remove DIR: deletes a root, never following a mount out of it.
roots_remove() {
  local dir=$1
  [ -d "$dir" ] || return 0
  if grep -q " $(realpath "$dir")" /proc/mounts; then roots_say "something is mounted under $dir"; return 1; fi
  rm -rf --one-file-system "$dir"
}

# roots_run ROOT [--user NAME] [--bind HOST_DIR ROOT_DIR]... [--env NAME=VALUE]... -- COMMAND...
# Runs COMMAND in ROOT in a private mount namespace with its own /proc and /sys and the host's /dev, so
# nothing stays mounted when it ends. /proc matters: a Swift program reads its arguments from
# /proc/self/cmdline, and the compiler finds its libraries through /proc/self/exe.
roots_run() {
  local root=$1; shift
  local spec=() binds=() envs=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --user) spec=(--userspec="$2:$2"); shift 2 ;;
      --bind) binds+=("$2" "$3"); shift 3 ;;
      --env) envs+=("$2"); shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  unshare --mount --propagation private -- bash -c '
    r=$1 nb=$2; shift 2
    mount -t proc proc "$r/proc" || exit 1
    mount --rbind /dev "$r/dev" || exit 1
    mount -t sysfs sysfs "$r/sys" 2>/dev/null || mount --rbind /sys "$r/sys" || exit 1
    while [ "$nb" -gt 0 ]; do
      mkdir -p "$r$2" && mount --bind "$1" "$r$2" || exit 1
      shift 2; nb=$((nb - 1))
    done
    exec chroot "$@"' roots "$root" $(( ${#binds[@]} / 2 )) "${binds[@]}" "${spec[@]}" "$root" /usr/bin/env -i \
      PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "${envs[@]}" "$@"
}

# roots_prepared NAME SUITE ARCH PACKAGE... [-- SETUP_FUNCTION]: prints the path of a cached root
# made from the clean SUITE/ARCH root with PACKAGEs installed, then SETUP_FUNCTION ROOT run on
# the host (for what apt cannot do). The recipe (this line and the setup function's text)
# is kept beside the root; a changed recipe makes the root again.
roots_prepared() {
  # One maker at a time per root: CI, a session and its helpers share this cache, and a root
  # remade under a build that uses it fails that build in strange ways.
  mkdir -p "$COLLECTORD_CACHE/roots"
  ( flock 9 && roots_prepared_locked "$@" ) 9> "$COLLECTORD_CACHE/roots/$1.lock"
}

roots_prepared_locked() {
  local name=$1 suite=$2 arch=$3; shift 3
  local packages=() setup=""
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then setup=$2; break; fi
    packages+=("$1"); shift
  done
  local dir="$COLLECTORD_CACHE/roots/$name" recipe
  recipe=$(printf '%s %s %s\n' "$suite" "$arch" "${packages[*]}"; [ -n "$setup" ] && declare -f "$setup")
  if [ -d "$dir" ] && [ -f "$dir.recipe" ] && [ "$(cat "$dir.recipe")" = "$recipe" ]; then
    printf '%s\n' "$dir"; return 0
  fi
  local base; base=$(roots_base "$suite" "$arch") || return 1
  roots_foreign_arch "$arch" >&2 || return 1
  mkdir -p "$COLLECTORD_CACHE/roots"
  rm -f "$dir.recipe"
  local t=$SECONDS
  roots_say "making the $name root ($suite $arch: ${packages[*]}; once, cached in $dir)"
  roots_unpack "$base" "$dir" || return 1
  # PACKAGE:ARCH of another architecture: that architecture is added to dpkg first (multiarch).
  local foreign; foreign=$(printf '%s\n' "${packages[@]}" | sed -n 's/^[^:]*:\([a-z0-9]*\)$/\1/p' | sort -u | grep -vx "$arch" || true)
  if ! roots_run "$dir" -- sh -c 'for a in $1; do dpkg --add-architecture "$a"; done; shift
         apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" && apt-get clean' \
         apt "$foreign" "${packages[@]}" > "$dir.log" 2>&1; then
    roots_say "apt-get install failed in the $name root; the end of $dir.log:"; tail -n 20 "$dir.log" >&2; return 1
  fi
  if [ -n "$setup" ] && ! "$setup" "$dir" >> "$dir.log" 2>&1; then
    roots_say "setting up the $name root failed; the end of $dir.log:"; tail -n 20 "$dir.log" >&2; return 1
  fi
  printf '%s\n' "$recipe" > "$dir.recipe"
  roots_say "$name root ready in $((SECONDS - t)) s ($(du -sh "$dir" | cut -f1))"
  printf '%s\n' "$dir"
}

# Debian's Swift toolchain (swiftlang, Debian unstable; its compiler needs glibc 2.42, so an
# unstable root) with the aarch64 Swift resources of exactly its version, from the arm64 package
# unpacked without installing: the static runtime and modules (lib/swift_static) and clang's
# headers, about 220 MB of its 2.6 GB.
roots_arm64_swift_resources() {
  local root=$1
  roots_run "$root" -- sh -ec '
    v=$(dpkg-query -W -f="\${Version}" swiftlang)
    dpkg --add-architecture arm64
    apt-get update -qq
    cd /tmp && rm -f swiftlang_*_arm64.deb
    apt-get download "swiftlang:arm64=$v"
    rm -rf /opt/arm64-swift && mkdir -p /opt/arm64-swift
    dpkg-deb --fsys-tarfile swiftlang_*_arm64.deb \
      | tar -x -C /opt/arm64-swift ./usr/libexec/swift/lib/swift_static ./usr/libexec/swift/lib/clang
    rm -f swiftlang_*_arm64.deb
    echo "$v" > /opt/arm64-swift/VERSION'
}

roots_toolchain() {
  roots_prepared toolchain-sid sid amd64 \
    swiftlang lld pkg-config libbluetooth-dev libmosquitto-dev libssl-dev mosquitto mosquitto-clients ca-certificates procps \
    -- roots_arm64_swift_resources
}

# The Debian 12 root for arm64 builds: amd64, with Debian 12's arm64 -dev packages installed
# beside it (multiarch). It is the cross-compiler's sysroot (usr/lib/aarch64-linux-gnu,
# usr/include/aarch64-linux-gnu), so the binary needs no glibc or libstdc++ newer than Debian 12
# has and runs on Debian 12 and 13 alike, and where the arm64 package is made with
# `dpkg-buildpackage -a arm64`: natively, so in seconds (the same in an arm64 root under QEMU
# took 3 minutes), with dh_shlibdeps reading Debian 12's arm64 libraries and aarch64 binutils.
roots_arm64_cross() {
  roots_prepared bookworm-cross-arm64 bookworm amd64 \
    libc6-dev:arm64 libstdc++-12-dev:arm64 libgcc-12-dev:arm64 libbluetooth-dev:arm64 libmosquitto-dev:arm64 libssl-dev:arm64 \
    binutils-aarch64-linux-gnu dpkg-dev debhelper scdoc pkg-config file \
    -- roots_sysroot_links
}

# Debian 12's glibc ships its development links as absolute ones (libm.so ->
# /lib/aarch64-linux-gnu/libm.so.6). Seen from the toolchain root, where this root is the sysroot
# at /sysroot, they dangle, and the linker quietly takes libm.a instead (then fails on its
# internal symbols). Made relative, they resolve inside the sysroot wherever it is mounted.
roots_sysroot_links() {
  local root=$1 link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root$target")" "$link"
  done < <(find "$root/usr/lib/aarch64-linux-gnu" -type l -lname '/*' -print0)
}

# Scripts that run steps in child shells (packaging/qa/test-deb) need these there too.
export -f $(declare -F | awk '$3 ~ /^roots_/ {print $3}')
