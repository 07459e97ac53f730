#!/bin/bash
# The guest driver: runs inside the VM, chrooted into the host's root (read-only), with the run
# folder RUN (argument 1) shared read-write with the host. RUN/job.env (written by
# scripts/test-vm) names the scenarios and binaries. For each scenario, in order:
#
#   * fresh controllers: btmon recording to RUN/results/NAME/btmon.snoop, then
#     `btvirt -L -lN` (hci0 = 00:AA:01:00:00:00, hci1 = 00:AA:01:01:00:01, …; N is 3, or what the
#     scenario's `# vm-controllers: N` line says; its output in btvirt.log, its fault injection
#     FIFO at $BTVIRT_WEDGE, see Tests/vm/btvirt-wedge.patch), all brought up with hciconfig;
#   * a fresh mosquitto on 127.0.0.1:1883 (log in the result folder);
#   * the scenario script under `timeout` (its own process group), with
#       OUT         its result folder (write logs here)
#       COLLECTORD  the binary under test
#       VM_LIB      Tests/vm/lib.sh, helpers to source
#       REPO        the repository (read-only)
#       MQTT_HOST / MQTT_PORT
#       BTVIRT_WEDGE  btvirt's fault injection FIFO (lib.sh: wedge, unwedge)
#   * whatever the scenario left running is killed, then mosquitto, btvirt and btmon.
# Results: RUN/results/NAME/status (exit status; 124 = timed out, 125 = setup failed),
# duration, kernel.log (the kernel's messages during the scenario); RUN/timing.log.
#
# Process starts are expensive in the emulated guest (100-300 ms each), so waiting and timing
# use bash builtins.
set -u
RUN="$1"
. "$RUN/job.env"  # REPO COLLECTORD BTVIRT SCENARIOS DEFAULT_TIMEOUT VM_TIME_SCALE
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8
results="$RUN/results"
mkdir -p "$results"

exec {sleep_fd}<> <(:)
nap() { read -r -t "$1" -u "$sleep_fd" _ || true; }
us() { echo "${EPOCHREALTIME/./}"; }
secs() { local u=$1; printf '%d.%01d' $(( u / 1000000 )) $(( u % 1000000 / 100000 )); }
uptime_s() { local up _; read -r up _ < /proc/uptime; echo "$up"; }
say() { echo "vmrig [$(uptime_s)] $*"; }
timing() { echo "$*" >> "$RUN/timing.log"; say "$*"; }

timing "guest driver started $(uptime_s) s after kernel start"
dmesg -c > "$RUN/boot-dmesg.log" 2>&1  # from here on, each scenario gets its own kernel.log

# wait_until SECONDS COMMAND...: polls every 0.05 s (COMMAND should be a shell function), for
# SECONDS times VM_TIME_SCALE: set-up steps are backstops too, and a loaded host slows them alike.
wait_until() {
  local end=$(( $(us) + $1 * ${VM_TIME_SCALE:-1} * 1000000 )); shift
  until "$@"; do
    [ "$(us)" -lt $end ] || return 1
    nap 0.05
  done
}
controllers=3
controllers_present() { local i; for (( i = 0; i < controllers; i++ )); do [ -e /sys/class/bluetooth/hci$i ] || return 1; done; }
controllers_gone() { local i; for (( i = 0; i < controllers; i++ )); do [ -e /sys/class/bluetooth/hci$i ] && return 1; done; return 0; }
broker_listening() {
  local line
  while read -r line; do [[ $line == *:075B\ 00000000:0000\ 0A* ]] && return 0; done < /proc/net/tcp
  return 1
}
btmon_bound() { grep -q "Note: Bluetooth subsystem" "$1" 2>/dev/null; }
alive() { kill -0 -- "-$1" 2>/dev/null; }

# Kills a process group: TERM, then KILL after 1 s.
stop_group() {
  local pgid=$1
  kill -TERM -- "-$pgid" 2>/dev/null || return 0
  local end=$(( $(us) + 1000000 ))
  while alive "$pgid" && [ "$(us)" -lt $end ]; do nap 0.05; done
  kill -KILL -- "-$pgid" 2>/dev/null
  return 0
}

setup() {
  local dir=$1 t0 i rc pids=()
  t0=$(us)
  # Decoded live: btmon 5.66 reading a trace back (-r) crashes on ATT Read By Type once the
  # controllers are gone (it looks connections up through hci_devba).
  # Line-buffered, so scenarios can wait for what the trace shows.
  # The kernel drops a monitor frame, silently, when btmon's socket buffer is full, and btmon
  # writes every line and frame to the 9p share, which a loaded host makes slow (CI once saw 7
  # of 8 commands' writes). Its socket alone gets a deep buffer: rmem_default is raised while it
  # binds (the kernel's first note shows it has) and put back for everything the scenario starts.
  local rmem
  rmem=$(cat /proc/sys/net/core/rmem_default)
  echo 33554432 > /proc/sys/net/core/rmem_default
  setsid stdbuf -oL btmon -C 160 -w "$dir/btmon.snoop" > "$dir/btmon.txt" 2>&1 < /dev/null &
  btmon_pid=$!
  wait_until 5 btmon_bound "$dir/btmon.txt" || echo "btmon did not start" >> "$dir/setup.log"
  echo "$rmem" > /proc/sys/net/core/rmem_default
  rm -f "$BTVIRT_WEDGE"  # a killed btvirt's: only the new one's may be written to
  setsid "$BTVIRT" -L -l"$controllers" > "$dir/btvirt.log" 2>&1 < /dev/null &
  btvirt_pid=$!
  if ! wait_until 15 controllers_present; then
    echo "controllers hci0..hci$(( controllers - 1 )) did not appear within 15 s × $VM_TIME_SCALE" >> "$dir/setup.log"
    return 1
  fi
  # All in parallel: each is the kernel's whole init sequence against btvirt.
  for (( i = 0; i < controllers; i++ )); do
    timeout $(( 15 * ${VM_TIME_SCALE:-1} )) hciconfig "hci$i" up >> "$dir/setup.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  if [ $rc -ne 0 ]; then
    echo "hciconfig up failed or hung (exit $rc)" >> "$dir/setup.log"
    return 1
  fi
  cat > /tmp/mosquitto.conf <<EOF
listener $MQTT_PORT 127.0.0.1
allow_anonymous true
persistence false
user root
log_dest stdout
log_type all
EOF
  setsid mosquitto -c /tmp/mosquitto.conf > "$dir/mosquitto.log" 2>&1 < /dev/null &
  mosquitto_pid=$!
  if ! wait_until 10 broker_listening; then
    echo "mosquitto did not listen on 127.0.0.1:$MQTT_PORT within 10 s × $VM_TIME_SCALE" >> "$dir/setup.log"
    return 1
  fi
  timing "  setup (btmon, btvirt, $controllers controllers up, mosquitto) $(secs $(( $(us) - t0 ))) s"
}

teardown() {
  [ -n "${mosquitto_pid:-}" ] && stop_group "$mosquitto_pid"
  [ -n "${btvirt_pid:-}" ] && stop_group "$btvirt_pid"
  wait_until 5 controllers_gone || say "controllers still registered after btvirt stopped"
  [ -n "${btmon_pid:-}" ] && stop_group "$btmon_pid"
  mosquitto_pid="" btvirt_pid="" btmon_pid=""
}

export MQTT_HOST=127.0.0.1 MQTT_PORT=1883
# Created by btvirt (Tests/vm/btvirt-wedge.patch; an unpatched btvirt ignores it); in /tmp, as
# the 9p share cannot hold FIFOs.
export BTVIRT_WEDGE=/tmp/btvirt-wedge
for scenario in $SCENARIOS; do
  base=${scenario##*/}; base=${base%.sh}
  name=${base#[0-9][0-9]-}
  dir="$results/$name"
  mkdir -p "$dir"
  limit=$DEFAULT_TIMEOUT
  controllers=3
  while IFS= read -r line; do
    [[ $line =~ ^#\ *vm-timeout:\ *([0-9]+) ]] && limit=${BASH_REMATCH[1]}
    [[ $line =~ ^#\ *vm-controllers:\ *([0-9]+) ]] && controllers=${BASH_REMATCH[1]}
    [[ $line == "" ]] && break
  done < "$scenario"
  limit=$(( limit * ${VM_TIME_SCALE:=1} ))
  timing "scenario $name (limit $limit s)"
  t0=$(us)
  if ! setup "$dir"; then
    cat "$dir/setup.log"
    echo "setup failed" > "$dir/reason"
    echo 125 > "$dir/status"
    teardown
    dmesg -c > "$dir/kernel.log" 2>&1
    continue
  fi
  t1=$(us)
  # timeout puts the scenario in its own process group, so whatever it starts can be killed.
  OUT="$dir" COLLECTORD="$COLLECTORD" VM_LIB="$REPO/Tests/vm/lib.sh" REPO="$REPO" VM_TIME_SCALE="$VM_TIME_SCALE" \
    timeout -k 3 "$limit" bash "$scenario" > "$dir/scenario.log" 2>&1 < /dev/null &
  spid=$!
  wait "$spid"
  rc=$?
  t2=$(us)
  stop_group "$spid"
  [ $rc -eq 124 ] && echo "timed out after $limit s" > "$dir/reason"
  echo "$rc" > "$dir/status"
  echo "$(secs $(( t2 - t1 )))" > "$dir/duration"
  timing "  scenario $name: exit $rc after $(secs $(( t2 - t1 ))) s"
  teardown
  dmesg -c > "$dir/kernel.log" 2>&1
  timing "  $name with setup and teardown $(secs $(( $(us) - t0 ))) s"
done
timing "guest driver done $(uptime_s) s after kernel start"
