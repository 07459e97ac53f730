# shellcheck shell=bash
# Sourced from the top of the clone by the scripts that install what they need with apt when it
# is missing (build-deb, build-repo, release, install-swift): one way to do it, as root or
# through sudo.

# apt_install_missing PACKAGE...: installs those not installed yet, saying which first.
apt_install_missing() {
  local missing=() p as_root=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  printf '%s: installing %s\n' "$(basename "$0")" "${missing[*]}" >&2
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
