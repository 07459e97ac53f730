#!/bin/bash
# Every controller torn down and created again under other numbers: a tag on an adapter named by its address follows it.
# vm-timeout: 200
# The daemon's adapter is hci1's address; tag a is emulated on hci2. btvirt is then killed (every
# controller disappears, as when a USB hub or the Pi's UART resets), a bare vhci controller takes
# hci0's number, and btvirt is started again: its controllers come back as hci1..hci3, so the
# address the daemon was given is now hci2's, and the tag's controller hci3's. The daemon must
# find the adapter by its address under its new number, without a restart, and stream again with
# no gap in `seq`.
. "$VM_LIB"
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
ev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\",\"tag\":\"$2\""; }
# The kernel name of the controller with address $1, or nothing.
hci_of() {
  local d
  for d in /sys/class/bluetooth/hci*; do
    [ -e "$d" ] || continue
    hciconfig "${d##*/}" 2>/dev/null | grep -q "BD Address: $1 " && { echo "${d##*/}"; return 0; }
  done
  return 1
}
controllers() { ls /sys/class/bluetooth 2>/dev/null | grep -c '^hci[0-9]*$'; }

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF" 10
sed -i "s/^adapter = \"hci0\"\$/adapter = \"$HCI1_ADDR\"\nstats_interval_s = 3/" "$CONF"
daemon_tag "$CONF" a "$HCI2_ADDR" cc2650 humidity:500
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"

start emulate-a "$COLLECTORD" emulate --model cc2650 --adapter hci2 --seed 1
wait_for "$OUT/emulate-a.log" "advertising on hci2" 15 || fail "the emulator did not advertise"
start daemon "$COLLECTORD" run --config "$CONF"
wait_for "$M" "$(ev ready a).*on hci1\"" 60 || { mqtt_show "$M"; fail "a not ready on hci1"; }
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' 3 20 || fail "no readings of a"
log "a streams through hci1 ($HCI1_ADDR)"

# Every controller goes.
n=$(count "$M" "$(ev ready a)")
btvirt_pid=$(pgrep -xo btvirt) || fail "no btvirt running"
btvirt=$(readlink "/proc/$btvirt_pid/exe")
t_gone=${EPOCHREALTIME/./}
kill "$btvirt_pid"
wait_for_none() { local i; for (( i = 0; i < $1 * 10; i++ )); do [ "$(controllers)" = 0 ] && return 0; nap 0.1; done; return 1; }
wait_for_none $(( 10 * ${VM_TIME_SCALE:-3} )) || fail "controllers still registered after btvirt was killed"
log "btvirt killed: no controller left"
stop emulate-a
wait_for "$M" "$(ev adapter a).*went away" 30 || { mqtt_show "$M"; fail "the daemon did not say a's adapter went away"; }

# hci0's number taken by a controller nobody answers for (it stays down).
start vhci python3 -c '
import os, select, sys
fd = os.open("/dev/vhci", os.O_RDWR)
os.write(fd, bytes([0xff, 0x00]))   # vendor packet: create a primary controller
print("vhci index", int.from_bytes(os.read(fd, 4)[2:4], "little"), flush=True)
select.select([], [], [])'
wait_for "$OUT/vhci.log" '^vhci index 0$' 10 || fail "the bare vhci controller did not take hci0"

start btvirt2 "$btvirt" -L -l3
for a in "$HCI0_ADDR" "$HCI1_ADDR" "$HCI2_ADDR"; do
  for (( i = 0; i < 100; i++ )); do hci_of "$a" >/dev/null && break; nap 0.1; done
  hci_of "$a" >/dev/null || fail "btvirt's controller $a did not come back"
done
adapter=$(hci_of "$HCI1_ADDR") tag_hci=$(hci_of "$HCI2_ADDR")
[ "$adapter" != hci1 ] || fail "$HCI1_ADDR came back as hci1: nothing was renumbered"
log "renumbered: $HCI1_ADDR is now $adapter, $HCI2_ADDR is $tag_hci"
for h in $(hci_of "$HCI0_ADDR") "$adapter" "$tag_hci"; do step 20 "up-$h" hciconfig "$h" up || fail "hciconfig $h up failed"; done
t_back=${EPOCHREALTIME/./}
start emulate-a2 "$COLLECTORD" emulate --model cc2650 --adapter "$tag_hci" --seed 1
wait_for "$OUT/emulate-a2.log" "advertising on $tag_hci" 15 || fail "the emulator did not advertise on $tag_hci"

wait_count "$M" "$(ev ready a)" $(( n + 1 )) 90 || { mqtt_show "$M"; fail "a not ready again"; }
mqtt_first "$M" "$(ev ready a)" $(( n + 1 )); t_ready=$mqtt_t
[[ $mqtt_line =~ on\ $adapter\" ]] || fail "a came back elsewhere than $adapter: $mqtt_line"
log "a streams through $adapter $(ms_between $t_back $t_ready) ms after the controllers came back"
before=$(count "$M" '^[0-9.]+ collectord/tags/a/humidity \{')
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' $(( before + 3 )) 20 || fail "no readings after the renumbering"
seq_check "$M" a humidity || fail "seq of a not consecutive:$seq_gaps"
wait_for "$M" "collectord/daemon/vm/stats .*\"adapters\":\\{\"$HCI1_ADDR\":\\{\"up\":true,\"name\":\"$adapter\"" 60 \
  || { mqtt_show "$M"; fail "the stats do not show $HCI1_ADDR as $adapter"; }
running daemon || fail "the daemon died"
stop daemon
pass "followed $HCI1_ADDR from hci1 to $adapter; streaming again $(ms_between $t_back $t_ready) ms after the controllers came back"
