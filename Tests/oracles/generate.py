"""Deterministic pseudo-random valid advertisements of each built-in format, with what each one
must decode to (worked out here from the formats' specifications, independently of any parser).

Every advertisement is the AD structures as on air, within the 31 bytes of a legacy
advertisement (Ruuvi's E1 needs extended advertising and is longer): a Flags structure, then the
service data (BTHome 0xFCD2, pvvx/ATC 0x181A) or manufacturer data (Ruuvi 0x0499).
Some draws take boundary values instead (each field's minimum and maximum, Ruuvi's "not
available" values) so that the edges are exercised in every run.
"""

from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass

from cryptography.hazmat.primitives.ciphers.aead import AESCCM

import vocabulary as V
from common import Decoded, Value

FLAGS = bytes.fromhex("020106")
LEGACY_MAX = 31
FORMATS = ("bthome", "bthome-encrypted", "ruuvi5", "ruuvic5", "ruuvi6", "ruuvie1", "pvvx", "atc1441")


@dataclass
class Advert:
    fmt: str
    address: str
    data: bytes            # AD structures
    key: bytes | None      # BTHome bindkey
    truth: Decoded

    def line(self) -> str:
        """The line `collectord decode --advert-batch` reads."""
        return f"{self.address} {self.data.hex().upper()}" + (f" {self.key.hex()}" if self.key else "")


def ad(ad_type: int, body: bytes) -> bytes:
    return bytes([len(body) + 1, ad_type]) + body


def service_data(uuid16: int, body: bytes) -> bytes:
    return ad(0x16, struct.pack("<H", uuid16) + body)


def framed(rng: random.Random, structure: bytes) -> bytes:
    """The format's AD structure as a device may send it: mostly after the Flags structure, but
    sometimes without it (a scan response), with a short Complete Local Name before or after it
    where the 31 bytes leave room, or padded with zeros to 31 bytes (a zero length ends the
    data, the Core Specification's "non-significant part")."""
    parts = [structure]
    if rng.random() < 0.85:
        parts.insert(0, FLAGS)
    room = LEGACY_MAX - sum(map(len, parts))
    if rng.random() < 0.2 and room >= 3:
        name = "".join(rng.choice("ABCXYZ-0123") for _ in range(rng.randint(1, min(8, room - 2))))
        parts.insert(rng.randrange(len(parts) + 1), ad(0x09, name.encode()))
    data = b"".join(parts)
    if rng.random() < 0.1 and len(data) < LEGACY_MAX:
        data += bytes(LEGACY_MAX - len(data))
    return data


def address(rng: random.Random, prefix: bytes = b"") -> str:
    raw = prefix + bytes(rng.randrange(256) for _ in range(6 - len(prefix)))
    return ":".join(f"{b:02X}" for b in raw)


def mac_bytes(addr: str) -> bytes:
    return bytes.fromhex(addr.replace(":", ""))


def draw(rng: random.Random, lo: int, hi: int, edges=()) -> int:
    """A value in [lo, hi]; one draw in eight is an edge (lo, hi, or one of `edges`)."""
    if rng.random() < 0.125:
        return rng.choice((lo, hi, *edges))
    return rng.randint(lo, hi)


# --- BTHome v2 ------------------------------------------------------------------------------

# Pairs of objects of one kind and different units that a packet does not carry together: Home
# Assistant's bthome-ble keys its entities by device class alone, so the second overwrites the
# first (a finding, NOTES.md); leaving such pairs out keeps the other 10,000 comparisons clean.
BTHOME_APART = [{0x06, 0x07}, {0x40, 0x41}, {0x47, 0x48}, {0x48, 0x4E}]


def bthome_object(rng: random.Random, oid: int) -> tuple[bytes, callable]:
    """The object's bytes and a function adding its expectation to a Decoded (given the
    occurrence number of its kind)."""
    if oid in V.BTHOME_SENSORS:
        kind, size, signed, factor, unit = V.BTHOME_SENSORS[oid]
        lo, hi = (-(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1) if signed else (0, (1 << (8 * size)) - 1)
        raw = draw(rng, lo, hi, (0,))
        body = raw.to_bytes(size, "little", signed=signed)
        value = raw * factor if factor != 1 else raw
        return bytes([oid]) + body, lambda d, key: d.values.__setitem__(key, Value(value, unit, 0.0))
    if oid in V.BTHOME_BINARY:
        bit = rng.randrange(2)
        return bytes([oid, bit]), lambda d, key: d.values.__setitem__(key, Value(bool(bit), "", 0.0))
    if oid in V.BTHOME_TIMESTAMP:
        kind, size, unit = V.BTHOME_TIMESTAMP[oid]
        raw = draw(rng, 0, 0xFFFFFFFF)
        return bytes([oid]) + raw.to_bytes(4, "little"), lambda d, key: d.values.__setitem__(key, Value(raw, unit, 0.0))
    if oid in V.BTHOME_TEXT:
        text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöü °") for _ in range(rng.randint(1, 5)))
        body = text.encode()
        return bytes([oid, len(body)]) + body, lambda d, key: d.values.__setitem__(key, Value(text, "", 0.0))
    if oid in V.BTHOME_RAW:
        body = bytes(rng.randrange(256) for _ in range(rng.randint(1, 5)))
        return bytes([oid, len(body)]) + body, lambda d, key: d.values.__setitem__(key, Value(body.hex(), "", 0.0))
    if oid == 0x3A:
        code = rng.choice([0x00, *V.BTHOME_BUTTON_EVENTS])
        return bytes([oid, code]), (lambda d, key: d.events.append((key, V.BTHOME_BUTTON_EVENTS[code], None))) if code else (lambda d, key: None)
    if oid == 0x3B:
        # A length byte (low 5 bits: the arguments' length), the opcode, the arguments; step up
        # and step down with one argument byte are that many steps.
        opcode = rng.choice(list(V.BTHOME_COMMAND_EVENTS))
        args = bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 1, 2))))
        steps = args[0] if opcode in (0x03, 0x04) and len(args) == 1 else None
        return (bytes([oid, len(args), opcode]) + args,
                lambda d, key: d.events.append((key, V.BTHOME_COMMAND_EVENTS[opcode], steps)))
    if oid == 0x3C:
        code = rng.choice([0x00, *V.BTHOME_DIMMER_EVENTS])
        steps = rng.randrange(256)
        return bytes([oid, code, steps]), (lambda d, key: d.events.append((key, V.BTHOME_DIMMER_EVENTS[code], steps))) if code else (lambda d, key: None)
    if oid in V.BTHOME_DEVICE_INFO:
        return bytes([oid]) + bytes(rng.randrange(256) for _ in range(V.BTHOME_DEVICE_INFO[oid])), lambda d, key: None
    raise KeyError(oid)


def bthome_kind(oid: int) -> str:
    if oid in V.BTHOME_SENSORS:
        return V.BTHOME_SENSORS[oid][0]
    if oid in V.BTHOME_BINARY:
        return V.BTHOME_BINARY[oid]
    return {0x50: "timestamp", 0x53: "text", 0x54: "raw", 0x3A: "button", 0x3B: "command",
            0x3C: "dimmer"}.get(oid, "")


EVENT_OBJECTS = (0x3A, 0x3B, 0x3C)
ALL_OBJECTS = sorted([*V.BTHOME_SENSORS, *V.BTHOME_BINARY, *V.BTHOME_TIMESTAMP, *V.BTHOME_TEXT,
                      *V.BTHOME_RAW, *EVENT_OBJECTS, *V.BTHOME_DEVICE_INFO])
# Ids the specification does not define: a receiver stops parsing at one (it cannot know its size).
UNDEFINED_OBJECTS = sorted(set(range(256)) - set(ALL_OBJECTS) - {0x00})


def bthome_payload(rng: random.Random, room: int, truth: Decoded) -> bytes:
    """Objects in the specification's order (ascending id), a packet id first; some ids twice or
    three times; at most `room` bytes."""
    payload = b""
    if rng.random() < 0.9:
        pid = draw(rng, 0, 255)
        payload += bytes([0x00, pid])
        truth.ids[V.ID_BTHOME] = pid
    chosen: list[int] = []
    for _ in range(rng.randint(1, 6)):
        oid = rng.choice(ALL_OBJECTS)
        if any(oid in pair and (set(chosen) & (pair - {oid})) for pair in BTHOME_APART):
            continue
        chosen.append(oid)
        if rng.random() < 0.2:
            chosen.extend([oid] * rng.randint(1, 2))
    counts: dict[str, int] = {}
    for oid in sorted(chosen):
        obj, expect = bthome_object(rng, oid)
        if len(payload) + len(obj) > room:
            continue
        payload += obj
        kind = bthome_kind(oid)
        if kind:
            counts[kind] = counts.get(kind, 0) + 1
            n = counts[kind]
            name = kind if n == 1 else f"{kind}_{n}"
            if oid in EVENT_OBJECTS:
                expect(truth, name)
            else:
                expect(truth, f"{kind}/{name}")
                truth.sources[f"{kind}/{name}"] = oid
    # Now and then an object of an id the specification does not define (yet), and whatever
    # bytes follow it: what came before is decoded, nothing after.
    if rng.random() < 0.1 and len(payload) < room:
        unknown = rng.choice(UNDEFINED_OBJECTS)
        payload += bytes([unknown]) + bytes(rng.randrange(256) for _ in range(rng.randint(0, min(3, room - len(payload) - 1))))
        truth.ids[V.ID_UNKNOWN_OBJECT] = unknown
    return payload


def bthome_info(rng: random.Random, encrypted: bool, mac_included: bool) -> int:
    trigger = rng.random() < 0.2
    return (2 << 5) | (0x04 if trigger else 0) | (0x02 if mac_included else 0) | (0x01 if encrypted else 0)


def bthome_plain(rng: random.Random) -> Advert:
    addr = address(rng)
    mac_included = rng.random() < 0.15
    info = bthome_info(rng, False, mac_included)
    head = bytes([info]) + (mac_bytes(addr)[::-1] if mac_included else b"")
    room = LEGACY_MAX - len(FLAGS) - 4 - len(head)
    truth = Decoded()
    payload = bthome_payload(rng, room, truth)
    while truth.empty():   # every advertisement says something (a lone "no event" says nothing)
        truth = Decoded()
        payload = bthome_payload(rng, room, truth)
    return Advert("bthome", addr, framed(rng, service_data(0xFCD2, head + payload)), None, truth)


def bthome_encrypt(key: bytes, mac: bytes, info: int, counter: bytes, plain: bytes) -> bytes:
    """The specification's encryption: AES-CCM, nonce = MAC + UUID (D2 FC) + device info byte +
    counter, no associated data, a 4-byte tag after the counter."""
    nonce = mac + b"\xd2\xfc" + bytes([info]) + counter
    sealed = AESCCM(key, tag_length=4).encrypt(nonce, plain, None)
    return sealed[:-4] + counter + sealed[-4:]


def bthome_encrypted(rng: random.Random) -> Advert:
    addr = address(rng)
    mac_included = rng.random() < 0.15
    info = bthome_info(rng, True, mac_included)
    key = bytes(rng.randrange(256) for _ in range(16))
    counter = draw(rng, 0, 0xFFFFFFFF).to_bytes(4, "little")
    head = bytes([info]) + (mac_bytes(addr)[::-1] if mac_included else b"")
    truth = Decoded()
    room = LEGACY_MAX - len(FLAGS) - 4 - len(head) - 8
    payload = b""
    while len(payload) < 2 or truth.empty():   # the specification's shortest encrypted payload
        truth = Decoded()
        payload = bthome_payload(rng, room, truth)
    truth.ids[V.ID_BTHOME_COUNTER] = int.from_bytes(counter, "little")
    body = head + bthome_encrypt(key, mac_bytes(addr), info, counter, payload)
    return Advert("bthome-encrypted", addr, framed(rng, service_data(0xFCD2, body)), key, truth)


# --- RuuviTag -------------------------------------------------------------------------------

def ruuvi_common(rng: random.Random, truth: Decoded) -> tuple[int, int, int]:
    """Temperature, humidity and pressure as raw values (with their "not available" values),
    recorded in truth."""
    t = draw(rng, -32767, 32767, (-32768,))
    h = draw(rng, 0, 40000, (65535, 65534))
    p = draw(rng, 0, 65534, (65535,))
    put = lambda name, value, q: truth.values.__setitem__(V.RUUVI_FIELDS[name][0], Value(value, V.RUUVI_FIELDS[name][1], q))
    if t != -32768:
        put("temperature", t * 0.005, 0.0)
    if h != 65535:
        put("humidity", h * 0.0025, 0.0)
    if p != 65535:
        put("pressure", (p + 50000) / 100, 0.0)
    return t, h, p


def ruuvi_put(truth: Decoded, name: str, value, quantum: float = 0.0) -> None:
    key, unit = V.RUUVI_FIELDS[name]
    truth.values[key] = Value(value, unit, quantum)


def manufacturer(company: int, body: bytes) -> bytes:
    return ad(0xFF, struct.pack("<H", company) + body)


def ruuvi5(rng: random.Random, cut: bool = False) -> Advert:
    """Format 5 (RAWv2), or with `cut` format C5: format 5 without the acceleration."""
    addr = address(rng)
    truth = Decoded()
    t, h, p = ruuvi_common(rng, truth)
    acc = [] if cut else [draw(rng, -32767, 32767, (-32768,)) for _ in range(3)]
    volt = draw(rng, 0, 2046, (2047,))
    tx = draw(rng, 0, 30, (31,))
    mov = draw(rng, 0, 254, (255,))
    seq = draw(rng, 0, 65534, (65535,))
    # The specification marks each acceleration axis "not available" on its own; milli-g.
    for name, a in zip(("acc_x", "acc_y", "acc_z"), acc):
        if a != -32768:
            ruuvi_put(truth, name, a / 1000)
    if volt != 2047:
        ruuvi_put(truth, "voltage", (volt + 1600) / 1000)
    if tx != 31:
        ruuvi_put(truth, "tx_power", -40 + 2 * tx)
    if mov != 255:
        ruuvi_put(truth, "movement", mov)
    if seq != 65535:
        truth.ids[V.ID_RUUVI] = seq
    if cut:
        body = struct.pack(">BhHHHBH", 0xC5, t, h, p, (volt << 5) | tx, mov, seq) + mac_bytes(addr)
        return Advert("ruuvic5", addr, framed(rng, manufacturer(0x0499, body)), None, truth)
    body = struct.pack(">BhHHhhhHBH", 5, t, h, p, *acc, (volt << 5) | tx, mov, seq) + mac_bytes(addr)
    return Advert("ruuvi5", addr, framed(rng, manufacturer(0x0499, body)), None, truth)


def ruuvi6(rng: random.Random) -> Advert:
    addr = address(rng)
    truth = Decoded()
    t, h, p = ruuvi_common(rng, truth)
    pm25 = draw(rng, 0, 10000, (65535,))
    co2 = draw(rng, 0, 40000, (65535,))
    voc = draw(rng, 0, 500, (511,))
    nox = draw(rng, 0, 500, (511,))
    lumi = draw(rng, 0, 254, (255,))
    seq = rng.randrange(256)
    calibrating = rng.randrange(2)
    reserved_flags = rng.randrange(32)   # flags bits 1-5: reserved, "don't care"
    if pm25 != 65535:
        ruuvi_put(truth, "pm2_5", pm25 / 10)
    if co2 != 65535:
        ruuvi_put(truth, "co2", co2)
    if voc != 511:
        ruuvi_put(truth, "voc", voc)
    if nox != 511:
        ruuvi_put(truth, "nox", nox)
    if lumi != 255:
        # Logarithmic code: lux = exp(code × ln(65536)/254) − 1.
        # The specification lets a decoder round to 0.01 lux.
        ruuvi_put(truth, "illuminance", math.exp(lumi * math.log(65536) / 254) - 1, 0.01)
    truth.ids[V.ID_RUUVI] = seq
    flags = calibrating | (reserved_flags << 1) | ((voc & 1) << 6) | ((nox & 1) << 7)
    # Byte 14 is reserved (0xFF); an earlier revision of the format had the sound level there.
    body = struct.pack(">BhHHHHBBBBBB", 6, t, h, p, pm25, co2, voc >> 1, nox >> 1, lumi, 0xFF, seq, flags) + mac_bytes(addr)[3:]
    return Advert("ruuvi6", addr, framed(rng, manufacturer(0x0499, body)), None, truth)


def ruuvie1(rng: random.Random) -> Advert:
    addr = address(rng)
    truth = Decoded()
    t, h, p = ruuvi_common(rng, truth)
    pms = [draw(rng, 0, 10000, (65535,)) for _ in range(4)]
    co2 = draw(rng, 0, 40000, (65535,))
    voc = draw(rng, 0, 500, (511,))
    nox = draw(rng, 0, 500, (511,))
    lumi = draw(rng, 0, 0xFFFFFE, (0xFFFFFF,))
    seq = draw(rng, 0, 0xFFFFFE, (0xFFFFFF,))
    for name, v in zip(("pm1", "pm2_5", "pm4", "pm10"), pms):
        if v != 65535:
            ruuvi_put(truth, name, v / 10)
    if co2 != 65535:
        ruuvi_put(truth, "co2", co2)
    if voc != 511:
        ruuvi_put(truth, "voc", voc)
    if nox != 511:
        ruuvi_put(truth, "nox", nox)
    if lumi != 0xFFFFFF:
        ruuvi_put(truth, "illuminance", lumi / 100)
    if seq != 0xFFFFFF:
        truth.ids[V.ID_RUUVI] = seq
    flags = rng.randrange(2) | (rng.randrange(32) << 1) | ((voc & 1) << 6) | ((nox & 1) << 7)
    body = (struct.pack(">BhHHHHHHHBB", 0xE1, t, h, p, *pms, co2, voc >> 1, nox >> 1)
            + lumi.to_bytes(3, "big") + b"\xff\xff\xff" + seq.to_bytes(3, "big") + bytes([flags])
            + b"\xff" * 5 + mac_bytes(addr))
    return Advert("ruuvie1", addr, framed(rng, manufacturer(0x0499, body)), None, truth)


# --- pvvx custom and ATC1441 (service data 0x181A) -------------------------------------------

XIAOMI_OUI = bytes.fromhex("A4C138")


def pvvx(rng: random.Random) -> Advert:
    addr = address(rng, XIAOMI_OUI)
    truth = Decoded()
    t = draw(rng, -32768, 32767, (0,))
    h = draw(rng, 0, 10000)
    mv = draw(rng, 0, 65535)
    batt = draw(rng, 0, 100)
    counter = rng.randrange(256)
    flags = rng.randrange(256) & 0x1F
    put = lambda name, value: truth.values.__setitem__(V.THERMOMETER_FIELDS[name][0], Value(value, V.THERMOMETER_FIELDS[name][1], 0.0))
    put("temperature", t / 100)
    put("humidity", h / 100)
    put("voltage", mv / 1000)
    put("battery", batt)
    truth.ids[V.ID_THERMOMETER] = counter
    body = mac_bytes(addr)[::-1] + struct.pack("<hHHBBB", t, h, mv, batt, counter, flags)
    return Advert("pvvx", addr, framed(rng, service_data(0x181A, body)), None, truth)


def atc1441(rng: random.Random) -> Advert:
    addr = address(rng, XIAOMI_OUI)
    truth = Decoded()
    t = draw(rng, -32768, 32767, (0,))
    h = draw(rng, 0, 100)
    batt = draw(rng, 0, 100)
    mv = draw(rng, 0, 65535)
    counter = rng.randrange(256)
    put = lambda name, value: truth.values.__setitem__(V.THERMOMETER_FIELDS[name][0], Value(value, V.THERMOMETER_FIELDS[name][1], 0.0))
    put("temperature", t / 10)
    put("humidity", h)
    put("battery", batt)
    put("voltage", mv / 1000)
    truth.ids[V.ID_THERMOMETER] = counter
    body = mac_bytes(addr) + struct.pack(">hBBHB", t, h, batt, mv, counter)
    return Advert("atc1441", addr, framed(rng, service_data(0x181A, body)), None, truth)


GENERATORS = {
    "bthome": bthome_plain, "bthome-encrypted": bthome_encrypted, "ruuvi5": ruuvi5,
    "ruuvic5": lambda rng: ruuvi5(rng, cut=True),
    "ruuvi6": ruuvi6, "ruuvie1": ruuvie1, "pvvx": pvvx, "atc1441": atc1441,
}


def generate(fmt: str, count: int, seed: int) -> list[Advert]:
    """`count` advertisements of one format; the same seed gives the same ones."""
    rng = random.Random(f"{seed}:{fmt}")
    return [GENERATORS[fmt](rng) for _ in range(count)]


# --- parsing AD structures (for the oracles, which take service and manufacturer data) --------

def ad_structures(data: bytes) -> dict:
    """Service data by 16-bit UUID and manufacturer data by company id."""
    out = {"service": {}, "manufacturer": {}}
    i = 0
    while i < len(data):
        length = data[i]
        if length == 0 or i + 1 + length > len(data):
            break
        kind, body = data[i + 1], data[i + 2:i + 1 + length]
        if kind == 0x16 and len(body) >= 2:
            out["service"][struct.unpack("<H", body[:2])[0]] = body[2:]
        elif kind == 0xFF and len(body) >= 2:
            out["manufacturer"][struct.unpack("<H", body[:2])[0]] = body[2:]
        i += 1 + length
    return out
