"""Devices that only advertise, to MQTT the way Theengs Gateway does it: the Python peer for
advertisements.py's side by side with collectord.

Per advertisement it does what Theengs Gateway's scanner callback does with what bleak hands it:
a dict with the service data's 16-bit UUID and its bytes in hex, the manufacturer data (company id
and bytes) in hex, the address and the RSSI; `decodeBLE(json.dumps(dict))` from TheengsDecoder
(the gateway's own decoder, a C++ library); the result parsed with `json.loads` and serialised
again with `json.dumps`; paho-mqtt `publish` to `<prefix>/<address without colons>`, with paho's
network loop on its own thread (`loop_start()`). QoS 1, as collectord publishes by default, so that
the broker does the same work for both.

Input: Device Found events of the kernel's management API (BlueZ doc/mgmt-api.txt), one per
datagram on the SOCK_SEQPACKET socket `--fd`, as bluetoothd reads them from the kernel. Between
that and the gateway's callback BlueZ and bleak parse the advertising data into D-Bus properties
and dictionaries; here that is one small parser (the AD structures into the dictionaries bleak
gives), which costs less than D-Bus does. Like BlueZ, which signals a device's ServiceData,
ManufacturerData or RSSI only when one changes, a report identical to the device's previous one
(same data and RSSI: a packet sent again) gives no callback.

Runs until SIGTERM, SIGINT or the end of the input; then waits up to 10 s for the broker to
acknowledge what is in flight and prints one JSON line: reports heard, callbacks, advertisements
decoded, messages published and acknowledged.
"""

import argparse
import json
import signal
import socket
import struct
import sys
import threading
import time

import paho.mqtt.client as mqtt
from TheengsDecoder import decodeBLE


def advertisement(frame):
    """(address, rssi, service_data, manufacturer_data, local_name) of a Device Found (0x0012)
    event, the dictionaries as bleak's AdvertisementData has them; None for anything else."""
    if len(frame) < 20 or frame[0] != 0x12 or frame[1] != 0:
        return None
    address = ":".join("%02X" % b for b in reversed(frame[6:12]))
    rssi = struct.unpack_from("b", frame, 13)[0]
    (length,) = struct.unpack_from("<H", frame, 18)
    data = frame[20:20 + length]
    service_data, manufacturer_data, name = {}, {}, None
    at = 0
    while at < len(data):
        n = data[at]
        if n == 0 or at + 1 + n > len(data):
            break
        kind, body = data[at + 1], data[at + 2:at + 1 + n]
        if kind == 0x16 and len(body) >= 2:
            service_data["0000%04x-0000-1000-8000-00805f9b34fb" % (body[0] | body[1] << 8)] = bytes(body[2:])
        elif kind == 0xFF and len(body) >= 2:
            manufacturer_data[body[0] | body[1] << 8] = bytes(body[2:])
        elif kind in (0x08, 0x09):
            name = body.decode(errors="replace")
        at += 1 + n
    return address, rssi, service_data, manufacturer_data, name


class Gateway:
    def __init__(self, broker, client_id, prefix):
        self.prefix = prefix
        self.lock = threading.Lock()
        self.published = self.acked = self.decoded = self.callbacks = self.heard = 0
        self.last = {}
        host, port = broker.rsplit(":", 1)
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        self.client.max_inflight_messages_set(100)
        self.client.on_publish = self._on_publish
        connected = threading.Event()
        self.client.on_connect = lambda *_: connected.set()
        self.client.connect(host, int(port), keepalive=30)
        self.client.loop_start()
        if not connected.wait(30):
            raise SystemExit("theengs_pipeline: no connection to the broker in 30 s")

    def _on_publish(self, client, userdata, mid, reason, properties):
        with self.lock:
            self.acked += 1

    def report(self, frame):
        """One Device Found, as BlueZ and bleak would pass it on."""
        self.heard += 1
        found = advertisement(frame)
        if found is None:
            return
        address = found[0]
        if self.last.get(address) == frame:
            return
        self.last[address] = frame
        self.callbacks += 1
        self.detection_callback(*found)

    def detection_callback(self, address, rssi, service_data, manufacturer_data, name):
        """What Theengs Gateway's callback does with a device and its advertisement data."""
        data_json = {}
        if service_data:
            uuid = next(iter(service_data))
            data_json["servicedatauuid"] = uuid[4:8]
            data_json["servicedata"] = service_data[uuid].hex()
        if manufacturer_data:
            company = next(iter(manufacturer_data))
            data_json["manufacturerdata"] = struct.pack("<H", company).hex() + manufacturer_data[company].hex()
        if name:
            data_json["name"] = name
        if not data_json:
            return
        data_json["id"] = address
        data_json["rssi"] = rssi
        decoded = decodeBLE(json.dumps(data_json))
        if not decoded:
            return
        self.decoded += 1
        message = json.loads(decoded)
        self.client.publish(self.prefix + "/" + address.replace(":", ""), json.dumps(message), qos=1)
        with self.lock:
            self.published += 1

    def finish(self, limit=10.0):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with self.lock:
                if self.acked >= self.published:
                    break
            time.sleep(0.05)
        self.client.loop_stop()
        self.client.disconnect()
        return {"heard": self.heard, "callbacks": self.callbacks, "decoded": self.decoded,
                "published": self.published, "acked": self.acked}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fd", type=int, required=True, help="a SOCK_SEQPACKET socket carrying Device Found events")
    p.add_argument("--broker", default="127.0.0.1:1883")
    p.add_argument("--client-id", default="theengs")
    p.add_argument("--prefix", default="theengs/BTtoMQTT")
    args = p.parse_args()
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    source = socket.socket(fileno=args.fd)
    source.settimeout(0.2)
    gw = Gateway(args.broker, args.client_id, args.prefix)
    print("ready", file=sys.stderr, flush=True)
    while not stopping:
        try:
            frame = source.recv(1024)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if not frame:
            break
        gw.report(frame)
    print(json.dumps(gw.finish()), flush=True)


if __name__ == "__main__":
    main()
