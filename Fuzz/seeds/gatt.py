#!/usr/bin/env python3
"""Writes the gatt target's seeds (Fuzz/seeds/gatt/*): whole connections a fuzzer would take long
to find, from which it mutates. See GATTFuzz.swift for how a script is read:
device (2 bytes), tag (pinned model, sensor mask, 2 bytes a sensor, flood limit), backoff (3),
monitor (1), timeouts (3), then the first connection's outcome and the peer's actions."""
import os

SENSORS = ["temperature", "accelerometer", "humidity", "magnetometer", "barometer", "gyroscope",
           "movement", "light", "keys", "battery", "io", "test"]

def header(model, sensors, hostile=None, no_services=False, mtu_index=0):
    b0 = model | (0x70 if no_services else 0)
    # A byte of 0xE0 or more picks hostile strings, kind (byte % 6) in HostileString's order.
    b1 = (0xE0 + (hostile - 0xE0) % 6) if hostile is not None else mtu_index
    mask = sum(1 << SENSORS.index(s) for s in sensors)
    out = [b0, b1, 0, mask & 0xFF, mask >> 8]
    out += [0, 0] * len(sensors)  # default period, range byte 0
    out += [0]           # flood limit 2
    out += [0, 1, 3]     # backoff 10 ms, cap 8 s, 5 attempts
    out += [0]           # with an advertisement monitor
    out += [0, 0, 0]     # request 5 s, setup 30 s, connect 10 s
    out += [0]           # the first connection succeeds at once
    return out

# The data lengths of the sensors a seed subscribes, in the order of the model's profiles.
CC2650 = {"temperature": 4, "humidity": 4, "barometer": 6, "movement": 18, "light": 2, "keys": 1, "battery": 1}
CC2541 = {"temperature": 4, "accelerometer": 3, "humidity": 4, "magnetometer": 6, "barometer": 4, "gyroscope": 6, "keys": 1}

def streaming(rounds, lengths):
    out = [4, 255, 4, 255]             # answer the next 512 requests validly: the whole setup
    for i in range(rounds):
        out += [14]                    # every subscribed sensor notifies a value of its length
        for n in lengths:
            out += [0] + [(i * 37 + k * 11 + 5) & 0xFF for k in range(n)]
        out += [9, 4]                  # one second passes
    return out

def lengths(table, sensors):
    return [n for s, n in table.items() if s in sensors]

all2650 = ["temperature", "humidity", "barometer", "movement", "light", "keys", "battery"]
all2541 = ["temperature", "accelerometer", "humidity", "magnetometer", "barometer", "gyroscope", "keys"]
legacy = ["humidity", "barometer", "gyroscope"]
seeds = {
    "cc2650-streams": header(2, all2650) + streaming(6, lengths(CC2650, all2650)),
    "cc2541-streams": header(0, all2541) + streaming(6, lengths(CC2541, all2541)),
    # Streams, the link drops, the next connection succeeds and uses the handle cache.
    "cc2541-legacy-reconnects": header(1, legacy) + streaming(3, lengths(CC2541, legacy)) + [11, 0]
        + streaming(3, lengths(CC2541, legacy)),
    "cc1350-small-mtu": header(3, ["humidity", "battery"], mtu_index=1) + streaming(4, [4, 1]),
    # Set up fails (no sensor), the backoff passes, the next attempt succeeds and fails the same way.
    "no-sensor-services": header(2, ["humidity", "movement"], no_services=True) + streaming(0, []) + [9, 4, 0]
        + streaming(0, []),
    "hostile-long-strings": header(2, ["humidity"], hostile=2) + streaming(3, [4]),
    "hostile-invalid-utf8": header(0, ["humidity"], hostile=3) + streaming(3, [4]),
}

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gatt")
os.makedirs(here, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(bytes(data))
