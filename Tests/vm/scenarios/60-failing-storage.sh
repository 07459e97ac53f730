#!/bin/bash
# The spool's ext4 fills up, then its device returns I/O errors and ext4 remounts itself read-only: readings go on from memory, the spool is used again once the medium is back, no restart.
# vm-timeout: 420
# The spool is on ext4 (`errors=remount-ro,noatime`) over device-mapper over a loop device, so
# that the device can be switched to the `error` target and back. The daemon runs emulated tags
# (`run --emulated-tags`: no Bluetooth needed) and publishes to the guest's broker, which is
# stopped (SIGSTOP) while the disk fails so that what the daemon cannot deliver goes to the spool.
#   1. full: the broker stalls, a file fills the disk; the spool cannot take the next reading,
#      the daemon says once that the medium fails and holds readings in memory; the broker comes
#      back and gets them; the file goes and the spool is opened again within 30 s and replays.
#   2. I/O errors: the broker stalls, the device returns EIO; ext4 remounts itself read-only; the
#      daemon holds readings in memory, the broker gets them once back; the device is restored,
#      the file system checked and mounted again, and the spool is used again.
# Checked at the end: every tag's readings arrived with no gap in `seq` except those the EIO
# took from the spool before they reached the disk (at most the last second or two before the
# errors began, README), the daemon never restarted, and the stats said the medium failed.
. "$VM_LIB"
CONF=$OUT/collectord.conf
M=$OUT/mqtt.log
FS=/tmp/spoolfs
DEV=spooldev

modprobe -q dm_mod; modprobe -q dm_flakey; modprobe -q ext4; modprobe -q loop
[ -e /dev/mapper/control ] || skip "no device-mapper in this kernel (dm_mod)"
truncate -s 48M /tmp/spool.img
loop=$(losetup --find --show /tmp/spool.img) || skip "no loop device"
sectors=$(blockdev --getsz "$loop")
table() { echo "0 $sectors $1"; }
swap_table() {
  dmsetup suspend --noflush "$DEV" && dmsetup load "$DEV" --table "$(table "$1")" && dmsetup resume "$DEV"
}
step 20 dm dmsetup create "$DEV" --table "$(table "linear $loop 0")" || fail "dmsetup create"
# No udev in the guest: dmsetup makes the node itself.
[ -e "/dev/mapper/$DEV" ] || step 10 mknodes dmsetup mknodes "$DEV" || fail "dmsetup mknodes"
# Raspberry Pi OS makes its root file system with mke2fs's ext4 defaults and mounts it noatime.
step 60 mkfs mkfs.ext4 -q -F "/dev/mapper/$DEV" || fail "mkfs.ext4"
mkdir -p "$FS"
mount -t ext4 -o noatime,errors=remount-ro "/dev/mapper/$DEV" "$FS" || fail "mount"
mounted_ro() { awk -v m="$FS" '$2 == m { split($4, o, ","); print o[1] }' /proc/mounts | grep -qx ro; }

mqtt_watch mqtt || fail "mosquitto_sub did not subscribe"
daemon_config "$CONF" 3 "$FS/spool"
sed -i "s/^adapter = \"hci0\"\$/stats_interval_s = 5/" "$CONF"
daemon_tag "$CONF" a "00:AA:02:00:00:0A" cc2650 humidity:200 barometer:200
daemon_tag "$CONF" b "00:AA:02:00:00:0B" cc2541 humidity:200
step 10 check-config "$COLLECTORD" check-config --config "$CONF" || fail "configuration rejected"
start daemon "$COLLECTORD" run --config "$CONF" --emulated-tags
wait_count "$M" '^[0-9.]+ collectord/tags/b/humidity \{' 10 60 || { mqtt_show "$M"; fail "no readings"; }
daemon_pid=$(cat "$OUT/daemon.pid")
broker=$(pgrep -xo mosquitto) || fail "no broker"
log "streaming; spool on ext4 over device-mapper at $FS"
medium_errors() { count "$OUT/daemon.log" "the spool's medium fails"; }
medium_back() { count "$OUT/daemon.log" 'works again: '; }

# 1. A full disk.
kill -STOP "$broker"
wait_for_spool() { local i; for (( i = 0; i < 200; i++ )); do ls "$FS/spool"/*.spool >/dev/null 2>&1 && [ "$(cat "$FS"/spool/*.spool | wc -c)" -gt "$1" ] && return 0; nap 0.2; done; return 1; }
wait_for_spool 2000 || { kill -CONT "$broker"; fail "nothing spooled while the broker stalled"; }
# Free blocks, the reserved ones included: the daemon runs as root here.
read -r free bsize < <(stat -f -c '%f %S' "$FS")
fallocate -l $(( free * bsize - (1 << 20) )) "$FS/filler" || { kill -CONT "$broker"; fail "fallocate"; }
dd if=/dev/zero of="$FS/filler2" bs=4k 2>/dev/null  # the rest, up to ENOSPC (ext4 keeps some for its metadata)
log "the broker stalled, the spool written to, the disk filled ($(stat -f -c '%f' "$FS") blocks left)"
wait_count "$OUT/daemon.log" "the spool's medium fails" 1 60 || { kill -CONT "$broker"; fail "the daemon did not say the medium fails"; }
log "daemon: $(grep -a "the spool's medium fails" "$OUT/daemon.log" | head -1 | cut -c1-200)"
kill -CONT "$broker"
n=$(count "$M" '^[0-9.]+ collectord/tags/a/humidity \{')
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' $(( n + 10 )) 60 || fail "readings stopped while the disk is full"
wait_for "$M" 'collectord/daemon/vm/stats .*"medium":"failing"' 30 || fail "the stats do not say the medium fails"
rm -f "$FS/filler" "$FS/filler2"
t_room=${EPOCHREALTIME/./}
wait_count "$OUT/daemon.log" 'works again: ' 1 40 || fail "the spool was not used again within 40 s of the room"
log "the spool works again $(( (${EPOCHREALTIME/./} - t_room) / 1000 )) ms after the disk had room; $(grep -a 'works again: ' "$OUT/daemon.log" | head -1 | cut -c1-160)"
[ "$(medium_errors)" -eq 1 ] || fail "the medium failure was logged $(medium_errors) times"

# 2. I/O errors, and ext4 remounting itself read-only.
kill -STOP "$broker"
size=$(cat "$FS"/spool/*.spool | wc -c)
wait_for_spool $(( size + 2000 )) || { kill -CONT "$broker"; fail "nothing spooled while the broker stalled again"; }
nap 2
t_eio=${EPOCHREALTIME/./}
swap_table error || { kill -CONT "$broker"; fail "cannot switch the device to the error target"; }
log "the device returns I/O errors"
wait_count "$OUT/daemon.log" "the spool's medium fails" 2 60 || { kill -CONT "$broker"; fail "the daemon did not say the medium fails again"; }
kill -CONT "$broker"
n=$(count "$M" '^[0-9.]+ collectord/tags/a/humidity \{')
wait_count "$M" '^[0-9.]+ collectord/tags/a/humidity \{' $(( n + 10 )) 60 || fail "readings stopped while the device fails"
for (( i = 0; i < 10; i++ )); do mounted_ro && break; nap 0.5; done
mounted_ro && log "ext4 remounted itself read-only" || log "ext4 still read-write (no metadata write failed yet)"
swap_table "linear $loop 0" || fail "cannot restore the device"
umount "$FS" || { fuser -vm "$FS" 2>&1 | head; fail "cannot unmount the failed file system (the daemon holds a file there?)"; }
step 120 fsck e2fsck -fy "/dev/mapper/$DEV"; rc=$?
[ $rc -le 1 ] || log "e2fsck exit $rc"
mount -t ext4 -o noatime,errors=remount-ro "/dev/mapper/$DEV" "$FS" || fail "cannot mount the repaired file system"
t_back=${EPOCHREALTIME/./}
wait_count "$OUT/daemon.log" 'works again: ' 2 40 || fail "the spool was not used again within 40 s"
log "the spool works again $(( (${EPOCHREALTIME/./} - t_back) / 1000 )) ms after the file system was back"
n=$(count "$M" '^[0-9.]+ collectord/tags/b/humidity \{')
wait_count "$M" '^[0-9.]+ collectord/tags/b/humidity \{' $(( n + 10 )) 30 || fail "no readings after the medium came back"
nap 3
[ "$(cat "$OUT/daemon.pid")" = "$daemon_pid" ] && running daemon || fail "the daemon restarted or died"
stop daemon

# Every reading arrived, except a window before the I/O errors began.
mqtt_split "$M" "$OUT/readings"
worst=0
for ts in a.humidity a.barometer b.humidity; do
  t=${ts%%.*} s=${ts#*.}
  nums=$(grep -ao '"seq":[0-9]*' "$OUT/readings/$ts" | cut -d: -f2 | sort -n | uniq)
  first=$(echo "$nums" | head -1) last=$(echo "$nums" | tail -1) have=$(echo "$nums" | wc -l)
  missing=$(( last - first + 1 - have ))
  [ "$first" -eq 0 ] || fail "$t/$s: first seq $first"
  # Readings come every 200 ms: the loss bound (about two seconds) is about ten of them.
  [ "$missing" -le 15 ] || fail "$t/$s: $missing readings missing of $((last + 1))"
  [ "$missing" -gt "$worst" ] && worst=$missing
  log "$t/$s: seq 0..$last, $missing missing"
done
pass "full disk and I/O errors survived without a restart; at most $worst readings (200 ms apart) lost to the I/O errors"
