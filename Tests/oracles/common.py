"""What every side's decoding is turned into before comparing, and how two of them are compared."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Value:
    """One field: the value (a number, a bool for binary sensors, a str for text and raw), its
    unit, and the step its producer rounds to (0 for exact), which sets the tolerance."""

    value: object
    unit: str
    quantum: float = 0.0


@dataclass
class Decoded:
    """A decoded advertisement in collectord's vocabulary (vocabulary.py)."""

    values: dict[str, Value] = field(default_factory=dict)   # "sensor/field" -> Value
    events: list[tuple] = field(default_factory=list)          # (sensor, event, steps or None)
    ids: dict[str, int] = field(default_factory=dict)          # packet_id / sequence / counter
    error: str | None = None
    # For the generator's expectations: the BTHome object id behind each key (an oracle's
    # rounding can depend on it), and the oracle's model name where it reports one.
    sources: dict[str, int] = field(default_factory=dict)
    model: str | None = None

    def empty(self) -> bool:
        return not self.values and not self.events and not self.ids

    def brief(self) -> dict:
        """A compact, printable form."""
        if self.error is not None:
            return {"error": self.error}
        out: dict = {k: (v.value if not v.unit else f"{v.value} {v.unit}") for k, v in sorted(self.values.items())}
        if self.events:
            out["events"] = [e[0] + ":" + e[1] + ("" if e[2] is None else f"({e[2]})") for e in self.events]
        out.update(self.ids)
        return out


def tolerance(a: Value, b: Value) -> float:
    """Half of each side's rounding step, and a little for floating point (collectord may carry
    a value as a Float)."""
    magnitude = max(1.0, abs(float(a.value)), abs(float(b.value)))
    return (a.quantum + b.quantum) / 2 + 2e-7 * magnitude


def same_value(a: Value, b: Value) -> bool:
    if isinstance(a.value, bool) or isinstance(b.value, bool):
        # A binary state: a boolean, or the number 0 or 1 (collectord publishes numbers).
        flag = lambda v: v if isinstance(v, bool) else (v == 1 if isinstance(v, (int, float)) and v in (0, 1) else None)
        return flag(a.value) is not None and flag(a.value) == flag(b.value)
    if isinstance(a.value, str) or isinstance(b.value, str):
        return a.value == b.value
    x, y = float(a.value), float(b.value)
    if math.isnan(x) or math.isnan(y):
        return False
    return abs(x - y) <= tolerance(a, b)


@dataclass
class Diff:
    """One difference: the key ("sensor/field", an id name, "events" or "decoded"), both sides'
    values (None where a side lacks it) and a readable line."""

    key: str
    ours: object
    theirs: object
    text: str


def differences(ours: Decoded, theirs: Decoded, not_covered_keys=frozenset(), not_covered_ids=frozenset(),
                ignore_units=False) -> list[Diff]:
    """What differs between two decodings; empty when they agree. Keys that `theirs` never
    decodes (not_covered_*) are not held against either side."""
    out: list[Diff] = []
    if (ours.error is None) != (theirs.error is None):
        say = lambda d: "no (" + str(d.error) + ")" if d.error is not None else "yes"
        return [Diff("decoded", ours.error, theirs.error, f"decoded: {say(ours)} vs {say(theirs)}")]
    if ours.error is not None:
        return out
    for key in sorted(set(ours.values) | set(theirs.values)):
        a, b = ours.values.get(key), theirs.values.get(key)
        if (a is None or b is None) and key in not_covered_keys:
            continue
        if a is None:
            out.append(Diff(key, None, b, f"{key}: missing, other has {b.value} {b.unit}".rstrip()))
        elif b is None:
            out.append(Diff(key, a, None, f"{key}: {a.value} {a.unit}, other lacks it".rstrip()))
        elif not same_value(a, b):
            out.append(Diff(key, a, b, f"{key}: {a.value} {a.unit} vs {b.value} {b.unit}"))
        elif not ignore_units and a.unit != b.unit and not isinstance(a.value, bool):
            out.append(Diff(key, a, b, f"{key}: unit {a.unit!r} vs {b.unit!r}"))
    for key in sorted(set(ours.ids) | set(theirs.ids)):
        a, b = ours.ids.get(key), theirs.ids.get(key)
        if (a is None or b is None) and key in not_covered_ids:
            continue
        if a != b:
            out.append(Diff(key, a, b, f"{key}: {a} vs {b}"))
    if sorted(map(_event_key, ours.events)) != sorted(map(_event_key, theirs.events)):
        out.append(Diff("events", ours.events, theirs.events, f"events: {ours.events} vs {theirs.events}"))
    return out


def _event_key(e: tuple) -> tuple:
    return (e[0], e[1], -1 if e[2] is None else e[2])
