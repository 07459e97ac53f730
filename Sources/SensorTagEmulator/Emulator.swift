// The SensorTag emulator: a GATT server that behaves like the CC2541 and CC2650 firmware.
// (Being written; see the emulator helper's task.)
import Acquisition
import Profiles
