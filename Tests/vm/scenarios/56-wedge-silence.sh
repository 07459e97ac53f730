#!/bin/bash
# collectord on hci0 and hci1 listening to two devices that only advertise: hci0 wedged so that it hears nothing is found from the silence, cured by a power cycle and heard again; hci1 hears them throughout.
# vm-timeout: 300
# vm-controllers: 4
# A BTHome and a pvvx emulator advertise every second on hci2 and hci3 (stale_after_s = 10, so
# the radio is suspect after 60 s of total silence: three times the longest stale_after_s, at
# least a minute). The daemon listens on hci0 and hci1. `wedge hci0 events` (btvirt-wedge.patch):
# hci0 still answers commands but reports nothing. After 60 s without a word on hci0 from either
# device, both heard before, and the probe answered, the event controller_wedged
# (nothing_heard); the management power cycle's HCI Reset cures it, and once hci0 hears a device
# again, controller_recovered. The devices' readings never stop: hci1 hears them. No link is
# involved, so no kernel takes the oops that 55-wedge-recovery meets on 6.1.
. "$VM_LIB"
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
ev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\""; }

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF" 3
sed -i "s/^adapter = \"hci0\"\$/adapters = [\"hci0\", \"hci1\"]\nstats_interval_s = 5/" "$CONF"
cat >> "$CONF" <<CONF

[recovery]
interval_s = 10
max_attempts = 2

[[tag]]
name = "thermo"
address = "$HCI2_ADDR"
model = "bthome"
stale_after_s = 10
min_interval_s = 0

[[tag]]
name = "hall"
address = "$HCI3_ADDR"
model = "pvvx"
stale_after_s = 10
min_interval_s = 0
CONF
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"

start emulate-b "$COLLECTORD" emulate --model bthome --adapter hci2 --interval-ms 1000 --seed 2
start emulate-c "$COLLECTORD" emulate --model pvvx --adapter hci3 --interval-ms 1000 --seed 3
wait_for "$OUT/emulate-b.log" 'bthome advertising on hci2' 15 || fail "bthome emulator did not advertise"
wait_for "$OUT/emulate-c.log" 'pvvx advertising on hci3' 15 || fail "pvvx emulator did not advertise"
start daemon "$COLLECTORD" run --config "$CONF"
for t in thermo hall; do
  wait_for "$M" "^[0-9.]+ collectord/tags/$t/[a-z_]+ \\{" 60 || { mqtt_show "$M"; fail "no reading of $t"; }
done
nap 5
log "both devices heard"

t_wedge=${EPOCHREALTIME/./}
wedge hci0 events || fail "could not wedge hci0"
wait_for "$M" "$(ev controller_wedged).*\"detail\":\"hci0: nothing_heard: " 200 || { mqtt_show "$M"; fail "the silence was not taken for a wedge"; }
mqtt_first "$M" "$(ev controller_wedged)"; t_found=$mqtt_t
found_ms=$(ms_between $t_wedge $t_found)
log "found $found_ms ms after hci0 wedged"
[ "$found_ms" -ge 55000 ] || fail "found after $found_ms ms, before a minute of silence"
wait_for "$M" "$(ev controller_recovery).*\"detail\":\"hci0: power_cycle \\(attempt 1\\)\"" 60 || { mqtt_show "$M"; fail "no power cycle"; }
wait_for "$M" "$(ev controller_recovered).*\"detail\":\"hci0 after " 60 || { mqtt_show "$M"; fail "hci0 not recovered"; }
mqtt_first "$M" "$(ev controller_recovered)"; t_cured=$mqtt_t
log "cured $(ms_between $t_wedge $t_cured) ms after the wedge"
# The readings went on through hci1: no gap of more than a few seconds in either device's.
for t in thermo hall; do
  gap=$(grep -aE "^[0-9.]+ collectord/tags/$t/[a-z_]+ \\{" "$M" | awk -v s="$t_wedge" -v e="$t_cured" '
    { split($1, p, "."); t = p[1] * 1000000 + substr(p[2], 1, 6); if (t >= s && t <= e) { if (l && t - l > g) g = t - l; l = t } }
    END { printf "%d", g / 1000 }')
  log "$t: largest gap between readings while hci0 was wedged: $gap ms"
  [ "$gap" -lt 10000 ] || fail "$t's readings stopped for $gap ms while hci0 was wedged"
done
matches "$M" "$(ev controller_gave_up)" && fail "given up"
running daemon || fail "the daemon died"
stop daemon
pass "found in $found_ms ms, cured in $(ms_between $t_wedge $t_cured) ms; the readings went on through hci1"
