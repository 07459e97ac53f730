#!/bin/bash
# Commands from MQTT reach an emulated CC2650 and a generic device's declared setting over real LE links as the expected ATT writes, the state read back is published and each is answered; timed from the /set to the write and to the /result.
# vm-timeout: 300
# vm-controllers: 4
# Issue #26: a CC2650 emulator on hci1, a generic device with a declared setting on hci2 and a
# standard heart-rate strap on hci3 (its Heart Rate Control Point: reset the energy expended)
# (each its own process and controller) log every write they take with the time; the daemon on
# hci0 takes commands from mosquitto_pub. Each command must reach the peripheral as the expected
# bytes on the expected characteristic (the emulators' logs, and btmon's ATT Write Requests), its
# answer on …/result must say ok with the state read back, and hostile ones must be answered
# with errors and write nothing. The LED is then switched 30 times to time the path: /set to the
# write on the peripheral, /set to the /result.
. "$VM_LIB"
CONF=$OUT/collectord.conf
IO_DATA="F000AA65-0451-4000-B000-000000000000"
IO_CONFIG="F000AA66-0451-4000-B000-000000000000"
PERIOD="F000AA03-0451-4000-B000-000000000000"
TEMP_CONFIG="F000AA02-0451-4000-B000-000000000000"

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF"
printf '\n[[tag]]\nname = "a"\naddress = "%s"\nmodel = "cc2650"\ncommands = true\n[tag.sensors.temperature]\nperiod_ms = 1000\n[tag.sensors.humidity]\nperiod_ms = 1000\n' \
  "$HCI1_ADDR" >> "$CONF"
# A generic device whose profile declares a setting: a setpoint in 0.1 °C, a big-endian int16.
{ echo; cat "$REPO/Tests/vm/fixtures/thermostat-profile.conf"; } >> "$CONF"
# Its own sensor only: the emulator also serves every standard one, which would only load the guest.
printf '\n[[tag]]\nname = "b"\naddress = "%s"\nprofile = "thermostat"\ncommands = ["setpoint"]\n[tag.sensors.climate]\n' "$HCI2_ADDR" >> "$CONF"
SETPOINT="6E400010-B5A3-F393-E0A9-E50E24DCCA9E"
printf '\n[[tag]]\nname = "c"\naddress = "%s"\nmodel = "gatt"\ncommands = ["reset_energy_expended"]\n[tag.sensors.heart_rate]\n' "$HCI3_ADDR" >> "$CONF"
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"

start emulate-a "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
start emulate-b "$COLLECTORD" emulate --model gatt --profile thermostat --config "$CONF" --adapter hci2 --seed 2
wait_for "$OUT/emulate-a.log" 'advertising on hci1' 15 || fail "cc2650 emulator did not advertise"
wait_for "$OUT/emulate-b.log" 'advertising on hci2' 15 || fail "thermostat emulator did not advertise"
start emulate-c "$COLLECTORD" emulate --model gatt --adapter hci3 --seed 3
wait_for "$OUT/emulate-c.log" 'advertising on hci3' 15 || fail "strap emulator did not advertise"
start daemon "$COLLECTORD" run --config "$CONF"
wait_for "$OUT/mqtt.log" 'collectord/tags/a/led1/state OFF' 60 \
  || { mqtt_show "$OUT/mqtt.log"; fail "no led1 state 60 s after the daemon started"; }

pub() { mosquitto_pub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -t "collectord/tags/a/$1/set" -m "$2"; }

# command TARGET VALUE UUID BYTES: sent, answered ok, and written as BYTES on UUID.
command() {
  local before answers
  before=$(count "$OUT/emulate-a.log" "took write $3 $4 at")
  answers=$(count "$OUT/mqtt.log" "collectord/tags/a/$1/result \{.*\"ok\":true")
  pub "$1" "$2"
  wait_count "$OUT/mqtt.log" "collectord/tags/a/$1/result \{.*\"ok\":true" $(( answers + 1 )) 20 \
    || { mqtt_show "$OUT/mqtt.log"; fail "$1 = $2: no ok on collectord/tags/a/$1/result"; }
  wait_count "$OUT/emulate-a.log" "took write $3 $4 at" $(( before + 1 )) 10 \
    || { tail -20 "$OUT/emulate-a.log"; fail "$1 = $2: the peripheral did not take $4 on $3"; }
  log "ok: $1 = $2 reached the peripheral as $4"
}

writes_before=$(count "$OUT/btmon.txt" 'ATT: Write Request')
command led1 ON "$IO_DATA" 01
wait_for "$OUT/emulate-a.log" "took write $IO_CONFIG 01 at" 10 \
  || { tail -20 "$OUT/emulate-a.log"; fail "the IO service was not put in remote mode"; }
log "ok: the IO service put in remote mode"
command led2 ON "$IO_DATA" 03
command buzzer ON "$IO_DATA" 07
command buzzer OFF "$IO_DATA" 03
command temperature_period 500 "$PERIOD" 32
command temperature_enabled OFF "$TEMP_CONFIG" 00
command temperature_enabled ON "$TEMP_CONFIG" 01
wait_for "$OUT/mqtt.log" 'collectord/tags/a/temperature_period/state 500' 10 || fail "no retained period state 500"

# The declared setting: 21.5 °C is 215 tenths, 00 D7 big-endian, read back as 21.5.
wait_for "$OUT/mqtt.log" 'collectord/tags/b/setpoint/state 0' 60 || { mqtt_show "$OUT/mqtt.log"; fail "no setpoint state for b"; }
pub_b() { mosquitto_pub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -t "collectord/tags/b/$1/set" -m "$2"; }
answers=$(count "$OUT/mqtt.log" 'collectord/tags/b/setpoint/result \{.*"ok":true')
pub_b setpoint 21.5
wait_count "$OUT/mqtt.log" 'collectord/tags/b/setpoint/result \{.*"ok":true' $(( answers + 1 )) 20 \
  || { mqtt_show "$OUT/mqtt.log"; fail "setpoint = 21.5: no ok answer"; }
wait_for "$OUT/emulate-b.log" "took write $SETPOINT 00 D7 at" 10 || { tail -20 "$OUT/emulate-b.log"; fail "the thermostat did not take 00 D7"; }
expect "$OUT/mqtt.log" 'collectord/tags/b/setpoint/result \{.*"state":\{"setpoint":"21.5"\}' "the setpoint read back as 21.5"
pub_b setpoint 21.3
wait_for "$OUT/mqtt.log" 'collectord/tags/b/setpoint/result \{.*"error":"invalid_value"' 20 || fail "setpoint = 21.3 (not a 0.5 step) was not refused"
[ "$(count "$OUT/emulate-b.log" "took write $SETPOINT")" -eq 1 ] || fail "a refused setpoint was written"
log "ok: the declared setpoint written as 00 D7, read back as 21.5; 21.3 refused, nothing written"

# The strap's energy reset: PRESS writes 01 to the Heart Rate Control Point (2A39), answered ok
# with no state; anything else is refused and nothing written.
wait_for "$OUT/mqtt.log" 'collectord/tags/c/heart_rate \{.*"energy_expended"' 60 || { mqtt_show "$OUT/mqtt.log"; fail "no energy expended from the strap"; }
mosquitto_pub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -t collectord/tags/c/reset_energy_expended/set -m ON
wait_for "$OUT/mqtt.log" 'collectord/tags/c/reset_energy_expended/result \{.*"error":"invalid_value"' 20 || fail "reset = ON was not refused"
mosquitto_pub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -t collectord/tags/c/reset_energy_expended/set -m PRESS
wait_for "$OUT/mqtt.log" 'collectord/tags/c/reset_energy_expended/result \{.*"ok":true' 20 || { mqtt_show "$OUT/mqtt.log"; fail "reset: no ok answer"; }
wait_for "$OUT/emulate-c.log" 'took write [0-9A-F-]*2A39[0-9A-F-]* 01 at' 10 || { tail -20 "$OUT/emulate-c.log"; fail "the strap did not take 01 on its control point"; }
[ "$(count "$OUT/emulate-c.log" 'took write [0-9A-F-]*2A39')" -eq 1 ] || fail "the refused reset was written"
log "ok: the strap's control point written 01 once; ON refused"
expect "$OUT/mqtt.log" 'collectord/tags/a/led2/result \{.*"state":\{"led1":"ON","led2":"ON","buzzer":"OFF"\}' "led2's answer holds the three outputs read back"
# btmon writes its trace as it gets to it, behind the emulators' logs: wait for it.
wait_count "$OUT/btmon.txt" 'ATT: Write Request' $(( writes_before + 8 )) 20 \
  || { tail -5 "$OUT/btmon.txt"; pgrep -x btmon > /dev/null || log "btmon is no longer running"
       fail "btmon saw $(( $(count "$OUT/btmon.txt" 'ATT: Write Request') - writes_before )) ATT Write Requests for 8 writes"; }
writes_after=$(count "$OUT/btmon.txt" 'ATT: Write Request')
log "btmon: $(( writes_after - writes_before )) ATT Write Requests on the link for the commands"

# Hostile: answered with errors, nothing written.
taken=$(count "$OUT/emulate-a.log" 'took write')
pub led1 NaN; pub temperature_period 123; pub flash_erase ON; pub led1 "$(head -c 3000 /dev/zero | tr '\0' x)"
mosquitto_pub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -r -t collectord/tags/a/buzzer/set -m ON
for c in 'led1/result \{.*"error":"invalid_value"' 'temperature_period/result \{.*"error":"invalid_value"' \
         'flash_erase/result \{.*"error":"unknown_target"' 'buzzer/result \{.*"error":"retained"'; do
  wait_for "$OUT/mqtt.log" "collectord/tags/a/$c" 20 || { mqtt_show "$OUT/mqtt.log"; fail "no error answer /$c/"; }
done
[ "$(count "$OUT/emulate-a.log" 'took write')" -eq "$taken" ] || { tail -5 "$OUT/emulate-a.log"; fail "a hostile command was written"; }
log "ok: hostile commands answered with errors, nothing written"
mosquitto_pub -h "$MQTT_HOST" -p "$MQTT_PORT" -q 1 -r -t collectord/tags/a/buzzer/set -n

# Timing: /set (its arrival at the subscriber) to the write on the peripheral and to the /result.
# nth_time FILE REGEX N: the arrival time (microseconds) of the Nth line of a mqtt_watch log
# matching REGEX (grep, not a bash loop: the log grows by two readings a second).
nth_time() {
  local line
  line=$(grep -aE -- "$2" "$1" | sed -n "${3}p")
  [[ $line =~ ^([0-9]+)\.([0-9]{6}) ]] || return 1
  echo "${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
}
to_write=() to_result=()
for i in $(seq 1 30); do
  if [ $(( i % 2 )) -eq 1 ]; then v=OFF; b=02; else v=ON; b=03; fi
  before=$(count "$OUT/emulate-a.log" "took write $IO_DATA $b at")
  sets=$(count "$OUT/mqtt.log" 'collectord/tags/a/led1/set ')
  results=$(count "$OUT/mqtt.log" 'collectord/tags/a/led1/result ')
  pub led1 $v
  wait_count "$OUT/mqtt.log" 'collectord/tags/a/led1/result ' $(( results + 1 )) 20 || fail "led1 $i: no answer"
  wait_count "$OUT/emulate-a.log" "took write $IO_DATA $b at" $(( before + 1 )) 10 || fail "led1 $i: not written"
  t_set=$(nth_time "$OUT/mqtt.log" 'collectord/tags/a/led1/set ' $(( sets + 1 ))) || fail "led1 $i: /set not seen"
  t_result=$(nth_time "$OUT/mqtt.log" 'collectord/tags/a/led1/result ' $(( results + 1 ))) || fail "led1 $i: no answer seen"
  line=$(grep -a "took write $IO_DATA $b at" "$OUT/emulate-a.log" | sed -n "$(( before + 1 ))p")
  [[ $line =~ at\ ([0-9]+)\.([0-9]{6}) ]] || fail "no time in the emulator's line: $line"
  t_write=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
  to_write+=($(( t_write - t_set ))) to_result+=($(( t_result - t_set )))
done
stats() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "median %.1f ms, p99 %.1f ms (n=%d)", v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.99 + 0.999)] / 1000, NR }'; }
log "timing: /set to the write on the peripheral: $(stats "${to_write[@]}")"
log "timing: /set to the /result: $(stats "${to_result[@]}")"
running daemon || fail "the daemon died"
stop daemon
nap 0.5
stop mqtt
pass "every command reached the peripheral as its ATT write, answered; /set→write $(stats "${to_write[@]}")"
