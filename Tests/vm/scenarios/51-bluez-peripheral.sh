#!/bin/bash
# A CC2650 served by bluetoothd's own GATT server (a D-Bus application written from the reference, not our emulator) on hci1: every sensor streams with the values it encodes, the configs and periods written are the firmware's, and a restart of the peripheral is recovered.
# vm-timeout: 240
# The peripheral is Tests/vm/fixtures/bluez-cc2650.py: bluetoothd holds the attribute table and
# answers ATT (its handle layout, its discovery answers and CCCDs, and its GATT client probing
# the central), the script supplies fixed values encoded as the firmware does. Checked:
# - collectord (hci0) connects and streams temperature, humidity, barometer, light, movement,
#   keys and battery, with sequence numbers from 0 and no gap, and exactly the values the
#   peripheral encodes (25.00/26.00 °C, 21.875 °C and 50 %RH, 21.5 °C and 1013.25 hPa, 40 lux,
#   1 g on z at the range written, 7.8125 °/s, the left key, 87 %);
# - it wrote each config to enable (1, and the movement bits with a range) and each period in
#   10 ms units (500 ms -> 0x32), and subscribed to every data characteristic;
# - nothing malformed or unexpected was counted on the link;
# - the peripheral's process is killed and started again (its services disappear from bluetoothd
#   and come back, possibly at other handles): the tag streams again, values still exact.
. "$VM_LIB"
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
SENSORS=(temperature humidity barometer light movement)
PERIPHERAL=(/usr/bin/python3 "$REPO/Tests/vm/fixtures/bluez-cc2650.py" hci1)
ev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\",\"tag\":\"$2\""; }

/usr/bin/python3 -c 'import dbus, gi' 2>/dev/null || skip "python3-dbus and python3-gi are not installed"
start_bluetoothd
start peripheral "${PERIPHERAL[@]}"
wait_for "$OUT/peripheral.log" '^application registered' 20 || { cat "$OUT/peripheral.log"; fail "the GATT application was not registered"; }
wait_for "$OUT/peripheral.log" '^advertising' 20 || { cat "$OUT/peripheral.log"; fail "the peripheral does not advertise"; }
log "bluetoothd serves the CC2650 on hci1"

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF" 1000
sed -i '1i stats_interval_s = 2' "$CONF"
daemon_tag "$CONF" a "$HCI1_ADDR" cc2650 "${SENSORS[@]/%/:500}" keys battery
t_run=${EPOCHREALTIME/./}
start daemon "$COLLECTORD" run --config "$CONF"
wait_for "$M" "$(ev ready a)" 60 || { mqtt_show "$M"; tail -40 "$OUT/daemon.log"; cat "$OUT/peripheral.log"; fail "tag a not ready"; }
mqtt_first "$M" "$(ev ready a)"
log "a ready $(ms_between $t_run $mqtt_t) ms after the daemon started"

# exact VALUE TOLERANCE FILE SENSOR FIELD: every reading's FIELD is VALUE within TOLERANCE.
exact() {
  awk -v want="$1" -v tol="$2" -v field="$5" '
    { if (match($0, "\"" field "\":\\{\"value\":-?[0-9.eE+-]+")) {
        v = substr($0, RSTART, RLENGTH); sub(/.*"value":/, "", v); n++
        d = v - want; if (d < 0) d = -d
        if (d > tol) { print "'"$4"'." field " = " v ", not " want; bad = 1; exit 1 } } }
    END { if (!bad && n == 0) { print "'"$4"'." field " missing"; exit 1 } }' "$3"
}

check_values() {  # PHASE
  local s why
  for s in "${SENSORS[@]}"; do
    wait_count "$M" "^[0-9.]+ collectord/tags/a/$s \{" "$2" 30 || { mqtt_show "$M" | tail -20; fail "$1: a/$s has fewer than $2 readings"; }
  done
  mqtt_split "$M" "$OUT/readings-$1"
  local r=$OUT/readings-$1
  for s in "${SENSORS[@]}"; do
    seq_check "$r/a.$s" a "$s" || fail "$1: a/$s: sequence numbers not consecutive:$seq_gaps"
    [ "$seq_first" -eq 0 ] || fail "$1: a/$s: first sequence number $seq_first, not 0"
  done
  why=$( { exact 25.0 0.01 "$r/a.temperature" temperature object && exact 26.0 0.01 "$r/a.temperature" temperature ambient &&
           exact 21.875 0.01 "$r/a.humidity" humidity temperature && exact 50.0 0.01 "$r/a.humidity" humidity humidity &&
           exact 21.5 0.01 "$r/a.barometer" barometer temperature && exact 1013.25 0.01 "$r/a.barometer" barometer pressure &&
           exact 40.0 0.01 "$r/a.light" light illuminance &&
           exact 1.0 0.001 "$r/a.movement" movement accel_z && exact 0.0 0.001 "$r/a.movement" movement accel_x &&
           exact 7.8125 0.01 "$r/a.movement" movement gyro_x && exact 0.0 0.01 "$r/a.movement" movement mag_x; } 2>&1) \
    || fail "$1: a reading is not what the peripheral encoded: $why"
  log "$1: $(for s in "${SENSORS[@]}"; do printf '%s %s, ' "$s" "$(count "$r/a.$s" .)"; done)every value exact, no sequence gap"
}

check_values first 10
expect "$M" '^[0-9.]+ collectord/tags/a/battery \{.*"level":\{"value":87' "a battery level 87"
wait_for "$M" '^[0-9.]+ collectord/tags/a/keys \{.*"pressed":\{"value":\[0\]' 20 || { mqtt_show "$M" | grep keys; fail "the left key press was not published"; }
wait_for "$M" '^[0-9.]+ collectord/tags/a/keys \{.*"pressed":\{"value":\[\]' 20 || fail "the key release was not published"
log "battery 87 %, left key pressed and released"

# What the client wrote, as the peripheral saw it.
for c in aa02 aa22 aa42 aa72; do
  matches "$OUT/peripheral.log" "^write $c 01$" || { cat "$OUT/peripheral.log"; fail "config $c was not written 01"; }
done
matches "$OUT/peripheral.log" '^write aa82 7f0[0-3]$' || { cat "$OUT/peripheral.log"; fail "the movement config was not written with all axes and a range"; }
for c in aa23 aa44 aa73 aa83; do
  matches "$OUT/peripheral.log" "^write $c 32$" || { cat "$OUT/peripheral.log"; fail "period $c was not written 0x32 (500 ms)"; }
done
for c in aa01 aa21 aa41 aa71 aa81 ffe1; do
  matches "$OUT/peripheral.log" "^subscribe $c$" || { cat "$OUT/peripheral.log"; fail "data $c was never subscribed"; }
done
log "configs, periods and subscriptions as the firmware expects: $(grep -c '^write' "$OUT/peripheral.log") writes"

# The link counted nothing odd from bluetoothd (its own GATT client's requests are answered).
wait_next "$M" '^[0-9.]+ collectord/daemon/vm/stats ' 10 || fail "no stats message"
line=$(grep '^[0-9.]* collectord/daemon/vm/stats ' "$M" | tail -n 1)
[[ $line =~ \"link\":\{\"malformed\":([0-9]+),\"oversized\":([0-9]+),\"unknown_opcodes\":([0-9]+),\"unexpected\":([0-9]+) ]] \
  || fail "no link counters in the stats: ${line:0:300}"
[ "${BASH_REMATCH[1]}${BASH_REMATCH[2]}${BASH_REMATCH[3]}${BASH_REMATCH[4]}" = 0000 ] \
  || fail "the link counted malformed ${BASH_REMATCH[1]}, oversized ${BASH_REMATCH[2]}, unknown ${BASH_REMATCH[3]}, unexpected ${BASH_REMATCH[4]}"
log "link counters all 0"

# The peripheral's process dies; bluetoothd drops its services and advertisement, then it comes back.
n_ready=$(count "$M" "$(ev ready a)")
stop peripheral
t_kill=${EPOCHREALTIME/./}
wait_for "$M" "$(ev '(disconnected|forced_disconnect)' a)" 60 || { mqtt_show "$M" | tail -20; tail -20 "$OUT/daemon.log"; fail "the daemon did not notice the peripheral's services going"; }
mqtt_first "$M" "$(ev '(disconnected|forced_disconnect)' a)"
log "link dropped $(ms_between $t_kill $mqtt_t) ms after the peripheral was killed"
start peripheral2 "${PERIPHERAL[@]}"
wait_for "$OUT/peripheral2.log" '^advertising' 20 || { cat "$OUT/peripheral2.log"; fail "the restarted peripheral does not advertise"; }
t_back=${EPOCHREALTIME/./}
wait_count "$M" "$(ev ready a)" $((n_ready + 1)) 90 || { mqtt_show "$M" | tail -30; tail -40 "$OUT/daemon.log"; fail "a not ready again after the peripheral came back"; }
mqtt_first "$M" "$(ev ready a)" $((n_ready + 1))
log "a ready again $(ms_between $t_back $mqtt_t) ms after the peripheral came back"
n_hum=$(count "$M" '^[0-9.]+ collectord/tags/a/humidity \{')
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' $((n_hum + 5)) 30 || fail "a's readings did not resume"
check_values again $((n_hum + 5))
running daemon || fail "the daemon died"
pass "every sensor exact through bluetoothd's GATT server, and again after the peripheral restarted"
