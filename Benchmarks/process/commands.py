"""Commands from MQTT, timed (issue #26): how long from a `/set` to the write on the peripheral, and
to the `/result`, with emulated tags in a process of their own (`collectord emulate --socket-dir`,
which logs every write it takes with the wall-clock time) and the daemon reaching them through
their sockets (`run --tag-sockets`), a real mosquitto between the client and the daemon.

The client (paho-mqtt, MQTT 5) sends each command with its correlation data and waits for the
answer carrying it before the next: COMMANDS switches of the first tag's red LED, alternately on and
off, while every tag streams its sensors at their default periods. The times are the client's
clock at the publish, the emulator's at the write, and the client's at the answer's arrival (one
machine, one clock). The VM rig's scenario 53-commands does the same over a kernel LE link.

Run through `scripts/measure commands [--tags N] [--commands N]`.
"""

import argparse
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib as bl  # noqa: E402

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.packettypes import PacketTypes  # noqa: E402
from paho.mqtt.properties import Properties  # noqa: E402

IO_DATA = "F000AA65-0451-4000-B000-000000000000"
WRITE = re.compile(r"took write " + IO_DATA + r" (\S+) at (\d+\.\d+)")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.4999)) - 1))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--out")
    ap.add_argument("--tags", type=int, default=4)
    ap.add_argument("--commands", type=int, default=200)
    ap.add_argument("--nodelay", action="store_true",
                    help="TCP_NODELAY at the broker (set_tcp_nodelay) and the client: no segment held by Nagle's algorithm")
    a = ap.parse_args()

    work = bl.Workdir()
    broker = bl.Broker(work)
    if a.nodelay:
        with open(broker.conf, "a") as f:
            f.write("set_tcp_nodelay true\n")
    broker.start()
    emulators = bl.Emulators(a.binary, work, a.tags)
    emulators.wait_ready()
    first = bl.address(bl.Emulators.FIRST, 0)
    config = bl.daemon_config(work, broker.port, a.tags, extra_tag="commands = true")
    with open(config, "a") as f:  # the default 60 a minute would refuse most of them
        f.write("\n[commands]\nper_minute = 600\n")
    daemon = bl.Daemon(a.binary, work, config, emulators)

    answers = {}
    ready = threading.Event()
    lock = threading.Lock()

    def on_message(client, userdata, message):
        now = time.time()
        props = getattr(message, "properties", None)
        correlation = getattr(props, "CorrelationData", None) if props else None
        if message.topic.endswith("/led1/state"):
            ready.set()
        if correlation is not None:
            with lock:
                answers[bytes(correlation)] = (now, message.payload)

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.on_message = on_message
    client.connect("127.0.0.1", broker.port)
    if a.nodelay:  # the client's own segments not held either: the daemon's share alone
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.subscribe([("collectord/tags/t1/led1/result", 1), ("collectord/tags/t1/led1/state", 1)])
    client.loop_start()
    try:
        if not ready.wait(60):
            raise RuntimeError("the daemon published no led1 state within 60 s; see " + work.file("collectord.log"))

        def writes():
            with open(emulators.proc.log_path, errors="replace") as f:
                f.seek(emulators.log_start)
                return [(m.group(1), float(m.group(2))) for line in f
                        if line.find(first) >= 0 and (m := WRITE.search(line))]

        to_write, to_result, failed = [], [], 0
        for i in range(a.commands):
            on = i % 2 == 0
            expected = "01" if on else "00"
            before = len(writes())
            props = Properties(PacketTypes.PUBLISH)
            props.CorrelationData = f"c{i}".encode()
            sent = time.time()
            client.publish("collectord/tags/t1/led1/set", "ON" if on else "OFF", qos=1, properties=props)
            if not bl.wait_for(lambda: props.CorrelationData in answers, 30, step=0.001):
                raise RuntimeError(f"command {i}: no answer within 30 s")
            got, payload = answers[props.CorrelationData]
            if b'"ok":true' not in payload:
                print(f"command {i}: {payload.decode(errors='replace')}", file=sys.stderr)
                failed += 1
                continue
            if not bl.wait_for(lambda: len(writes()) > before, 10, step=0.001):
                raise RuntimeError(f"command {i}: answered but not written")
            data, at = writes()[before]
            if data != expected:
                raise RuntimeError(f"command {i}: wrote {data}, expected {expected}")
            to_write.append((at - sent) * 1000)
            to_result.append((got - sent) * 1000)
    finally:
        client.loop_stop()
        client.disconnect()
        daemon.proc.stop()
        emulators.stop()
        broker.stop()

    if not to_write:
        raise RuntimeError(f"every one of the {a.commands} commands failed")
    result = {
        "what": "commands: /set to the write on the emulated peripheral and to the /result",
        "machine": bl.machine(),
        "tags": a.tags,
        "commands": a.commands,
        "broker_tcp_nodelay": a.nodelay,
        "failed": failed,
        "set_to_write_ms": {"median": round(percentile(to_write, 50), 2), "p99": round(percentile(to_write, 99), 2),
                            "max": round(max(to_write), 2)},
        "set_to_result_ms": {"median": round(percentile(to_result, 50), 2), "p99": round(percentile(to_result, 99), 2),
                             "max": round(max(to_result), 2)},
    }
    print(f"commands: {a.commands} on {a.tags} tags: /set to write median {result['set_to_write_ms']['median']} ms, "
          f"p99 {result['set_to_write_ms']['p99']} ms; /set to /result median {result['set_to_result_ms']['median']} ms, "
          f"p99 {result['set_to_result_ms']['p99']} ms", file=sys.stderr)
    bl.emit(result, a.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
