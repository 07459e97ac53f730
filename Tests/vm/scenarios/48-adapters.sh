#!/bin/bash
# collectord run on hci0 and hci1 (by address), at most 2 tags each: three tags spread 2 + 1; hci0 powered off, its tags move to hci1 while it has room; back, they return.
# vm-timeout: 240
# vm-controllers: 5
# Three emulated tags on hci2..hci4; the daemon has adapters = ["hci0", <hci1's address>] and
# max_connections = 2. The plan (check-config) puts a and c on hci0 and b on hci1; every tag's
# ready event and the stats say so, with each link's RSSI (btvirt answers -1 dBm). hci0 is then
# powered off through the management interface (as `bluetoothctl power off` does): a takes
# hci1's free connection, c waits. Powered on again: c returns at once, a (streaming on hci1)
# only once hci0 has been up for 60 s. The times are logged: how long a tag takes to move to the
# other adapter and to come back.
. "$VM_LIB"
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
ev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\",\"tag\":\"$2\""; }

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF" 3
# Top-level keys go before [mqtt]: replace the adapter line.
sed -i "s/^adapter = \"hci0\"\$/adapters = [\"hci0\", \"$HCI1_ADDR\"]\nmax_connections = 2\nstats_interval_s = 3/" "$CONF"
daemon_tag "$CONF" a "$HCI2_ADDR" cc2650 humidity:500
daemon_tag "$CONF" b "$HCI3_ADDR" cc2650 humidity:500
daemon_tag "$CONF" c "$HCI4_ADDR" cc2541 humidity:500
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"
expect "$OUT/check-config.log" '^  hci0 +2/2  a, c$' "plan: a and c on hci0"
expect "$OUT/check-config.log" "^  $HCI1_ADDR  1/2  b\$" "plan: b on hci1"

start emulate-a "$COLLECTORD" emulate --model cc2650 --adapter hci2 --seed 1
start emulate-b "$COLLECTORD" emulate --model cc2650 --adapter hci3 --seed 2
start emulate-c "$COLLECTORD" emulate --model cc2541 --adapter hci4 --seed 3
for t in a:hci2 b:hci3 c:hci4; do
  wait_for "$OUT/emulate-${t%%:*}.log" "advertising on ${t#*:}" 15 || fail "emulator ${t%%:*} did not advertise"
done

start daemon "$COLLECTORD" run --config "$CONF"
for t in a:hci0 b:hci1 c:hci0; do
  wait_for "$M" "$(ev ready "${t%%:*}").*on ${t#*:}\"" 60 \
    || { mqtt_show "$M"; fail "tag ${t%%:*} not ready on ${t#*:}"; }
done
log "a and c ready on hci0, b on hci1"
wait_for "$M" 'collectord/daemon/vm/stats .*"a":\{"state":"streaming","adapter":"hci0","rssi_dbm":-1,' 20 \
  || { mqtt_show "$M"; fail "no stats with a's adapter and RSSI"; }
expect "$M" 'collectord/daemon/vm/stats .*"b":\{"state":"streaming","adapter":"hci1","rssi_dbm":-1,' "b on hci1 in the stats, with its RSSI"
expect "$M" "collectord/daemon/vm/stats .*\"adapters\":\\{\"hci0\":\\{\"up\":true,\"name\":\"hci0\",\"address\":\"$HCI0_ADDR\",\"tags\":2,\"max\":2\\},\"$HCI1_ADDR\":\\{\"up\":true,\"name\":\"hci1\",\"address\":\"$HCI1_ADDR\",\"tags\":1,\"max\":2\\}\\}" "both adapters in the stats"

# hci0 goes away.
t_off=${EPOCHREALTIME/./}
step 10 power-off btmgmt --index 0 power off || fail "btmgmt power off failed"
wait_for "$M" "$(ev adapter a).*\"detail\":\"on hci1 \\(hci0 went away\\)\"" 30 || { mqtt_show "$M"; fail "a not moved to hci1"; }
wait_count "$M" "$(ev ready a)" 2 30 || { mqtt_show "$M"; fail "a not ready again"; }
mqtt_first "$M" "$(ev ready a).*on hci1\""; t_a_moved=$mqtt_t
log "a streams on hci1 $(ms_between $t_off $t_a_moved) ms after hci0 was powered off"
wait_for "$M" "$(ev adapter c).*\"detail\":\"waiting for an adapter \\(hci0 went away; no room on any other adapter\\)\"" 30 \
  || { mqtt_show "$M"; fail "c does not wait"; }
wait_next "$M" '^[0-9.]+ collectord/tags/a/humidity \{' 10 || fail "no reading of a on hci1"
matches "$M" "$(ev ready c).*on hci1\"" && fail "c went over hci1's limit"

# hci0 is back: c at once, a after 60 s.
t_on=${EPOCHREALTIME/./}
step 10 power-on btmgmt --index 0 power on || fail "btmgmt power on failed"
wait_count "$M" "$(ev ready c)" 2 30 || { mqtt_show "$M"; fail "c not back"; }
mqtt_first "$M" "$(ev ready c)" 2; t_c_back=$mqtt_t
[[ $mqtt_line =~ on\ hci0\" ]] || fail "c not back on hci0: $mqtt_line"
log "c streams on hci0 again $(ms_between $t_on $t_c_back) ms after hci0 was powered on"
wait_count "$M" "$(ev ready a)" 3 100 || { mqtt_show "$M"; fail "a did not return to hci0"; }
mqtt_first "$M" "$(ev ready a)" 3; t_a_back=$mqtt_t
[[ $mqtt_line =~ on\ hci0\" ]] || fail "a not back on hci0: $mqtt_line"
back_ms=$(ms_between $t_on $t_a_back)
log "a streams on hci0 again $back_ms ms after hci0 was powered on (it may return once hci0 has been up 60 s)"
[ "$back_ms" -ge 59000 ] || fail "a was moved back after $back_ms ms, before hci0 had been up for 60 s"
wait_next "$M" '^[0-9.]+ collectord/tags/a/humidity \{' 10 || fail "no reading of a back on hci0"
log "a's events since hci0 was powered off:"
tag_events "$M" a "$t_off"
running daemon || fail "the daemon died"
stop daemon
pass "moved to hci1 in $(ms_between $t_off $t_a_moved) ms; back on hci0 in $(ms_between $t_on $t_c_back) ms (waiting tag) and $back_ms ms (guest)"
