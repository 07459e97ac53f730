#!/bin/bash
# wedge-recovery with D-Bus and bluetoothd running beside the daemon, as on Raspberry Pi OS: found, cured, given up alike; bluetoothd runs on.
# vm-timeout: 330
# vm-controllers: 4
# The scenario is 55-wedge-recovery.sh's (see there); bluetoothd is started first.
export WEDGE_WITH_BLUETOOTHD=1
. "$REPO/Tests/vm/scenarios/55-wedge-recovery.sh"
