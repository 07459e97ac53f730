# Step 6 of packaging/qa/test-deb (scripts/test-deb; sourced there, uses its step, check and
# variables): the package of $arch installed the way a Raspberry Pi owner gets it, on Debian 12
# (bookworm, what most Raspberry Pi OS installations run) and on Debian 13 (trixie, what current
# Raspberry Pi OS is based on), each in a clean root of that architecture (arm64 runs under QEMU):
#   - a signed apt repository made by scripts/build-repo, served over HTTP on the loopback;
#   - added with /etc/apt/keyrings + a deb822 .sources file with Signed-By; apt install;
#   - check-config on the shipped file; `collectord decode` on the test vectors;
#   - `collectord run --emulated-tags` against that release's mosquitto, the readings checked;
#   - a newer version added to the repository: apt upgrade keeps a modified conffile; purge.
# Each release gets the repository afresh (the first version only), as a new user would. The two
# releases' rounds run side by side, each with its own repository, signing home, HTTP server and
# root: a round is mostly one process at a time (apt, dpkg, the daemon; under QEMU for arm64), so
# two of them keep a 2-core machine busy where one left a core idle. Each round's output is kept
# apart and shown whole when both are done.

# rin_root [--user NAME] COMMAND...: COMMAND in the release's root.
rin_root() { root=$rroot in_root "$@"; }
# serve_repo: an HTTP server for the repository on a free loopback port (the root shares the
# network); prints the port. stop_serving ends it.
serve_repo() {
  stop_serving
  local port; port=$(free_port)
  python3 -m http.server --bind 127.0.0.1 --directory "$rrepo" "$port" > "$work/repo-http-$rsuite.log" 2>&1 &
  echo $! > "$work/repo-http-$rsuite.pid"
  local i
  for i in $(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && { echo "$port"; return 0; }
    sleep 0.1
  done
  echo "the repository's HTTP server did not start" >&2; return 1
}
stop_serving() {
  local pid="$work/repo-http-$rsuite.pid"
  [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; rm -f "$pid"; true
}
# point_apt_at PORT: the .sources file a user writes, with this run's port.
point_apt_at() {
  sed "s|^URIs: .*|URIs: http://127.0.0.1:$1/|" "$rrepo/collectord.sources" > "$rroot/etc/apt/sources.list.d/collectord.sources"
}
export -f rin_root serve_repo stop_serving point_apt_at

# The packages of every architecture built so far go in, as a published repository would hold.
repo_v1() {
  rm -rf "$rrepo" "$rgnupg"
  local debs=() d
  for d in "$out"/collectord_"$version"_*.deb; do debs+=("$d"); done
  scripts/build-repo --repo "$rrepo" --gnupghome "$rgnupg" "${debs[@]}" || return 1
  local ok=0
  check "InRelease verifies with the exported key (gpgv)" \
    gpgv --keyring "$rrepo/collectord-archive-keyring.gpg" "$rrepo/dists/stable/InRelease" || ok=1
  check "Release.gpg verifies with the exported key (gpgv)" \
    gpgv --keyring "$rrepo/collectord-archive-keyring.gpg" "$rrepo/dists/stable/Release.gpg" "$rrepo/dists/stable/Release" || ok=1
  check "Packages for $arch lists collectord $version" \
    grep -qx "Version: $version" "$rrepo/dists/stable/main/binary-$arch/Packages" || ok=1
  echo "     architectures: $(sed -n 's/^Architectures: //p' "$rrepo/dists/stable/Release")"
  check "Release lists SHA256 checksums (apt does not trust MD5 or SHA-1 ones)" grep -q '^SHA256:' "$rrepo/dists/stable/Release" || ok=1
  return $ok
}
export -f repo_v1

rroot_make() {
  local base; base=$(roots_base "$rsuite" "$arch") || return 1
  roots_unpack "$base" "$rroot" || return 1
  echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' > "$rroot/etc/apt/apt.conf.d/99keep-debs"
  mkdir -p "$cache/apt-archives-$rsuite-$arch"
  cp -a "$cache/apt-archives-$rsuite-$arch/." "$rroot/var/cache/apt/archives/" 2>/dev/null || true
  local ok=0
  check "$rname root: $(cat "$rroot/etc/debian_version"), $(rin_root dpkg --print-architecture), glibc $(rin_root dpkg-query -W -f='${Version}' libc6)" \
    bash -c "rin_root dpkg --print-architecture | grep -qx '$arch' && grep -q '^$rmajor' '$rroot/etc/debian_version'" || ok=1
  check "collectord, libbluetooth3, libmosquitto1 not installed yet" \
    bash -c "! rin_root dpkg-query -W collectord libbluetooth3 libmosquitto1 >/dev/null 2>&1" || ok=1
  return $ok
}
export -f rroot_make

rinstall() {
  local port; port=$(serve_repo) || return 1
  # What a user does: the key into /etc/apt/keyrings, the .sources file, apt update, install.
  mkdir -p "$rroot/etc/apt/keyrings"
  cp "$rrepo/collectord-archive-keyring.gpg" "$rroot/etc/apt/keyrings/"
  point_apt_at "$port"
  sed 's/^/     /' "$rroot/etc/apt/sources.list.d/collectord.sources"
  local ok=0 t=$SECONDS
  rin_root apt-get update -q 2>&1 | grep -E 'collectord|^[EW]:' | sed 's/^/     /'
  rin_root apt-get install -y -q collectord 2>&1 | grep -E 'collectord|^[EW]:|Setting up' | tail -n 12 | sed 's/^/     /'
  echo "     apt update + install: $((SECONDS - t)) s"
  cp -a "$rroot/var/cache/apt/archives/"*.deb "$cache/apt-archives-$rsuite-$arch/" 2>/dev/null || true
  check "collectord $version installed from the repository" \
    bash -c "[ \"\$(rin_root dpkg-query -W -f='\${Status} \${Version}' collectord)\" = 'install ok installed $version' ]" || ok=1
  check "apt-cache policy: the version comes from 127.0.0.1:$port" \
    bash -c "rin_root apt-cache policy collectord | grep -A1 '\\*\\*\\* $version' | grep -q '127.0.0.1:$port'" || ok=1
  check "dependencies from $rname: libbluetooth3 libmosquitto1 procps" rin_root dpkg-query -W libbluetooth3 libmosquitto1 procps || ok=1
  check "system user collectord, /etc/collectord.conf root:collectord 640, unit enabled" \
    bash -c "rin_root getent passwd collectord >/dev/null && [ \"\$(rin_root stat -c '%U:%G %a' /etc/collectord.conf)\" = 'root:collectord 640' ] && test -L '$rroot/etc/systemd/system/multi-user.target.wants/collectord.service'" || ok=1
  local v; v=$(rin_root --user collectord /usr/bin/collectord version 2>&1)
  printf '%s\n' "$v" | sed 's/^/     /'
  check "collectord version runs (as user collectord)" bash -c 'printf "%s\n" "$1" | head -1 | grep -q "^collectord [0-9]"' _ "$v" || ok=1
  # The signature is what apt trusts: with another key named in Signed-By, apt refuses the
  # repository. Shown with that .sources file alone and index files of its own (the root's are
  # left as they are), so that apt builds its package cache from our one small index: under QEMU
  # a cache of all of Debian 13 takes about a minute to build (70 s per apt-get update). The same
  # apart setting with the right key finds the package, so the refusal is the key's doing.
  local apart=/tmp/apt-apart
  rm -rf "${rroot:?}$apart"; mkdir -p "$rroot$apart/sources.list.d" "$rroot$apart/lists/partial"
  printf '%s\n' "Dir::Etc::SourceList \"/dev/null\";" "Dir::Etc::SourceParts \"$apart/sources.list.d\";" \
    "Dir::State::lists \"$apart/lists\";" 'Dir::Cache::pkgcache "";' 'Dir::Cache::srcpkgcache "";' > "$rroot$apart/apt.conf"
  sed 's|^Signed-By: .*|Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg|' \
    "$rroot/etc/apt/sources.list.d/collectord.sources" > "$rroot$apart/sources.list.d/collectord.sources"
  local refused; refused=$(rin_root apt-get -c "$apart/apt.conf" update -q 2>&1)
  printf '%s\n' "$refused" | grep -E '^(E|W):' | head -n 2 | cut -c1-160 | sed 's/^/     /'
  check "apt refuses the repository when Signed-By names another key" \
    bash -c "printf '%s' \"\$1\" | grep -qE 'Missing key|NO_PUBKEY|is not signed' && ! rin_root apt-cache -c '$apart/apt.conf' policy collectord | grep -qE '127[.]0[.]0[.]1:$port/? stable/'" _ "$refused" || ok=1
  cp "$rroot/etc/apt/sources.list.d/collectord.sources" "$rroot$apart/sources.list.d/"
  rm -rf "${rroot:?}$apart/lists"; mkdir -p "$rroot$apart/lists/partial"
  check "and takes it with the right key, set apart the same way" \
    bash -c "rin_root apt-get -c '$apart/apt.conf' update -q >/dev/null 2>&1 && rin_root apt-cache -c '$apart/apt.conf' policy collectord | grep -qE '127[.]0[.]0[.]1:$port/? stable/'" || ok=1
  rm -rf "${rroot:?}$apart"
  stop_serving
  return $ok
}
export -f rinstall

rcheck_config() {
  rin_root --user collectord /usr/bin/collectord check-config --config /etc/collectord.conf
}
export -f rcheck_config

rdecode() {
  python3 packaging/qa/check-output.py decode-script Tests/vectors/decode.txt > "$rroot/tmp/decode.sh" || return 1
  rin_root --user collectord sh /tmp/decode.sh > "$work/decode-$rsuite-$arch.out" 2>&1
  python3 packaging/qa/check-output.py decode-check Tests/vectors/decode.txt "$work/decode-$rsuite-$arch.out"
}
export -f rdecode

# The daemon as the collectord user against the release's own mosquitto, two emulated tags (a CC2650
# and a CC2541): 120 messages, then the readings are checked on the host.
rstream() {
  rin_root apt-get install -y -q mosquitto mosquitto-clients 2>&1 | tail -n 2 | sed 's/^/     /'
  cp -a "$rroot/var/cache/apt/archives/"*.deb "$cache/apt-archives-$rsuite-$arch/" 2>/dev/null || true
  local port; port=$(free_port)
  mkdir -p "$rroot/tmp/stream"
  printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" > "$rroot/tmp/stream/mosquitto.conf"
  printf '[mqtt]\nbrokers = ["127.0.0.1:%s"]\nclient_id = "pkgtest"\n[spool]\npath = "/tmp/stream/spool"\n[[tag]]\nname = "kitchen"\naddress = "00:AA:01:01:00:01"\nmodel = "cc2650"\n[[tag]]\nname = "garage"\naddress = "00:AA:01:02:00:02"\nmodel = "cc2541"\n' "$port" > "$rroot/tmp/stream/collectord.conf"
  rm -f "$rroot/tmp/stream/readings.txt"
  rin_root sh -c '
    cd /tmp/stream && chown -R collectord:collectord /tmp/stream
    mosquitto -c mosquitto.conf > mosquitto.log 2>&1 & broker=$!
    # The broker is up when a client can connect.
    for i in $(seq 1 200); do mosquitto_pub -h 127.0.0.1 -p "$1" -t probe -n 2>/dev/null && break; sleep 0.1; done
    # setpriv execs the daemon as collectord (no process in between to take the signal).
    setpriv --reuid=collectord --regid=collectord --init-groups -- \
      collectord run --config collectord.conf --emulated-tags > daemon.log 2>&1 & daemon=$!
    mosquitto_sub -h 127.0.0.1 -p "$1" -v -t "collectord/#" -C 120 -W 180 > readings.txt; rc=$?
    kill -TERM "$daemon"; wait "$daemon"; stopped=$?
    kill "$broker"; wait "$broker" 2>/dev/null
    echo "mosquitto_sub status $rc, $(wc -l < readings.txt) messages; the daemon stopped on SIGTERM with status $stopped"
    [ "$rc" -eq 0 ] && [ "$stopped" -eq 0 ]' sh "$port" | sed 's/^/     /'
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "     the last lines of the daemon's log:"; tail -n 20 "$rroot/tmp/stream/daemon.log" | sed 's/^/     /'; return 1; }
  python3 packaging/qa/check-output.py readings "$rroot/tmp/stream/readings.txt" kitchen=cc2650 garage=cc2541
}
export -f rstream

rupgrade() {
  [ "$deb2" -nt "$deb" ] || { echo "no $deb2 newer than $deb"; return 1; }
  scripts/build-repo --repo "$rrepo" --gnupghome "$rgnupg" "$deb2" || return 1
  printf '# local change (scripts/test-deb)\n' >> "$rroot/etc/collectord.conf"
  local before; before=$(sha256sum < "$rroot/etc/collectord.conf")
  local port; port=$(serve_repo) || return 1
  point_apt_at "$port"
  rin_root apt-get update -q 2>&1 | grep -E 'collectord|^[EW]:' | sed 's/^/     /'
  check "apt sees $upgrade_version as an upgrade" bash -c "rin_root apt list --upgradable 2>/dev/null | grep -q 'collectord/stable $upgrade_version'"
  # The admin changed the file and so did the package: keep the admin's (the default answer).
  rin_root apt-get upgrade -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold 2>&1 \
    | grep -E 'collectord|^[EW]:' | tail -n 8 | sed 's/^/     /'
  stop_serving
  local ok=0
  check "collectord $upgrade_version installed by apt upgrade" \
    bash -c "[ \"\$(rin_root dpkg-query -W -f='\${Version}' collectord)\" = '$upgrade_version' ]" || ok=1
  check "modified /etc/collectord.conf kept" [ "$(sha256sum < "$rroot/etc/collectord.conf")" = "$before" ] || ok=1
  check "the new default is beside it as /etc/collectord.conf.dpkg-dist" \
    grep -q "changed in $upgrade_version" "$rroot/etc/collectord.conf.dpkg-dist" || ok=1
  check "unit still enabled" test -L "$rroot/etc/systemd/system/multi-user.target.wants/collectord.service" || ok=1
  return $ok
}
export -f rupgrade

rpurge() {
  rin_root apt-get purge -y -q collectord 2>&1 | tail -n 3 | sed 's/^/     /'
  local ok=0
  check "purge: package gone" bash -c "! rin_root dpkg-query -W -f='\${Status}' collectord 2>/dev/null | grep -q ' installed\\| config-files'" || ok=1
  check "purge: /usr/bin/collectord and /etc/collectord.conf removed" \
    bash -c "test ! -e '$rroot/usr/bin/collectord' && test ! -e '$rroot/etc/collectord.conf'" || ok=1
  check "purge: unit enablement symlink removed" test ! -L "$rroot/etc/systemd/system/multi-user.target.wants/collectord.service" || ok=1
  return $ok
}
export -f rpurge

rdelete() { stop_serving; roots_remove "$rroot"; }
export -f rdelete

# Made earlier in this run (the amd64 test builds it for the bookworm upgrade), else now, before
# the rounds that both upgrade to it.
if ! [ "$deb2" -nt "$deb" ]; then
  step "build $(basename "$deb2") (newer version, changed shipped conffile)" 3600 build_v2 || finish
fi

# release_round SUITE: one release's steps, in this shell's child, counting its own passes and
# failures into $work/round-SUITE.counts (passed failed, then one failed step per line).
release_round() {
  rsuite=$1
  case $rsuite in bookworm) rmajor=12 ;; trixie) rmajor=13 ;; esac
  rname="Debian $rmajor" rroot="$work/root-$rsuite-$arch"
  rrepo="$work/repo-$rsuite" rgnupg="$work/repo-gnupg-$rsuite"
  export rsuite rmajor rname rroot rrepo rgnupg
  log="$work/test-deb-$rsuite.log" passed=0 failed=0 failures=()
  : > "$log"
  round_steps
  { echo "$passed $failed"; printf '%s\n' "${failures[@]}"; } > "$work/round-$rsuite.counts"
}
round_steps() {
  step "$rname $arch: signed apt repository (scripts/build-repo) with collectord $version" 300 repo_v1 || return
  step "clean $rname $arch root (debootstrap --variant=minbase, cached)" 1800 rroot_make || return
  step "$rname $arch: apt install collectord from the signed repository" 1200 rinstall || return
  step "$rname $arch: collectord check-config on the shipped /etc/collectord.conf" 120 rcheck_config
  step "$rname $arch: collectord decode gives the test vectors' values" 300 rdecode
  step "$rname $arch: collectord run --emulated-tags publishes the right readings to mosquitto" 600 rstream
  step "$rname $arch: a newer version in the repository; apt upgrade keeps the modified conffile" 3600 rupgrade
  step "$rname $arch: apt purge" 600 rpurge
  step "delete the $rname $arch test root" 120 rdelete
}
suites=(bookworm trixie)
for rsuite in "${suites[@]}"; do
  rm -f "$work/round-$rsuite.counts"
  release_round "$rsuite" > "$work/round-$rsuite.out" 2>&1 &
done
wait
for rsuite in "${suites[@]}"; do
  cat "$work/round-$rsuite.out"
  cat "$work/test-deb-$rsuite.log" >> "$log"
  if [ -f "$work/round-$rsuite.counts" ]; then
    { read -r p f; passed=$((passed + p)) failed=$((failed + f))
      while IFS= read -r line; do [ -n "$line" ] && failures+=("$line"); done; } < "$work/round-$rsuite.counts"
  else
    failed=$((failed + 1)) failures+=("the $rsuite round ended without its counts")
  fi
done
# The armhf check below uses the last round's repository, which holds both architectures.
rsuite=armhf rrepo="$work/repo-trixie" rgnupg="$work/repo-gnupg-trixie"
export rsuite rrepo rgnupg

# 32-bit Raspberry Pi OS (armhf): no Swift toolchain reachable here targets 32-bit ARM, so there
# is no package for it, and the repository must not offer one apt cannot install. A clean
# Debian 12 armhf root (what 32-bit Raspberry Pi OS bookworm is built from) follows the README's
# steps: apt update works, `apt install collectord` finds nothing, and nothing is installed.
# Once, in the arm64 run (the repository then holds both architectures of the last round).
rarmhf() {
  local root32="$work/root-bookworm-armhf"
  local base; base=$(roots_base bookworm armhf) || return 1
  roots_unpack "$base" "$root32" || return 1
  scripts/build-repo --repo "$rrepo" --gnupghome "$rgnupg" >/dev/null || return 1
  local port; port=$(serve_repo) || return 1
  mkdir -p "$root32/etc/apt/keyrings"
  cp "$rrepo/collectord-archive-keyring.gpg" "$root32/etc/apt/keyrings/"
  sed "s|^URIs: .*|URIs: http://127.0.0.1:$port/|" "$rrepo/collectord.sources" > "$root32/etc/apt/sources.list.d/collectord.sources"
  local ok=0 update install
  update=$(roots_run "$root32" -- apt-get update -q 2>&1); local urc=$?
  printf '%s\n' "$update" | grep -E '127\.0\.0\.1|^[EWN]:' | cut -c1-160 | sed 's/^/     /'
  install=$(roots_run "$root32" -- apt-get install -y -q collectord 2>&1); local irc=$?
  printf '%s\n' "$install" | tail -n 2 | sed 's/^/     /'
  stop_serving
  check "armhf root: $(roots_run "$root32" -- dpkg --print-architecture)" \
    bash -c "[ \"\$(roots_run '$root32' -- dpkg --print-architecture)\" = armhf ]" || ok=1
  check "apt update succeeds with the repository's .sources file (status $urc, no error)" \
    bash -c "[ $urc -eq 0 ] && ! printf '%s' \"\$1\" | grep -q '^E:'" _ "$update" || ok=1
  check "apt install collectord finds no package for armhf (status $irc)" \
    bash -c "[ $irc -ne 0 ] && printf '%s' \"\$1\" | grep -qE 'Unable to locate package collectord|has no installation candidate'" _ "$install" || ok=1
  check "nothing installed" bash -c "! roots_run '$root32' -- dpkg-query -W collectord >/dev/null 2>&1" || ok=1
  roots_remove "$root32"
  return $ok
}
export -f rarmhf
[ "$arch" = arm64 ] && step "Debian 12 armhf (32-bit Raspberry Pi OS): the repository offers no package apt cannot install" 1800 rarmhf
