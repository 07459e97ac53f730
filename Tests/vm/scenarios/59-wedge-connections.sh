#!/bin/bash
# collectord on hci0 and hci1: hci0's connections never complete while its tag advertises; found, the tag moves to hci1, a power cycle cures hci0.
# vm-timeout: 300
# vm-controllers: 4
# Tag a (emulated on hci2) streams through hci0; tag b (hci3) through hci1. `wedge hci0
# connections` (btvirt-wedge.patch): LE Create Connection gets its Command Status and never
# completes, while every other command is answered. a's emulator is then restarted, so its link
# drops and the daemon connects again from hci0: each attempt times out while a is heard
# advertising, a is given up ([reconnect] max_attempts = 2) and watched for through the kernel,
# heard, tried, and the attempts that fail right after it was heard make the wedge
# (connections_never_complete, README's table: the give-up plus two cap_ms). a moves to hci1,
# the power cycle cures hci0, and a streams again on whichever it is on by then. a's readings go on with consecutive sequence numbers.
. "$VM_LIB"
# On Debian 12's 6.1.191+ the daemon cancels its attempts after 3.5 s, before the kernel gives
# them up, which keeps clear of that kernel's L2CAP double free (README, "The kernel
# underneath"); the daemon's log says so, and the scenario checks that it does.
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
ev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\""; }
tev() { echo "collectord/daemon/vm/events \{.*\"event\":\"$1\",\"tag\":\"$2\""; }

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF" 2
sed -i "s/^adapters\? = .*\$/adapters = [\"hci0\", \"hci1\"]\nmax_connections = 2\nstats_interval_s = 5/" "$CONF"
printf '\n[recovery]\ninterval_s = 10\nmax_attempts = 2\n' >> "$CONF"
daemon_tag "$CONF" a "$HCI2_ADDR" cc2650 humidity:500
daemon_tag "$CONF" b "$HCI3_ADDR" cc2650 humidity:500
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"

emulate_tags a:hci2 b:hci3
start daemon "$COLLECTORD" run --config "$CONF"
tags_ready "$M" a:hci0 b:hci1
log "a streams on hci0, b on hci1"
readies=$(count "$M" "$(tev ready a)")
if [[ $(uname -v) =~ Debian\ 6\.1\.([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 191 ]; then
  expect "$OUT/daemon.log" 'connection attempts are cancelled after 3500 ms' "the daemon knows this kernel's L2CAP bug"
fi

wedge hci0 connections || fail "could not wedge hci0"
t_wedge=${EPOCHREALTIME/./}
stop emulate-a
start emulate-a2 "$COLLECTORD" emulate --model cc2650 --adapter hci2 --seed 1
wait_for "$OUT/emulate-a2.log" "advertising on hci2" 15 || fail "a's emulator did not advertise again"
wait_for "$OUT/btvirt.log" '^wedge hci0: holds connection attempt' 60 || fail "no connection attempt held by the wedge"
wait_for "$M" "$(ev controller_wedged).*\"detail\":\"hci0: connections_never_complete: " 240 \
  || { mqtt_show "$M"; fail "the wedge was not found"; }
mqtt_first "$M" "$(ev controller_wedged)"; t_found=$mqtt_t
log "found $(ms_between $t_wedge $t_found) ms after hci0 wedged"
wait_for "$M" "$(tev adapter a).*\"detail\":\"on hci1 \\(hci0 " 60 || { mqtt_show "$M"; fail "a was not moved to hci1"; }
log "a moved to hci1 while hci0 is wedged"
# a streams again: on hci1, or on hci0 when the power cycle brought hci0 back first (the fleet
# takes a tag home as soon as its adapter is up again, as after any adapter coming back).
if ! wait_count "$M" "$(tev ready a)" $(( readies + 1 )) 60; then
  # On 6.1.191+ the L2CAP double free can also meet the peripheral: the daemon gave up an attempt
  # on hci1 that the controller had just completed (hci0 was back from its power cycle), and a's
  # emulator, closing that link which never carried a byte, was killed by the kernel's BUG. That
  # is the kernel's fault in the test's own peripheral, not the daemon's; the daemon's side of it
  # runs on Debian 13's kernel too (CI's trixie stage).
  pid=$(cat "$OUT/emulate-a2.pid")
  if ! running emulate-a2 && dmesg | grep -q "PID: $pid Comm: collectord"; then
    dmesg | grep -A3 'list_del corruption\|kernel BUG' | head -8
    running daemon || fail "the daemon died too"
    skip "kernel $(uname -r): the L2CAP double free killed a's emulator (pid $pid) as it closed a link that carried nothing; the daemon ran on"
  fi
  mqtt_show "$M"; fail "a not streaming again"
fi
mqtt_first "$M" "$(tev ready a)" $(( readies + 1 )); t_moved=$mqtt_t
[[ $mqtt_line =~ on\ (hci[0-9]) ]] && where=${BASH_REMATCH[1]} || where="?"
wait_for "$M" "$(ev controller_recovery).*\"detail\":\"hci0: power_cycle \\(attempt 1\\)\"" 60 || { mqtt_show "$M"; fail "no power cycle"; }
wait_for "$M" "$(ev controller_recovered).*\"detail\":\"hci0 after " 60 || { mqtt_show "$M"; fail "hci0 not recovered"; }
mqtt_first "$M" "$(ev controller_recovered)"; t_cured=$mqtt_t
wait_for "$OUT/btvirt.log" '^wedge hci0: HCI Reset cures connections' 5 || fail "btvirt's log does not say the reset cured it"
wait_next "$M" '^[0-9.]+ collectord/tags/a/humidity \{' 15 || fail "no reading of a on $where"
seq_check "$M" a humidity || fail "a's sequence numbers have gaps: $seq_gaps"
log "a: $seq_n readings, seq $seq_first..$seq_last without a gap"
running daemon || fail "the daemon died"
stop daemon
pass "found in $(ms_between $t_wedge $t_found) ms, a streaming again on $where after $(ms_between $t_wedge $t_moved) ms, cured in $(ms_between $t_wedge $t_cured) ms"
