# Helpers for guest scenarios (Tests/vm/scenarios/NN-name.sh). Source with `. "$VM_LIB"`.
# A scenario runs in the guest with hci0..hci2 up (btvirt), a broker on $MQTT_HOST:$MQTT_PORT,
# the binary under test in $COLLECTORD and its own output folder in $OUT. It passes by exiting 0;
# 77 means skipped. Everything it leaves running is killed afterwards.
#
# Every process start costs 100-300 ms in the emulated guest (TCG on a busy host), so these
# helpers use bash builtins only: $EPOCHREALTIME for time, `read -t` for sleeping, mapfile and
# [[ =~ ]] for matching.
set -u

# Virtual controllers' addresses (btvirt numbers them 00:AA:01:0N:00:0N).
HCI0_ADDR=00:AA:01:00:00:00
HCI1_ADDR=00:AA:01:01:00:01
HCI2_ADDR=00:AA:01:02:00:02

_vm_t0=${EPOCHREALTIME/./}
# A descriptor nothing is ever written to: `read -t` on it is a sleep without a process.
exec {_vm_sleep_fd}<> <(:)

# Microseconds since the scenario started, and "12.34" seconds for logs.
vm_us() { echo $(( ${EPOCHREALTIME/./} - _vm_t0 )); }
vm_elapsed() { local u=$(( ${EPOCHREALTIME/./} - _vm_t0 )); printf '%d.%02d' $(( u / 1000000 )) $(( u % 1000000 / 10000 )); }
nap() { read -r -t "$1" -u "$_vm_sleep_fd" _ || true; }
log() { echo "[$(vm_elapsed)] $*"; }
fail() { echo "[$(vm_elapsed)] FAIL: $*"; exit 1; }
skip() { echo "[$(vm_elapsed)] SKIP: $*"; exit 77; }
pass() { echo "[$(vm_elapsed)] PASS${1:+: $*}"; exit 0; }

# start NAME COMMAND...: runs COMMAND in the background, stdout+stderr to $OUT/NAME.log; its pid
# is in $OUT/NAME.pid.
start() {
  local name=$1; shift
  "$@" > "$OUT/$name.log" 2>&1 < /dev/null &
  echo $! > "$OUT/$name.pid"
  log "started $name (pid $!): $*"
}

_pid() { local p; read -r p < "$OUT/$1.pid" 2>/dev/null && echo "$p"; }

# stop NAME: TERM, then KILL after 2 s.
stop() {
  local pid i
  pid=$(_pid "$1") || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in {1..20}; do kill -0 "$pid" 2>/dev/null || return 0; nap 0.1; done
  kill -KILL "$pid" 2>/dev/null
}

# running NAME: whether the background command is still alive.
running() { local pid; pid=$(_pid "$1") && kill -0 "$pid" 2>/dev/null; }

# matches FILE REGEX: a line of FILE matches the extended regex (bash's [[ =~ ]]).
matches() {
  local line
  [ -r "$1" ] || return 1
  while IFS= read -r line || [ -n "$line" ]; do
    [[ $line =~ $2 ]] && return 0
  done < "$1"
  return 1
}

# count FILE REGEX: how many lines of FILE match.
count() {
  local line n=0
  if [ -r "$1" ]; then
    while IFS= read -r line || [ -n "$line" ]; do [[ $line =~ $2 ]] && n=$((n + 1)); done < "$1"
  fi
  echo "$n"
}

# wait_for FILE REGEX SECONDS: until a line of FILE matches. Returns 1 after SECONDS.
wait_for() {
  local end=$(( ${EPOCHREALTIME/./} + $3 * 1000000 ))
  until matches "$1" "$2"; do
    [ "${EPOCHREALTIME/./}" -lt $end ] || return 1
    nap 0.1
  done
}

# wait_count FILE REGEX N SECONDS: until at least N lines of FILE match. Returns 1 after SECONDS.
wait_count() {
  local end=$(( ${EPOCHREALTIME/./} + $4 * 1000000 ))
  until [ "$(count "$1" "$2")" -ge "$3" ]; do
    [ "${EPOCHREALTIME/./}" -lt $end ] || return 1
    nap 0.1
  done
}

# expect FILE REGEX DESCRIPTION: a line of FILE matches, or the scenario fails showing FILE.
expect() {
  if matches "$1" "$2"; then
    log "ok: $3"
  else
    echo "--- $1"; cat "$1"; echo "---"
    fail "$3 (no line matching /$2/ in ${1##*/})"
  fi
}

# step SECONDS NAME COMMAND...: runs COMMAND bounded, output to $OUT/NAME.log (and shown).
# Returns COMMAND's status (124 when it timed out).
step() {
  local limit=$1 name=$2; shift 2
  local rc=0 line
  log "step $name: $*"
  timeout -k 2 "$limit" "$@" > "$OUT/$name.log" 2>&1 < /dev/null || rc=$?
  while IFS= read -r line; do echo "    $line"; done < "$OUT/$name.log"
  log "step $name: exit $rc"
  return $rc
}

# --- gatttool (BlueZ's ATT client over the kernel's L2CAP socket; no bluetoothd needed) ---

# gatt_handles ADDRESS SENSOR_UUID16 LOGNAME: one `gatttool --char-desc` connection from hci0;
# sets data_h, conf_h and cccd_h for the TI sensor whose Data is f000SENSOR-… (e.g. aa01), as
# 0x-prefixed hex. Fails when the attributes are not there.
gatt_handles() {
  local addr=$1 data_uuid="f000$2-0451-4000-b000-000000000000" name=$3 line h u
  local conf_uuid="f000$(printf '%04x' $(( 16#$2 + 1 )))-0451-4000-b000-000000000000"
  data_h="" conf_h="" cccd_h=""
  step 20 "$name" gatttool -i hci0 -b "$addr" -t public --char-desc || return 1
  while IFS= read -r line; do
    [[ $line =~ handle\ =\ (0x[0-9a-f]+),\ uuid\ =\ ([0-9a-f-]+) ]] || continue
    h=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
    if [ "$u" = "$data_uuid" ]; then data_h=$h
    elif [ "$u" = "$conf_uuid" ]; then conf_h=$h
    elif [ -n "$data_h" ] && [ -z "$cccd_h" ] && [[ $u == 00002902-* ]]; then cccd_h=$h
    fi
  done < "$OUT/$name.log"
  [ -n "$data_h" ] && [ -n "$conf_h" ] && [ -n "$cccd_h" ]
}

# gatt_listen ADDRESS CONF_H CCCD_H SECONDS LOGNAME: one interactive gatttool connection from
# hci0 that writes 01 to CONF_H (sensor on), 0100 to CCCD_H (notifications on), listens for
# SECONDS and quits. Output (with the notifications) in $OUT/LOGNAME.log.
gatt_listen() {
  local addr=$1 conf=$2 cccd=$3 secs=$4 name=$5 fifo="/tmp/gatt-$5.$$.in" pid w end  # not on 9p: no FIFOs there
  rm -f "$fifo"
  mkfifo "$fifo"
  timeout -k 2 $(( secs + 40 )) gatttool -i hci0 -b "$addr" -t public -I < "$fifo" > "$OUT/$name.log" 2>&1 &
  pid=$!
  exec {w}> "$fifo"
  echo connect >&$w
  wait_for "$OUT/$name.log" 'Connection successful' 20 || true
  echo "char-write-req $conf 01" >&$w
  wait_for "$OUT/$name.log" 'Characteristic value was written successfully' 10 || true
  echo "char-write-req $cccd 0100" >&$w
  nap "$secs"
  echo exit >&$w
  # gatttool does not quit on end of input, and has been seen to miss a command right after a
  # disconnection: give it 3 s, then stop it.
  end=$(( ${EPOCHREALTIME/./} + 3000000 ))
  while kill -0 "$pid" 2>/dev/null && [ "${EPOCHREALTIME/./}" -lt $end ]; do nap 0.1; done
  kill -TERM "$pid" 2>/dev/null && log "gatttool ($name) did not quit; stopped it"
  exec {w}>&-
  wait "$pid" 2>/dev/null
  rm -f "$fifo"
  return 0
}

# gatt_show LOGNAME: an interactive gatttool log without colour codes and prompt redraws.
gatt_show() {
  sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^.*\r\x1b\[K//' -e 's/^\[[0-9A-F:]*\]\[LE\]> */> /' \
      -e '/^$/d' -e 's/^/    /' "$OUT/$1.log"
}
