"""The independent decoders, each run on an advertisement and its output put into our vocabulary
(vocabulary.py):

  bthome-ble    Home Assistant's BTHome parser (BTHome v2, plain and encrypted)
  ruuvitag-ble  Home Assistant's RuuviTag parser (data formats 5, 6 and E1)
  atc-ble       the Home Assistant Bluetooth-Devices parser for pvvx custom and ATC1441 (no Home
                Assistant integration ships it; xiaomi-ble does not read 0x181A)
  theengs       TheengsDecoder (RuviTag RAWv2, LYWSD03MMC/MJWSD05MMC_PVVX and _ATC); it has no
                generic BTHome decoder, only fixed layouts of a few devices (its issue #621)
"""

from __future__ import annotations

import datetime
import json
import logging

import vocabulary as V
from common import Decoded, Value
from generate import Advert, ad_structures

logging.disable(logging.CRITICAL)   # the parsers log every oddity; the comparison says what matters

from bthome_ble import BTHomeBluetoothDeviceData            # noqa: E402
from habluetooth import BluetoothServiceInfoBleak           # noqa: E402
from ruuvitag_ble import RuuvitagBluetoothDeviceData        # noqa: E402
from atc_ble import ATCBluetoothDeviceData                  # noqa: E402
from TheengsDecoder import decodeBLE                        # noqa: E402


def uuid128(uuid16: int) -> str:
    return f"0000{uuid16:04x}-0000-1000-8000-00805f9b34fb"


def service_info(advert: Advert) -> BluetoothServiceInfoBleak:
    parts = ad_structures(advert.data)
    return BluetoothServiceInfoBleak(
        name=advert.address, address=advert.address, rssi=-60,
        manufacturer_data=dict(parts["manufacturer"]),
        service_data={uuid128(u): d for u, d in parts["service"].items()},
        service_uuids=[], source="local", device=None, advertisement=None, connectable=False,
        time=0.0, tx_power=None)


def unit_of(unit) -> tuple[str, float]:
    text = None if unit is None else str(unit.value if hasattr(unit, "value") else unit)
    return V.UNITS.get(text, (text, 1))


def plain(value):
    if isinstance(value, datetime.datetime):
        return int(value.timestamp())
    return value


# --- bthome-ble -------------------------------------------------------------------------------

def ha_suffix(key: str, device_class: str) -> str:
    """bthome-ble numbers every entity of a class once there are several ("_1", "_2", …); ours
    leave the first one bare."""
    suffix = key[len(device_class):]
    return "" if suffix in ("", "_1") else suffix


def bthome_ble(advert: Advert) -> Decoded:
    parser = BTHomeBluetoothDeviceData(bindkey=advert.key)
    update = parser.update(service_info(advert))
    out = Decoded()
    if parser.encryption_scheme.value != "none" and not parser.bindkey_verified:
        out.error = "not decrypted"
        return out
    for dk, sv in update.entity_values.items():
        key = str(dk.key)
        desc = update.entity_descriptions[dk]
        dc = str(desc.device_class.value if hasattr(desc.device_class, "value") else desc.device_class)
        if dc == "signal_strength":
            continue
        if dc == "packet_id":
            out.ids[V.ID_BTHOME] = int(sv.native_value)
            continue
        if sv.native_value is None:
            continue
        kind = V.HA_BTHOME_SENSOR_KIND.get(dc, dc)
        unit, factor = unit_of(desc.native_unit_of_measurement)
        kind = V.HA_BTHOME_UNIT_KIND.get((kind, unit), kind)
        ours = V.BTHOME_KIND_UNITS.get(kind, set())
        if len(ours) == 1:
            unit, more = V.convert(unit, next(iter(ours)))
            factor *= more
        value = plain(sv.native_value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and factor != 1:
            value = value * factor
        name = f"{kind}/{kind}{ha_suffix(key, dc)}"
        if kind == "timestamp":
            unit = "s"
        out.values[name] = Value(value, unit, V.HA_BTHOME_QUANTUM.get(advert.truth.sources.get(name), 0.0))
    for dk, bv in update.binary_entity_values.items():
        key = str(dk.key)
        desc = update.binary_entity_descriptions[dk]
        dc = str(desc.device_class.value if hasattr(desc.device_class, "value") else desc.device_class)
        kind = V.HA_BTHOME_BINARY_KIND.get(dc, dc)
        out.values[f"{kind}/{kind}{ha_suffix(key, dc)}"] = Value(bool(bv.native_value), "", 0.0)
    for dk, ev in update.events.items():
        key = str(dk.key)
        device = key.split("_")[0]
        props = ev.event_properties or {}
        steps = props.get("steps")
        # A command's arguments come as hex; the specification's table gives step up and step
        # down a number of steps (one byte), which is what we compare.
        if device == "command" and ev.event_type in ("step_up", "step_down") and len(props.get("args") or "") == 2:
            steps = int(props["args"], 16)
        out.events.append((device + ha_suffix(key, device), ev.event_type, steps))
    if not out.values and not out.events and not out.ids:
        out.error = "nothing decoded"
    return out


# --- ruuvitag-ble -----------------------------------------------------------------------------

# The steps ruuvitag-ble rounds its values to, per data format, in our units.
RUUVI_HA_QUANTUM = {
    5: {"temperature": 0.01, "humidity": 0.01, "acc_x": 0.01, "acc_y": 0.01, "acc_z": 0.01},
    6: {"temperature": 0.01, "humidity": 0.01, "illuminance": 1.0},
    0xE1: {"temperature": 0.001, "humidity": 0.001},
}


def ruuvitag_ble(advert: Advert) -> Decoded:
    info = service_info(advert)
    update = RuuvitagBluetoothDeviceData().update(info)
    out = Decoded()
    fmt = info.manufacturer_data.get(0x0499, b"\0")[0]
    quanta = RUUVI_HA_QUANTUM.get(fmt, {})
    for dk, sv in update.entity_values.items():
        key = str(dk.key.value if hasattr(dk.key, "value") else dk.key)
        name = V.HA_RUUVI.get(key)
        if name is None or sv.native_value is None:
            continue
        unit, factor = unit_of(update.entity_descriptions[dk].native_unit_of_measurement)
        ours, our_unit = V.RUUVI_FIELDS[name]
        unit, more = V.convert(unit, our_unit)
        factor *= more
        out.values[ours] = Value(sv.native_value * factor, unit, quanta.get(name, 0.0) * more)
    if not out.values:
        out.error = "nothing decoded"
    return out


# --- atc-ble ----------------------------------------------------------------------------------

def atc_ble(advert: Advert) -> Decoded:
    update = ATCBluetoothDeviceData().update(service_info(advert))
    out = Decoded()
    for dk, sv in update.entity_values.items():
        name = V.HA_ATC.get(str(dk.key))
        if name is None or sv.native_value is None:
            continue
        unit, factor = unit_of(update.entity_descriptions[dk].native_unit_of_measurement)
        ours, our_unit = V.THERMOMETER_FIELDS[name]
        unit, more = V.convert(unit, our_unit)
        out.values[ours] = Value(sv.native_value * factor * more, unit, 0.0)
    if not out.values:
        out.error = "nothing decoded"
    return out


# --- TheengsDecoder ---------------------------------------------------------------------------

def theengs(advert: Advert) -> Decoded:
    parts = ad_structures(advert.data)
    message = {"id": advert.address}
    if 0x181A in parts["service"]:
        # Theengs matches its conditions on lower-case hex only.
        message.update(servicedata=parts["service"][0x181A].hex(), servicedatauuid="0x181a")
        table, fields, ids = V.THEENGS_THERMOMETER, V.THERMOMETER_FIELDS, {}
    elif 0x0499 in parts["manufacturer"]:
        message["manufacturerdata"] = "9904" + parts["manufacturer"][0x0499].hex()
        table, fields, ids = V.THEENGS_RUUVI, V.RUUVI_FIELDS, V.THEENGS_RUUVI_IDS
    else:
        return Decoded(error="not a format Theengs decodes here")
    text = decodeBLE(json.dumps(message))
    out = Decoded()
    if text is None:
        out.error = "nothing decoded"
        return out
    result = json.loads(text)
    for prop, (name, unit) in table.items():
        if prop in result:
            ours, our_unit = fields[name]
            unit, factor = V.convert(unit, our_unit)
            out.values[ours] = Value(result[prop] * factor, unit, 0.0)
    for prop, name in ids.items():
        if prop in result:
            out.ids[name] = int(result[prop])
    out.model = result.get("model_id")
    if not out.values:
        out.error = "nothing decoded"
    return out


# Which oracle covers which generated format.
ORACLES = {
    "bthome-ble": (bthome_ble, {"bthome", "bthome-encrypted"}),
    "ruuvitag-ble": (ruuvitag_ble, {"ruuvi5", "ruuvi6", "ruuvie1"}),
    "atc-ble": (atc_ble, {"pvvx", "atc1441"}),
    "theengs": (theengs, {"ruuvi5", "pvvx", "atc1441"}),
}


def oracles_for(fmt: str) -> list[str]:
    return [name for name, (_, formats) in ORACLES.items() if fmt in formats]
