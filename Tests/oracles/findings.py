"""Where an oracle departs from the specification, found by these checks (NOTES.md has the
details). A difference one of these explains is counted under the finding, not as a
disagreement, and every finding is reported with its count, so nothing is hidden; the
self-check fails when a finding stops showing, so this list cannot go stale."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import vocabulary as V
from common import Diff


@dataclass
class Finding:
    name: str
    oracle: str
    formats: set
    text: str
    explains: Callable   # (diff, advert) -> bool; diff.ours is the spec's (or collectord's) side


def _theengs_acceleration(d: Diff, advert) -> bool:
    if not d.key.startswith("acceleration/") or d.ours is None or d.theirs is None:
        return False
    return abs(float(d.ours.value) - 10 * float(d.theirs.value)) <= 1e-6 * max(1.0, abs(float(d.ours.value)))


def _ruuvi_axes_together(d: Diff, advert) -> bool:
    axes = {"acceleration/x", "acceleration/y", "acceleration/z"}
    return d.key in axes and d.theirs is None and not axes <= set(advert.truth.values)


def _ruuvi_movement_na(d: Diff, advert) -> bool:
    return d.key == V.RUUVI_FIELDS["movement"][0] and d.theirs is not None and d.theirs.value == 255 and (
        d.ours is None or d.ours.value == 255)


def _theengs_tx(d: Diff, advert) -> bool:
    return d.key == V.RUUVI_FIELDS["tx_power"][0] and d.theirs is None and d.ours is not None


def _theengs_voltage(d: Diff, advert) -> bool:
    return d.key == V.RUUVI_FIELDS["voltage"][0] and (d.ours is None) != (d.theirs is None)


FINDINGS = [
    Finding("theengs-ruuvi-acceleration", "theengs", {"ruuvi5"},
            "TheengsDecoder 2.5.0 (RuuviTag_RAWv2) divides Ruuvi's milli-g by 10000 instead of 1000: "
            "acceleration comes out in m/s² ten times too small (1036 mG gives 1.016 instead of 10.16).",
            _theengs_acceleration),
    Finding("ruuvitag-ble-axes-together", "ruuvitag-ble", {"ruuvi5"},
            "ruuvitag-ble 0.4.0 drops all three acceleration axes when any one is 'not available' "
            "(0x8000); the specification marks each axis on its own.",
            _ruuvi_axes_together),
    Finding("ruuvitag-ble-movement-255", "ruuvitag-ble", {"ruuvi5"},
            "ruuvitag-ble 0.4.0 publishes the movement counter 255, which the specification "
            "reserves for 'not available'.",
            _ruuvi_movement_na),
    Finding("theengs-ruuvi-tx-power", "theengs", {"ruuvi5"},
            "TheengsDecoder 2.5.0 tests Ruuvi's 'not available' TX power on hex digits of the "
            "field's low byte, not on its 5 bits: it drops valid powers whose low digit is F or "
            "whose high digit is 1 (-10, 14, 10 dBm …).",
            _theengs_tx),
    Finding("theengs-ruuvi-voltage", "theengs", {"ruuvi5"},
            "TheengsDecoder 2.5.0 tests Ruuvi's 'not available' battery voltage (11 bits all set) "
            "on the wrong bits: it publishes 3.647 V for 'not available' and drops some valid "
            "voltages whose next bit is set.",
            _theengs_voltage),
]


def explain(oracle: str, fmt: str, diffs: list[Diff], advert) -> tuple[list[Diff], list[str]]:
    """The differences no finding explains, and the names of the findings that explained the rest."""
    left, used = [], []
    for d in diffs:
        for f in FINDINGS:
            if f.oracle == oracle and fmt in f.formats and f.explains(d, advert):
                used.append(f.name)
                break
        else:
            left.append(d)
    return left, sorted(set(used))
