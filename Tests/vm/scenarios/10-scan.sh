#!/bin/bash
# Two emulated tags (CC2650 on hci1, CC2541 on hci2) advertise; collectord scan on hci0 lists both.
# vm-timeout: 30
# `collectord scan` on hci0 finds two emulated tags that were already advertising when the scan
# started: a CC2650 on hci1 and a CC2541 on hci2. (btvirt reports an advertiser once, when the
# scan is enabled; the scanner's HCI filter is in place before it enables the scan.)
. "$VM_LIB"

start emulate-cc2650 "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
start emulate-cc2541 "$COLLECTORD" emulate --model cc2541 --adapter hci2 --seed 2
wait_for "$OUT/emulate-cc2650.log" 'advertising on hci1' 15 || { cat "$OUT/emulate-cc2650.log"; fail "cc2650 emulator did not start advertising"; }
wait_for "$OUT/emulate-cc2541.log" 'advertising on hci2' 15 || { cat "$OUT/emulate-cc2541.log"; fail "cc2541 emulator did not start advertising"; }
# Both controllers advertising, as the HCI trace shows (the emulators log before the commands
# complete).
wait_count "$OUT/btmon.txt" '^ +LE Set Advertise Enable \(0x08\|0x000a\) ncmd' 2 15 \
  || fail "the controllers did not confirm advertising"
log "both tags advertising"

rc=0
step 20 scan "$COLLECTORD" scan --adapter hci0 --timeout 5 || rc=$?
[ $rc -eq 0 ] || fail "collectord scan exited $rc"
expect "$OUT/scan.log" '^ADDRESS +TYPE +RSSI +MODEL +NAME' "header line"
expect "$OUT/scan.log" "^$HCI1_ADDR +public +- +cc2650 +CC2650 SensorTag\$" "CC2650 on hci1 listed with model and name"
expect "$OUT/scan.log" "^$HCI2_ADDR +public +- +cc2541 +TI BLE Sensor Tag\$" "CC2541 on hci2 listed with model and name"
expect "$OUT/scan.log" '^2 SensorTags found in 5 s on hci0$' "summary line"
running emulate-cc2650 || fail "cc2650 emulator died: $(cat "$OUT/emulate-cc2650.log")"
running emulate-cc2541 || fail "cc2541 emulator died: $(cat "$OUT/emulate-cc2541.log")"
pass
