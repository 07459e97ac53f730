#!/usr/bin/env python3
"""Reference pipeline for the side-by-side benchmark (issue #7).

The same job as collectord -- CC2650 SensorTags over ATT to MQTT -- written the way the Python
peer gateways do it (shared/reference/peer-gateways.md): one thread per tag blocking in a
bluepy-style waitForNotifications() loop, struct.unpack on each payload, the conversion formulas,
a dict per reading, json.dumps, and paho-mqtt's client.publish(topic, payload, qos=1) with the
network loop on its own thread (loop_start()).

Tags are the emulated ones of `collectord emulate --socket-dir DIR`: an AF_UNIX SOCK_SEQPACKET
socket per tag at DIR/<ADDRESS>, one packet per ATT PDU, as an L2CAP ATT socket (CID 4) delivers
them. The GATT client below does what bluepy's Peripheral does over such a socket: MTU exchange,
services by Read By Group Type, characteristics by Read By Type 0x2803, descriptors by Find
Information, reads and write requests; notifications that arrive while a request is pending are
handed to the delegate, as bluepy does.

Topics and payloads match collectord's (its default topic layout, v2, as in
Sources/Publishing/Topics.swift), so one subscriber counts both:
    collectord/tags/<tag>/<sensor>
    {"tag":"t1","address":"B0:B4:48:00:00:01","model":"cc2650","sensor":"barometer",
     "time":"2026-11-22T07:15:47.140Z","seq":0,"fields":{"temperature":{"value":21.29,"unit":"°C"},
     "pressure":{"value":1009.76,"unit":"hPa"}}}

On exit (SIGTERM, SIGINT or --duration) it prints one JSON line to stdout:
    {"published": N, "acked": N, "decode_errors": N, "seconds": S, "per_tag": {"t1": {...}, ...}}

Standard library + paho-mqtt (2.x callback API) only.
"""

import argparse
import json
import math
import os
import signal
import socket
import struct
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

import paho.mqtt.client as mqtt

# --- ATT (Core Spec Vol 3 Part F) -----------------------------------------------------------

ATT_ERROR_RSP = 0x01
ATT_EXCHANGE_MTU_REQ = 0x02
ATT_EXCHANGE_MTU_RSP = 0x03
ATT_FIND_INFO_REQ = 0x04
ATT_FIND_INFO_RSP = 0x05
ATT_READ_BY_TYPE_REQ = 0x08
ATT_READ_BY_TYPE_RSP = 0x09
ATT_READ_REQ = 0x0A
ATT_READ_RSP = 0x0B
ATT_READ_BY_GROUP_REQ = 0x10
ATT_READ_BY_GROUP_RSP = 0x11
ATT_WRITE_REQ = 0x12
ATT_WRITE_RSP = 0x13
ATT_HANDLE_VALUE_NTF = 0x1B
ATT_HANDLE_VALUE_IND = 0x1D
ATT_HANDLE_VALUE_CFM = 0x1E

# Requests a server might send us (they need an answer); responses and commands need none.
ATT_REQUESTS = {0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20}

ATT_ECODE_ATTR_NOT_FOUND = 0x0A
ATT_ECODE_REQ_NOT_SUPP = 0x06

PRIMARY_SERVICE = 0x2800
CHARACTERISTIC = 0x2803
CLIENT_CHARACTERISTIC_CONFIG = 0x2902

CLIENT_MTU = 247
RECV_SIZE = 1024


def sig_uuid(short):
    """A 16-bit Bluetooth SIG alias on the SIG base UUID."""
    return uuid.UUID("0000%04X-0000-1000-8000-00805F9B34FB" % short)


def ti_uuid(short):
    """A 16-bit TI alias on the TI base UUID (sensortag-gatt.md section 1)."""
    return uuid.UUID("F000%04X-0451-4000-B000-000000000000" % short)


def uuid_from_att(raw):
    """A UUID as ATT sends it: 2 or 16 bytes, little-endian."""
    if len(raw) == 2:
        return sig_uuid(struct.unpack("<H", raw)[0])
    if len(raw) == 16:
        return uuid.UUID(bytes=bytes(reversed(raw)))
    raise ValueError("UUID of %d bytes" % len(raw))


class ATTError(Exception):
    def __init__(self, opcode, handle, code):
        super().__init__("ATT error 0x%02X on request 0x%02X, handle 0x%04X" % (code, opcode, handle))
        self.code = code


class Disconnected(Exception):
    pass


class Service:
    def __init__(self, start, end, uuid_):
        self.start, self.end, self.uuid = start, end, uuid_


class Characteristic:
    def __init__(self, decl_handle, properties, value_handle, uuid_):
        self.decl_handle = decl_handle
        self.properties = properties
        self.value_handle = value_handle
        self.uuid = uuid_
        self.cccd = None


class Peripheral:
    """A minimal GATT client over one ATT socket, shaped like bluepy's Peripheral."""

    def __init__(self, path, delegate, timeout=5.0):
        self.delegate = delegate
        self.timeout = timeout
        self.mtu = 23
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock_timeout = timeout
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise

    def disconnect(self):
        self.sock.close()

    # -- transport --

    def _recv(self):
        pdu = self.sock.recv(RECV_SIZE)
        if not pdu:
            raise Disconnected("peer closed the link")
        return pdu

    def _dispatch_unsolicited(self, pdu):
        """Notifications, indications and anything else that is not the awaited response."""
        op = pdu[0]
        if op == ATT_HANDLE_VALUE_NTF or op == ATT_HANDLE_VALUE_IND:
            if op == ATT_HANDLE_VALUE_IND:
                self.sock.send(bytes([ATT_HANDLE_VALUE_CFM]))
            if len(pdu) < 3:
                self.delegate.malformed(pdu)
                return
            handle = struct.unpack_from("<H", pdu, 1)[0]
            self.delegate.handle_notification(handle, pdu[3:])
        elif op in ATT_REQUESTS:
            # A request from the server: this client serves no attributes.
            self.sock.send(struct.pack("<BBHB", ATT_ERROR_RSP, op, 0, ATT_ECODE_REQ_NOT_SUPP))
        else:
            self.delegate.malformed(pdu)

    def _set_timeout(self, timeout):
        if timeout != self._sock_timeout:
            self.sock.settimeout(timeout)
            self._sock_timeout = timeout

    def _request(self, pdu, expected):
        self._set_timeout(self.timeout)
        self.sock.send(pdu)
        deadline = time.monotonic() + self.timeout
        while True:
            if time.monotonic() > deadline:
                raise socket.timeout("no response to ATT request 0x%02X" % pdu[0])
            rsp = self._recv()
            if rsp[0] == expected:
                return rsp
            if rsp[0] == ATT_ERROR_RSP and len(rsp) == 5 and rsp[1] == pdu[0]:
                _, req, handle, code = struct.unpack("<BBHB", rsp)
                raise ATTError(req, handle, code)
            self._dispatch_unsolicited(rsp)

    def wait_for_notifications(self, timeout):
        """Like bluepy's waitForNotifications: True when a PDU was handled, False on timeout."""
        self._set_timeout(timeout)
        try:
            pdu = self._recv()
        except socket.timeout:
            return False
        self._dispatch_unsolicited(pdu)
        return True

    # -- GATT procedures --

    def exchange_mtu(self, mtu=CLIENT_MTU):
        rsp = self._request(struct.pack("<BH", ATT_EXCHANGE_MTU_REQ, mtu), ATT_EXCHANGE_MTU_RSP)
        server = struct.unpack_from("<H", rsp, 1)[0]
        self.mtu = max(23, min(mtu, server))
        return self.mtu

    def _discover(self, opcode, expected, start, end, type_short):
        """Runs a Read By Group Type / Read By Type sweep; yields (handle, entry bytes, length)."""
        while start <= end:
            req = struct.pack("<BHHH", opcode, start, end, type_short)
            try:
                rsp = self._request(req, expected)
            except ATTError as e:
                if e.code == ATT_ECODE_ATTR_NOT_FOUND:
                    return
                raise
            length = rsp[1]
            if length < 2 or (len(rsp) - 2) % length:
                raise ValueError("bad discovery response")
            last = start
            for off in range(2, len(rsp), length):
                entry = rsp[off:off + length]
                yield entry
                last = struct.unpack_from("<H", entry, 0)[0]
                if expected == ATT_READ_BY_GROUP_RSP:
                    last = struct.unpack_from("<H", entry, 2)[0]
            if last >= 0xFFFF or last < start:
                return
            start = last + 1

    def services(self):
        out = []
        for entry in self._discover(ATT_READ_BY_GROUP_REQ, ATT_READ_BY_GROUP_RSP, 1, 0xFFFF, PRIMARY_SERVICE):
            start, end = struct.unpack_from("<HH", entry, 0)
            out.append(Service(start, end, uuid_from_att(entry[4:])))
        return out

    def characteristics(self, service):
        out = []
        for entry in self._discover(ATT_READ_BY_TYPE_REQ, ATT_READ_BY_TYPE_RSP, service.start, service.end,
                                    CHARACTERISTIC):
            decl, props, value_handle = struct.unpack_from("<HBH", entry, 0)
            out.append(Characteristic(decl, props, value_handle, uuid_from_att(entry[5:])))
        return out

    def descriptors(self, start, end):
        """Find Information over [start, end]: list of (handle, uuid)."""
        out = []
        while start <= end:
            try:
                rsp = self._request(struct.pack("<BHH", ATT_FIND_INFO_REQ, start, end), ATT_FIND_INFO_RSP)
            except ATTError as e:
                if e.code == ATT_ECODE_ATTR_NOT_FOUND:
                    break
                raise
            size = 4 if rsp[1] == 1 else 18
            handle = start
            for off in range(2, len(rsp) - size + 1, size):
                handle = struct.unpack_from("<H", rsp, off)[0]
                out.append((handle, uuid_from_att(rsp[off + 2:off + size])))
            if handle >= end or handle < start:
                break
            start = handle + 1
        return out

    def read(self, handle):
        return self._request(struct.pack("<BH", ATT_READ_REQ, handle), ATT_READ_RSP)[1:]

    def write(self, handle, value):
        self._request(struct.pack("<BH", ATT_WRITE_REQ, handle) + bytes(value), ATT_WRITE_RSP)


# --- CC2650 sensors (sensortag-gatt.md section 3) -------------------------------------------

MAG_SCALE = 4912.0 / 32760          # µT per count, the MPU-9250 datasheet figure (bluepy's)
GYRO_SCALE = 500.0 / 65536           # °/s per count, ±250 °/s
ACCEL_RANGE_BITS = 2                 # config bits 8-9: 0=2g 1=4g 2=8g 3=16g; collectord's default 8g
MOVEMENT_ENABLE = 0x007F | ACCEL_RANGE_BITS << 8    # gyro xyz + accel xyz + mag


# Values rounded to the places the sensor resolves, as collectord does by default
# (round_to_resolution, ReadingEncoder.round): 0.01 but for the movement's accelerometer (0.001 g)
# and magnetometer (0.1 µT); half away from zero, never -0.0. --unrounded turns it off.
ROUND = True


def rounded(value, decimals):
    scale = 10.0 ** decimals
    q = value * scale
    r = math.trunc(q)
    if abs(q - r) >= 0.5:
        r += 1 if q > 0 else -1
    r = r / scale
    return r if r != 0 else 0.0


def field(value, unit, decimals=2):
    return {"value": rounded(value, decimals) if ROUND else value, "unit": unit}


def decode_temperature(data, tag):
    obj, amb = struct.unpack("<hh", data)
    return {"object": field((obj >> 2) * 0.03125, "°C"),
            "ambient": field((amb >> 2) * 0.03125, "°C")}


def decode_humidity(data, tag):
    raw_t, raw_h = struct.unpack("<HH", data)
    return {"temperature": field(raw_t / 65536 * 165 - 40, "°C"),
            "humidity": field((raw_h & 0xFFFC) / 65536 * 100, "%RH")}


def decode_barometer(data, tag):
    if len(data) == 6:
        t = int.from_bytes(data[0:3], "little", signed=True)
        p = int.from_bytes(data[3:6], "little")
        return {"temperature": field(t / 100, "°C"), "pressure": field(p / 100, "hPa")}
    # Firmware 0.89: two words of (4-bit exponent, 12-bit mantissa).
    t, p = struct.unpack("<HH", data)
    return {"temperature": field((t & 0x0FFF) * (1 << (t >> 12)) / 100, "°C"),
            "pressure": field((p & 0x0FFF) * (1 << (p >> 12)) / 100, "hPa")}


def decode_light(data, tag):
    raw = struct.unpack("<H", data)[0]
    return {"illuminance": field((raw & 0x0FFF) * 0.01 * (1 << (raw >> 12)), "lux")}


def decode_movement(data, tag):
    gx, gy, gz, ax, ay, az, mx, my, mz = struct.unpack("<9h", data)
    per_g = 32768 / (2 << tag.accel_range)
    return {"gyro_x": field(gx * GYRO_SCALE, "°/s"), "gyro_y": field(gy * GYRO_SCALE, "°/s"),
            "gyro_z": field(gz * GYRO_SCALE, "°/s"),
            "accel_x": field(ax / per_g, "g", 3), "accel_y": field(ay / per_g, "g", 3),
            "accel_z": field(az / per_g, "g", 3),
            "mag_x": field(mx * MAG_SCALE, "µT", 1), "mag_y": field(my * MAG_SCALE, "µT", 1),
            "mag_z": field(mz * MAG_SCALE, "µT", 1)}


def decode_keys(data, tag):
    bits = struct.unpack("<B", data)[0]
    return {"pressed": {"value": [i for i in range(8) if bits >> i & 1]}}


class SensorSpec:
    def __init__(self, name, service, data, config, enable, lengths, decode, zero_is_no_data=True):
        self.name = name
        self.service = service
        self.data = data
        self.config = config
        self.enable = enable
        self.lengths = lengths
        self.decode = decode
        self.zero_is_no_data = zero_is_no_data


SENSORS = [
    SensorSpec("temperature", ti_uuid(0xAA00), ti_uuid(0xAA01), ti_uuid(0xAA02), b"\x01", (4,), decode_temperature),
    SensorSpec("humidity", ti_uuid(0xAA20), ti_uuid(0xAA21), ti_uuid(0xAA22), b"\x01", (4,), decode_humidity),
    SensorSpec("barometer", ti_uuid(0xAA40), ti_uuid(0xAA41), ti_uuid(0xAA42), b"\x01", (6, 4), decode_barometer),
    SensorSpec("movement", ti_uuid(0xAA80), ti_uuid(0xAA81), ti_uuid(0xAA82),
               struct.pack("<H", MOVEMENT_ENABLE), (18,), decode_movement),
    SensorSpec("light", ti_uuid(0xAA70), ti_uuid(0xAA71), ti_uuid(0xAA72), b"\x01", (2,), decode_light),
    SensorSpec("keys", sig_uuid(0xFFE0), sig_uuid(0xFFE1), None, None, (1,), decode_keys, zero_is_no_data=False),
]


# --- one thread per tag ---------------------------------------------------------------------

def utc_now():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Subscription:
    def __init__(self, spec, topic):
        self.spec = spec
        self.topic = topic
        self.seq = 0
        self.awaiting_first = True


class TagWorker(threading.Thread):
    def __init__(self, name, address, socket_dir, client, stop, prefix="collectord"):
        super().__init__(name="tag-" + name, daemon=True)
        self.tag = name
        self.address = address
        self.path = os.path.join(socket_dir, address)
        self.client = client
        self.stop = stop
        self.prefix = prefix
        self.accel_range = ACCEL_RANGE_BITS
        # collectord's topic layout v2 (Topics.reading): <prefix>/tags/<tag>/<sensor>.
        self.subscriptions = {s.name: Subscription(s, "%s/tags/%s/%s" % (prefix, name, s.name)) for s in SENSORS}
        self.by_handle = {}
        self.published = 0
        self.publish_failed = 0
        self.decode_errors = 0
        self.placeholders = 0
        self.connections = 0
        self.last_error = None

    # The delegate interface the Peripheral calls.

    def handle_notification(self, handle, value):
        sub = self.by_handle.get(handle)
        if sub is None:
            return
        spec = sub.spec
        if sub.awaiting_first:
            sub.awaiting_first = False
            # The firmware's all-zero "no measurement yet" value right after enabling.
            if spec.zero_is_no_data and len(value) in spec.lengths and not any(value):
                self.placeholders += 1
                return
        try:
            fields = spec.decode(value, self)
        except (struct.error, ValueError):
            self.decode_errors += 1
            return
        reading = {
            "tag": self.tag,
            "address": self.address,
            "model": "cc2650",
            "sensor": spec.name,
            "time": utc_now(),
            "seq": sub.seq,
            "fields": fields,
        }
        sub.seq += 1
        payload = json.dumps(reading, ensure_ascii=False, separators=(",", ":"))
        info = self.client.publish(sub.topic, payload, qos=1)
        if info.rc == mqtt.MQTT_ERR_SUCCESS:
            self.published += 1
        else:
            self.publish_failed += 1

    def malformed(self, pdu):
        self.decode_errors += 1

    # Connection life.

    def setup(self, p):
        p.exchange_mtu()
        chars = {}
        services = p.services()
        for svc in services:
            found = p.characteristics(svc)
            for i, c in enumerate(found):
                end = found[i + 1].decl_handle - 1 if i + 1 < len(found) else svc.end
                c.end = end
                chars[(svc.uuid, c.uuid)] = c
        self.by_handle = {}
        for sub in self.subscriptions.values():
            spec = sub.spec
            data = chars.get((spec.service, spec.data))
            if data is None:
                log("%s: %s: no data characteristic, skipped" % (self.tag, spec.name))
                continue
            for handle, kind in p.descriptors(data.value_handle + 1, data.end):
                if kind == sig_uuid(CLIENT_CHARACTERISTIC_CONFIG):
                    data.cccd = handle
                    break
            if data.cccd is None:
                log("%s: %s: no CCCD, skipped" % (self.tag, spec.name))
                continue
            if spec.config is not None:
                config = chars[(spec.service, spec.config)]
                p.write(config.value_handle, spec.enable)
                if spec.name == "movement":
                    # Some firmware ignores the range bits: decode with what the tag applied.
                    applied = struct.unpack("<H", p.read(config.value_handle))[0]
                    self.accel_range = applied >> 8 & 3
            sub.awaiting_first = True
            self.by_handle[data.value_handle] = sub
            p.write(data.cccd, b"\x01\x00")

    def run(self):
        while not self.stop.is_set():
            p = None
            try:
                p = Peripheral(self.path, self)
                self.connections += 1
                self.setup(p)
                while not self.stop.is_set():
                    p.wait_for_notifications(1.0)
            except (OSError, Disconnected, ATTError, ValueError, KeyError, struct.error) as e:
                if str(e) != self.last_error:
                    log("%s: %s" % (self.tag, e))
                    self.last_error = str(e)
            finally:
                if p is not None:
                    p.disconnect()
            self.stop.wait(1.0)

    def summary(self):
        return {"address": self.address, "published": self.published, "decode_errors": self.decode_errors,
                "placeholders": self.placeholders, "publish_failed": self.publish_failed,
                "connections": self.connections,
                "seq": {name: sub.seq for name, sub in self.subscriptions.items()}}


# --- main -----------------------------------------------------------------------------------

def log(message):
    print("reference_pipeline: " + message, file=sys.stderr, flush=True)


def addresses(first, n):
    value = int(first.replace(":", ""), 16)
    out = []
    for i in range(n):
        h = "%012X" % (value + i)
        out.append(":".join(h[j:j + 2] for j in range(0, 12, 2)))
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Python reference SensorTag → MQTT pipeline (bluepy/paho style).")
    ap.add_argument("--socket-dir", required=True, help="directory of the emulated tags' sockets")
    ap.add_argument("--tags", type=int, required=True, help="number of tags, at consecutive addresses")
    ap.add_argument("--first-address", default="B0:B4:48:00:00:01", help="address of t1")
    ap.add_argument("--broker", required=True, help="HOST:PORT")
    ap.add_argument("--client-id", default="pyref-%d" % os.getpid())
    ap.add_argument("--duration", type=float, default=None, help="seconds to run (default: until SIGTERM/SIGINT)")
    ap.add_argument("--unrounded", action="store_true",
                    help="publish every digit of the conversion (collectord's round_to_resolution = false)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    global ROUND
    ROUND = not args.unrounded
    host, _, port = args.broker.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    connected = threading.Event()
    acked = [0]

    def on_connect(client, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            log("broker refused: %s" % reason_code)
        else:
            connected.set()

    def on_publish(client, userdata, mid, reason_code, properties):
        acked[0] += 1

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=args.client_id)
    client.on_connect = on_connect
    client.on_publish = on_publish
    client.max_inflight_messages_set(100)   # collectord's default mqtt.max_inflight, for a like-for-like window
    try:
        client.connect(host, int(port or 1883), keepalive=30)
    except OSError as e:
        log("cannot reach %s: %s" % (args.broker, e))
        return 1
    client.loop_start()
    if not connected.wait(10):
        log("no CONNACK from %s" % args.broker)
        client.loop_stop()
        return 1

    started = time.monotonic()
    workers = [TagWorker("t%d" % (i + 1), addr, args.socket_dir, client, stop)
               for i, addr in enumerate(addresses(args.first_address, args.tags))]
    for w in workers:
        w.start()

    deadline = None if args.duration is None else started + args.duration
    while not stop.is_set():
        remaining = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
        if remaining <= 0:
            break
        stop.wait(remaining)
    stop.set()
    elapsed = time.monotonic() - started
    for w in workers:
        w.join(5)

    published = sum(w.published for w in workers)
    drain_until = time.monotonic() + 10
    while acked[0] < published and time.monotonic() < drain_until:
        time.sleep(0.05)
    client.disconnect()
    client.loop_stop()

    print(json.dumps({
        "published": published,
        "acked": acked[0],
        "decode_errors": sum(w.decode_errors for w in workers),
        "seconds": round(elapsed, 3),
        "per_tag": {w.tag: w.summary() for w in workers},
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
