#!/bin/bash
# The virtual controller wedges on demand (commands, events, connections, stuck) and a reset cures it; BlueZ's tools only.
# vm-timeout: 150
# Tests/vm/btvirt-wedge.patch, checked with what the kernel and BlueZ's tools show, so that the
# daemon's scenarios can rely on it: hci0 is wedged, hci1 advertises (ADV_IND, `hciconfig leadv`).
#   commands     a command times out (hciconfig's 1 s, the kernel's 2 s "tx timeout") while hci0
#                stays UP RUNNING; `hciconfig hci0 reset` (down + up) cures it, so does a
#                management power cycle (btmgmt power off, power on);
#   commands-stuck  neither cures it: the HCI Reset of the power-on is not answered, hci0 stays
#                down, Set Powered fails (Authentication Failed, the kernel's -ETIMEDOUT);
#                clearing it lets hci0 power on;
#   events       a scan hears nothing of hci1; a power cycle cures it; events-stuck survives a
#                reset and is cleared;
#   connections  LE Create Connection (hcitool lecc) gets its Command Status and never completes
#                until cancelled (Success, then LE Connection Complete "Unknown Connection
#                Identifier"); after a reset it connects; connections-stuck survives the reset, and
#                clearing it completes the held attempt.
# The kernel's own L2CAP connect is not used here: on Debian 12's 6.1.0-56 it oopses when the
# socket is closed after the connection failed (README, "Fault injection").
. "$VM_LIB"

kmsg="$OUT/kmsg.log"
start kmsg cat /dev/kmsg
wedge_lines() { count "$OUT/btvirt.log" "$1"; }
# ms since $t0.
since() { echo $(( (${EPOCHREALTIME/./} - t0) / 1000 )); }
hci0_state() { hciconfig hci0 | sed -n '3{s/^[[:space:]]*//;s/[[:space:]]*$//;p}'; }
# lescan NAME: a 3 s `hcitool lescan` on hci0 (stopped with SIGINT, which disables the scan).
lescan() { step 10 "$1" timeout -s INT 3 hcitool -i hci0 lescan || true; }
heard() { matches "$OUT/$1.log" "^$HCI1_ADDR "; }
# power NAME on|off: Set Powered through the management interface, which must succeed.
power() {
  btmgmt_step 20 "$1" --index 0 power "$2"
  expect "$OUT/$1.log" '^hci0 Set Powered complete' "Set Powered $2"
}

step 10 adv hciconfig hci1 leadv 0 || fail "hci1 does not advertise"
wedge hci0 commands || fail "btvirt has no wedge FIFO (not built with btvirt-wedge.patch)"

# --- commands ---
t0=${EPOCHREALTIME/./}
if step 10 version hciconfig hci0 version; then fail "Read Local Version answered while commands are wedged"; fi
expect "$OUT/version.log" 'Connection timed out \(110\)' "hciconfig's request timed out ($(since) ms, with the process start)"
# 6.1 names the command; 6.12 names only a command of its own (here the raw socket's is not).
wait_for "$kmsg" 'hci0: command (0x1001 )?tx timeout' 10 || fail "the kernel logged no tx timeout"
log "ok: kernel: \"$(grep -aoE 'hci0: command (0x1001 )?tx timeout' "$kmsg" | head -1)\" after $(since) ms"
expect "$OUT/btvirt.log" '^wedge hci0: dropped command 0x1001' "btvirt dropped Read Local Version"
state=$(hci0_state)
[ "$state" = "UP RUNNING" ] || fail "hci0 is '$state' while wedged, expected UP RUNNING"
log "ok: hci0 still '$state'"

n=$(wedge_lines 'HCI Reset cures commands')
step 20 reset hciconfig hci0 reset || fail "hciconfig hci0 reset failed"
wait_count "$OUT/btvirt.log" 'HCI Reset cures commands' $(( n + 1 )) 5 || fail "the reset did not cure the wedge"
step 10 version2 hciconfig hci0 version || fail "hci0 does not answer after hciconfig reset"
log "ok: hciconfig hci0 reset (down + up) cured it"

wedge hci0 commands || fail "cannot wedge hci0 again"
if step 10 version3 hciconfig hci0 version; then fail "Read Local Version answered while commands are wedged"; fi
n=$(wedge_lines 'HCI Reset cures commands')
power power-off off
power power-on on
wait_count "$OUT/btvirt.log" 'HCI Reset cures commands' $(( n + 1 )) 5 || fail "the power cycle did not cure the wedge"
step 10 version4 hciconfig hci0 version || fail "hci0 does not answer after a power cycle"
log "ok: a management power cycle (power off, power on: HCI Reset and init) cured it"

# --- commands-stuck ---
wedge hci0 commands-stuck || fail "cannot wedge hci0"
t0=${EPOCHREALTIME/./}
if step 20 reset2 hciconfig hci0 reset; then fail "hciconfig hci0 reset succeeded on a stuck controller"; fi
expect "$OUT/reset2.log" "Can't init device hci0: Connection timed out \(110\)" "hciconfig reset failed ($(since) ms)"
expect "$OUT/btvirt.log" '^wedge hci0: HCI Reset does not cure commands-stuck' "btvirt left the HCI Reset unanswered"
wait_for "$kmsg" 'hci0: Opcode 0x0c03 failed: -110' 10 || fail "the kernel logged no failed HCI Reset"
log "ok: kernel: \"hci0: Opcode 0x0c03 failed: -110\""
state=$(hci0_state)
[ "$state" = DOWN ] || fail "hci0 is '$state' after the failed reset, expected DOWN"
t0=${EPOCHREALTIME/./}
btmgmt_step 20 power-on2 --index 0 power on
expect "$OUT/power-on2.log" 'Set Powered for hci0 failed with status 0x05 \(Authentication Failed\)' \
  "Set Powered on failed: Authentication Failed, the kernel's -ETIMEDOUT ($(since) ms with the process start)"
state=$(hci0_state)
[ "$state" = DOWN ] || fail "hci0 is '$state' after a failed power on, expected DOWN"
unwedge hci0 || fail "cannot clear the wedge"
power power-on3 on
state=$(hci0_state)
[ "$state" = "UP RUNNING" ] || fail "hci0 is '$state' after clear and power on"
step 10 version5 hciconfig hci0 version || fail "hci0 does not answer after clear and power on"
log "ok: cleared, hci0 powered on again"

# --- events ---
lescan scan-before
heard scan-before || fail "hci0 does not hear hci1 before the wedge"
wedge hci0 events || fail "cannot wedge hci0"
lescan scan-events
heard scan-events && fail "hci0 heard hci1 while its events are wedged"
expect "$OUT/btvirt.log" '^wedge hci0: dropped LE event 0x02' "btvirt dropped the advertising reports"
n=$(wedge_lines 'HCI Reset cures events')
power power-off2 off
power power-on4 on
wait_count "$OUT/btvirt.log" 'HCI Reset cures events' $(( n + 1 )) 5 || fail "the power cycle did not cure the wedge"
lescan scan-after
heard scan-after || fail "hci0 does not hear hci1 after the power cycle"
log "ok: deaf while wedged, hears hci1 again after a power cycle"

wedge hci0 events-stuck || fail "cannot wedge hci0"
step 20 reset3 hciconfig hci0 reset || fail "hciconfig hci0 reset failed"
lescan scan-stuck
heard scan-stuck && fail "hci0 heard hci1 after a reset of events-stuck"
unwedge hci0 || fail "cannot clear the wedge"
lescan scan-cleared
heard scan-cleared || fail "hci0 does not hear hci1 after clear"
log "ok: events-stuck survived hciconfig reset, clear cured it"

# --- connections ---
wedge hci0 connections || fail "cannot wedge hci0"
start lecc hcitool -i hci0 lecc "$HCI1_ADDR"
wait_for "$OUT/btvirt.log" "^wedge hci0: holds connection attempt 0x200d to $HCI1_ADDR" 10 \
  || fail "btvirt holds no connection attempt"
nap 3
running lecc || fail "hcitool lecc ended while the attempt is held: $(cat "$OUT/lecc.log")"
log "ok: LE Create Connection held for 3 s (Command Status, no completion)"
step 10 cancel hcitool -i hci0 cmd 0x08 0x000e || fail "LE Create Connection Cancel failed"
expect "$OUT/cancel.log" '01 0E 20 00' "LE Create Connection Cancel: Command Complete, Success"
wait_for "$OUT/btmon.txt" 'Status: Unknown Connection Identifier \(0x02\)' 10 \
  || fail "no LE Connection Complete with Unknown Connection Identifier"
for i in {1..50}; do running lecc || break; nap 0.1; done
expect "$OUT/lecc.log" 'Could not create connection: Input/output error' \
  "hcitool lecc failed on LE Connection Complete (Unknown Connection Identifier)"
step 10 cancel2 hcitool -i hci0 cmd 0x08 0x000e || fail "LE Create Connection Cancel failed"
expect "$OUT/cancel2.log" '01 0E 20 0C' "a second Cancel: Command Disallowed, as btdev answers with nothing pending"

wedge hci0 connections || fail "cannot wedge hci0"
n=$(wedge_lines 'HCI Reset cures connections')
step 20 reset4 hciconfig hci0 reset || fail "hciconfig hci0 reset failed"
wait_count "$OUT/btvirt.log" 'HCI Reset cures connections' $(( n + 1 )) 5 || fail "the reset did not cure the wedge"
n=$(count "$OUT/btmon.txt" '^> HCI Event: Disconnect Complete')
step 30 lecc2 hcitool -i hci0 lecc "$HCI1_ADDR" || fail "hcitool lecc failed after the reset"
expect "$OUT/lecc2.log" '^Connection handle ' "connected after hciconfig reset"

# The kernel drops the idle link within seconds; hci1 stopped advertising when connected.
wait_count "$OUT/btmon.txt" '^> HCI Event: Disconnect Complete' $(( n + 2 )) 20 || fail "the idle link did not go"
step 10 adv2 hciconfig hci1 leadv 0 || fail "hci1 does not advertise again"
wedge hci0 connections-stuck || fail "cannot wedge hci0"
step 20 reset5 hciconfig hci0 reset || fail "hciconfig hci0 reset failed"
expect "$OUT/btvirt.log" '^wedge hci0: HCI Reset does not cure connections-stuck' "the reset did not cure connections-stuck"
start lecc3 hcitool -i hci0 lecc "$HCI1_ADDR"
wait_count "$OUT/btvirt.log" "^wedge hci0: holds connection attempt" 2 10 || fail "btvirt holds no connection attempt"
nap 1
running lecc3 || fail "hcitool lecc ended while the attempt is held: $(cat "$OUT/lecc3.log")"
unwedge hci0 || fail "cannot clear the wedge"
for i in {1..100}; do running lecc3 || break; nap 0.1; done
expect "$OUT/lecc3.log" '^Connection handle ' "clearing connections-stuck completed the held attempt"

if matches "$kmsg" 'BUG|Oops|list_del corruption|WARNING'; then
  grep -aE 'BUG|Oops|list_del corruption|WARNING' "$kmsg"; fail "the kernel complained"
fi
pass "commands, commands-stuck, events, events-stuck, connections, connections-stuck: each wedged and cured as expected"
