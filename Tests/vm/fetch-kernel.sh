#!/usr/bin/env bash
# Fetches the newest kernel of a Debian suite (linux-image-amd64's dependency there) for the VM
# rig, without installing it on this machine, and prints the root it is unpacked in:
# ROOT/boot/vmlinuz-KVER and ROOT/lib/modules/KVER with its modules.dep (Tests/vm/build-initramfs.sh
# takes both from there).
#
#   Tests/vm/fetch-kernel.sh SUITE          e.g. trixie (Debian 13, 6.12), bookworm-backports
#   Tests/vm/fetch-kernel.sh SUITE:KVER     that kernel of the suite, while the archive still has
#                                           it, e.g. bookworm:6.1.0-54-amd64 (6.1.190-1)
#
# A stable suite is read together with its security suite (trixie + trixie-security), where its
# kernel updates land first. apt runs with its own lists and cache under
# $COLLECTORD_CACHE/kernels/apt-SUITE (sources, lists, archives): the host's apt configuration is
# not touched. The package is unpacked with `dpkg -x` into $COLLECTORD_CACHE/kernels/KVER
# (default ~/.cache/collectord, outside the clone, like the other caches), then depmod makes its
# modules.dep. The lists are refreshed once a day; without the network the kernel fetched last is
# used.
set -euo pipefail
suite=${1:?usage: fetch-kernel.sh SUITE[:KVER]}
kver=""
case "$suite" in
  *:*) kver=${suite#*:}; suite=${suite%%:*} ;;
esac
cache=${COLLECTORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/collectord}/kernels
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "fetch-kernel: $*" >&2; }

apt_dir="$cache/apt-$suite"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/none"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -e "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.pgp  # its name since Debian 13
{
  echo "deb [signed-by=$keyring] $mirror $suite main"
  case "$suite" in
    *-*|sid|unstable|experimental) ;;
    *) echo "deb [signed-by=$keyring] ${mirror%/debian}/debian-security $suite-security main" ;;
  esac
} > "$apt_dir/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts="$apt_dir/none"
          -o Dir::Etc::Preferences="$apt_dir/none/preferences" -o Dir::Etc::PreferencesParts="$apt_dir/none"
          -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir" -o Dir::Cache::Archives="$apt_dir/archives"
          -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o Acquire::Languages=none
          -o APT::Architectures::=amd64 -o APT::Sandbox::User=root)
recorded="$cache/$suite.kver"  # the kernel version this suite resolved to last

if [ -n "$kver" ]; then
  recorded=""  # a kernel asked for by name is kept
  if [ ! -f "$cache/$kver/.complete" ] && [ -z "$(find "$apt_dir/updated" -mmin -1440 2>/dev/null)" ]; then
    apt-get -qq "${apt_opts[@]}" update >&2 && touch "$apt_dir/updated"
  fi
elif [ -n "$(find "$apt_dir/updated" -mmin -1440 2>/dev/null)" ] && [ -s "$recorded" ] \
   && [ -f "$cache/$(cat "$recorded")/.complete" ]; then
  kver=$(cat "$recorded")
else
  if apt-get -qq "${apt_opts[@]}" update >&2; then
    touch "$apt_dir/updated"
  else
    say "cannot read $suite's package lists"
    [ -s "$recorded" ] || exit 1
  fi
  kver=$(apt-cache "${apt_opts[@]}" depends linux-image-amd64 2>/dev/null \
           | sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -1) || true
fi
if [ -z "$kver" ]; then
  [ -s "$recorded" ] || { say "no linux-image-amd64 in $suite"; exit 1; }
  kver=$(cat "$recorded")
  say "using the kernel fetched last for $suite: $kver"
fi

root="$cache/$kver"
if [ ! -f "$root/.complete" ]; then
  package="linux-image-$kver-unsigned"
  t=$SECONDS
  say "fetching $package ($suite; once, cached in $root)"
  rm -rf "$apt_dir/download" "$root"
  mkdir -p "$apt_dir/download"
  (cd "$apt_dir/download" && apt-get -qq "${apt_opts[@]}" download "$package" >&2)
  mkdir -p "$root"
  dpkg -x "$apt_dir"/download/*.deb "$root"
  rm -rf "$apt_dir/download"
  # Debian 13's modules are in usr/lib/modules (merged /usr); depmod and modprobe -d look in
  # lib/modules.
  [ -e "$root/lib" ] || ln -s usr/lib "$root/lib"
  [ -f "$root/boot/vmlinuz-$kver" ] && [ -d "$root/lib/modules/$kver" ] \
    || { say "$package has no boot/vmlinuz-$kver or lib/modules/$kver"; exit 1; }
  depmod -b "$root" "$kver"
  touch "$root/.complete"
  say "$kver ready in $((SECONDS - t)) s ($(du -sh "$root" | cut -f1))"
fi
if [ -n "$recorded" ]; then
  # Kernels this suite resolved to before are not used again.
  if [ -s "$recorded" ] && [ "$(cat "$recorded")" != "$kver" ]; then
    old="$cache/$(cat "$recorded")"
    [ -d "$old" ] && rm -rf "$old"
  fi
  echo "$kver" > "$recorded"
fi
echo "$root"
