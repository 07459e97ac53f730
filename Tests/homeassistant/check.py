"""Home Assistant's side of scripts/ha-check (Tests/homeassistant/run), run with Home Assistant's
own Python (its venv has aiohttp). One phase per call, so that the shell script can act on the
daemons and the emulated devices in between:

  check.py setup URL BROKER_PORT STATE_DIR      onboard, keep a token, add the MQTT integration
  check.py devices URL STATE_DIR SPEC...        every tag one device, its entities as expected
  check.py events URL STATE_DIR SPEC...         binary sensors seen on and off, events fired
  check.py signal URL STATE_DIR SPEC...         signal strength enabled, its dBm arrive
  check.py availability URL STATE_DIR STATE TAG...   every enabled entity of each TAG's device has STATE
  check.py removed URL STATE_DIR TAG...         each TAG's device and entities are gone
  check.py commands URL STATE_DIR TAG LOG       a CC2650's LED and period set from Home Assistant
  check.py settings URL STATE_DIR TAG LOG       a declared thermostat's band members and setpoint
  check.py reset URL STATE_DIR TAG LOG          a heart-rate strap's energy reset button pressed

SPEC is TAG=KIND:ADDRESS, KIND one of DEVICES (cc2650, cc2541, bthome, bthome_encrypted, ruuvi,
pvvx, thermostat, heart_rate_strap): what the emulated device of that kind is expected to become.
LOG is the emulator's log, where each write a command made shows.
Each phase waits (up to HA_CHECK_TIMEOUT seconds, 120 by default) for what it checks, prints
"ok ..." or "NOT ..." lines, and exits non-zero when something is NOT so.
"""
import asyncio
import json
import os
import re
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


def sensor(unit, device_class=None, precision=2, enabled=True, category=None, state_class="measurement",
           within=None):
    """A numeric `sensor`; `within` the (low, high) its state must lie in, when that is known."""
    return {"kind": "sensor", "unit": unit, "device_class": device_class, "precision": precision,
            "enabled": enabled, "entity_category": category, "state_class": state_class, "within": within}


def binary(device_class=None, state=None):
    """A `binary_sensor`, on or off; `state` the one it must have when it is not expected to change
    during the check (a key nobody presses)."""
    return {"kind": "binary_sensor", "device_class": device_class, "enabled": True, "entity_category": None,
            "state": state}


def event(device_class, event_type):
    """An `event` entity: `unknown` until its first event, which the events phase waits for."""
    return {"kind": "event", "device_class": device_class, "enabled": True, "entity_category": None,
            "event_type": event_type}


def control(kind, category=None, unit=None, state=None):
    """A command target's entity (`switch`, `number`, `select`): its state is the device's, read
    back; `state` the one it must have before the commands phase changes it. A `button` has no
    state but the time it was last pressed (`unknown` before)."""
    return {"kind": kind, "enabled": True, "entity_category": category, "unit": unit, "state": state}


def axes(prefix, names, unit, precision, enabled=False, within=None):
    return {f"{prefix}_{n}": sensor(unit, precision=precision, enabled=enabled, within=within) for n in names}


def device(model, manufacturer, firmware, entities):
    """What one device is expected to be: the model and maker Home Assistant shows, whether it
    reports a firmware version (a SensorTag says its own; an advertiser says none), and its
    entities by object id."""
    return {"model": model, "manufacturer": manufacturer, "firmware": firmware, "entities": entities}


# Plausible for the room every emulated device measures (SensorTagEmulator's `Environment`: 21 to
# 24 °C, 40 to 55 %, 1000 to 1020 hPa, a few hundred lux), with a margin.
ROOM = (15, 30)        # °C
HUMID = (20, 80)       # %
AIR = (950, 1050)      # hPa
LIGHT = (10, 2000)     # lx
KEY = binary(state="off")
BATTERY = sensor("%", "battery", precision=0, category="diagnostic", within=(0, 100))
# The link's signal strength (from the stats topic): a diagnostic, disabled until the user enables it.
LINK = sensor("dBm", "signal_strength", precision=0, enabled=False, category="diagnostic", within=(-100, -20))

# A SensorTag's thermometers, hygrometer and barometer, the same on both models.
CLIMATE = {
    "temperature_object": sensor("°C", "temperature", within=ROOM),
    "temperature_ambient": sensor("°C", "temperature", within=ROOM),
    "humidity_temperature": sensor("°C", "temperature", within=ROOM),
    "humidity_humidity": sensor("%", "humidity", within=HUMID),
    "barometer_temperature": sensor("°C", "temperature", within=ROOM),
    "barometer_pressure": sensor("hPa", "pressure", within=AIR),
}

# What each kind of emulated device is expected to become in Home Assistant with every sensor on
# (collectord's defaults): a SensorTag streaming, an advertiser once each of its sensors was heard.
DEVICES = {
    "cc2650": device("CC2650 SensorTag", "Texas Instruments", True, {
        **CLIMATE,
        **axes("movement", ["gyro_x", "gyro_y", "gyro_z"], "°/s", 2),
        **axes("movement", ["accel_x", "accel_y", "accel_z"], "g", 3),
        **axes("movement", ["mag_x", "mag_y", "mag_z"], "µT", 1),
        "light_illuminance": sensor("lx", "illuminance", within=LIGHT),
        "keys_pressed_0": KEY, "keys_pressed_1": KEY, "keys_pressed_2": KEY,
        "battery_level": BATTERY,
        "signal_strength": LINK,
    }),
    # The same with commands = ["led1", "temperature_period"]: a switch and a number.
    "cc2650_commands": device("CC2650 SensorTag", "Texas Instruments", True, {
        **CLIMATE,
        **axes("movement", ["gyro_x", "gyro_y", "gyro_z"], "°/s", 2),
        **axes("movement", ["accel_x", "accel_y", "accel_z"], "g", 3),
        **axes("movement", ["mag_x", "mag_y", "mag_z"], "µT", 1),
        "light_illuminance": sensor("lx", "illuminance", within=LIGHT),
        "keys_pressed_0": KEY, "keys_pressed_1": KEY, "keys_pressed_2": KEY,
        "battery_level": BATTERY,
        "signal_strength": LINK,
        "led1": control("switch", state="off"),
        "temperature_period": control("number", "config", unit="ms"),
    }),
    "cc2541": device("CC2541 SensorTag", "Texas Instruments", True, {
        **CLIMATE,
        **axes("accelerometer", "xyz", "g", 2),
        **axes("magnetometer", "xyz", "µT", 2),
        **axes("gyroscope", "xyz", "°/s", 2),
        "keys_pressed_0": KEY, "keys_pressed_1": KEY, "keys_pressed_2": KEY,
        "signal_strength": LINK,
    }),
    # BTHome v2 in the clear: a window that opens every 10th packet, a button pressed every 7th.
    "bthome": device("BTHome v2", None, False, {
        "temperature_temperature": sensor("°C", "temperature", within=ROOM),
        "humidity_humidity": sensor("%", "humidity", within=HUMID),
        "pressure_pressure": sensor("hPa", "pressure", within=AIR),
        "battery_battery": BATTERY,
        "window_window": binary("window"),
        "button_button": event("button", "press"),
        "signal_strength": LINK,
    }),
    # BTHome v2 encrypted (AES-CCM), whose packets are compact: no pressure, no window.
    "bthome_encrypted": device("BTHome v2", None, False, {
        "temperature_temperature": sensor("°C", "temperature", within=ROOM),
        "humidity_humidity": sensor("%", "humidity", within=HUMID),
        "battery_battery": BATTERY,
        "button_button": event("button", "press"),
        "signal_strength": LINK,
    }),
    "ruuvi": device("RuuviTag", "Ruuvi Innovations", False, {
        "temperature_temperature": sensor("°C", "temperature", precision=3, within=ROOM),
        "humidity_humidity": sensor("%", "humidity", precision=4, within=HUMID),
        "pressure_pressure": sensor("hPa", "pressure", within=AIR),
        **axes("acceleration", "xyz", "g", 3, enabled=True, within=(-2, 2)),
        "voltage_voltage": sensor("V", "voltage", precision=3, within=(1.6, 3.7)),
        "movement_count_movement_count": sensor(None, precision=0, state_class="total_increasing", within=(0, 255)),
        "signal_strength": LINK,
    }),
    # A thermostat of a declared profile (commands = true): the temperature it notifies, its
    # setpoint a number and its band (a record of two numbers) a number per member. An emulated
    # GATT device names itself "Environmental Sensor" made by "collectord emulator".
    "thermostat": device("Environmental Sensor", "collectord emulator", True, {
        "climate_temperature": sensor("°C", "temperature", within=ROOM),
        "setpoint": control("number", "config", unit="°C"),
        "band_low": control("number", "config", unit="°C"),
        "band_high": control("number", "config", unit="°C"),
        "signal_strength": LINK,
    }),
    # A heart-rate strap (model gatt, heart_rate only, commands = true): its rate, contact (on or
    # off), the energy expended (counting up until the button resets it), the RR intervals
    # disabled, and the button.
    "heart_rate_strap": device("Environmental Sensor", "collectord emulator", True, {
        "heart_rate_heart_rate": sensor("bpm", precision=0, within=(30, 220)),
        "heart_rate_contact": binary(),
        "heart_rate_energy_expended": sensor("kJ", precision=0, state_class="total_increasing", within=(0, 65535)),
        **{f"heart_rate_rr_{i}": sensor("s", "duration", precision=3, enabled=False) for i in range(1, 10)},
        "reset_energy_expended": control("button", "config"),
        "signal_strength": LINK,
    }),
    "pvvx": device("pvvx custom", None, False, {
        "temperature_temperature": sensor("°C", "temperature", within=ROOM),
        "humidity_humidity": sensor("%", "humidity", within=HUMID),
        "battery_battery": BATTERY,
        "voltage_voltage": sensor("V", "voltage", precision=3, within=(1.6, 3.7)),
        "signal_strength": LINK,
    }),
}


def expectations(specs):
    """TAG=KIND:ADDRESS... -> {tag: {"node", "kind", "device", "entities": {unique id: expectation}}}."""
    expect = {}
    for spec in specs:
        tag, rest = spec.split("=", 1)
        kind, address = rest.split(":", 1)
        if kind not in DEVICES:
            sys.exit(f"NOT  {tag}: no expectations for a device of kind {kind!r} (known: {', '.join(DEVICES)})")
        node = "sensortag_" + address.lower().replace(":", "")
        expect[tag] = {"node": node, "kind": kind, "device": DEVICES[kind],
                       "entities": {f"collectord_{node}_{o}": w for o, w in DEVICES[kind]["entities"].items()}}
    return expect


def state_problem(w, state):
    """Why an enabled entity's state is not what its expectation allows, or None."""
    if state in (None, "unavailable"):
        return f"state {state!r}"
    if w["kind"] in ("event", "button"):
        return None  # unknown until its first event or press
    if state == "unknown":
        return f"state {state!r}"
    if w["kind"] in ("switch", "number", "select"):
        if w["kind"] == "switch" and state not in ("on", "off"):
            return f"state {state!r}, expected on or off"
        if w["kind"] == "number" and not is_number(state):
            return f"state {state!r} is not a number"
        if w.get("state") is not None and state != w["state"]:
            return f"state {state!r}, expected {w['state']}"
        return None
    if w["kind"] == "binary_sensor":
        if state not in ("on", "off") or (w["state"] is not None and state != w["state"]):
            return f"state {state!r}, expected {w['state'] or 'on or off'}"
        return None
    if not is_number(state):
        return f"state {state!r} is not a number"
    if w["within"] and not w["within"][0] <= float(state) <= w["within"][1]:
        return f"state {state} outside {w['within'][0]} to {w['within'][1]}"
    return None


def entity_problems(e, st, w):
    """What differs between a registry entry (with its state) and its expectation."""
    problems = []
    enabled = e["disabled_by"] is None
    capabilities = e.get("capabilities") or {}
    domain = e["entity_id"].split(".", 1)[0]
    if domain != w["kind"]:
        problems.append(f"a {domain}, expected a {w['kind']}")
    got = {
        "enabled": enabled,
        "device_class": e.get("original_device_class"),
        "entity_category": e.get("entity_category"),
        "state_class": capabilities.get("state_class"),
        "unit": (st or {}).get("attributes", {}).get("unit_of_measurement") if enabled else w.get("unit"),
        "precision": ((e.get("options") or {}).get("sensor") or {}).get("suggested_display_precision"),
    }
    for k, v in w.items():
        # Home Assistant keeps a display precision in the registry only for entities it has
        # added: not for disabled ones (the unit tests check their configs).
        if k == "precision" and not enabled:
            continue
        if k in got and got[k] != v:
            problems.append(f"{k} {got[k]!r}, expected {v!r}")
    if w["kind"] == "event" and w["event_type"] not in (capabilities.get("event_types") or []):
        problems.append(f"event types {capabilities.get('event_types')!r} lack {w['event_type']!r}")
    if enabled:
        why = state_problem(w, (st or {}).get("state"))
        if why:
            problems.append(why)
    return problems


def device_problems(tag, want, d):
    """What differs between a device registry entry and what its tag is expected to be."""
    problems = []
    if ["mqtt", want["node"]] not in d["identifiers"]:
        problems.append(f"identifiers {d['identifiers']!r}, expected mqtt {want['node']}")
    if d.get("model") != want["device"]["model"]:
        problems.append(f"model {d.get('model')!r}, expected {want['device']['model']!r}")
    if d.get("manufacturer") != want["device"]["manufacturer"]:
        problems.append(f"manufacturer {d.get('manufacturer')!r}, expected {want['device']['manufacturer']!r}")
    if want["device"]["firmware"] and not d.get("sw_version"):
        problems.append("no firmware version in the device registry")
    if not want["device"]["firmware"] and d.get("sw_version"):
        problems.append(f"firmware {d.get('sw_version')!r}, but it says none")
    return [f"NOT  {tag}: {p}" for p in problems]


def print_device(tag, d, ents):
    print(f"device {tag!r}: {d.get('manufacturer') or '-'} {d['model']}, firmware {d.get('sw_version') or '-'}, "
          f"{len(ents)} entities")
    for e, st in sorted(ents, key=lambda x: x[0]["entity_id"]):
        enabled = "enabled " if e["disabled_by"] is None else "disabled"
        prec = ((e.get("options") or {}).get("sensor") or {}).get("suggested_display_precision")
        state_class = (e.get("capabilities") or {}).get("state_class")
        state = (st or {}).get("state", "-")
        unit = (st or {}).get("attributes", {}).get("unit_of_measurement") or ""
        print(f"  {e['entity_id']:<52} {enabled} {str(e.get('original_device_class') or '-'):<15} "
              f"{str(state_class or '-'):<16} {str(e.get('entity_category') or '-'):<11} "
              f"precision {prec if prec is not None else '-'}  {state} {unit}")


async def devices(url, state_dir, *specs):
    expect = expectations(specs)
    async with HA(url, state_dir) as ha:
        async def probe():
            snap = await ha.snapshot()
            named = {}
            for d, ents in snap.values():
                named.setdefault(device_tag(d), []).append((d, ents))
            problems, lines = [], []
            for tag, want in expect.items():
                found = named.get(tag, [])
                if len(found) != 1:
                    problems.append(f"NOT  device {tag}: {len(found)} devices of that name in the registry, expected 1")
                    continue
                d, ents = found[0]
                by_id = {e["unique_id"]: (e, st) for e, st in ents}
                if sorted(by_id) != sorted(want["entities"]):
                    problems.append(f"NOT  {tag}: entities {sorted(set(by_id) ^ set(want['entities']))} differ")
                    continue
                problems += device_problems(tag, want, d)
                for uid, w in want["entities"].items():
                    e, st = by_id[uid]
                    problems += [f"NOT  {tag} {e['entity_id']}: {p}" for p in entity_problems(e, st, w)]
                lines.append((tag, d, ents))
            return not problems and len(lines) == len(expect), (problems, lines)

        ok, (problems, found) = await wait("devices", probe)
        for tag, d, ents in found:
            print_device(tag, d, ents)
        for p in problems:
            print(p)
        print(("ok   " if ok else "NOT  ") + f"{len(expect)} devices as expected")
        return 0 if ok else 1


async def events(url, state_dir, *specs):
    """Watches Home Assistant's state changes until each tag's binary sensors (those not expected
    to stay in one state) were seen on and off, and each event entity fired its event type."""
    expect = expectations(specs)
    async with HA(url, state_dir) as ha:
        snap = await ha.snapshot()
        pending = {}  # entity id -> (tag, states or event types to see, those not seen yet)
        for d, ents in snap.values():
            want = expect.get(device_tag(d))
            if not want:
                continue
            for e, _ in ents:
                w = want["entities"].get(e["unique_id"])
                if w and w["kind"] == "binary_sensor" and w["state"] is None:
                    pending[e["entity_id"]] = (device_tag(d), ["on", "off"], {"on", "off"})
                elif w and w["kind"] == "event":
                    pending[e["entity_id"]] = (device_tag(d), [w["event_type"]], {w["event_type"]})
        watched = sorted(pending)
        unwatched = [t for t in expect if not any(tag == t for tag, _, _ in pending.values())]
        t0 = time.monotonic()
        seen_at = {}

        def saw(entity_id, state):
            if not state or entity_id not in pending:
                return
            _, _, left = pending[entity_id]
            if entity_id.startswith("event."):
                # An event entity's state is the time of its last event, its type an attribute.
                if state["state"] not in ("unknown", "unavailable"):
                    left.discard(state["attributes"].get("event_type"))
            else:
                left.discard(state["state"])
            if not left and entity_id not in seen_at:
                seen_at[entity_id] = time.monotonic() - t0

        await ha.call("subscribe_events", event_type="state_changed")
        for entity_id, st in (await ha.states()).items():
            saw(entity_id, st)
        deadline = t0 + TIMEOUT
        while any(left for _, _, left in pending.values()) and time.monotonic() < deadline:
            try:
                m = await asyncio.wait_for(ha.ws.receive_json(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
            if m.get("type") == "event":
                data = m["event"]["data"]
                saw(data["entity_id"], data.get("new_state"))
        ok = not unwatched and not any(left for _, _, left in pending.values())
        for entity_id in watched:
            tag, wanted, left = pending[entity_id]
            what = "fired" if entity_id.startswith("event.") else "seen"
            if left:
                print(f"NOT  {tag} {entity_id}: {' and '.join(sorted(left))} not {what} in {TIMEOUT:.0f} s")
            else:
                print(f"ok   {tag} {entity_id}: {' and '.join(wanted)} {what} after {seen_at[entity_id]:.1f} s")
        for tag in unwatched:
            print(f"NOT  {tag}: no binary sensor or event entity to watch")
        return 0 if ok else 1


async def signal(url, state_dir, *specs):
    """Enables each tag's signal strength entity (disabled by default) and waits for its state: a
    number of dBm from the daemon's stats. Home Assistant reloads the MQTT integration 30 s after
    an entity is enabled, so this phase takes that long and comes last."""
    expect = expectations(specs)
    async with HA(url, state_dir) as ha:
        snap = await ha.snapshot()
        link = {}  # entity id -> (tag, expectation)
        for d, ents in snap.values():
            want = expect.get(device_tag(d))
            if not want:
                continue
            for e, _ in ents:
                if e["unique_id"] == f"collectord_{want['node']}_signal_strength":
                    link[e["entity_id"]] = (device_tag(d), want["entities"][e["unique_id"]])
        missing = [t for t in expect if not any(tag == t for tag, _ in link.values())]
        for entity_id in link:
            await ha.call("config/entity_registry/update", entity_id=entity_id, disabled_by=None)
        t0 = time.monotonic()

        async def probe():
            snap = await ha.snapshot()
            problems = []
            for d, ents in snap.values():
                for e, st in ents:
                    if e["entity_id"] in link:
                        tag, w = link[e["entity_id"]]
                        enabled = dict(w, enabled=True)
                        problems += [f"NOT  {tag} {e['entity_id']}: {p}" for p in entity_problems(e, st, enabled)]
            return not problems, problems

        ok, problems = await wait("signal", probe)
        states = await ha.states()
        for entity_id, (tag, _) in sorted(link.items()):
            st = states.get(entity_id) or {}
            print(f"{'ok  ' if ok else '    '} {tag} {entity_id}: {st.get('state')} "
                  f"{st.get('attributes', {}).get('unit_of_measurement') or ''}"
                  + (f" after {time.monotonic() - t0:.1f} s" if ok else ""))
        for p in problems:
            print(p)
        for tag in missing:
            print(f"NOT  {tag}: no signal strength entity")
        return 0 if ok and not missing else 1


async def availability(url, state_dir, want, *tags):
    async with HA(url, state_dir) as ha:
        async def probe():
            snap = await ha.snapshot()
            found = {}
            for d, ents in snap.values():
                if device_tag(d) in tags:
                    found[device_tag(d)] = [st.get("state") if st else None for e, st in ents if e["disabled_by"] is None]
            done = len(found) == len(tags)
            for states in found.values():
                if want == "unavailable":
                    done = done and states and all(s == "unavailable" for s in states)
                else:
                    done = done and states and all(s not in (None, "unavailable") for s in states)
            return done, found
        t = time.monotonic()
        ok, found = await wait("availability", probe)
        print(("ok   " if ok else "NOT  ") + f"{', '.join(tags)}: every enabled entity {want} after {time.monotonic() - t:.1f} s"
              + ("" if ok else f" (states {found})"))
        return 0 if ok else 1


def written(log, who, uuid, data):
    """How many writes of `data` (hex bytes, as the emulator logs them) to `uuid` the emulator's
    log shows: a line of `collectord emulate` ("emulate: ... took write UUID DATA at T"), or of a
    device the daemon emulates (`who` "TAG: emulated device": "... took write UUID DATA")."""
    pattern = re.compile(re.escape(f"took write {uuid} {data}") + "( at |$)")
    return sum(1 for line in open(log, errors="replace") if who in line and pattern.search(line.rstrip("\n")))


def shows(state, want):
    """Whether an entity's state is `want`: a value (numbers compared as numbers), or a test."""
    if callable(want):
        return want(state)
    return state == want or (is_number(state) and is_number(want) and float(state) == float(want))


async def command_entities(ha, tag, object_ids):
    """The entity ids of the tag's device's entities of these object ids, or None (said why)."""
    snap = await ha.snapshot()
    ents = [e for d, ents in snap.values() if device_tag(d) == tag for e, _ in ents]
    found = [next((e["entity_id"] for e in ents if e["unique_id"].endswith(f"_{o}")), None) for o in object_ids]
    if None in found:
        print(f"NOT  {tag}: no entity for {', '.join(o for o, f in zip(object_ids, found) if f is None)} "
              f"({sorted(e['unique_id'] for e in ents)})")
        return None
    return found


async def commanded(ha, tag, name, call, want, write):
    """Calls a service of Home Assistant's REST API (`call`: domain, service, data) and waits until
    the emulated device took one more `write` (log, who, uuid, data; see `written`) and each entity
    in `want` shows its state (see `shows`): the device's, read back. Prints ok or NOT."""
    log, who, uuid, data = write
    before = written(*write)
    t = time.monotonic()
    domain, service, fields = call
    async with ha.s.post(f"{ha.url}/api/services/{domain}/{service}", json=fields, headers=ha.h) as r:
        if r.status != 200:
            raise RuntimeError(f"{domain}.{service}: HTTP {r.status} {await r.text()}")

    async def probe():
        states = await ha.states()
        now = {e: (states.get(e) or {}).get("state") for e in want}
        return all(shows(now[e], w) for e, w in want.items()) and written(*write) > before, now
    ok, now = await wait("command", probe)
    print(("ok   " if ok else "NOT  ") + f"{tag} {name}: written as {data} on {uuid[:8]}, "
          + ", ".join(f"{e} shows {s!r}" for e, s in now.items())
          + (f" after {time.monotonic() - t:.1f} s" if ok else f" (writes {written(*write) - before})"))
    return ok


async def commands(url, state_dir, tag, emulator_log):
    """Home Assistant's REST API switches the tag's LED on and off and sets its temperature period:
    each reaches the emulated tag as the expected write (its log), and the entities show the state
    the device read back."""
    io_data = "F000AA65-0451-4000-B000-000000000000"
    period = "F000AA03-0451-4000-B000-000000000000"
    async with HA(url, state_dir) as ha:
        found = await command_entities(ha, tag, ["led1", "temperature_period"])
        if not found:
            return 1
        switch, number = found
        ok = True
        for name, call, want, uuid, data in [
            ("LED on", ("switch", "turn_on", {"entity_id": switch}), {switch: "on"}, io_data, "01"),
            ("LED off", ("switch", "turn_off", {"entity_id": switch}), {switch: "off"}, io_data, "00"),
            ("period 500 ms", ("number", "set_value", {"entity_id": number, "value": 500}), {number: "500"}, period, "32"),
        ]:
            ok &= await commanded(ha, tag, name, call, want, (emulator_log, "emulate: ", uuid, data))
        return 0 if ok else 1


def tenths(*values):
    """The thermostat's numbers as it takes them: big-endian int16 tenths, in hex as logged."""
    return " ".join(f"{b:02X}" for v in values for b in round(v * 10).to_bytes(2, "big", signed=True))


async def settings(url, state_dir, tag, emulator_log):
    """Home Assistant's REST API sets the thermostat's band (a record of two numbers, a number
    entity per member) one member at a time, and its setpoint: each member reaches the device in
    the whole record, the other member as the device had it (so a high set first stays when the
    low is set), and every entity shows what the device read back."""
    band = "6E400014-B5A3-F393-E0A9-E50E24DCCA9E"
    setpoint = "6E400010-B5A3-F393-E0A9-E50E24DCCA9E"
    who = f"{tag}: emulated device"
    async with HA(url, state_dir) as ha:
        found = await command_entities(ha, tag, ["band_low", "band_high", "setpoint"])
        if not found:
            return 1
        low, high, point = found
        low_before = (await ha.states()).get(low, {}).get("state")
        if not is_number(low_before):
            print(f"NOT  {tag}: {low} shows {low_before!r} before any command, not the device's number")
            return 1
        low_before = float(low_before)
        ok = True
        for name, entity, value, want, uuid, data in [
            ("band high 24 alone", high, 24, {high: "24", low: low_before}, band, tenths(low_before, 24)),
            ("band low 18.5 alone, the high kept", low, 18.5, {low: "18.5", high: "24"}, band, tenths(18.5, 24)),
            ("setpoint 21.5", point, 21.5, {point: "21.5"}, setpoint, tenths(21.5)),
        ]:
            ok &= await commanded(ha, tag, name, ("number", "set_value", {"entity_id": entity, "value": value}),
                                  want, (emulator_log, who, uuid, data))
        return 0 if ok else 1


async def reset(url, state_dir, tag, emulator_log):
    """Home Assistant's REST API presses the strap's energy reset button: 01 reaches its Heart Rate
    Control Point (0x2A39, which the emulator logs by its 16 bits), the button shows when it was
    pressed, and the energy expended Home Assistant shows drops: the strap counts it from zero
    again (a kJ a beat, reported every tenth beat, so at most 10 at its first report after)."""
    async with HA(url, state_dir) as ha:
        found = await command_entities(ha, tag, ["reset_energy_expended", "heart_rate_energy_expended"])
        if not found:
            return 1
        button, energy = found

        async def counted():
            state = (await ha.states()).get(energy, {}).get("state")
            return is_number(state) and float(state) > 10, state
        ready, before = await wait("energy", counted)
        if not ready:
            print(f"NOT  {tag}: {energy} shows {before!r}, not yet more than the 10 kJ a reset can report")
            return 1
        pressed = lambda s: s not in (None, "unknown", "unavailable")
        dropped = lambda s: is_number(s) and float(s) < float(before)
        ok = await commanded(ha, tag, f"energy reset (from {before} kJ)", ("button", "press", {"entity_id": button}),
                             {button: pressed, energy: dropped}, (emulator_log, f"{tag}: emulated device", "2A39", "01"))
        return 0 if ok else 1


async def removed(url, state_dir, *tags):
    async with HA(url, state_dir) as ha:
        async def probe():
            snap = await ha.snapshot()
            left = {device_tag(d): len(ents) for d, ents in snap.values() if device_tag(d) in tags}
            return not left, left
        ok, left = await wait("removal", probe)
        print(("ok   " if ok else "NOT  ") + f"{', '.join(tags)}: devices and entities removed"
              + ("" if ok else f" ({left} left)"))
        return 0 if ok else 1


def main(argv):
    cmd = argv[1]
    if cmd == "setup":
        asyncio.run(setup(*argv[2:5]))
        return 0
    phases = {"devices": devices, "events": events, "signal": signal, "availability": availability,
              "removed": removed, "commands": commands, "settings": settings, "reset": reset}
    if cmd in phases:
        return asyncio.run(phases[cmd](*argv[2:]))
    sys.exit(f"unknown phase {cmd}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
