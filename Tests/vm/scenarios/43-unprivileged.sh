#!/bin/bash
# collectord run as nobody with only CAP_NET_RAW and CAP_NET_ADMIN (what the unit grants) streams both tags as in daemon-stream.
# vm-timeout: 100
# The daemon started through setpriv as uid/gid 65534, no groups, with CAP_NET_RAW and
# CAP_NET_ADMIN as its ambient capabilities (what the systemd unit grants: raw HCI sockets, and
# the kernel's management interface): its HCI sockets, LE connections and scanning must work
# without root (privileges measures each capability on its own). Checked: the process's uid and effective
# capabilities, then both tags connect and every configured sensor publishes plausible readings
# with gap-free sequence numbers, availability and status online.
. "$VM_LIB"
DIR=/tmp/vm-unprivileged   # the config and spool, owned or readable by nobody (not on 9p)
CONF=$DIR/collectord.conf
M=$OUT/mqtt.log
A_SENSORS=(temperature humidity barometer movement light)
B_SENSORS=(temperature humidity barometer accelerometer magnetometer gyroscope)

mkdir -p "$DIR/spool" && chmod 755 "$DIR" && chown 65534:65534 "$DIR/spool" || fail "cannot prepare $DIR"
mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF" 3 "$DIR/spool"
daemon_tag "$CONF" a "$HCI1_ADDR" cc2650 temperature:1000 humidity:500 barometer:1000 movement:1000 light:800
daemon_tag "$CONF" b "$HCI2_ADDR" cc2541 temperature:1000 humidity:500 barometer:1000 accelerometer:1000 magnetometer:2000 gyroscope:1000
chmod 644 "$CONF"
cp "$CONF" "$OUT/collectord.conf"

start_emulators

t_run=${EPOCHREALTIME/./}
start daemon setpriv --reuid=65534 --regid=65534 --clear-groups \
  --inh-caps=+net_raw,+net_admin --ambient-caps=+net_raw,+net_admin \
  "$COLLECTORD" run --config "$CONF"
pid=$(< "$OUT/daemon.pid")
# setpriv execs collectord in the same process: check who it runs as, once the exec is done
# (the name is collectord and the status file was read whole), waiting up to 20 s (scaled) for that.
uid="" capeff="" name=""
for _ in $(seq 1 $(( 200 * VM_TIME_SCALE ))); do
  uid="" capeff="" name=""
  while IFS=$'\t ' read -r k v _; do
    case $k in Name:) name=$v ;; Uid:) uid=$v ;; CapEff:) capeff=$v ;; esac
  done < "/proc/$pid/status" || { cat "$OUT/daemon.log"; fail "the daemon is not running"; }
  [ "$name" = collectord ] && [ -n "$uid" ] && [ -n "$capeff" ] && break
  nap 0.1
done
log "daemon process: name $name, uid $uid, CapEff $capeff"
[ "$name" = collectord ] || fail "pid $pid is $name, not collectord"
[ "$uid" = 65534 ] || fail "the daemon runs as uid $uid"
[ "$capeff" = 0000000000003000 ] || fail "effective capabilities $capeff, expected 0000000000003000 (net_admin, net_raw)"

for t in a b; do
  wait_for "$M" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"$t\"" 40 \
    || { echo "--- daemon log"; cat "$OUT/daemon.log"; mqtt_show "$M"; fail "tag $t not ready 40 s after the daemon started"; }
  mqtt_first "$M" "collectord/daemon/vm/events \{.*\"event\":\"ready\",\"tag\":\"$t\""
  log "tag $t ready $(ms_between $t_run $mqtt_t) ms after the daemon started"
done
for t in a b; do
  if [ $t = a ]; then sensors=("${A_SENSORS[@]}"); else sensors=("${B_SENSORS[@]}"); fi
  for s in "${sensors[@]}"; do
    wait_count "$M" "^[0-9.]+ collectord/tags/$t/$s \{" 3 30 || { mqtt_show "$M"; fail "fewer than 3 readings of $t/$s"; }
  done
done
log "3 readings of every sensor of both tags"
running daemon || fail "the daemon died"
rc=0
stop daemon
wait "$pid" || rc=$?
nap 0.3
stop mqtt
log "daemon stopped (status $rc)"

check_streams "$M"
log "readings (seq 0..n-1, values plausible):$stream_summary"
if matches "$M" '"event":"(disconnected|timeout|give_up)"' || matches "$M" '"detail":"forced disconnect: ([^s]|s[^t])'; then
  mqtt_show "$M"; fail "a link failed while streaming"
fi
if matches "$OUT/daemon.log" '(Operation not permitted|Permission denied|EPERM|EACCES)'; then
  echo "--- daemon log"; cat "$OUT/daemon.log"; fail "permission errors in the daemon's log"
fi
pass "as uid 65534 with net_raw:$stream_summary"
