#!/bin/bash
# A standard Bluetooth device (model gatt) and a vendor device described by a [[profile]] (in a drop-in file) stream over real LE links.
# vm-timeout: 100
# Issue #17: `collectord emulate --model gatt` on hci1 serves Environmental Sensing (temperature,
# humidity, pressure), Heart Rate, Battery and Device Information; on hci2 it also serves the
# declared profile's 128-bit service (a big-endian int16 pair switched on by a write, its period
# written as uint16 ms, and a raw pair that can only be read). The daemon connects through the
# kernel's L2CAP, sets up both, and every sensor publishes plausible, gap-free readings; the
# standard device's absent characteristics (elevation …) are skipped without an error.
. "$VM_LIB"
CONF=$OUT/collectord.conf

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF"
# The profile as a drop-in file beside the configuration (shared with GenericDeviceTests).
mkdir -p "$OUT/collectord.d"
cp "$REPO/Tests/vm/fixtures/thermo-profile.conf" "$OUT/collectord.d/thermo.conf"
daemon_tag "$CONF" a "$HCI1_ADDR" gatt
printf '\n[[tag]]\nname = "b"\naddress = "%s"\nprofile = "thermo"\n[tag.sensors.climate]\nperiod_ms = 500\n[tag.sensors.gas]\nperiod_ms = 1000\n' "$HCI2_ADDR" >> "$CONF"
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"
grep -qF "device profiles: thermo ($OUT/collectord.d/thermo.conf)" "$OUT/check-config.log" || fail "check-config does not name the drop-in file"

start emulate-a "$COLLECTORD" emulate --model gatt --adapter hci1 --seed 1
start emulate-b "$COLLECTORD" emulate --model gatt --profile thermo --config "$CONF" --adapter hci2 --seed 2
wait_for "$OUT/emulate-a.log" 'advertising on hci1' 15 || fail "standard emulator did not advertise"
wait_for "$OUT/emulate-b.log" 'advertising on hci2' 15 || fail "declared emulator did not advertise"

start daemon "$COLLECTORD" run --config "$CONF"
for t in a b; do
  wait_for "$OUT/mqtt.log" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"$t\"" 40 \
    || { cat "$OUT/daemon.log"; mqtt_show "$OUT/mqtt.log"; fail "tag $t not ready 40 s after the daemon started"; }
done
for ts in a/temperature a/humidity a/pressure a/heart_rate b/climate b/gas; do
  wait_count "$OUT/mqtt.log" "^[0-9.]+ collectord/tags/$ts \{" 3 30 || { mqtt_show "$OUT/mqtt.log"; fail "fewer than 3 readings of $ts"; }
done
wait_for "$OUT/mqtt.log" '^[0-9.]+ collectord/tags/a/battery \{' 10 || fail "no battery level from the standard device"
running daemon || fail "the daemon died"
stop daemon
nap 0.3
stop mqtt

mqtt_split "$OUT/mqtt.log" "$OUT/readings"
summary=""
for ts in a.temperature a.humidity a.pressure a.heart_rate b.climate b.gas; do
  seq_check "$OUT/readings/$ts" "${ts%%.*}" "${ts#*.}" || fail "$ts: sequence numbers not consecutive:$seq_gaps"
  summary+=" ${ts/./\/}:$seq_n"
done
expect "$OUT/mqtt.log" 'collectord/tags/a/pressure \{.*"pressure":\{"value":(9[0-9][0-9]|10[0-9][0-9])\.' "a pressure in hPa"
expect "$OUT/mqtt.log" 'collectord/tags/a/heart_rate \{.*"heart_rate":\{"value":[6-8][0-9]\.0,"unit":"bpm"' "a heart rate in bpm"
expect "$OUT/mqtt.log" 'collectord/tags/b/climate \{.*"temperature":\{"value":-?[0-9]+\.[0-9]+,"unit":"°C"\},"humidity":\{"value":[0-9]+\.[0-9]+,"unit":"%"\}' "b climate fields, with their declared units"
expect "$OUT/mqtt.log" 'collectord/tags/b/gas \{.*"ppm":\{"value":[0-9]+\.0\},"quality":\{"value":[0-9]+\.0\}' "b gas fields"
if matches "$OUT/mqtt.log" 'collectord/tags/a/elevation '; then fail "a reading of a characteristic the device does not have"; fi
if matches "$OUT/daemon.log" '<3>'; then cat "$OUT/daemon.log"; fail "errors in the daemon's log"; fi
pass "standard and declared devices over the kernel's L2CAP:$summary"
