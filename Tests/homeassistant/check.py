"""Home Assistant's side of scripts/ha-check (Tests/homeassistant/run), run with Home Assistant's
own Python (its venv has aiohttp). One phase per call, so that the shell script can act on the
daemon and the emulated tags in between:

  check.py setup URL BROKER_PORT STATE_DIR        onboard, keep a token, add the MQTT integration
  check.py devices URL STATE_DIR TAG=MODEL:ADDRESS...   every tag one device, its entities as expected
  check.py availability URL STATE_DIR TAG STATE   every enabled entity of TAG's device has STATE
  check.py removed URL STATE_DIR TAG              TAG's device and entities are gone

Each phase waits (up to --timeout seconds, 120 by default) for what it checks, prints "ok ..."
or "NOT ..." lines, and exits non-zero when something is NOT so.
"""
import asyncio
import json
import os
import sys
import time

import aiohttp

TIMEOUT = float(os.environ.get("HA_CHECK_TIMEOUT", "120"))
CLIENT_ID = "http://127.0.0.1/"


async def setup(url, broker_port, state_dir):
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{url}/api/onboarding/users", json={
                "client_id": CLIENT_ID, "name": "ha-check", "username": "ha-check",
                "password": "ha-check-password", "language": "en"}) as r:
            if r.status != 200:
                sys.exit(f"NOT onboarding: {r.status} {await r.text()}")
            code = (await r.json())["auth_code"]
        async with s.post(f"{url}/auth/token", data={
                "grant_type": "authorization_code", "code": code, "client_id": CLIENT_ID}) as r:
            token = (await r.json())["access_token"]
        with open(os.path.join(state_dir, "token"), "w") as f:
            f.write(token)
        h = {"Authorization": f"Bearer {token}"}
        for step, body in (("core_config", {}), ("analytics", {})):
            async with s.post(f"{url}/api/onboarding/{step}", json=body, headers=h) as r:
                pass
        async with s.post(f"{url}/api/config/config_entries/flow", json={"handler": "mqtt"}, headers=h) as r:
            flow = await r.json()
        for _ in range(4):
            if flow.get("type") == "create_entry":
                break
            if flow.get("type") == "menu":
                body = {"next_step_id": "broker"}
            else:
                body = {"broker": "127.0.0.1", "port": int(broker_port)}
            async with s.post(f"{url}/api/config/config_entries/flow/{flow['flow_id']}", json=body, headers=h) as r:
                flow = await r.json()
        if flow.get("type") != "create_entry":
            sys.exit(f"NOT the MQTT integration was not added: {flow}")
        async with s.get(f"{url}/api/config", headers=h) as r:
            version = (await r.json())["version"]
        print(f"ok   Home Assistant {version} onboarded; MQTT integration on 127.0.0.1:{broker_port}")


class HA:
    def __init__(self, url, state_dir):
        self.url = url
        self.token = open(os.path.join(state_dir, "token")).read().strip()
        self.h = {"Authorization": f"Bearer {self.token}"}

    async def __aenter__(self):
        self.s = aiohttp.ClientSession()
        self.ws = await self.s.ws_connect(self.url.replace("http", "ws", 1) + "/api/websocket")
        await self.ws.receive_json()
        await self.ws.send_json({"type": "auth", "access_token": self.token})
        m = await self.ws.receive_json()
        if m.get("type") != "auth_ok":
            sys.exit(f"NOT websocket auth: {m}")
        self.n = 0
        return self

    async def __aexit__(self, *a):
        await self.ws.close()
        await self.s.close()

    async def call(self, type_, **kw):
        self.n += 1
        await self.ws.send_json({"id": self.n, "type": type_, **kw})
        while True:
            m = await self.ws.receive_json()
            if m.get("id") == self.n:
                if not m.get("success"):
                    raise RuntimeError(f"{type_}: {m}")
                return m["result"]

    async def states(self):
        async with self.s.get(f"{self.url}/api/states", headers=self.h) as r:
            return {x["entity_id"]: x for x in await r.json()}

    async def snapshot(self):
        """Devices made by the MQTT integration, each with its entities (full registry entries)
        and their states."""
        devices = [d for d in await self.call("config/device_registry/list")
                   if any(i[0] == "mqtt" for i in d["identifiers"])]
        entries = await self.call("config/entity_registry/list")
        ids = [e["entity_id"] for e in entries if e["platform"] == "mqtt"]
        full = await self.call("config/entity_registry/get_entries", entity_ids=ids) if ids else {}
        states = await self.states()
        out = {}
        for d in devices:
            ents = [full[i] for i in ids if full.get(i) and full[i]["device_id"] == d["id"]]
            out[d["id"]] = (d, [(e, states.get(e["entity_id"])) for e in ents])
        return out


async def wait(what, probe):
    """probe() -> (done, report lines); retried until done or the timeout."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        done, lines = await probe()
        if done or time.monotonic() > deadline:
            return done, lines
        await asyncio.sleep(1)


def device_tag(d):
    return d.get("name_by_user") or d.get("name")


def is_number(text):
    try:
        float(text)
        return True
    except (TypeError, ValueError):
        return False


def sensor(unit, device_class=None, precision=2, enabled=True, category=None):
    return {"unit": unit, "device_class": device_class, "precision": precision, "enabled": enabled,
            "entity_category": category, "numeric": True}


def axes(prefix, names, unit, precision):
    return {f"{prefix}_{n}": sensor(unit, precision=precision, enabled=False) for n in names}


KEY = {"device_class": None, "enabled": True, "entity_category": None, "state": "off"}
# The link's signal strength (from the stats topic): a diagnostic, disabled until the user enables it.
LINK = sensor("dBm", "signal_strength", precision=0, enabled=False, category="diagnostic")

# What each model's tag is expected to become in Home Assistant with every streaming sensor on
# (collectord's defaults): object id -> expectations.
EXPECTED = {
    "cc2650": {
        "temperature_object": sensor("°C", "temperature"), "temperature_ambient": sensor("°C", "temperature"),
        "humidity_temperature": sensor("°C", "temperature"), "humidity_humidity": sensor("%", "humidity"),
        "barometer_temperature": sensor("°C", "temperature"), "barometer_pressure": sensor("hPa", "pressure"),
        **axes("movement", ["gyro_x", "gyro_y", "gyro_z"], "°/s", 2),
        **axes("movement", ["accel_x", "accel_y", "accel_z"], "g", 3),
        **axes("movement", ["mag_x", "mag_y", "mag_z"], "µT", 1),
        "light_illuminance": sensor("lx", "illuminance"),
        "keys_pressed_0": KEY, "keys_pressed_1": KEY, "keys_pressed_2": KEY,
        "battery_level": sensor("%", "battery", precision=0, category="diagnostic"),
        "signal_strength": LINK,
    },
    "cc2541": {
        "temperature_object": sensor("°C", "temperature"), "temperature_ambient": sensor("°C", "temperature"),
        **axes("accelerometer", "xyz", "g", 2),
        "humidity_temperature": sensor("°C", "temperature"), "humidity_humidity": sensor("%", "humidity"),
        **axes("magnetometer", "xyz", "µT", 2),
        "barometer_temperature": sensor("°C", "temperature"), "barometer_pressure": sensor("hPa", "pressure"),
        **axes("gyroscope", "xyz", "°/s", 2),
        "keys_pressed_0": KEY, "keys_pressed_1": KEY, "keys_pressed_2": KEY,
        "signal_strength": LINK,
    },
}
for table in EXPECTED.values():
    for w in table.values():
        if "state" in w:
            w.pop("numeric", None)


async def devices(url, state_dir, *specs):
    expect = {}
    for spec in specs:
        tag, rest = spec.split("=", 1)
        model, address = rest.split(":", 1)
        node = "sensortag_" + address.lower().replace(":", "")
        expect[tag] = {"model": model, "entities": {f"collectord_{node}_{o}": w for o, w in EXPECTED[model].items()}}
    async with HA(url, state_dir) as ha:
        async def probe():
            snap = await ha.snapshot()
            by_name = {device_tag(d): (d, ents) for d, ents in snap.values()}
            problems, lines = [], []
            for tag, want in expect.items():
                if tag not in by_name:
                    problems.append(f"NOT  device {tag}: not in the device registry")
                    continue
                d, ents = by_name[tag]
                by_id = {e["unique_id"]: (e, st) for e, st in ents}
                if sorted(by_id) != sorted(want["entities"]):
                    problems.append(f"NOT  {tag}: entities {sorted(set(by_id) ^ set(want['entities']))} differ")
                    continue
                if d.get("model") != {"cc2650": "CC2650 SensorTag", "cc2541": "CC2541 SensorTag"}[want["model"]]:
                    problems.append(f"NOT  {tag}: model {d.get('model')!r}")
                if not d.get("sw_version"):
                    problems.append(f"NOT  {tag}: no firmware version in the device registry")
                for uid, w in want["entities"].items():
                    e, st = by_id[uid]
                    enabled = e["disabled_by"] is None
                    got = {
                        "enabled": enabled,
                        "device_class": e.get("original_device_class"),
                        "entity_category": e.get("entity_category"),
                        "unit": (st or {}).get("attributes", {}).get("unit_of_measurement") if enabled else w.get("unit"),
                        "precision": ((e.get("options") or {}).get("sensor") or {}).get("suggested_display_precision"),
                    }
                    for k, v in w.items():
                        # Home Assistant keeps a display precision in the registry only for
                        # entities it has added: not for disabled ones (the unit tests check
                        # their configs).
                        if k == "precision" and not enabled:
                            continue
                        if k in got and got[k] != v:
                            problems.append(f"NOT  {tag} {e['entity_id']}: {k} {got[k]!r}, expected {v!r}")
                    if enabled:
                        state = (st or {}).get("state")
                        if state in (None, "unknown", "unavailable"):
                            problems.append(f"NOT  {tag} {e['entity_id']}: state {state!r}")
                        elif w.get("numeric") and not is_number(state):
                            problems.append(f"NOT  {tag} {e['entity_id']}: state {state!r} is not a number")
                        elif "state" in w and state != w["state"]:
                            problems.append(f"NOT  {tag} {e['entity_id']}: state {state!r}, expected {w['state']!r}")
                lines.append((tag, d, ents))
            return not problems and len(lines) == len(expect), (problems, lines)

        ok, (problems, found) = await wait("devices", probe)
        for tag, d, ents in found:
            print(f"device {tag!r}: {d['manufacturer']} {d['model']}, firmware {d.get('sw_version')}, "
                  f"{len(ents)} entities")
            for e, st in sorted(ents, key=lambda x: x[0]["entity_id"]):
                enabled = "enabled " if e["disabled_by"] is None else "disabled"
                prec = ((e.get("options") or {}).get("sensor") or {}).get("suggested_display_precision")
                state = (st or {}).get("state", "-")
                unit = (st or {}).get("attributes", {}).get("unit_of_measurement") or ""
                print(f"  {e['entity_id']:<52} {enabled} {str(e.get('original_device_class') or '-'):<12} "
                      f"{str(e.get('entity_category') or '-'):<11} precision {prec if prec is not None else '-'} "
                      f" {state} {unit}")
        for p in problems:
            print(p)
        print(("ok   " if ok else "NOT  ") + f"{len(expect)} devices as expected")
        return 0 if ok else 1


async def availability(url, state_dir, tag, want):
    async with HA(url, state_dir) as ha:
        async def probe():
            snap = await ha.snapshot()
            for d, ents in snap.values():
                if device_tag(d) == tag:
                    states = [st.get("state") if st else None for e, st in ents if e["disabled_by"] is None]
                    if want == "unavailable":
                        done = states and all(s == "unavailable" for s in states)
                    else:
                        done = states and all(s not in (None, "unavailable") for s in states)
                    return done, states
            return False, None
        t = time.monotonic()
        ok, states = await wait("availability", probe)
        print(("ok   " if ok else "NOT  ") + f"{tag}: every enabled entity {want} after {time.monotonic() - t:.1f} s"
              + ("" if ok else f" (states {states})"))
        return 0 if ok else 1


async def removed(url, state_dir, tag):
    async with HA(url, state_dir) as ha:
        async def probe():
            snap = await ha.snapshot()
            left = [len(ents) for d, ents in snap.values() if device_tag(d) == tag]
            return not left, left
        ok, left = await wait("removal", probe)
        print(("ok   " if ok else "NOT  ") + f"{tag}: device and entities removed" + ("" if ok else f" ({left} left)"))
        return 0 if ok else 1


def main(argv):
    cmd = argv[1]
    if cmd == "setup":
        asyncio.run(setup(*argv[2:5]))
        return 0
    if cmd == "devices":
        return asyncio.run(devices(*argv[2:]))
    if cmd == "availability":
        return asyncio.run(availability(*argv[2:6]))
    if cmd == "removed":
        return asyncio.run(removed(*argv[2:5]))
    sys.exit(f"unknown phase {cmd}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
