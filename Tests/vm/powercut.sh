#!/usr/bin/env bash
# Power cuts (issue #27): the guest's power is cut (QEMU killed) at random moments while
# collectord runs with its spool on a virtual disk made and mounted as Raspberry Pi OS has its
# root file system; after each cut the guest boots again on the same disk and the daemon, started
# by the guest's boot alone, must recover the spool, never reuse a sequence number and lose at
# most the README's bound. Run through scripts/test-vm, which prepares the kernel, initramfs and
# binary:
#
#   scripts/test-vm --powercut [N]   N cuts (5: one per phase, the CI form); 100 for the campaign
#
#   Tests/vm/powercut.sh CACHE KERNEL INITRAMFS COLLECTORD CUTS
#
# The broker (mosquitto, a free port on 127.0.0.1, persistent so that the host's subscriber keeps
# its session across outages) and the subscriber logging every message with its arrival time
# (CACHE/powercut/mqtt.log) run on the host, so what was delivered survives the cut; the guest
# reaches them through QEMU user networking. Phases, in this order for the first five cuts, then
# at random:
#
#   stream   the daemon streams to the broker; the cut 1-8 s later
#   outage   the host stops the broker; the cut 2-10 s later, the spool growing
#   replay   the broker is stopped for 6-12 s, then started again; the cut 0-1.5 s after the
#            daemon is back online, while it replays the spool
#   rewrite  0-2 s after the daemon logged that it runs (the spool recovered, its tags
#            connecting): around its first reading, when it rewrites the `sequences` file, and in
#            the replay of the last cut's leftovers
#   start    0-1 s after the guest started the daemon: the daemon's own start
#
# After the last cut one more boot runs until the spool is drained, then Tests/vm/powercut-check.py
# judges every cut (see Tests/vm/README.md, "Power cuts") and e2fsck the disk. Environment: POWERCUT_BOUND_MS (3000)
# the loss allowed per cut; VM_TIME_SCALE (3) multiplies the waits' limits; POWERCUT_SEED the
# random seed (printed). Exit status 0 when every cut passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=$1 kernel=$2 initramfs=$3 collectord=$4 cuts=$5
scale=${VM_TIME_SCALE:-3}
bound_ms=${POWERCUT_BOUND_MS:-3000}
seed=${POWERCUT_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
. Tests/vm/qemu.sh

note() { echo "powercut: $*" >&2; }
now_us() { echo "${EPOCHREALTIME/./}"; }
t_start=$(now_us)
elapsed() { local u=$(( $(now_us) - t_start )); printf '%d.%d' $(( u / 1000000 )) $(( u % 1000000 / 100000 )); }
say() { echo "[$(elapsed)] $*"; }
# rand_ms MIN MAX: $ms uniform in [MIN, MAX]; not in a $(subshell), which would draw from a seed
# of its own and break POWERCUT_SEED's replay.
rand_ms() { ms=$(( $1 + (RANDOM * 32768 + RANDOM) % ($2 - $1 + 1) )); }
nap_ms() { sleep "$(printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )))"; }

out="$cache/powercut"
mkdir -p "$cache"
exec {lock}>"$cache/powercut.lock"
flock -n "$lock" || { note "another power cut run is going on in this worktree"; exit 1; }
rm -rf "$out"
mkdir -p "$out/stage/Tests" "$out/broker"
cp -r Tests/vm "$out/stage/Tests/vm"
cp "$collectord" "$out/stage/collectord"

# The disk: ext4 as Raspberry Pi OS's image builder (pi-gen, export-image/prerun.sh) makes it:
# `mkfs.ext4 -L rootfs -O ^huge_file`, less 64bit and metadata_csum when mke2fs.conf turns them on
# (Debian's does), so the journal and block layout are the Pi's. Raw: what the guest's writes
# reach lands in the file as it is, for the next boot.
truncate -s 256M "$out/disk.img"
mkfs.ext4 -q -F -L rootfs -O ^64bit,^metadata_csum,^huge_file "$out/disk.img"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$out/mosquitto.conf" <<CONF
listener $port 127.0.0.1
allow_anonymous true
# Started as root, mosquitto would become the mosquitto user, who cannot write the database below.
user root
# The subscriber's session (and what is queued for it) survives the outages.
persistence true
persistence_location $out/broker/
max_queued_messages 0
log_dest file $out/mosquitto.log
log_type error
log_type warning
log_type notice
CONF

# The daemon's configuration: two emulated CC2650s, five sensors at 300-500 ms (300 ms is the
# shortest period the temperature sensor takes), about 15 readings a second.
cat > "$out/collectord.conf" <<CONF
log_level = "info"
stats_interval_s = 2

[mqtt]
brokers = ["10.0.2.2:$port"]
client_id = "vm"
keepalive_s = 5

[spool]
path = "/run/vmdisk/var/lib/collectord/spool"

[homeassistant]
discovery = false

[[tag]]
name = "a"
address = "00:AA:01:01:00:01"
model = "cc2650"
[tag.sensors.temperature]
period_ms = 300
[tag.sensors.humidity]
period_ms = 300
[tag.sensors.barometer]
period_ms = 400

[[tag]]
name = "b"
address = "00:AA:01:02:00:02"
model = "cc2650"
[tag.sensors.temperature]
period_ms = 300
[tag.sensors.light]
period_ms = 500
CONF

broker_pid=""
broker_start() {
  setsid mosquitto -c "$out/mosquitto.conf" < /dev/null > /dev/null 2>&1 {lock}>&- &
  broker_pid=$!
  local i
  for i in $(seq 100); do
    ss -ltn "sport = :$port" | grep -q LISTEN && return 0
    sleep 0.1
  done
  note "mosquitto does not listen on $port"; return 1
}
broker_stop() {
  [ -n "$broker_pid" ] || return 0
  kill -TERM "$broker_pid" 2>/dev/null || true
  wait "$broker_pid" 2>/dev/null || true  # it saves the sessions on the way out
  broker_pid=""
}
# The subscriber: every message with its arrival time (same clock as $EPOCHREALTIME), QoS 1 and
# a persistent session, restarted if it gives up while the broker is away.
sub_pid=""
sub_start() {
  setsid bash -c 'while :; do mosquitto_sub -h 127.0.0.1 -p "$1" -q 1 -c -i powercut-host \
      -F "@s.@N %t %p" -t "collectord/#" -t "vmrig/#" 2>/dev/null; sleep 0.2; done' sub "$port" \
    >> "$out/mqtt.log" < /dev/null {lock}>&- &
  sub_pid=$!
}
qemu_pid=""
cleanup() {
  if [ -n "$qemu_pid" ]; then kill -KILL "$qemu_pid" 2>/dev/null || true; fi
  if [ -n "$sub_pid" ]; then kill -TERM -- "-$sub_pid" 2>/dev/null || true; fi
  sub_pid="" qemu_pid=""
  broker_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM
: > "$out/mqtt.log"
broker_start
sub_start

# mqtt_wait FROM_LINE REGEX SECONDS: until a line of mqtt.log past FROM_LINE matches (seconds
# scaled). mqtt_lines: how many lines it has now.
mqtt_lines() { wc -l < "$out/mqtt.log"; }
mqtt_wait() {
  local end=$(( $(now_us) + $3 * scale * 1000000 ))
  until tail -n +"$(( $1 + 1 ))" "$out/mqtt.log" | grep -aqE -- "$2"; do
    [ "$(now_us)" -lt $end ] || return 1
    qemu_alive || { note "the guest died"; return 1; }
    sleep 0.1
  done
}
# file_wait FILE REGEX SECONDS: until a line of FILE matches (seconds scaled).
file_wait() {
  local end=$(( $(now_us) + $3 * scale * 1000000 ))
  until grep -aqE -- "$2" "$1" 2>/dev/null; do
    [ "$(now_us)" -lt $end ] && qemu_alive || return 1
    sleep 0.1
  done
}
# mqtt_time FROM_LINE REGEX: the arrival time (microseconds) of the first line past FROM_LINE
# that matches.
mqtt_time() {
  tail -n +"$(( $1 + 1 ))" "$out/mqtt.log" | grep -aE -m1 -- "$2" | sed -E 's/^([0-9]+)\.([0-9]{6}).*/\1\2/'
}
qemu_alive() { [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; }

# boot N: the guest on the same disk, in the background; console and daemon log in boot-N/.
boot() {
  local d="$out/boot-$1"
  mkdir -p "$d"
  cat > "$out/powercut.env" <<ENV
BOOT=$1
COLLECTORD='$out/stage/collectord'
CONFIG='$out/collectord.conf'
BROKER_HOST=10.0.2.2
BROKER_PORT=$port
ENV
  rm -f "$out/qemu.pid"
  vm_qemu "$out" "$kernel" "$initramfs" "$out/stage/Tests/vm/powercut-guest.sh" 86400 \
    -serial "file:$d/console.log" -serial "file:$d/daemon.log" \
    -drive "file=$out/disk.img,format=raw,if=virtio" \
    -nic user,model=virtio-net-pci -pidfile "$out/qemu.pid" \
    < /dev/null > "$d/qemu.log" 2>&1 {lock}>&- &
  local i
  for i in $(seq 100); do [ -s "$out/qemu.pid" ] && break; sleep 0.1; done
  read -r qemu_pid < "$out/qemu.pid" || { note "QEMU did not start"; cat "$d/qemu.log" >&2; return 1; }
  echo "boot $1 $(now_us)" >> "$out/cuts.log"
}

# cut N PHASE DELAY_MS: the power cut, now.
cut() {
  local t
  t=$(now_us)
  kill -KILL "$qemu_pid"
  while kill -0 "$qemu_pid" 2>/dev/null; do sleep 0.05; done
  qemu_pid=""
  echo "cut $1 $2 $3 $t" >> "$out/cuts.log"
  say "cut $1 ($2, +$3 ms)"
}

phases=(stream outage replay rewrite start)
startup_ms=""  # daemon start to first tag streaming, for the log
failed_boots=0
note "$cuts cut(s), seed $seed, bound $bound_ms ms, broker 127.0.0.1:$port, logs in $out"
for (( k = 1; k <= cuts + 1; k++ )); do
  from=$(mqtt_lines)
  boot "$k"
  if ! mqtt_wait "$from" "^[0-9.]+ vmrig/guest boot $k daemon " 120; then
    say "boot $k: the daemon did not start"; tail -n 30 "$out/boot-$k/console.log" >&2
    echo "fail $k daemon did not start" >> "$out/cuts.log"; failed_boots=$((failed_boots + 1)); break
  fi
  t_daemon=$(mqtt_time "$from" "^[0-9.]+ vmrig/guest boot $k daemon ")
  say "boot $k: daemon started"
  if [ $k -le $cuts ]; then
    if [ $k -le ${#phases[@]} ]; then phase=${phases[k - 1]}; else phase=${phases[RANDOM % ${#phases[@]}]}; fi
  else
    phase=end
  fi
  case $phase in
    start) rand_ms 0 1000; delay=$ms; nap_ms "$delay"; cut "$k" start "$delay"; continue ;;
    rewrite)  # the daemon's log says it runs (tags configured, spool open): 0-2 s before the cut
      file_wait "$out/boot-$k/daemon.log" '<[0-9]>collectord [^ ]+ running:' 120 ||
        say "boot $k: the daemon did not say it runs"
      rand_ms 0 2000; delay=$ms; nap_ms "$delay"; cut "$k" rewrite "$delay"; continue ;;
  esac
  # The first tag streaming, seen in the daemon's log (the serial port's file, written at once):
  # its first reading, and the `sequences` rewrite, follow within a period. Not from the broker:
  # a fresh reading waits there behind the last cut's leftovers.
  if file_wait "$out/boot-$k/daemon.log" ': streaming \(' 120 && [ -n "$t_daemon" ]; then
    startup_ms=$(( ($(now_us) - t_daemon) / 1000 ))
  fi
  # Streaming, with the spool drained: a stats message saying nothing is pending, then a reading.
  if ! mqtt_wait "$from" '^[0-9.]+ collectord/daemon/vm/stats .*"spool":\{"pending":0,' 240 ||
     ! mqtt_wait "$(mqtt_lines)" '^[0-9.]+ collectord/tags/' 30; then
    say "boot $k: the spool was not drained, or no reading came"
    echo "fail $k not drained" >> "$out/cuts.log"; failed_boots=$((failed_boots + 1))
    qemu_alive || { echo "fail $k the guest died" >> "$out/cuts.log"; break; }
  else
    echo "drained $k $(now_us)" >> "$out/cuts.log"
    say "boot $k: streaming $startup_ms ms after the start, spool drained"
  fi
  case $phase in
    stream) rand_ms 1000 8000; delay=$ms; nap_ms "$delay"; cut "$k" stream "$delay" ;;
    outage) broker_stop; rand_ms 2000 10000; delay=$ms; nap_ms "$delay"; cut "$k" outage "$delay"; broker_start ;;
    replay)
      broker_stop; rand_ms 6000 12000; nap_ms "$ms"
      from=$(mqtt_lines); broker_start
      if ! mqtt_wait "$from" '^[0-9.]+ collectord/daemon/vm/status online' 60; then
        say "boot $k: the daemon did not come back to the broker"
        echo "fail $k no reconnection" >> "$out/cuts.log"; failed_boots=$((failed_boots + 1))
      fi
      rand_ms 0 1500; delay=$ms; nap_ms "$delay"; cut "$k" replay "$delay" ;;
    end) nap_ms 3000; kill -KILL "$qemu_pid" || true; qemu_pid=""; echo "end $k $(now_us)" >> "$out/cuts.log" ;;
  esac
done
sleep 1  # the last messages in flight to the subscriber
cleanup
trap - EXIT
rc=0
python3 Tests/vm/powercut-check.py "$out" --bound-ms "$bound_ms" || rc=$?
[ $failed_boots -eq 0 ] || rc=1
# The file system after the last cut, on a copy: e2fsck replays the journal and fixes the free
# counts (ext4 leaves those to be recomputed at mount, so they are off after any cut); a second
# pass must then find nothing.
cp --sparse=always "$out/disk.img" "$out/fsck.img"
e2fsck -fy "$out/fsck.img" > "$out/fsck.log" 2>&1 || true
if e2fsck -fn "$out/fsck.img" >> "$out/fsck.log" 2>&1; then
  echo "file system after the last cut: clean (e2fsck, after its journal replay)"
else
  echo "FAIL: the file system is damaged after the last cut:"; cat "$out/fsck.log"; rc=1
fi
rm -f "$out/fsck.img"
note "total $(elapsed) s; logs in $out"
exit $rc
