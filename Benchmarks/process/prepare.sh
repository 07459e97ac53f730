# Sourced from the top of the clone by Benchmarks/process/measure.sh (scripts/measure) and by
# scripts/soak: the apt packages, the Python environment (~/.cache/collectord/venv with paho-mqtt
# from PyPI, for the subscriber and the reference pipeline) and the binary the Debian package
# ships (release, static standard library, stripped), built into .build-static/. Sets $python
# and $binary.
scripts/install-deps
if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
  as_root=(); [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
# CI may run without $HOME: fall back to the account's home directory.
venv=${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/collectord/venv
if ! "$venv/bin/python" -c "import paho.mqtt" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r Benchmarks/process/requirements.txt
fi
python=$venv/bin/python
scratch=$PWD/.build-static
swift build -c release --static-swift-stdlib -Xlinker -z -Xlinker now --scratch-path "$scratch" --product collectord >&2
strip -o "$scratch/collectord" "$scratch/release/collectord"
binary=$scratch/collectord
mkdir -p "$scratch/results"
