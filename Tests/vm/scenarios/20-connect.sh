#!/bin/bash
# gatttool on hci0 discovers, reads and subscribes to an emulated CC2650 on hci1 over a real LE L2CAP ATT link.
# vm-timeout: 60
# BlueZ's gatttool (its own ATT client over the kernel's L2CAP socket, no bluetoothd) against
# `collectord emulate --model cc2650 --adapter hci1`: primary services, characteristics,
# descriptors, a read of the GAP device name, then in one connection (the emulated tag forgets
# its sensor setup on disconnect, as the real one does) enabling the IR temperature sensor and
# its notifications and counting the notifications that arrive.
. "$VM_LIB"
TAG=$HCI1_ADDR
GATT=(gatttool -i hci0 -b "$TAG" -t public)
ti() { echo "f000$1-0451-4000-b000-000000000000"; }

start emulate "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
wait_for "$OUT/emulate.log" 'advertising on hci1' 15 || { cat "$OUT/emulate.log"; fail "emulator did not start advertising"; }

# Each gatttool run is one connection; the tag advertises again once the link is gone.
links=0
next_link() {
  links=$((links + 1))
  if [ $links -gt 1 ]; then
    wait_count "$OUT/emulate.log" 'emulate: disconnected' $((links - 1)) 15 \
      || fail "the emulator did not see link $((links - 1)) go down"
  fi
}

next_link
step 20 primary "${GATT[@]}" --primary || fail "gatttool --primary failed"
expect "$OUT/primary.log" 'uuid: 00001800-0000-1000-8000-00805f9b34fb' "GAP service"
expect "$OUT/primary.log" 'uuid: 0000180a-0000-1000-8000-00805f9b34fb' "Device Information service"
expect "$OUT/primary.log" "uuid: $(ti aa00)" "IR temperature service"
expect "$OUT/primary.log" "uuid: $(ti aa80)" "movement service"

next_link
step 20 characteristics "${GATT[@]}" --characteristics || fail "gatttool --characteristics failed"
value_handle() {  # UUID -> the characteristic's value handle, from characteristics.log
  local line re="char value handle = (0x[0-9a-f]+), uuid = $1"
  while IFS= read -r line; do [[ $line =~ $re ]] && { echo "${BASH_REMATCH[1]}"; return 0; }; done < "$OUT/characteristics.log"
  return 1
}
name_h=$(value_handle 00002a00-0000-1000-8000-00805f9b34fb) || fail "no device name characteristic"
data_h=$(value_handle "$(ti aa01)") || fail "no IR temperature data characteristic"
conf_h=$(value_handle "$(ti aa02)") || fail "no IR temperature config characteristic"
log "device name at $name_h, IR temperature data at $data_h, config at $conf_h"

next_link
step 20 descriptors "${GATT[@]}" --char-desc || fail "gatttool --char-desc failed"
cccd_h=""
while IFS= read -r line; do
  [[ $line =~ handle\ =\ (0x[0-9a-f]+),\ uuid\ =\ (.*)$ ]] || continue
  h=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
  if (( h > data_h )) && [[ $u == 00002902-* ]]; then cccd_h=$h; break; fi
done < "$OUT/descriptors.log"
[ -n "$cccd_h" ] || fail "no CCCD after the data characteristic"
log "IR temperature CCCD at $cccd_h"

next_link
step 20 read-name "${GATT[@]}" --char-read -a "$name_h" || fail "gatttool --char-read failed"
# "CC2650 SensorTag" in hex
expect "$OUT/read-name.log" 'value/descriptor: 43 43 32 36 35 30 20 53 65 6e 73 6f 72 54 61 67' "device name read"

# One connection: sensor on, notifications on, listen 4 s (the default period is 1 s).
next_link
log "step notify: gatttool -I: connect; $conf_h = 01 (sensor on); CCCD $cccd_h = 0100; listen 4 s"
rc=0
gatt_listen "$TAG" "$conf_h" "$cccd_h" 4 notify || rc=$?
gatt_show notify
log "step notify: exit $rc"
expect "$OUT/notify.log" 'Connection successful' "interactive connection"
n=$(count "$OUT/notify.log" "Notification handle = $data_h value:")
log "$n notifications of $data_h"
[ "$n" -ge 2 ] || fail "expected IR temperature notifications on $data_h, got $n"
running emulate || fail "emulator died"
pass "$n notifications"
