"""The formats' own example packets with the values their specifications give for them; the
self-check decodes each with every oracle that covers the format."""

from __future__ import annotations

import vocabulary as V
from common import Decoded, Value
from generate import Advert, FLAGS, manufacturer, service_data


def _values(pairs: dict, sources: dict | None = None, ids: dict | None = None, events=()) -> Decoded:
    d = Decoded()
    for key, (value, unit) in pairs.items():
        d.values[key] = Value(value, unit, 0.0)
    d.sources = dict(sources or {})
    d.ids = dict(ids or {})
    d.events = list(events)
    return d


def _bthome(hex_objects: str, expect: dict, ids=None, events=(), sources=None, addr="A4:C1:38:00:00:01") -> Advert:
    body = bytes.fromhex("40" + hex_objects.replace(" ", ""))
    return Advert("bthome", addr, FLAGS + service_data(0xFCD2, body), None, _values(expect, sources, ids, events))


def _ruuvi(hex_body: str, expect: dict, seq=None, fmt="ruuvi5") -> Advert:
    """A Ruuvi vector; the specification's "XX" (reserved, any value) is sent as AA."""
    body = bytes.fromhex(hex_body.replace("X", "A"))
    return Advert(fmt, "CB:B8:33:4C:88:4F", FLAGS + manufacturer(0x0499, body), None,
                  _values({V.RUUVI_FIELDS[k][0]: (v, V.RUUVI_FIELDS[k][1]) for k, v in expect.items()},
                          ids={} if seq is None else {V.ID_RUUVI: seq}))


VECTORS: list[tuple[str, Advert]] = [
    # bthome.io/format: the example advertisement (flags, a local name, then the service data).
    ("BTHome example advertisement", Advert(
        "bthome", "A4:C1:38:00:00:02",
        bytes.fromhex("020106" "0B094449592D73656E736F72" "0A16D2FC4002C40903BF13"), None,
        _values({"temperature/temperature": (25.00, "°C"), "humidity/humidity": (50.55, "%RH")}))),
    # bthome.io/format: the object table's examples.
    ("BTHome objects 0x00-0x08", _bthome(
        "00A8 0161 02CA09 03BF13 04138A01 05138A14 065E1F",
        {"battery/battery": (97, "%"), "temperature/temperature": (25.06, "°C"),
         "humidity/humidity": (50.55, "%RH"), "pressure/pressure": (1008.83, "hPa"),
         "illuminance/illuminance": (13460.67, "lux"), "mass/mass": (80.30, "kg")},
        ids={V.ID_BTHOME: 168})),
    ("BTHome objects 0x07-0x0C", _bthome(
        "073E1D 08CA06 0960 0A138A14 0B021B00 0C020C",
        {"mass_lb/mass_lb": (74.86, "lb"), "dew_point/dew_point": (17.38, "°C"), "count/count": (96, ""),
         "energy/energy": (1346.067, "kWh"), "power/power": (69.14, "W"), "voltage/voltage": (3.074, "V")})),
    ("BTHome objects 0x3F-0x46", _bthome(
        "3F020C 414E00 424E3400 434E34 444E34 451101 4632",
        {"rotation/rotation": (307.4, "°"), "distance_m/distance_m": (7.8, "m"),
         "duration/duration": (13.390, "s"), "current/current": (13.390, "A"),
         "speed/speed": (133.90, "m/s"), "temperature/temperature": (27.3, "°C"),
         "uv_index/uv_index": (5.0, "")})),
    ("BTHome timestamp and text", _bthome(
        "505D396164 530C48656C6C6F20576F726C6421",
        {"timestamp/timestamp": (1684093277, "s"), "text/text": ("Hello World!", "")})),
    ("BTHome binary sensors, a button and a dimmer", _bthome(
        "1001 1100 3A01 3C0103",
        {"power_state/power_state": (True, ""), "opening/opening": (False, "")},
        events=[("button", "press", None), ("dimmer", "rotate_left", 3)])),
    ("BTHome two temperatures of different resolution", _bthome(
        "02CA09 451101",
        {"temperature/temperature": (25.06, "°C"), "temperature/temperature_2": (27.3, "°C")},
        sources={"temperature/temperature": 0x02, "temperature/temperature_2": 0x45})),
    # bthome.io/encryption: the worked example (bindkey, MAC 54:48:E6:8F:80:A5, counter 0x33221100);
    # the tag as bthome-ble's and Home Assistant's current tests have it (NOTES.md).
    ("BTHome encryption example", Advert(
        "bthome-encrypted", "54:48:E6:8F:80:A5",
        FLAGS + service_data(0xFCD2, bytes.fromhex("41" "A47266C95F73" "00112233" "78237214")),
        bytes.fromhex("231d39c1d7cc1ab1aee224cd096db932"),
        _values({"temperature/temperature": (25.06, "°C"), "humidity/humidity": (50.55, "%RH")},
                ids={V.ID_BTHOME_COUNTER: 0x33221100}))),
    # Ruuvi's data format 5 specification: the valid, maximum, minimum and invalid vectors.
    ("Ruuvi 5 valid", _ruuvi("0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F", dict(
        temperature=24.3, humidity=53.49, pressure=1000.44, acc_x=0.004, acc_y=-0.004, acc_z=1.036,
        voltage=2.977, tx_power=4, movement=66), seq=205)),
    ("Ruuvi 5 maximum", _ruuvi("057FFFFFFEFFFE7FFF7FFF7FFFFFDEFEFFFECBB8334C884F", dict(
        temperature=163.835, humidity=163.835, pressure=1155.34, acc_x=32.767, acc_y=32.767,
        acc_z=32.767, voltage=3.646, tx_power=20, movement=254), seq=65534)),
    ("Ruuvi 5 minimum", _ruuvi("058001000000008001800180010000000000CBB8334C884F", dict(
        temperature=-163.835, humidity=0.0, pressure=500.00, acc_x=-32.767, acc_y=-32.767,
        acc_z=-32.767, voltage=1.6, tx_power=-40, movement=0), seq=0)),
    # Ruuvi's data format C5 specification's vectors; the page prints them with a format byte of
    # 05 (a slip: they are 18 bytes, C5's layout), sent here with C5.
    ("Ruuvi C5 valid", _ruuvi("C512FC5394C37CAC364200CDCBB8334C884F", dict(
        temperature=24.3, humidity=53.49, pressure=1000.44, voltage=2.977, tx_power=4, movement=66),
        seq=205, fmt="ruuvic5")),
    ("Ruuvi C5 maximum", _ruuvi("C57FFFFFFEFFFEFFDEFEFFFECBB8334C884F", dict(
        temperature=163.835, humidity=163.835, pressure=1155.34, voltage=3.646, tx_power=20, movement=254),
        seq=65534, fmt="ruuvic5")),
    ("Ruuvi C5 minimum", _ruuvi("C58001000000000000000000CBB8334C884F", dict(
        temperature=-163.835, humidity=0.0, pressure=500.00, voltage=1.6, tx_power=-40, movement=0),
        seq=0, fmt="ruuvic5")),
    # Ruuvi's data format 6 specification's vectors.
    ("Ruuvi 6 valid", _ruuvi("06170C5668C79E007000C90501D9XXCD004C884F", dict(
        temperature=29.5, humidity=55.3, pressure=1011.02, pm2_5=11.2, co2=201, voc=10, nox=2,
        illuminance=13026.67), seq=205, fmt="ruuvi6")),
    ("Ruuvi 6 maximum", _ruuvi("067FFF9C40FFFE27109C40FAFAFEXXFF074C8F4F", dict(
        temperature=163.835, humidity=100.0, pressure=1155.34, pm2_5=1000.0, co2=40000, voc=500,
        nox=500, illuminance=65535.00), seq=255, fmt="ruuvi6")),
    ("Ruuvi 6 minimum", _ruuvi("0680010000000000000000000000XX00004C884F", dict(
        temperature=-163.835, humidity=0.0, pressure=500.00, pm2_5=0.0, co2=0, voc=0, nox=0,
        illuminance=0.0), seq=0, fmt="ruuvi6")),
    # Ruuvi's data format E1 specification's vectors.
    ("Ruuvi E1 valid", _ruuvi("E1170C5668C79E0065007004BD11CA00C90A0213E0ACXXXXXXDECDEE01XXXXXXXXXXCBB8334C884F", dict(
        temperature=29.5, humidity=55.3, pressure=1011.02, pm1=10.1, pm2_5=11.2, pm4=121.3, pm10=455.4,
        co2=201, voc=20, nox=4, illuminance=13027.00), seq=14601710, fmt="ruuvie1")),
    ("Ruuvi E1 maximum", _ruuvi("E17FFF9C40FFFE27102710271027109C40FAFADC28F0XXXXXXFFFFFE3FXXXXXXXXXXCBB8334C884F", dict(
        temperature=163.835, humidity=100.0, pressure=1155.34, pm1=1000.0, pm2_5=1000.0, pm4=1000.0,
        pm10=1000.0, co2=40000, voc=500, nox=500, illuminance=144284.00), seq=16777214, fmt="ruuvie1")),
    ("Ruuvi E1 minimum", _ruuvi("E1800100000000000000000000000000000000000000XXXXXX0000000XXXXXXXXXXXCBB8334C884F", dict(
        temperature=-163.835, humidity=0.0, pressure=500.00, pm1=0.0, pm2_5=0.0, pm4=0.0, pm10=0.0,
        co2=0, voc=0, nox=0, illuminance=0.0), seq=0, fmt="ruuvie1")),
    # pvvx custom and ATC1441: packets laid out by hand after the firmware READMEs' structures
    # (pvvx: reversed MAC, int16 0.01 °C, uint16 0.01 %, uint16 mV, uint8 %, counter, flags, all
    # little endian; ATC1441: MAC, int16 0.1 °C, uint8 %, uint8 %, uint16 mV, counter, big endian).
    ("pvvx custom", Advert(
        "pvvx", "A4:C1:38:12:34:56",
        FLAGS + service_data(0x181A, bytes.fromhex("56341238C1A4" "C409" "BF13" "A00B" "55" "A8" "05")), None,
        _values({"temperature/temperature": (25.00, "°C"), "humidity/humidity": (50.55, "%RH"),
                 "voltage/voltage": (2.976, "V"), "battery/battery": (85, "%")},
                ids={V.ID_THERMOMETER: 168}))),
    ("pvvx custom, below zero", Advert(
        "pvvx", "A4:C1:38:12:34:56",
        FLAGS + service_data(0x181A, bytes.fromhex("56341238C1A4" "0CFE" "1027" "E40C" "64" "00" "00")), None,
        _values({"temperature/temperature": (-5.00, "°C"), "humidity/humidity": (100.00, "%RH"),
                 "voltage/voltage": (3.300, "V"), "battery/battery": (100, "%")},
                ids={V.ID_THERMOMETER: 0}))),
    ("ATC1441", Advert(
        "atc1441", "A4:C1:38:12:34:56",
        FLAGS + service_data(0x181A, bytes.fromhex("A4C138123456" "00FA" "32" "55" "0BA0" "05")), None,
        _values({"temperature/temperature": (25.0, "°C"), "humidity/humidity": (50, "%RH"),
                 "battery/battery": (85, "%"), "voltage/voltage": (2.976, "V")},
                ids={V.ID_THERMOMETER: 5}))),
    ("ATC1441, below zero", Advert(
        "atc1441", "A4:C1:38:12:34:56",
        FLAGS + service_data(0x181A, bytes.fromhex("A4C138123456" "FF9C" "00" "00" "0000" "FF")), None,
        _values({"temperature/temperature": (-10.0, "°C"), "humidity/humidity": (0, "%RH"),
                 "battery/battery": (0, "%"), "voltage/voltage": (0.0, "V")},
                ids={V.ID_THERMOMETER: 255}))),
]

# bthome.io/format: every example of the object tables, each alone in an advertisement (object
# id's example bytes, the result the table gives). The kind and unit are the vocabulary's.
BTHOME_TABLE_EXAMPLES = [
    ("0161", 97), ("02CA09", 25.06), ("03BF13", 50.55), ("04138A01", 1008.83),
    ("05138A14", 13460.67), ("065E1F", 80.3), ("073E1D", 74.86), ("08CA06", 17.38), ("0960", 96),
    ("0A138A14", 1346.067), ("0B021B00", 69.14), ("0C020C", 3.074), ("0D120C", 3090),
    ("0E021C", 7170), ("12E204", 1250), ("133301", 307), ("14020C", 30.74), ("2E23", 35),
    ("2F23", 35), ("3D0960", 24585), ("3E2A2C0960", 1611213866), ("3F020C", 307.4),
    ("400C00", 12), ("414E00", 7.8), ("424E3400", 13.390), ("434E34", 13.39), ("444E34", 133.90),
    ("451101", 27.3), ("4632", 5.0), ("478756", 2215.1), ("48DC87", 34780), ("49DC87", 34.780),
    ("4A020C", 307.4), ("4B138A14", 1346.067), ("4C41018A01", 25821.505),
    ("4D12138A14", 344593.170), ("4E87562A01", 19551.879), ("4F87562A01", 19551.879),
    ("518756", 22.151), ("528756", 22.151), ("5587562A01", 19551.879), ("56E803", 1000),
    ("57EA", -22), ("58EA", -7.7), ("59EA", -22), ("5AEAEA", -5398), ("5BEA0234EA", -365690134),
    ("5C02FBFFFF", -12.78), ("5D02EA", -5.63), ("5E9F8C", 359.99), ("5FA00F", 400.0),
    ("6001", 1), ("61AC0D", 3500), ("624099DFFF", -2.123456), ("630057D0FF", -3.123456),
    ("6402", 2),
]
# The binary sensor table's examples: object id and byte.
BTHOME_BINARY_EXAMPLES = [
    "0F01", "1001", "1100", "1501", "1601", "1700", "1801", "1900", "1A00", "1B01", "1C01", "1D00",
    "1E01", "1F01", "2001", "2100", "2201", "2301", "2400", "2500", "2601", "2701", "2800", "2901",
    "2A00", "2B00", "2C01", "2D01",
]
# The event table's examples: hex, event device, event type, steps.
BTHOME_EVENT_EXAMPLES = [
    ("3A01", "button", "press", None), ("3A02", "button", "double_press", None),
    ("3A03", "button", "triple_press", None), ("3A04", "button", "long_press", None),
    ("3A05", "button", "long_double_press", None), ("3A06", "button", "long_triple_press", None),
    ("3A80", "button", "hold_press", None), ("3C0103", "dimmer", "rotate_left", 3),
    ("3C020A", "dimmer", "rotate_right", 10), ("3B0000", "command", "off", None),
    ("3B0001", "command", "on", None), ("3B0002", "command", "toggle", None),
    ("3B010305", "command", "step_up", 5), ("3B010405", "command", "step_down", 5),
]


def _table_vectors() -> list[tuple[str, Advert]]:
    out = []
    for hex_object, value in BTHOME_TABLE_EXAMPLES:
        oid = int(hex_object[:2], 16)
        kind, _, _, _, unit = V.BTHOME_SENSORS[oid]
        out.append((f"BTHome table 0x{oid:02X} ({hex_object})",
                    _bthome(hex_object, {f"{kind}/{kind}": (value, unit)}, sources={f"{kind}/{kind}": oid})))
    for hex_object in BTHOME_BINARY_EXAMPLES:
        kind = V.BTHOME_BINARY[int(hex_object[:2], 16)]
        out.append((f"BTHome table 0x{hex_object[:2]} ({hex_object})",
                    _bthome(hex_object, {f"{kind}/{kind}": (hex_object[2:] == "01", "")})))
    for hex_object, device, event, steps in BTHOME_EVENT_EXAMPLES:
        out.append((f"BTHome table 0x{hex_object[:2]} ({hex_object})",
                    _bthome(hex_object, {}, events=[(device, event, steps)])))
    # Device information (0xF0-0xF2) and the settings revision (0x65) are no readings: the
    # packet id after them shows they were sized right.
    out.append(("BTHome device information (0x00 0x65 0xF0 0xF1 0xF2)",
                _bthome("0009 6503 F00100 F100010204 F2000106", {"settings_revision/settings_revision": (3, "")},
                        ids={V.ID_BTHOME: 9})))
    return out


VECTORS += _table_vectors()

# Ruuvi's "invalid" vectors: every field "not available", so no reading is published (format
# 6's sequence has no such value: 255 is a count).
RUUVI_INVALID = [
    ("Ruuvi 5 invalid", _ruuvi("058000FFFFFFFF800080008000FFFFFFFFFFFFFFFFFFFFFF", {})),
    ("Ruuvi C5 invalid", _ruuvi("C58000FFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", {}, fmt="ruuvic5")),
    ("Ruuvi 6 invalid", _ruuvi("068000FFFFFFFFFFFFFFFFFFFFFFXXFFFFFFFFFF", {}, seq=255, fmt="ruuvi6")),
    ("Ruuvi E1 invalid", _ruuvi("E18000FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFXXXXXXFFFFFFFEXXXXXXXXXXFFFFFFFFFFFF", {}, fmt="ruuvie1")),
]

# The encryption example's plain objects and nonce parts, to check the generator's encryption.
BTHOME_ENCRYPTION_EXAMPLE = {
    "key": "231d39c1d7cc1ab1aee224cd096db932", "mac": "5448E68F80A5", "info": 0x41,
    "counter": "00112233", "plain": "02CA0903BF13", "sealed": "A47266C95F730011223378237214",
}
