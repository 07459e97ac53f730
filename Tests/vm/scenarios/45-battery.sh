#!/bin/bash
# collectord publishes a CC2650's battery level (notified only when it changes) within seconds of connecting, and a keys-only CC2541 stays connected.
# vm-timeout: 80
# Issue #14: a CC2650 notifies Battery Level only when it changes, so after a connect nothing was
# published for hours and Home Assistant showed "unknown"; and a tag with only report-on-change
# sensors (the keys) was dropped every 4 s by the silence watchdog. Over real LE links: the
# battery level is read once after setup and published within 5 s of the tag being ready, and
# the keys-only tag stays connected for 20 s with no forced disconnect.
. "$VM_LIB"
CONF=$OUT/collectord.conf

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF"
daemon_tag "$CONF" a "$HCI1_ADDR" cc2650 battery humidity:1000
daemon_tag "$CONF" b "$HCI2_ADDR" cc2541 keys
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"

start_emulators

start daemon "$COLLECTORD" run --config "$CONF"
for t in a b; do
  wait_for "$OUT/mqtt.log" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"$t\"" 40 \
    || { mqtt_show "$OUT/mqtt.log"; fail "tag $t not ready 40 s after the daemon started"; }
done
mqtt_first "$OUT/mqtt.log" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"a\""
t_ready=$mqtt_t
wait_for "$OUT/mqtt.log" '^[0-9.]+ collectord/tags/a/battery \{' 5 \
  || { mqtt_show "$OUT/mqtt.log"; fail "no battery level within 5 s of tag a being ready"; }
mqtt_first "$OUT/mqtt.log" '^[0-9.]+ collectord/tags/a/battery \{'
log "battery level published $(ms_between $t_ready $mqtt_t) ms after tag a was ready (it is read during setup, so it may come first)"
expect "$OUT/mqtt.log" 'collectord/tags/a/battery \{.*"level":\{"value":[0-9]' "a battery level value"

# The keys-only tag: 20 s without a notification must not drop it (the window was 4 s).
t0=${EPOCHREALTIME/./}
while [ $(( (${EPOCHREALTIME/./} - t0) / 1000 )) -lt 20000 ]; do
  running daemon || fail "the daemon died"
  matches "$OUT/mqtt.log" '"event":"forced_disconnect","tag":"b"' && { mqtt_show "$OUT/mqtt.log"; fail "the keys-only tag was dropped"; }
  nap 1
done
# Checked before the stop: the stop itself drops both links ("forced disconnect: stopped").
if matches "$OUT/mqtt.log" '"event":"(disconnected|timeout)","tag":"b"'; then
  mqtt_show "$OUT/mqtt.log"; fail "the keys-only tag lost its link"
fi
stop daemon
nap 0.5
stop mqtt
pass "battery published after ready, keys-only tag kept 20 s"
