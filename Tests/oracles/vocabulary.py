"""The one place that names things: collectord's vocabulary, and each oracle's words mapped to it.

collectord's `decode --advert-batch` names a reading after what is measured (sensor "temperature",
field "temperature"; a second object of one kind in a BTHome packet is field "temperature_2";
Ruuvi's acceleration is sensor "acceleration" with fields x, y, z). Everything here is compared
as a flat key "sensor/field". When the Swift side settles a name or a unit differently, change
it here and nothing else: the generator's expectations (generate.py) and the oracles' normalised
output (oracles.py) both read these tables.
"""

# --- collectord's names --------------------------------------------------------------------

# BTHome v2 objects, from the specification's object table (bthome.io/format): object id ->
# (kind, bytes, signed, factor, unit). The kind names the reading (sensor and field). Binary
# sensors use a kind of their own where a measured quantity has the same word (a "battery" in %
# beside a "battery low" flag).
BTHOME_SENSORS = {
    0x01: ("battery", 1, False, 1, "%"),
    0x02: ("temperature", 2, True, 0.01, "°C"),
    0x03: ("humidity", 2, False, 0.01, "%RH"),
    0x04: ("pressure", 3, False, 0.01, "hPa"),
    0x05: ("illuminance", 3, False, 0.01, "lux"),
    0x06: ("mass", 2, False, 0.01, "kg"),
    0x07: ("mass_lb", 2, False, 0.01, "lb"),
    0x08: ("dew_point", 2, True, 0.01, "°C"),
    0x09: ("count", 1, False, 1, ""),
    0x0A: ("energy", 3, False, 0.001, "kWh"),
    0x0B: ("power", 3, False, 0.01, "W"),
    0x0C: ("voltage", 2, False, 0.001, "V"),
    0x0D: ("pm2_5", 2, False, 1, "µg/m³"),
    0x0E: ("pm10", 2, False, 1, "µg/m³"),
    0x12: ("co2", 2, False, 1, "ppm"),
    0x13: ("tvoc", 2, False, 1, "µg/m³"),
    0x14: ("moisture", 2, False, 0.01, "%"),
    0x2E: ("humidity", 1, False, 1, "%RH"),
    0x2F: ("moisture", 1, False, 1, "%"),
    0x3D: ("count", 2, False, 1, ""),
    0x3E: ("count", 4, False, 1, ""),
    0x3F: ("rotation", 2, True, 0.1, "°"),
    0x40: ("distance", 2, False, 1, "mm"),
    0x41: ("distance_m", 2, False, 0.1, "m"),
    0x42: ("duration", 3, False, 0.001, "s"),
    0x43: ("current", 2, False, 0.001, "A"),
    0x44: ("speed", 2, False, 0.01, "m/s"),
    0x45: ("temperature", 2, True, 0.1, "°C"),
    0x46: ("uv_index", 1, False, 0.1, ""),
    0x47: ("volume", 2, False, 0.1, "L"),
    0x48: ("volume_ml", 2, False, 1, "mL"),
    0x49: ("flow_rate", 2, False, 0.001, "m³/h"),
    0x4A: ("voltage", 2, False, 0.1, "V"),
    0x4B: ("gas", 3, False, 0.001, "m³"),
    0x4C: ("gas", 4, False, 0.001, "m³"),
    0x4D: ("energy", 4, False, 0.001, "kWh"),
    0x4E: ("volume", 4, False, 0.001, "L"),
    0x4F: ("water", 4, False, 0.001, "L"),
    0x51: ("acceleration", 2, False, 0.001, "m/s²"),
    0x52: ("gyroscope", 2, False, 0.001, "°/s"),
    0x55: ("volume_storage", 4, False, 0.001, "L"),
    0x56: ("conductivity", 2, False, 1, "µS/cm"),
    0x57: ("temperature", 1, True, 1, "°C"),
    0x58: ("temperature", 1, True, 0.35, "°C"),
    0x59: ("count", 1, True, 1, ""),
    0x5A: ("count", 2, True, 1, ""),
    0x5B: ("count", 4, True, 1, ""),
    0x5C: ("power", 4, True, 0.01, "W"),
    0x5D: ("current", 2, True, 0.001, "A"),
    0x5E: ("direction", 2, False, 0.01, "°"),
    0x5F: ("precipitation", 2, False, 0.1, "mm"),
    0x60: ("channel", 1, False, 1, ""),
    0x61: ("rotation_speed", 2, False, 1, "rpm"),
    0x62: ("speed", 4, True, 0.000001, "m/s"),
    0x63: ("acceleration", 4, True, 0.000001, "m/s²"),
    0x64: ("light_level", 1, False, 1, ""),
    0x65: ("settings_revision", 1, False, 1, ""),
}
# Objects that are not plain numbers: a timestamp (seconds since 1970, UTC), a UTF-8 text and
# raw bytes (both with a length byte first).
BTHOME_TIMESTAMP = {0x50: ("timestamp", 4, "s")}
BTHOME_TEXT = {0x53: "text"}
BTHOME_RAW = {0x54: "raw"}
# Binary sensors: one byte, 0 or 1; the value compares as a boolean (collectord publishes 0 or
# 1). Where the specification's word also names a quantity (power, battery, gas, moisture,
# light), the state says what it tells.
BTHOME_BINARY = {
    0x0F: "generic", 0x10: "power_state", 0x11: "opening", 0x15: "battery_low",
    0x16: "charging", 0x17: "carbon_monoxide", 0x18: "cold", 0x19: "connectivity",
    0x1A: "door", 0x1B: "garage_door", 0x1C: "gas_detected", 0x1D: "heat", 0x1E: "light_detected",
    0x1F: "lock", 0x20: "wet", 0x21: "motion", 0x22: "moving", 0x23: "occupancy",
    0x24: "plug", 0x25: "presence", 0x26: "problem", 0x27: "running", 0x28: "safety",
    0x29: "smoke", 0x2A: "sound", 0x2B: "tamper", 0x2C: "vibration", 0x2D: "window",
}
# Events: button (1 byte) and dimmer (event byte and a step count).
BTHOME_BUTTON_EVENTS = {0x01: "press", 0x02: "double_press", 0x03: "triple_press",
                        0x04: "long_press", 0x05: "long_double_press",
                        0x06: "long_triple_press", 0x80: "hold_press"}
BTHOME_DIMMER_EVENTS = {0x01: "rotate_left", 0x02: "rotate_right"}
# Command (0x3B) opcodes.
BTHOME_COMMAND_EVENTS = {0x00: "off", 0x01: "on", 0x02: "toggle", 0x03: "step_up", 0x04: "step_down"}
# Device information objects: no reading (device type id, firmware version in 4 or 3 bytes).
BTHOME_DEVICE_INFO = {0xF0: 2, 0xF1: 4, 0xF2: 3}

# RuuviTag: the reading key and unit. Acceleration is published in g, as the SensorTag's is
# (Ruuvi sends milli-g); the VOC and NOx values are Sensirion's indexes.
RUUVI_FIELDS = {
    "temperature": ("temperature/temperature", "°C"),
    "humidity": ("humidity/humidity", "%RH"),
    "pressure": ("pressure/pressure", "hPa"),
    "acc_x": ("acceleration/x", "g"),
    "acc_y": ("acceleration/y", "g"),
    "acc_z": ("acceleration/z", "g"),
    "voltage": ("voltage/voltage", "V"),
    "tx_power": ("tx_power/tx_power", "dBm"),
    "movement": ("movement_count/movement_count", ""),
    "pm1": ("pm1/pm1", "µg/m³"),
    "pm2_5": ("pm2_5/pm2_5", "µg/m³"),
    "pm4": ("pm4/pm4", "µg/m³"),
    "pm10": ("pm10/pm10", "µg/m³"),
    "co2": ("co2/co2", "ppm"),
    "voc": ("voc_index/voc_index", ""),
    "nox": ("nox_index/nox_index", ""),
    "illuminance": ("illuminance/illuminance", "lux"),
}
# One g in m/s² (the oracles give Ruuvi's acceleration in m/s²).
STANDARD_GRAVITY = 9.80665

# pvvx custom and ATC1441 thermometers.
THERMOMETER_FIELDS = {
    "temperature": ("temperature/temperature", "°C"),
    "humidity": ("humidity/humidity", "%RH"),
    "battery": ("battery/battery", "%"),
    "voltage": ("voltage/voltage", "V"),
}

# The names of the per-packet numbers that drop repeats; encrypted BTHome's counter (part of
# the nonce, for replay protection) is printed as "counter" too.
ID_BTHOME, ID_RUUVI, ID_THERMOMETER = "packet_id", "sequence", "counter"
ID_BTHOME_COUNTER = "counter"
# The first object id of a BTHome payload that the specification does not define (the parse
# stops there), as collectord prints it.
ID_UNKNOWN_OBJECT = "unknown_object_id"

# What the specifications define and collectord deliberately does not publish, as our keys (a
# BTHome key's "_2", "_3" … included): BTHome's text and raw objects (no fixed name for their
# contents, and a reading's field is a number), the settings revision (device information, kept
# with the packet, not a measurement) and Ruuvi's transmit power (a setting of the tag, not a
# measurement). The generator and the oracles keep them, so the self-check still proves the
# oracles on them; only the comparison with collectord leaves them out.
NOT_PUBLISHED_KINDS = {"text", "raw", "settings_revision", "tx_power"}


def published(key: str) -> bool:
    """Whether collectord publishes the reading `key` ("sensor/field")."""
    return key.split("/")[0] not in NOT_PUBLISHED_KINDS

# Our format names in the `formats` list, by the generator's format.
FORMAT_NAMES = {
    "bthome": "bthome", "bthome-encrypted": "bthome",
    "ruuvi5": "ruuvi", "ruuvic5": "ruuvi", "ruuvi6": "ruuvi", "ruuvie1": "ruuvi",
    "pvvx": "pvvx", "atc1441": "atc1441",
}

# --- the oracles' words ---------------------------------------------------------------------

# Units: an oracle's unit -> (our unit, factor to multiply its value by), whatever the quantity.
UNITS = {
    "mbar": ("hPa", 1), "mV": ("V", 0.001), "lx": ("lux", 1), "int": ("", 1), "None": ("", 1),
    None: ("", 1),
}
# Conversions that depend on the quantity: (an oracle's unit after UNITS, the unit collectord
# publishes that quantity in) -> factor. "%" is relative humidity's "%RH" (the payload unit the
# daemon has always published for the SensorTag's humidity) but stays "%" for a battery or
# moisture; Ruuvi's acceleration is in g, BTHome's in m/s². A pair not listed keeps the oracle's
# unit, and the comparison reports it.
CONVERSIONS = {("%", "%RH"): 1, ("m/s²", "g"): 1 / STANDARD_GRAVITY}


def convert(unit: str, ours: str) -> tuple[str, float]:
    """An oracle's unit (after UNITS) for a quantity collectord publishes in `ours`: the unit
    and the factor to multiply the oracle's value by."""
    if unit != ours and (unit, ours) in CONVERSIONS:
        return ours, CONVERSIONS[(unit, ours)]
    return unit, 1

# bthome-ble (Home Assistant): sensors are keyed by Home Assistant's device class, a second one
# of a class gets "_1", "_2", …; this maps the device class to our kind where the words differ.
HA_BTHOME_SENSOR_KIND = {
    "pm25": "pm2_5", "carbon_dioxide": "co2", "volatile_organic_compounds": "tvoc",
    "volume_flow_rate": "flow_rate", "rotational_speed": "rotation_speed",
}
# bthome-ble names mass, distance and volume by device class whatever the unit; ours are one
# sensor per unit (mass in kg, mass_lb in lb, distance in mm, distance_m in m, volume in L,
# volume_ml in mL).
HA_BTHOME_UNIT_KIND = {("mass", "lb"): "mass_lb", ("distance", "m"): "distance_m", ("volume", "mL"): "volume_ml"}
# Our unit of each BTHome kind (for convert).
BTHOME_KIND_UNITS: dict[str, set] = {}
for _kind, _size, _signed, _factor, _unit in BTHOME_SENSORS.values():
    BTHOME_KIND_UNITS.setdefault(_kind, set()).add(_unit)
# bthome-ble rounds to the decimals of the factor's leading digit: 0.35 °C steps come out at
# 0.1 °C (the generator tells which object a key came from).
HA_BTHOME_QUANTUM = {0x58: 0.1}
HA_BTHOME_BINARY_KIND = {
    "power": "power_state", "battery": "battery_low", "gas": "gas_detected",
    "moisture": "wet", "light": "light_detected", "battery_charging": "charging",
}
# Event keys are the event device ("button", "dimmer"); the event types are ours already.

# ruuvitag-ble (Home Assistant): entity key -> our RUUVI_FIELDS name. Keys not listed
# (acceleration_total, iaqs, signal_strength) have no counterpart in the advertisement and are
# left out of the comparison.
HA_RUUVI = {
    "temperature": "temperature", "humidity": "humidity", "pressure": "pressure",
    "voltage": "voltage", "movement_counter": "movement", "acceleration_x": "acc_x",
    "acceleration_y": "acc_y", "acceleration_z": "acc_z", "pm1": "pm1", "pm25": "pm2_5",
    "pm4": "pm4", "pm10": "pm10", "carbon_dioxide": "co2", "voc_index": "voc",
    "nox_index": "nox", "illuminance": "illuminance",
}
# atc-ble (Home Assistant's Bluetooth-Devices project): entity key -> THERMOMETER_FIELDS name.
HA_ATC = {"temperature": "temperature", "humidity": "humidity", "battery": "battery",
          "voltage": "voltage"}
# TheengsDecoder: property -> (our field name in the format's table, the unit it reports).
THEENGS_RUUVI = {
    "tempc": ("temperature", "°C"), "hum": ("humidity", "%"), "pres": ("pressure", "hPa"),
    "accx": ("acc_x", "m/s²"), "accy": ("acc_y", "m/s²"), "accz": ("acc_z", "m/s²"),
    "volt": ("voltage", "V"), "tx": ("tx_power", "dBm"), "mov": ("movement", ""),
}
THEENGS_RUUVI_IDS = {"seq": ID_RUUVI}
THEENGS_THERMOMETER = {
    "tempc": ("temperature", "°C"), "hum": ("humidity", "%"), "batt": ("battery", "%"),
    "volt": ("voltage", "V"),
}

# What each oracle does not decode at all, as our keys: such a key on our side only is not a
# disagreement with that oracle ("not covered"). Anything else one side has and the other lacks
# is reported.
NOT_COVERED = {
    "bthome-ble": {"ids": {ID_BTHOME_COUNTER, ID_UNKNOWN_OBJECT}, "keys": set()},
    "ruuvitag-ble": {"ids": {ID_RUUVI}, "keys": {"tx_power/tx_power"}},
    "atc-ble": {"ids": {ID_THERMOMETER}, "keys": set()},
    "theengs": {"ids": {ID_THERMOMETER}, "keys": set()},
}
