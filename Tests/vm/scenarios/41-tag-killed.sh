#!/bin/bash
# A tag's emulator is killed mid-stream: availability offline and a disconnect event; restarted, it reconnects and its sequence numbers continue.
# vm-timeout: 120
# collectord run with a CC2650 "a" (hci1) and a CC2541 "b" (hci2). Once both stream, a's emulator
# is killed (SIGKILL): a's availability must go offline and a failure event for a must be
# published (disconnected, timeout, or forced_disconnect when the daemon's silence watchdog
# notices first: the link itself stays up ~2-4 s after the process died), while b keeps streaming. Then a
# new emulator starts on hci1: a must be reconnected within the backoff window (base 500 ms, cap
# 4 s; the attempt in progress is a pending LE connection, connect timeout 10 s), and its readings
# resume with sequence numbers continuing where they stopped: no reset, no gap.
. "$VM_LIB"
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
ev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\",\"tag\":\"$2\""; }

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF"
daemon_tag "$CONF" a "$HCI1_ADDR" cc2650 temperature:1000 humidity:500
daemon_tag "$CONF" b "$HCI2_ADDR" cc2541 humidity:500

start_emulators
start daemon "$COLLECTORD" run --config "$CONF"
for t in a b; do
  wait_for "$M" "$(ev ready $t)" 40 || { mqtt_show "$M"; fail "tag $t not ready"; }
done
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' 4 20 || { mqtt_show "$M"; fail "a is not streaming"; }
log "both tags streaming"

# Kill a's emulator.
offline_re='^[0-9.]+ collectord/availability/a offline'
off0=$(count "$M" "$offline_re")
disc_re='collectord/daemon/vm/events \{.*"event":"(disconnected|forced_disconnect|timeout)","tag":"a"'
a_before=$(count "$M" '^[0-9.]+ collectord/tags/a/humidity \{')
t_kill=${EPOCHREALTIME/./}
kill -KILL "$(< "$OUT/emulate-a.pid")"
log "killed a's emulator after $a_before humidity readings"
wait_count "$M" "$offline_re" $((off0 + 1)) 20 || { mqtt_show "$M"; fail "a's availability did not go offline within 20 s"; }
mqtt_first "$M" "$offline_re" $((off0 + 1)); t_offline=$mqtt_t
log "a offline $(ms_between $t_kill $t_offline) ms after the kill"
wait_for "$M" "$disc_re" 10 || { mqtt_show "$M"; fail "no disconnected/forced_disconnect/timeout event for a"; }
mqtt_first "$M" "$disc_re"; t_disc=$mqtt_t
[[ $mqtt_line =~ \"event\":\"([a-z_]+)\".*\"detail\":\"([^\"]*)\" ]]
log "event ${BASH_REMATCH[1]} ($(ms_between $t_kill $t_disc) ms after the kill): ${BASH_REMATCH[2]}"
a_during=$(count "$M" '^[0-9.]+ collectord/tags/a/humidity \{')

# Give the daemon one backoff step, then bring the tag back.
nap 1
t_restart=${EPOCHREALTIME/./}
start emulate-a2 "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
wait_for "$OUT/emulate-a2.log" 'advertising on hci1' 15 || fail "the new cc2650 emulator did not advertise"
t_adv=${EPOCHREALTIME/./}
log "a's emulator restarted $(ms_between $t_kill $t_restart) ms after the kill; advertising seen in its log $(ms_between $t_restart $t_adv) ms later"
wait_count "$M" "$(ev ready a)" 2 15 || { mqtt_show "$M"; fail "a not ready again within 15 s of advertising"; }
mqtt_first "$M" "$(ev ready a)" 2; t_ready=$mqtt_t
log "a ready again $(ms_between $t_restart $t_ready) ms after its emulator was restarted ($(ms_between $t_kill $t_ready) ms after the kill)"
[ "$(ms_between $t_restart $t_ready)" -le 12000 ] || fail "a ready again more than 12 s after its emulator restarted (backoff cap 4 s, connect timeout 10 s)"
log "a's events since the kill:"
tag_events "$M" a "$t_kill" ready
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' $((a_during + 4)) 20 || { mqtt_show "$M"; fail "a's readings did not resume"; }
wait_count "$M" '^[0-9.]+ collectord/tags/a/temperature \{' $(( $(count "$M" '^[0-9.]+ collectord/tags/a/temperature \{') + 2 )) 10 || true
running daemon || fail "the daemon died"
stop daemon
nap 0.5
stop mqtt

expect "$M" '^[0-9.]+ collectord/availability/a online' "a availability online"
n_online=$(count "$M" '^[0-9.]+ collectord/availability/a online')
[ "$n_online" -ge 2 ] || fail "a's availability did not go online again ($n_online online messages)"
mqtt_split "$M" "$OUT/readings"
# Readings: consecutive sequence numbers across the outage, and b undisturbed.
for ts in a/temperature a/humidity b/humidity; do
  seq_check "$OUT/readings/${ts/\//.}" ${ts%/*} ${ts#*/} || { mqtt_show "$M"; fail "$ts: sequence numbers not consecutive:$seq_gaps"; }
  [ "$seq_first" -eq 0 ] || fail "$ts: first sequence number $seq_first"
  log "$ts: $seq_n readings, seq $seq_first..$seq_last, no gap"
done
# The longest silence of a/humidity (500 ms period) is the outage; b/humidity has none.
longest() {  # FILE TOPIC -> the longest time between two messages on TOPIC, ms
  local line prev="" max=0 d re="^([0-9]+)\.([0-9]{6})[0-9]* $2 "
  while IFS= read -r line; do
    [[ $line =~ $re ]] || continue
    d=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
    [ -n "$prev" ] && [ $(( (d - prev) / 1000 )) -gt $max ] && max=$(( (d - prev) / 1000 ))
    prev=$d
  done < "$1"
  echo $max
}
a_gap=$(longest "$OUT/readings/a.humidity" collectord/tags/a/humidity) b_gap=$(longest "$OUT/readings/b.humidity" collectord/tags/b/humidity)
log "longest silence: a/humidity $a_gap ms (the outage), b/humidity $b_gap ms"
[ "$b_gap" -lt 3000 ] || fail "b stopped for $b_gap ms while a was away"
pass "offline $(ms_between $t_kill $t_offline) ms after the kill, ready $(ms_between $t_restart $t_ready) ms after the restart, seq continued"
