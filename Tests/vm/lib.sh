# Helpers for guest scenarios (Tests/vm/scenarios/NN-name.sh). Source with `. "$VM_LIB"`.
# A scenario runs in the guest with hci0..hci2 (or as many as `# vm-controllers: N` asks) up (btvirt), a broker on $MQTT_HOST:$MQTT_PORT,
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
HCI3_ADDR=00:AA:01:03:00:03  # with `# vm-controllers: 4` or more
HCI4_ADDR=00:AA:01:04:00:04

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

# matches FILE REGEX: a line of FILE matches the extended regex. grep, not a bash loop: the waits
# poll these every 0.1 s over logs of thousands of lines, which a loop of [[ =~ ]] in a guest on
# a loaded host took seconds to read.
matches() { [ -r "$1" ] && grep -aqE -- "$2" "$1"; }

# count FILE REGEX: how many lines of FILE match.
count() {
  local n=0
  [ -r "$1" ] && n=$(grep -acE -- "$2" "$1")
  echo "${n:-0}"
}

# Every wait here is for a condition (and every step for a command that ends), so a generous
# limit costs nothing when things work: the limits are written for a quiet host and multiplied by
# VM_TIME_SCALE (from job.env), since an emulated guest on a loaded 2-core host runs several
# times slower.
: "${VM_TIME_SCALE:=1}"

# wait_for FILE REGEX SECONDS: until a line of FILE matches. Returns 1 after SECONDS (scaled).
wait_for() {
  local end=$(( ${EPOCHREALTIME/./} + $3 * VM_TIME_SCALE * 1000000 ))
  until matches "$1" "$2"; do
    [ "${EPOCHREALTIME/./}" -lt $end ] || return 1
    nap 0.1
  done
}

# wait_count FILE REGEX N SECONDS: until at least N lines of FILE match. Returns 1 after SECONDS
# (scaled).
wait_count() {
  local end=$(( ${EPOCHREALTIME/./} + $4 * VM_TIME_SCALE * 1000000 ))
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

# step SECONDS NAME COMMAND...: runs COMMAND bounded (SECONDS scaled), output to $OUT/NAME.log
# (and shown). Returns COMMAND's status (124 when it timed out).
step() {
  local limit=$(( $1 * VM_TIME_SCALE )) name=$2; shift 2
  local rc=0 line
  log "step $name: $*"
  timeout -k 2 "$limit" "$@" > "$OUT/$name.log" 2>&1 < /dev/null || rc=$?
  while IFS= read -r line; do echo "    $line"; done < "$OUT/$name.log"
  log "step $name: exit $rc"
  return $rc
}

# btmgmt_step SECONDS NAME ARGS...: `btmgmt ARGS` as a step. btmgmt prints nothing at all when
# its standard input cannot be polled (step's /dev/null: epoll refuses it), so it gets an empty
# pipe. Its exit status is 0 even when the command failed: read the output.
btmgmt_step() {
  local limit=$1 name=$2; shift 2
  step "$limit" "$name" bash -c 'btmgmt "$@" < <(:)' btmgmt "$@"
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

# --- the daemon (`collectord run`) and what it publishes ---

# daemon_config FILE [MAX_ATTEMPTS [SPOOL]]: the common part of a daemon configuration (adapter
# hci0, the guest's broker, client id "vm" so status and events are on collectord/daemon/vm/…, spool in
# SPOOL or $OUT/spool, reconnect 500 ms doubling to 4 s, give up after MAX_ATTEMPTS (3), debug
# log, discovery off). Append [[tag]] sections to FILE (daemon_tag).
daemon_config() {
  cat > "$1" <<CONF
adapter = "hci0"
log_level = "debug"

[mqtt]
brokers = ["$MQTT_HOST:$MQTT_PORT"]
client_id = "vm"

[spool]
path = "${3:-$OUT/spool}"

[reconnect]
base_ms = 500
cap_ms = 4000
max_attempts = ${2:-3}

[homeassistant]
discovery = false
CONF
}

# mqtt_watch NAME: mosquitto_sub on collectord/# (QoS 1) in the background, into $OUT/NAME.log,
# one line per message: "SECONDS.NANOSECONDS TOPIC PAYLOAD" (the arrival time, same clock as
# $EPOCHREALTIME). Returns once the subscription is live (a probe message came back).
mqtt_watch() {
  start "$1" mosquitto_sub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -F '@s.@N %t %p' \
    -t 'collectord/#' -t 'vmtest/probe'
  local i
  for i in 1 2 3 4 5; do
    mosquitto_pub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -t vmtest/probe -m "$i" > /dev/null 2>&1
    wait_for "$OUT/$1.log" '^[0-9.]+ vmtest/probe ' 2 && return 0
  done
  return 1
}

# mqtt_us LINE: the arrival time of a mqtt_watch line, in microseconds since the epoch.
mqtt_us() { [[ $1 =~ ^([0-9]+)\.([0-9]{6}) ]] && echo "${BASH_REMATCH[1]}${BASH_REMATCH[2]}"; }

# mqtt_first FILE REGEX [N]: the first (Nth) line of FILE matching REGEX in $mqtt_line, its
# arrival time (microseconds since the epoch) in $mqtt_t. Returns 1 if there is none.
mqtt_first() {
  local line n=0
  mqtt_line="" mqtt_t=""
  [ -r "$1" ] || return 1
  while IFS= read -r line || [ -n "$line" ]; do
    [[ $line =~ $2 ]] || continue
    n=$((n + 1))
    [ $n -ge "${3:-1}" ] || continue
    mqtt_line=$line
    [[ $line =~ ^([0-9]+)\.([0-9]{6}) ]] && mqtt_t=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
    return 0
  done < "$1"
  return 1
}

# ms_between US1 US2: milliseconds from US1 to US2 (microsecond times: $EPOCHREALTIME without the dot, $mqtt_t).
ms_between() { echo $(( ($2 - $1) / 1000 )); }

# wait_next FILE REGEX SECONDS: like wait_for, but for a line beyond the ones that match now.
wait_next() { wait_count "$1" "$2" $(( $(count "$1" "$2") + 1 )) "$3"; }

# mqtt_split FILE DIR: the readings of FILE (a mqtt_watch log) split by topic into DIR/TAG.SENSOR,
# one pass, so that checking each sensor does not read the whole log again (slow in the guest).
# The lines complete when it starts, in one awk: the log goes on growing meanwhile, and a shell
# loop opening its output file once per line over 9p kept pace with it in a loaded guest (about
# 11 lines a second) and never reached its end.
mqtt_split() {
  mkdir -p "$2"
  rm -f "$2"/*.*
  head -n "$(wc -l < "$1")" "$1" | awk -v dir="$2" '
    $1 ~ /^[0-9.]+$/ && $2 ~ /^collectord\/tags\/[^\/]+\/[^\/]+$/ && substr($3, 1, 1) == "{" {
      split($2, level, "/")
      print > (dir "/" level[3] "." level[4])
    }'
}

# seq_check FILE TAG SENSOR: the readings on collectord/tags/TAG/SENSOR in FILE (a mqtt_watch log).
# Sets seq_n (how many), seq_first, seq_last and seq_gaps (the breaks in the sequence, as
# "a->b" items); returns 1 when there are none or the sequence numbers are not consecutive.
seq_check() {
  local line re="^[0-9.]+ collectord/tags/$2/$3 \{.*\"seq\":([0-9]+)" s prev=""
  seq_n=0 seq_first="" seq_last="" seq_gaps=""
  while IFS= read -r line || [ -n "$line" ]; do
    [[ $line =~ $re ]] || continue
    s=${BASH_REMATCH[1]}
    seq_n=$((seq_n + 1))
    [ -z "$seq_first" ] && seq_first=$s
    [ -n "$prev" ] && [ "$s" -ne $((prev + 1)) ] && seq_gaps+=" $prev->$s"
    prev=$s
  done < "$1"
  seq_last=$prev
  [ "$seq_n" -gt 0 ] && [ -z "$seq_gaps" ]
}

# field_range FILE TAG SENSOR FIELD MIN MAX: every reading on collectord/tags/TAG/SENSOR has FIELD's
# value within MIN..MAX (integers; the value's integer part is compared, exponents -> 0).
# Sets field_bad to the first offending value; returns 1 when one is out of range or none is found.
field_range() {
  local line re="^[0-9.]+ collectord/tags/$2/$3 \{.*\"$4\":\{\"value\":(-?)([0-9]+)(\.[0-9]*)?([eE]([-+]?[0-9]+))?" v n=0
  field_bad=""
  while IFS= read -r line || [ -n "$line" ]; do
    [[ $line =~ $re ]] || continue
    n=$((n + 1))
    v=$((10#${BASH_REMATCH[2]}))
    if [ -n "${BASH_REMATCH[5]}" ]; then
      if [ "${BASH_REMATCH[5]}" -lt 0 ]; then v=0; else v=999999999; fi
    fi
    [ "${BASH_REMATCH[1]}" = "-" ] && v=$(( -v ))
    if [ "$v" -lt "$5" ] || [ "$v" -gt "$6" ]; then field_bad="$4=${BASH_REMATCH[1]}${BASH_REMATCH[2]}${BASH_REMATCH[3]}"; return 1; fi
  done < "$1"
  [ $n -gt 0 ] || { field_bad="$4 missing"; return 1; }
}

# mqtt_show FILE: a mqtt_watch log, with times relative to the scenario's start and long payloads cut.
mqtt_show() {
  local line us rest
  [ -r "$1" ] || return 0
  while IFS= read -r line || [ -n "$line" ]; do
    [[ $line =~ ^([0-9]+)\.([0-9]{6})[0-9]*\ (.*)$ ]] || { echo "    $line"; continue; }
    us=$(( ${BASH_REMATCH[1]}${BASH_REMATCH[2]} - _vm_t0 )) rest=${BASH_REMATCH[3]}
    [ ${#rest} -gt 150 ] && rest="${rest:0:150}…"
    printf '    [%d.%02d] %s\n' $(( us / 1000000 )) $(( us % 1000000 / 10000 )) "$rest"
  done < "$1"
}

# daemon_tag FILE NAME ADDRESS MODEL [SENSOR[:PERIOD_MS]]...: appends a [[tag]] section to FILE,
# with one [tag.sensors.SENSOR] table per SENSOR (none: every sensor at the tag's defaults).
daemon_tag() {
  local file=$1 s
  printf '\n[[tag]]\nname = "%s"\naddress = "%s"\nmodel = "%s"\n' "$2" "$3" "$4" >> "$file"
  shift 4
  for s in "$@"; do
    printf '[tag.sensors.%s]\n' "${s%%:*}" >> "$file"
    [[ $s == *:* ]] && printf 'period_ms = %s\n' "${s#*:}" >> "$file"
  done
  return 0
}

# plausible FILE TAG SENSOR: every reading of TAG's SENSOR in FILE (a mqtt_watch log) has its
# fields in a physically plausible range (room temperature, humidity 0-100 %RH, 300-1100 hPa,
# |acceleration| <= 16 g with gravity on z, …). Sets plausible_why when not.
plausible() {
  local f=$1 t=$2 s=$3 spec x
  case $s in
    temperature) spec=("object -40 125" "ambient -40 125") ;;
    humidity) spec=("temperature -40 125" "humidity 0 100") ;;
    barometer) spec=("temperature -40 125" "pressure 300 1100") ;;
    light) spec=("illuminance 0 84000") ;;
    movement) spec=("accel_x -16 16" "accel_y -16 16" "accel_z 0 2" "gyro_x -250 250" "gyro_y -250 250"
                    "gyro_z -250 250" "mag_x -4912 4912" "mag_y -4912 4912" "mag_z -4912 4912") ;;
    accelerometer) spec=("x -8 8" "y -8 8" "z 0 2") ;;
    magnetometer) spec=("x -1000 1000" "y -1000 1000" "z -1000 1000") ;;
    gyroscope) spec=("x -250 250" "y -250 250" "z -250 250") ;;
    *) plausible_why="no range known for $s"; return 1 ;;
  esac
  for x in "${spec[@]}"; do
    set -- $x
    field_range "$f" "$t" "$s" "$1" "$2" "$3" || { plausible_why="$t/$s: $field_bad not in $2..$3"; return 1; }
  done
  plausible_why=""
}

# tag_events FILE TAG SINCE [UNTIL_EVENT]: logs TAG's events in FILE (a mqtt_watch log) that
# arrived at or after SINCE (microseconds since the epoch), as "+MS event: detail", up to and
# including the first UNTIL_EVENT. Sets tag_events (" event event …") and tag_event_t (the
# arrival time of the last one listed).
tag_events() {
  local line t re="^([0-9]+)\.([0-9]{6})[0-9]* collectord/daemon/vm/events .*\"event\":\"([a-z_]+)\",\"tag\":\"$2\".*\"detail\":\"([^\"]*)\""
  tag_events="" tag_event_t=""
  while IFS= read -r line || [ -n "$line" ]; do
    [[ $line =~ $re ]] || continue
    t=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
    [ "$t" -ge "$3" ] || continue
    echo "[$(vm_elapsed)]   +$(( (t - $3) / 1000 )) ms ${BASH_REMATCH[3]}: ${BASH_REMATCH[4]}"
    tag_events+=" ${BASH_REMATCH[3]}" tag_event_t=$t
    [ "${BASH_REMATCH[3]}" = "${4:-}" ] && break
  done < "$1"
  return 0
}

# start_bluetoothd: the system bus and bluetoothd (debug log, state and configuration under
# /tmp), as on Raspberry Pi OS; returns once bluetoothd has registered every controller, so that a
# client started next finds them on the bus (Debian 12's bluetoothctl, started while bluetoothd
# was still registering them on a loaded host, died with a segfault before printing a line).
start_bluetoothd() {
  local i h
  mkdir -p /run/dbus /tmp/bluetooth-state /tmp/bluetooth-config
  cp /etc/bluetooth/main.conf /tmp/bluetooth-config/ 2>/dev/null || true
  start dbus dbus-daemon --system --nofork --nopidfile
  for i in $(seq $(( 50 * VM_TIME_SCALE ))); do [ -S /run/dbus/system_bus_socket ] && break; nap 0.1; done
  [ -S /run/dbus/system_bus_socket ] || fail "the system bus did not start: $(cat "$OUT/dbus.log")"
  start bluetoothd env STATE_DIRECTORY=/tmp/bluetooth-state CONFIGURATION_DIRECTORY=/tmp/bluetooth-config \
    /usr/libexec/bluetooth/bluetoothd -n -d
  for h in /sys/class/bluetooth/hci*; do
    h=${h##*/}
    [[ $h =~ ^hci[0-9]+$ ]] || continue  # hciN:M are links
    wait_for "$OUT/bluetoothd.log" "adapter_register.. Adapter /org/bluez/$h registered" 30 \
      || { tail -20 "$OUT/bluetoothd.log"; fail "bluetoothd did not register $h"; }
  done
}

# emulate_tags NAME:HCI...: a CC2650 emulator per NAME on HCI (output in emulate-NAME.log; seeds
# 1, 2, … in order), returning once each advertises.
emulate_tags() {
  local t seed=0
  for t in "$@"; do
    seed=$((seed + 1))
    start "emulate-${t%%:*}" "$COLLECTORD" emulate --model cc2650 --adapter "${t#*:}" --seed "$seed"
  done
  for t in "$@"; do
    wait_for "$OUT/emulate-${t%%:*}.log" "advertising on ${t#*:}" 15 || fail "emulator ${t%%:*} did not advertise"
  done
}

# tags_ready LOG NAME:HCI...: waits for each tag's ready event on HCI in LOG (a mqtt_watch log).
tags_ready() {
  local m=$1 t
  shift
  for t in "$@"; do
    wait_for "$m" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"${t%%:*}\".*on ${t#*:}\"" 60 \
      || { mqtt_show "$m"; fail "tag ${t%%:*} not ready on ${t#*:}"; }
  done
}

# start_emulators: a CC2650 on hci1 (emulate-a) and a CC2541 on hci2 (emulate-b), both advertising.
start_emulators() {
  start emulate-a "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
  start emulate-b "$COLLECTORD" emulate --model cc2541 --adapter hci2 --seed 2
  wait_for "$OUT/emulate-a.log" 'advertising on hci1' 15 || fail "cc2650 emulator did not advertise"
  wait_for "$OUT/emulate-b.log" 'advertising on hci2' 15 || fail "cc2541 emulator did not advertise"
}

# check_streams LOG: the status and both tags' availability went online, and every sensor of
# A_SENSORS (tag a) and B_SENSORS (tag b) has readings numbered 0..n-1 without a gap and with
# plausible values. Sets $stream_summary (" a/humidity:N …").
check_streams() {
  local m=$1 t s sensors
  expect "$m" '^[0-9.]+ collectord/daemon/vm/status online' "status online"
  for t in a b; do
    expect "$m" "^[0-9.]+ collectord/availability/$t online" "$t availability online"
  done
  mqtt_split "$m" "$OUT/readings"
  stream_summary=""
  for t in a b; do
    if [ $t = a ]; then sensors=("${A_SENSORS[@]}"); else sensors=("${B_SENSORS[@]}"); fi
    for s in "${sensors[@]}"; do
      seq_check "$OUT/readings/$t.$s" $t $s || fail "$t/$s: sequence numbers not consecutive:$seq_gaps"
      [ "$seq_first" -eq 0 ] || fail "$t/$s: first sequence number $seq_first, not 0"
      plausible "$OUT/readings/$t.$s" $t $s || fail "implausible reading: $plausible_why"
      stream_summary+=" $t/$s:$seq_n"
    done
  done
}

# --- fault injection (Tests/vm/btvirt-wedge.patch) ---

# wedge hciN MODE: wedges virtual controller hciN through btvirt's FIFO ($BTVIRT_WEDGE) and returns
# once btvirt has logged the change in $OUT/btvirt.log. MODE: commands (no command answered but
# HCI Reset), events (no LE event), connections (LE Create Connection never completes), each
# cured by an HCI Reset; MODE-stuck, which no reset cures; clear. Returns 1 without the FIFO
# (a btvirt without the patch, e.g. VM_BTVIRT=/usr/bin/btvirt).
wedge() {
  local hci=$1 mode=$2 fd n
  if [ -z "${BTVIRT_WEDGE:-}" ] || [ ! -p "$BTVIRT_WEDGE" ]; then
    log "wedge: no FIFO at ${BTVIRT_WEDGE:-\$BTVIRT_WEDGE} (btvirt without btvirt-wedge.patch?)"
    return 1
  fi
  local done_re="^wedge $hci: ${mode/#clear/none} \(was "
  n=$(count "$OUT/btvirt.log" "$done_re")
  # Read-write: never blocks, even if btvirt is gone (then the wait below fails).
  exec {fd}<> "$BTVIRT_WEDGE"
  echo "$hci $mode" >&"$fd"
  exec {fd}>&-
  wait_count "$OUT/btvirt.log" "$done_re" $(( n + 1 )) 5 || { log "wedge $hci $mode: btvirt did not confirm"; return 1; }
  log "$hci wedge: $mode"
}

# unwedge hciN: ends hciN's wedge, whatever it is (wedge hciN clear).
unwedge() { wedge "$1" clear; }
