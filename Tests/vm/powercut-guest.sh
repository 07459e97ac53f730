#!/bin/bash
# The guest driver of the power cut runs (Tests/vm/powercut.sh): what a Raspberry Pi's boot does
# for collectord, and nothing else. Runs inside the VM, chrooted into the host's root
# (read-only), with the run folder RUN (argument 1) shared read-write with the host; RUN/powercut.env
# (written by the host before each boot) says which boot this is, where the broker is and which
# binary and configuration to run.
#
#   * mounts the virtual disk (/dev/vda, ext4 made on the host as Raspberry Pi OS's images have
#     it) with Raspberry Pi OS's options for its root file system, `defaults,noatime`: the spool
#     lives there, as /var/lib/collectord/spool does on a Pi;
#   * brings up the network (QEMU user networking: the host is 10.0.2.2);
#   * publishes the guest's clock to the host's broker every 2 s (topic vmrig/guest, "boot N
#     clock SECONDS.MICROS") so the host can compare reading times with its own, and "boot N
#     daemon SECONDS.MICROS" when it starts the daemon;
#   * starts `collectord run --emulated-tags` as systemd would with the package's unit, with its
#     log on the second serial port (a file on the host, so it survives the cut; each line
#     prefixed with the guest's time, SECONDS.MICROS, as journald stamps it), and starts it
#     again 5 s after it fails unless it refused its configuration (Restart=on-failure,
#     RestartSec=5s, RestartPreventExitStatus=78);
#   * waits for the power cut (the host kills QEMU).
set -u
RUN="$1"
. "$RUN/powercut.env"  # BOOT COLLECTORD CONFIG BROKER_HOST BROKER_PORT
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8
exec {sleep_fd}<> <(:)
nap() { read -r -t "$1" -u "$sleep_fd" _ || true; }
uptime_s() { local up _; read -r up _ < /proc/uptime; echo "$up"; }
say() { echo "vmrig-powercut [$(uptime_s)] boot $BOOT: $*"; }

say "guest driver started"
disk=/run/vmdisk
mkdir -p "$disk"
if ! mount -t ext4 -o defaults,noatime /dev/vda "$disk"; then
  say "cannot mount /dev/vda"; dmesg | tail -n 20; exit 1
fi
dmesg | grep -a 'EXT4-fs' | sed 's/^/  /'
say "disk mounted ($(grep ' /run/vmdisk ' /proc/mounts))"

ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
say "network up"

# Events for the host go through one long-lived mosquitto_pub (-l: a message per line), so each
# carries its own time and costs no process start; between events, every 2 s, the clock.
# Restarted while the broker is away.
mkfifo /tmp/guest-events
exec {events}<> /tmp/guest-events
(
  while :; do
    {
      while :; do
        read -r -t 2 -u "$events" line && echo "$line"
        echo "boot $BOOT clock $EPOCHREALTIME"
      done
    } | mosquitto_pub -h "$BROKER_HOST" -p "$BROKER_PORT" -q 1 -i "vmrig-guest-$BOOT" -t vmrig/guest -l 2>/dev/null
    nap 1
  done
) &

# Each log line with the guest's time it was written at, as journald keeps it, so the host can
# tell when a tag began streaming in a boot the power then left without a reading delivered.
stamp() { local line; while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done; }

starts=0
while :; do
  starts=$((starts + 1))
  echo "boot $BOOT daemon $EPOCHREALTIME" > /tmp/guest-events
  say "starting collectord (start $starts)"
  "$COLLECTORD" run --config "$CONFIG" --emulated-tags 2>&1 < /dev/null | stamp > /dev/ttyS1
  rc=${PIPESTATUS[0]}
  if [ $rc -eq 78 ]; then say "collectord refused its configuration (status 78)"; break; fi
  say "collectord exited with status $rc; starting it again in 5 s"
  nap 5
done
wait
