#!/usr/bin/env python3
"""Checks what an installed collectord prints and publishes, for packaging/qa/test-deb
(scripts/test-deb).

The binary under test may be of another architecture and only run inside its Debian root, so
this script never runs it: it writes the commands to run there, then reads what they printed.

  check-output.py decode-script VECTORS > decode.sh      one `collectord decode` per vector
  check-output.py decode-check VECTORS OUTPUT            compares decode.sh's output with VECTORS
  check-output.py readings FILE TAG=MODEL...             checks `mosquitto_sub -v` lines: every
                                                         streaming sensor of each tag published,
                                                         every value where the emulated room is
"""
import json
import shlex
import sys

MARK = "=== collectord decode status "


def vectors(path):
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 5:
            sys.exit(f"{path}:{number}: expected 5 fields separated by |, got {len(parts)}")
        model, sensor, hexbytes, options, expected = parts
        fields = []
        for item in expected.split():
            name, value = item.split("=", 1)
            fields.append((name, value))
        yield number, model, sensor, hexbytes, options, fields


def decode_script(path):
    print("#!/bin/sh")
    for number, model, sensor, hexbytes, options, _ in vectors(path):
        args = ["collectord", "decode", "--model", model, "--sensor", sensor, "--hex", hexbytes]
        args += shlex.split(options)
        print(f"echo '{MARK}start {number}'")
        print(" ".join(shlex.quote(a) for a in args) + " 2>&1")
        print(f"echo '{MARK}'$?")


def close_enough(actual, expected_text):
    """Half a unit of the expected value's last printed digit; a bit set ([0,2]) exactly."""
    if expected_text.startswith("["):
        return actual == json.loads(expected_text)
    if isinstance(actual, list) or isinstance(actual, bool) or not isinstance(actual, (int, float)):
        return False
    decimals = len(expected_text.split(".", 1)[1]) if "." in expected_text else 0
    return abs(actual - float(expected_text)) <= 0.5 * 10 ** -decimals + 1e-12


def decode_check(path, output):
    text = open(output, encoding="utf-8").read()
    chunks = {}
    for block in text.split(MARK + "start ")[1:]:
        number, rest = block.split("\n", 1)
        body, _, status = rest.rpartition(MARK)
        chunks[int(number)] = (body, status.strip())
    failures = 0
    count = 0
    for number, model, sensor, hexbytes, options, fields in vectors(path):
        count += 1
        where = f"{path}:{number} {model} {sensor} {hexbytes} {options}".rstrip()
        if number not in chunks:
            print(f"NOT  {where}: no output"); failures += 1; continue
        body, status = chunks[number]
        if status != "0":
            print(f"NOT  {where}: exit status {status}: {body.strip()}"); failures += 1; continue
        try:
            reading = json.loads(body)
        except ValueError as e:
            print(f"NOT  {where}: not JSON ({e}): {body.strip()[:200]}"); failures += 1; continue
        got = reading.get("fields", {})
        wrong = []
        # The payload's model and sensor, and the bytes decoded, as `raw` ("80 00 FF").
        expected_raw = " ".join(hexbytes.replace("0x", "").replace(":", " ").upper().split())
        for key, value in (("model", model), ("sensor", sensor), ("raw", expected_raw)):
            if reading.get(key) != value:
                wrong.append(f"{key}={reading.get(key)!r} (expected {value!r})")
        for name, value in fields:
            field = got.get(name)
            actual = field.get("value") if isinstance(field, dict) else None
            if not close_enough(actual, value):
                wrong.append(f"{name}={actual!r} (expected {value})")
        if wrong:
            print(f"NOT  {where}: " + ", ".join(wrong)); failures += 1
    print(f"{count - failures} of {count} vectors decoded to the expected values")
    return 1 if failures or count == 0 else 0


# Where the emulator's room is (Sources/SensorTagEmulator/Physics.swift: ambient 22.5 ± 1.2 °C,
# object ambient + 1 ± 0.6, 47.5 ± 5 %RH, 1010 ± 6 hPa, 350 ± 120 lux, 1 g on z, ±0.6 °/s,
# field (20, -5, -40) ± (2, 2, 1) µT, each with a little noise), widened by each sensor's
# resolution (a CC2541 accelerometer count is 1/16 g at 8 g).
ROOM = {
    "temperature": {"ambient": (21.0, 24.0), "object": (21.0, 25.7)},
    "humidity": {"temperature": (20.7, 23.9), "humidity": (41.0, 54.0)},
    "barometer": {"temperature": (20.0, 25.0), "pressure": (1003.0, 1017.0)},
    "light": {"illuminance": (220.0, 480.0)},
    "movement": {"accel_x": (-0.1, 0.1), "accel_y": (-0.1, 0.1), "accel_z": (0.9, 1.1),
                 "gyro_x": (-1.0, 1.0), "gyro_y": (-1.0, 1.0), "gyro_z": (-1.0, 1.0),
                 "mag_x": (17.0, 23.0), "mag_y": (-8.0, -2.0), "mag_z": (-42.0, -38.0)},
    "accelerometer": {"x": (-0.13, 0.13), "y": (-0.13, 0.13), "z": (0.87, 1.13)},
    "gyroscope": {"x": (-1.0, 1.0), "y": (-1.0, 1.0), "z": (-1.0, 1.0)},
    "magnetometer": {"x": (17.0, 23.0), "y": (-8.0, -2.0), "z": (-42.0, -38.0)},
}
STREAMING = {
    "cc2650": ["temperature", "humidity", "barometer", "movement", "light"],
    "cc1350": ["temperature", "humidity", "barometer", "movement", "light"],
    "cc2541": ["temperature", "humidity", "barometer", "accelerometer", "gyroscope", "magnetometer"],
}


def readings(path, tags):
    seen = {}
    failures = 0
    checked = 0
    for line in open(path, encoding="utf-8", errors="replace"):
        topic, _, payload = line.rstrip("\n").partition(" ")
        level = topic.split("/")
        # collectord/tags/<tag>/<sensor> (topic layout v2)
        if len(level) != 4 or level[1] != "tags" or level[2] not in tags or level[3] not in ROOM:
            continue
        tag, sensor = level[2], level[3]
        try:
            reading = json.loads(payload)
        except ValueError:
            print(f"NOT  {topic}: not JSON: {payload[:120]}"); failures += 1; continue
        if reading.get("tag") != tag or reading.get("sensor") != sensor or reading.get("model") != tags[tag]:
            print(f"NOT  {topic}: tag/sensor/model {reading.get('tag')}/{reading.get('sensor')}/{reading.get('model')}")
            failures += 1
        fields = reading.get("fields", {})
        for name, (low, high) in ROOM[sensor].items():
            value = fields.get(name, {}).get("value")
            checked += 1
            if not isinstance(value, (int, float)) or not low <= value <= high:
                print(f"NOT  {topic}: {name} = {value!r}, the emulated room gives {low} to {high}")
                failures += 1
        seen.setdefault((tag, sensor), []).append(reading.get("seq"))
    for tag, model in tags.items():
        for sensor in STREAMING[model]:
            seqs = seen.get((tag, sensor), [])
            if not seqs:
                print(f"NOT  {tag}/{sensor}: no reading"); failures += 1
            else:
                print(f"ok   {tag}/{sensor}: {len(seqs)} readings, seq {seqs[0]}..{seqs[-1]}")
    print(f"{checked} values checked against the emulated room, {failures} problems")
    return 1 if failures or checked == 0 else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "decode-script":
        decode_script(argv[2]); return 0
    if len(argv) == 4 and argv[1] == "decode-check":
        return decode_check(argv[2], argv[3])
    if len(argv) >= 4 and argv[1] == "readings":
        return readings(argv[2], dict(a.split("=", 1) for a in argv[3:]))
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
