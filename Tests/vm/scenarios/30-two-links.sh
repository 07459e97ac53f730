#!/bin/bash
# hci0 holds two links at once (CC2650 on hci1, CC2541 on hci2) and gets notifications on both.
# vm-timeout: 60
# The case btvirt 5.66 gets wrong without Tests/vm/btvirt-multilink.patch: with two links the
# central's and the peripherals' connection handles differ, and unpatched btvirt delivers the
# central's handle to the peripheral ("ACL packet for unknown connection handle").
. "$VM_LIB"

start emulate-cc2650 "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
start emulate-cc2541 "$COLLECTORD" emulate --model cc2541 --adapter hci2 --seed 2
wait_for "$OUT/emulate-cc2650.log" 'advertising on hci1' 15 || fail "cc2650 emulator did not advertise"
wait_for "$OUT/emulate-cc2541.log" 'advertising on hci2' 15 || fail "cc2541 emulator did not advertise"

# Handles of each tag's IR temperature Data, Config and CCCD (one connection each).
gatt_handles "$HCI1_ADDR" aa01 desc-cc2650 || fail "IR temperature attributes of the CC2650 not found"
a_data=$data_h a_conf=$conf_h a_cccd=$cccd_h
log "cc2650: data $a_data config $a_conf CCCD $a_cccd"
wait_for "$OUT/emulate-cc2650.log" 'emulate: disconnected' 15 || fail "cc2650 link did not go down"
gatt_handles "$HCI2_ADDR" aa01 desc-cc2541 || fail "IR temperature attributes of the CC2541 not found"
b_data=$data_h b_conf=$conf_h b_cccd=$cccd_h
log "cc2541: data $b_data config $b_conf CCCD $b_cccd"
wait_for "$OUT/emulate-cc2541.log" 'emulate: disconnected' 15 || fail "cc2541 link did not go down"

# Both at once: the second connects while the first is streaming.
log "two interactive gatttool sessions, 6 s and 4 s"
gatt_listen "$HCI1_ADDR" "$a_conf" "$a_cccd" 6 listen-cc2650 &
a_pid=$!
wait_for "$OUT/listen-cc2650.log" 'Notification handle' 20 || log "no notification from the cc2650 yet"
gatt_listen "$HCI2_ADDR" "$b_conf" "$b_cccd" 4 listen-cc2541 &
b_pid=$!
wait "$a_pid"; a_rc=$?
wait "$b_pid"; b_rc=$?
log "cc2650 session exit $a_rc:"; gatt_show listen-cc2650
log "cc2541 session exit $b_rc:"; gatt_show listen-cc2541
a_n=$(count "$OUT/listen-cc2650.log" "Notification handle = $a_data value:")
b_n=$(count "$OUT/listen-cc2541.log" "Notification handle = $b_data value:")
log "notifications: cc2650 $a_n, cc2541 $b_n"
dmesg > "$OUT/kernel-now.log" 2>&1
if matches "$OUT/kernel-now.log" 'unknown connection handle'; then fail "kernel: ACL for an unknown connection handle"; fi
[ "$a_n" -ge 2 ] || fail "cc2650: expected notifications, got $a_n"
[ "$b_n" -ge 2 ] || fail "cc2541: expected notifications, got $b_n"
pass "two links, $a_n + $b_n notifications"
