#!/bin/bash
# collectord run on hci0 keeps a CC2650 (hci1) and a CC2541 (hci2) streaming to MQTT: every configured sensor, gap-free.
# vm-timeout: 100
# The daemon against two emulated tags over real LE links: both connect (connected, ready,
# availability online, status online), and every configured sensor of both publishes readings
# with plausible values and sequence numbers 0, 1, 2, … without a gap.
. "$VM_LIB"
CONF=$OUT/collectord.conf
A_SENSORS=(temperature humidity barometer movement light)
B_SENSORS=(temperature humidity barometer accelerometer magnetometer gyroscope)

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF"
daemon_tag "$CONF" a "$HCI1_ADDR" cc2650 temperature:1000 humidity:500 barometer:1000 movement:1000 light:800
daemon_tag "$CONF" b "$HCI2_ADDR" cc2541 temperature:1000 humidity:500 barometer:1000 accelerometer:1000 magnetometer:2000 gyroscope:1000
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"

start_emulators

t_run=${EPOCHREALTIME/./}
start daemon "$COLLECTORD" run --config "$CONF"
for t in a b; do
  wait_for "$OUT/mqtt.log" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"$t\"" 40 \
    || { mqtt_show "$OUT/mqtt.log"; fail "tag $t not ready 40 s after the daemon started"; }
  mqtt_first "$OUT/mqtt.log" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"$t\""
  log "tag $t ready $(ms_between $t_run $mqtt_t) ms after the daemon started"
done

# At least 4 readings of each (the slowest, the CC2541 magnetometer, every 2 s).
for t in a b; do
  if [ $t = a ]; then sensors=("${A_SENSORS[@]}"); else sensors=("${B_SENSORS[@]}"); fi
  for s in "${sensors[@]}"; do
    wait_count "$OUT/mqtt.log" "^[0-9.]+ collectord/tags/$t/$s \{" 4 30 \
      || { mqtt_show "$OUT/mqtt.log"; fail "fewer than 4 readings of $t/$s"; }
  done
done
log "4 readings of every sensor of both tags"
running daemon || fail "the daemon died"
stop daemon
nap 0.5
stop mqtt

check_streams "$OUT/mqtt.log"
for t in a b; do
  expect "$OUT/mqtt.log" "collectord/daemon/vm/events \{.*\"event\":\"connected\",\"tag\":\"$t\"" "$t connected event"
done
log "readings (seq 0..n-1, values plausible):$stream_summary"
if matches "$OUT/mqtt.log" '"event":"(disconnected|timeout|give_up)"' \
   || matches "$OUT/mqtt.log" '"detail":"forced disconnect: ([^s]|s[^t])'; then
  mqtt_show "$OUT/mqtt.log"; fail "a link failed while streaming"
fi
pass "both tags streaming,$stream_summary"
