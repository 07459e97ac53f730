# The guest's QEMU command line, shared by scripts/test-vm (scenarios) and Tests/vm/powercut.sh
# (power cuts). Source it, then:
#
#   vm_qemu RUN KERNEL INITRAMFS GUEST_DRIVER GUEST_LIMIT [QEMU_ARGS...]
#
# runs QEMU in the foreground: the guest boots KERNEL with INITRAMFS (Tests/vm/init), mounts the
# host root read-only and RUN read-write, and runs GUEST_DRIVER (a path in the host's tree) for
# at most GUEST_LIMIT seconds; its console goes to RUN/console.log unless QEMU_ARGS give their own
# serial ports, QEMU's own messages to stderr. QEMU_ARGS come last (disks, networks, a pid file);
# VM_APPEND adds kernel arguments (experiments).
#
# TCG only: KVM does not work on these hosts. no_timer_check: on a busy host the emulated CPU can
# miss the kernel's IO-APIC timer check at boot ("IO-APIC + timer doesn't work", a panic, seen
# here with CI beside the rig).
vm_qemu() {
  local run=$1 kernel=$2 initramfs=$3 guest=$4 limit=$5 a serial=(-serial "file:$1/console.log")
  shift 5
  for a in "$@"; do [ "$a" = -serial ] && serial=(); done
  qemu-system-x86_64 \
    -machine pc,accel=tcg -cpu "${VM_CPU:-max}" -m "${VM_MEM:-1024}" -smp "${VM_SMP:-2}" \
    -display none -monitor none "${serial[@]}" -no-reboot -nic none \
    -kernel "$kernel" -initrd "$initramfs" \
    -append "console=ttyS0 quiet loglevel=4 panic=-1 no_timer_check ${VM_APPEND:-} vmrig.run=$run vmrig.guest=$guest vmrig.timeout=$limit" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$run,mount_tag=results,security_model=none,multidevs=remap" \
    "$@"
}
