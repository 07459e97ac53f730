#!/bin/bash
# What each capability buys: the daemon as nobody with net_raw, net_admin or both, and rmem_max raised; warnings at start, scanning, adapter events, and a 30 s SIGSTOP stall.
# vm-timeout: 480
# The daemon runs as uid 65534 through setpriv with a given set of ambient capabilities, streaming
# a CC2650 (hci1) with five sensors at their shortest periods (about 43 notifications a second):
#   raw         CAP_NET_RAW only, net.core.rmem_max at the kernel's default (212992)
#   raw+sysctl  CAP_NET_RAW only, net.core.rmem_max = 4194304 (the package's sysctl file)
#   admin       CAP_NET_ADMIN only
#   both        CAP_NET_RAW and CAP_NET_ADMIN (what the unit grants)
# Checked for each: the start-up warnings name exactly what is missing (the receive queue's size
# without CAP_NET_ADMIN or a raised rmem_max, the lost HCI events without CAP_NET_RAW);
# `collectord scan` as the same user finds the advertising CC2541 (hci2) with either capability
# (the kernel's discovery with CAP_NET_ADMIN, raw HCI scanning with CAP_NET_RAW alone); a daemon started while hci0 is down streams once it comes up exactly when it has
# CAP_NET_RAW (adapter events); then the daemon is stopped (SIGSTOP) for 30 s while the tag
# notifies, and continued: the kernel's drop counter (kernel_dropped in the daemon's stats, and
# its warning) must be zero with the full 8 MiB queue and non-zero with the default 416 KiB one;
# the link must survive (the silence watchdog reads the backlog before judging); and the backlog
# must not be taken for a flood: fewer rate-limited than a tenth of what was taken (judged by the
# loop's clock, all but four per sensor were). Not none: this guest freezes now and then on a busy
# host, and notifications then reach the kernel in bursts no tag sends. The figures (rate, taken,
# dropped, limited) are logged: docs/performance.md quotes them.
. "$VM_LIB"
DIR=/tmp/vm-privileges
A_PERIODS=(temperature:300 humidity:100 barometer:100 movement:100 light:100)
STALL=30
CASES="raw raw+sysctl admin both"
default_rmem=$(< /proc/sys/net/core/rmem_max)
log "net.core.rmem_max is $default_rmem"

mkdir -p "$DIR" && chmod 755 "$DIR" || fail "cannot prepare $DIR"
start emulate-a "$COLLECTORD" emulate --model cc2650 --adapter hci1 --seed 1
start emulate-b "$COLLECTORD" emulate --model cc2541 --adapter hci2 --seed 2
wait_for "$OUT/emulate-a.log" 'advertising on hci1' 15 || fail "cc2650 emulator did not advertise"
wait_for "$OUT/emulate-b.log" 'advertising on hci2' 15 || fail "cc2541 emulator did not advertise"

nobody_with() {  # CAPS (e.g. net_raw,net_admin): sets $nobody, the command prefix that runs as uid/gid 65534 with CAPS ambient
  local list="" c
  for c in ${1//,/ }; do list+="${list:+,}+$c"; done
  nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="$list" --ambient-caps="$list")
}

# The readings log grows by 50 lines a second: these scan it with one awk or grep each, not in a
# bash loop, which falls behind it in this guest.
readings_between() {  # FILE FROM_US TO_US: tag a's readings that arrived in [FROM, TO)
  awk -v from="$2" -v to="$3" '$2 ~ /^collectord\/tags\/a\// && substr($3, 1, 1) == "{" {
      split($1, t, "."); us = t[1] substr(t[2] "000000", 1, 6); if (us + 0 >= from + 0 && us + 0 < to + 0) n++ }
    END { print n + 0 }' "$1"
}

wait_readings() {  # FILE SENSOR N SECONDS: until tag a's SENSOR has N readings in FILE
  local end=$(( ${EPOCHREALTIME/./} + $4 * 1000000 ))
  until [ "$(grep -c "^[0-9.]* collectord/tags/a/$2 {" "$1")" -ge "$3" ]; do
    [ "${EPOCHREALTIME/./}" -lt $end ] || return 1
    nap 0.5
  done
}

stat_sum() {  # FILE KEY: the sum of KEY's values in the last stats message of FILE
  local line n=0 rest
  line=$(grep '^[0-9.]* collectord/daemon/vm/stats ' "$1" | tail -n 1)
  rest=$line
  while [[ $rest =~ \"$2\":([0-9]+)(.*)$ ]]; do n=$((n + BASH_REMATCH[1])); rest=${BASH_REMATCH[2]}; done
  echo "$n"
}

summary=""
run_case() {
  local name=$1 caps rmem=$default_rmem
  case $name in
    raw) caps=net_raw ;;
    raw+sysctl) caps=net_raw rmem=4194304 ;;
    admin) caps=net_admin ;;
    both) caps=net_raw,net_admin ;;
  esac
  local has_raw=0 full_queue=0
  [[ $caps == *net_raw* ]] && has_raw=1
  { [[ $caps == *net_admin* ]] || [ "$rmem" -ge 4194304 ]; } && full_queue=1
  echo "$rmem" > /proc/sys/net/core/rmem_max || fail "cannot set net.core.rmem_max"
  log "=== $name: capabilities $caps, net.core.rmem_max $rmem"

  # Scanning: the CC2541 on hci2 advertises (the CC2650 too, until the daemon connects it).
  local rc=0
  nobody_with "$caps"
  step 20 "scan-$name" "${nobody[@]}" "$COLLECTORD" scan --adapter hci0 --timeout 4 || rc=$?
  local found=0
  matches "$OUT/scan-$name.log" "^$HCI2_ADDR +public" && found=1
  log "$name: scan exit $rc, CC2541 found: $found"
  # Either capability scans: CAP_NET_ADMIN through the kernel's discovery (management
  # interface), CAP_NET_RAW alone through raw HCI scanning, where the kernel refuses the former.
  [ $found -eq 1 ] || fail "$name: scan did not find the CC2541"

  # The daemon, started while hci0 is down.
  local d=$DIR/$name conf=$DIR/$name/collectord.conf m=$OUT/mqtt-$name.log
  rm -rf "$d"; mkdir -p "$d/spool"; chown 65534:65534 "$d/spool"; chmod 755 "$d"
  daemon_config "$conf" 100 "$d/spool"
  sed -i '1i stats_interval_s = 1' "$conf"
  daemon_tag "$conf" a "$HCI1_ADDR" cc2650 "${A_PERIODS[@]}"
  chmod 644 "$conf"
  mqtt_watch "mqtt-$name" || fail "mosquitto_sub did not subscribe"
  hciconfig hci0 down || fail "hciconfig hci0 down"
  start "daemon-$name" "${nobody[@]}" "$COLLECTORD" run --config "$conf"
  local log_=$OUT/daemon-$name.log
  wait_for "$log_" 'collectord .* running' 20 || { cat "$log_"; fail "$name: the daemon did not start"; }
  nap 1
  hciconfig hci0 up || fail "hciconfig hci0 up"
  local t_up=${EPOCHREALTIME/./}

  # The warnings said at start, exactly those that apply.
  local queue_warned=0 raw_warned=0
  matches "$log_" 'bluetooth: receive queue [0-9]+ KiB per link instead of 8192 KiB' && queue_warned=1
  matches "$log_" 'bluetooth: no CAP_NET_RAW:' && raw_warned=1
  [ $queue_warned -eq $((1 - full_queue)) ] || { cat "$log_"; fail "$name: receive-queue warning $queue_warned, expected $((1 - full_queue))"; }
  [ $raw_warned -eq $((1 - has_raw)) ] || { cat "$log_"; fail "$name: CAP_NET_RAW warning $raw_warned, expected $((1 - has_raw))"; }
  local q="" ; [[ $(grep -o 'receive queue [0-9]* KiB' "$log_" | head -1) =~ ([0-9]+) ]] && q=${BASH_REMATCH[1]}
  log "$name: warnings: receive queue $queue_warned${q:+ ($q KiB)}, CAP_NET_RAW $raw_warned"

  # The adapter coming up is seen only through HCI events, which need CAP_NET_RAW. With it the
  # tag is ready within a second or two of hci0 coming up; without it, 15 s unscaled (a backstop
  # scaled for a loaded host would only lengthen the run) show that it is not.
  local ready=0
  if [ $has_raw -eq 0 ]; then
    VM_TIME_SCALE=1 wait_for "$m" 'collectord/daemon/vm/events \{.*"event":"ready","tag":"a"' 15 && ready=1
    [ $ready -eq 0 ] || fail "$name: streamed without CAP_NET_RAW although started with the adapter down"
    log "$name: not streaming 15 s after hci0 came up (the adapter event never reached it)"
    summary+=" $name: scan $found, adapter-up followed 0;"
    running "daemon-$name" || fail "$name: the daemon died"
    stop "daemon-$name"; stop "mqtt-$name"
    return 0
  fi
  wait_for "$m" 'collectord/daemon/vm/events \{.*"event":"ready","tag":"a"' 30 && ready=1
  [ $ready -eq 1 ] || { cat "$log_"; mqtt_show "$m"; fail "$name: tag a not ready 30 s after hci0 came up"; }
  mqtt_first "$m" 'collectord/daemon/vm/events \{.*"event":"ready","tag":"a"'
  log "$name: tag a ready $(ms_between $t_up $mqtt_t) ms after hci0 came up"

  # The stall. What the daemon took, rate-limited and saw dropped comes from its stats (every
  # second): the readings' arrival at the subscriber says little, as the broker's in-flight
  # window and the spool pace the backlog.
  wait_readings "$m" humidity 30 30 || fail "$name: a is not streaming"
  local pid; pid=$(< "$OUT/daemon-$name.pid")
  local t0=${EPOCHREALTIME/./} n_pre
  n_pre=$(stat_sum "$m" notifications)
  nap 5
  local t_stop=${EPOCHREALTIME/./}
  local n0 l0 k0
  n0=$(stat_sum "$m" notifications); l0=$(stat_sum "$m" rate_limited); k0=$(stat_sum "$m" kernel_dropped)
  local before=$(( n0 - n_pre ))
  kill -STOP "$pid"
  nap "$STALL"
  kill -CONT "$pid"
  local t_cont=${EPOCHREALTIME/./}
  nap 8
  local t_end=${EPOCHREALTIME/./}
  local taken limited dropped warned=0 after
  taken=$(( $(stat_sum "$m" notifications) - n0 ))
  limited=$(( $(stat_sum "$m" rate_limited) - l0 ))
  dropped=$(( $(stat_sum "$m" kernel_dropped) - k0 ))
  after=$(readings_between "$m" $((t_cont + 3000000)) "$t_end")
  local rate_x10=$(( before * 10000000 / (t_stop - t0) ))
  local stall_ms=$(( (t_cont - t_stop) / 1000 ))
  local expected=$(( rate_x10 * (t_end - t_stop) / 10000000 ))
  matches "$log_" 'the kernel dropped [0-9]+ notification' && warned=1
  log "$name: $((rate_x10 / 10)).$((rate_x10 % 10)) notifications/s before (daemon's count over 5 s); stopped $stall_ms ms; over the stall and the 8 s after" \
      "(about $expected notifications at that rate): taken $taken, rate-limited $limited, dropped by the kernel $dropped" \
      "(warned: $warned); $after readings published 3-8 s after SIGCONT"
  summary+=" $name: scan $found, adapter-up followed 1, ${stall_ms} ms stall: $taken taken, $dropped dropped, $limited limited of ~$expected;"
  if matches "$log_" 'no notification for [0-9]+ ms; dropping the link'; then cat "$log_"; fail "$name: the link was dropped after the stall"; fi
  [ $((limited * 10)) -lt "$taken" ] || { cat "$log_"; fail "$name: $limited notifications rate-limited against $taken taken: the backlog was taken for a flood"; }
  [ $warned -eq $(( dropped > 0 ? 1 : 0 )) ] || { cat "$log_"; fail "$name: kernel drops $dropped, warned $warned"; }
  if [ $full_queue -eq 1 ]; then
    [ "$dropped" -eq 0 ] || fail "$name: the kernel dropped $dropped notifications with the full queue"
  else
    [ "$dropped" -gt 0 ] || fail "$name: no drop counted with a $q KiB queue after a $stall_ms ms stall ($taken taken of about $expected)"
  fi
  [ "$after" -gt 0 ] || fail "$name: a stopped streaming after the stall"
  if matches "$log_" '(Operation not permitted|Permission denied|EPERM|EACCES)' && [ $has_raw -eq 1 ]; then
    cat "$log_"; fail "$name: permission errors in the daemon's log"
  fi
  stop "daemon-$name"; stop "mqtt-$name"
  return 0
}

for c in $CASES; do run_case "$c"; done
echo "$default_rmem" > /proc/sys/net/core/rmem_max
pass "$summary"
