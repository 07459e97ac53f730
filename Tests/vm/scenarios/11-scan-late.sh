#!/bin/bash
# collectord scan on hci0 is running first; two emulated tags then start advertising; both listed.
# vm-timeout: 50
# The other order: the scan is already running when the tags start advertising (btvirt then
# reports each advertiser once, when its advertising is enabled).
. "$VM_LIB"

# 20 s: on a loaded host the emulators under TCG have taken 8 s to start advertising, and a
# 6 s scan ended before them (seen in a CI run beside a two-hour soak).
start scan "$COLLECTORD" scan --adapter hci0 --timeout 20
# collectord's stdout is a file here, so its rows appear only at exit: watch the HCI trace instead.
wait_for "$OUT/btmon.txt" 'Scanning: Enabled' 15 || fail "the scan was not enabled on hci0"
log "scan enabled on hci0"
start emulate-cc2650 "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
start emulate-cc2541 "$COLLECTORD" emulate --model cc2541 --adapter hci2 --seed 2
wait_for "$OUT/scan.log" 'SensorTags? found in' 35 || { cat "$OUT/scan.log"; fail "scan did not finish"; }
sed 's/^/    /' "$OUT/scan.log"
expect "$OUT/scan.log" "^$HCI1_ADDR +public +- +cc2650 +CC2650 SensorTag\$" "CC2650 on hci1 listed"
expect "$OUT/scan.log" "^$HCI2_ADDR +public +- +cc2541 +TI BLE Sensor Tag\$" "CC2541 on hci2 listed"
expect "$OUT/scan.log" '^2 SensorTags found in 20 s on hci0$' "summary line"
pass
