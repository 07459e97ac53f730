#!/bin/bash
# Two emulated tags (CC2650 on hci1, CC2541 on hci2) and a BTHome sensor (hci3) advertise; collectord scan on hci0 lists all three, and its --config-snippet passes check-config.
# vm-timeout: 40
# vm-controllers: 4
# `collectord scan` on hci0 finds two emulated tags that were already advertising when the scan
# started, a CC2650 on hci1 and a CC2541 on hci2, and a device that only advertises, a BTHome v2
# sensor on hci3, shown with its format and the temperature of its first packet. (btvirt reports
# an advertiser once, when the scan is enabled; the scanner's HCI filter is in place before it
# enables the scan.) The [[tag]] sections it prints at the end, added to a configuration, pass
# check-config.
. "$VM_LIB"
CONF=$OUT/collectord.conf

start emulate-cc2650 "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
start emulate-cc2541 "$COLLECTORD" emulate --model cc2541 --adapter hci2 --seed 2
start emulate-bthome "$COLLECTORD" emulate --model bthome --adapter hci3 --interval-ms 1000
wait_for "$OUT/emulate-cc2650.log" 'advertising on hci1' 15 || { cat "$OUT/emulate-cc2650.log"; fail "cc2650 emulator did not start advertising"; }
wait_for "$OUT/emulate-cc2541.log" 'advertising on hci2' 15 || { cat "$OUT/emulate-cc2541.log"; fail "cc2541 emulator did not start advertising"; }
wait_for "$OUT/emulate-bthome.log" 'bthome advertising on hci3' 15 || { cat "$OUT/emulate-bthome.log"; fail "bthome emulator did not start advertising"; }
# All three controllers advertising, as the HCI trace shows (the emulators log before the
# commands complete).
wait_count "$OUT/btmon.txt" '^ +LE Set Advertise Enable \(0x08\|0x000a\) ncmd' 3 15 \
  || fail "the controllers did not confirm advertising"
log "both tags and the BTHome sensor advertising"

rc=0
step 20 scan "$COLLECTORD" scan --adapter hci0 --timeout 5 --config-snippet || rc=$?
[ $rc -eq 0 ] || fail "collectord scan exited $rc"
expect "$OUT/scan.log" '^ADDRESS +TYPE +RSSI +MODEL +NAME' "header line"
expect "$OUT/scan.log" "^$HCI1_ADDR +public +- +cc2650 +CC2650 SensorTag\$" "CC2650 on hci1 listed with model and name"
expect "$OUT/scan.log" "^$HCI2_ADDR +public +- +cc2541 +TI BLE Sensor Tag\$" "CC2541 on hci2 listed with model and name"
expect "$OUT/scan.log" "^$HCI3_ADDR +public +- +bthome +BTHome v2 .* -?[0-9]+(\\.[0-9]+)? °C( |\$)" \
  "BTHome sensor on hci3 listed with its format and a temperature"
expect "$OUT/scan.log" '^2 SensorTags and 1 advertising sensor found in 5 s on hci0$' "summary line"

# The snippet: a [[tag]] per device, after the summary; with the rig's settings, a valid file.
sed -n '/^# The devices collectord scan found on hci0/,$p' "$OUT/scan.log" > "$OUT/snippet.conf"
expect "$OUT/snippet.conf" '^name = "bthome-030003"$' "snippet names the BTHome sensor"
expect "$OUT/snippet.conf" "^address = \"$HCI3_ADDR\"\$" "snippet has the BTHome sensor's address"
expect "$OUT/snippet.conf" '^model = "bthome"$' "snippet pins the BTHome model"
[ "$(count "$OUT/snippet.conf" '^\[\[tag\]\]$')" -eq 3 ] || { cat "$OUT/snippet.conf"; fail "the snippet does not have three [[tag]] sections"; }
daemon_config "$CONF"
cat "$OUT/snippet.conf" >> "$CONF"
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "the snippet's configuration was rejected"
expect "$OUT/check-config.log" 'configuration is valid' "the snippet's configuration is valid"

running emulate-cc2650 || fail "cc2650 emulator died: $(cat "$OUT/emulate-cc2650.log")"
running emulate-cc2541 || fail "cc2541 emulator died: $(cat "$OUT/emulate-cc2541.log")"
running emulate-bthome || fail "bthome emulator died: $(cat "$OUT/emulate-bthome.log")"
pass
