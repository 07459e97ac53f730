#!/bin/bash
# SIGTERM stops the daemon cleanly: forced_disconnect for both tags, availability and status offline within 2 s, exit 0.
# vm-timeout: 90
# collectord run with a CC2650 "a" (hci1) and a CC2541 "b" (hci2), both streaming, gets SIGTERM.
# Measured from the signal: the retained collectord/daemon/vm/status "offline" at the broker (must be
# within 2 s), both tags' availability offline and forced_disconnect events, the daemon's exit
# (status 0), and the emulated tags seeing their links go down.
. "$VM_LIB"
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
ev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\",\"tag\":\"$2\""; }

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF"
daemon_tag "$CONF" a "$HCI1_ADDR" cc2650 humidity:500
daemon_tag "$CONF" b "$HCI2_ADDR" cc2541 humidity:500

start_emulators
start daemon "$COLLECTORD" run --config "$CONF"
pid=$(< "$OUT/daemon.pid")
for t in a b; do
  wait_for "$M" "$(ev ready $t)" 40 || { mqtt_show "$M"; fail "tag $t not ready"; }
done
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' 3 20 || { mqtt_show "$M"; fail "a is not streaming"; }
wait_count "$M" '^[0-9.]+ collectord/tags/b/humidity \{' 3 20 || { mqtt_show "$M"; fail "b is not streaming"; }
expect "$M" '^[0-9.]+ collectord/daemon/vm/status online' "status online"

st_re='^[0-9.]+ collectord/daemon/vm/status offline'
st0=$(count "$M" "$st_re")
av0a=$(count "$M" '^[0-9.]+ collectord/availability/a offline')
av0b=$(count "$M" '^[0-9.]+ collectord/availability/b offline')
t_term=${EPOCHREALTIME/./}
kill -TERM "$pid"
log "SIGTERM to the daemon (pid $pid)"
# Poll (builtins only) for the daemon's exit and the emulators' disconnections, 10 s at most.
t_exit="" t_da="" t_db=""
end=$(( t_term + 10000000 ))
while [ "${EPOCHREALTIME/./}" -lt $end ]; do
  now=${EPOCHREALTIME/./}
  [ -z "$t_exit" ] && ! kill -0 "$pid" 2>/dev/null && t_exit=$now
  [ -z "$t_da" ] && matches "$OUT/emulate-a.log" 'emulate: disconnected' && t_da=$now
  [ -z "$t_db" ] && matches "$OUT/emulate-b.log" 'emulate: disconnected' && t_db=$now
  [ -n "$t_exit" ] && [ -n "$t_da" ] && [ -n "$t_db" ] && break
  nap 0.05
done
rc=0; wait "$pid" || rc=$?
stop mqtt
ms() { [ -n "$1" ] && echo "$(ms_between $t_term $1) ms" || echo "not within 10 s"; }
mqtt_first "$M" "$st_re" $((st0 + 1)) && t_status=$mqtt_t || t_status=""
mqtt_first "$M" '^[0-9.]+ collectord/availability/a offline' $((av0a + 1)) && t_ava=$mqtt_t || t_ava=""
mqtt_first "$M" '^[0-9.]+ collectord/availability/b offline' $((av0b + 1)) && t_avb=$mqtt_t || t_avb=""
mqtt_first "$M" "$(ev forced_disconnect a)" && t_fa=$mqtt_t || t_fa=""
mqtt_first "$M" "$(ev forced_disconnect b)" && t_fb=$mqtt_t || t_fb=""
log "after SIGTERM: a availability offline $(ms "$t_ava"), b $(ms "$t_avb"); forced_disconnect a $(ms "$t_fa"), b $(ms "$t_fb")"
log "after SIGTERM: status offline $(ms "$t_status"); daemon exited $(ms "$t_exit") (status $rc)"
log "after SIGTERM: emulated tags saw the link go: a $(ms "$t_da"), b $(ms "$t_db")"
echo "--- daemon log (end)"; tail -n 8 "$OUT/daemon.log"; echo "---"

[ -n "$t_status" ] || { mqtt_show "$M"; fail "no status offline"; }
[ "$(ms_between $t_term $t_status)" -le 2000 ] || fail "status offline $(ms "$t_status") after SIGTERM, over 2 s"
[ -n "$t_exit" ] || fail "the daemon did not exit within 10 s of SIGTERM"
[ "$rc" -eq 0 ] || fail "the daemon exited with status $rc"
[ -n "$t_ava" ] && [ -n "$t_avb" ] || fail "availability offline missing"
[ -n "$t_fa" ] && [ -n "$t_fb" ] || fail "forced_disconnect events missing"
matches "$M" '"event":"forced_disconnect".*"detail":"forced disconnect: stopped"' || fail "forced_disconnect not for 'stopped'"
[ -n "$t_da" ] && [ -n "$t_db" ] || fail "an emulated tag did not see its link go down within 10 s"
matches "$OUT/daemon.log" 'mqtt: disconnected' || fail "the daemon did not log its MQTT disconnection"
pass "status offline $(ms "$t_status") after SIGTERM, exit $(ms "$t_exit"), links down at the tags $(ms "$t_da") / $(ms "$t_db")"
