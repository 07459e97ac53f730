#!/usr/bin/env python3
"""Judges a power cut run (Tests/vm/powercut.sh) from what the host kept: the subscriber's log
(mqtt.log: every message with its host arrival time), the cut times (cuts.log, host clock), the
daemon's configuration and each boot's daemon log (boot-N/daemon.log, the guest's second serial
port). For each cut it prints the phase, the delay, the loss, what the next boot repaired, and
fails the cut when

  * the next boot did not start the daemon, or the spool was never drained after it;
  * a sequence number of a tag's sensor was used for two different readings (the same reading
    delivered twice is allowed: at least once);
  * a reading is missing before the newest one of its boot that was delivered (by `seq`, from
    the block the boot numbered from): the spool is a FIFO, so a cut may take only the tail;
  * the loss exceeds the bound: per sensor, the cut's time minus the newest reading of that boot
    that was ever delivered (before the cut, or replayed after a later boot) minus the sensor's
    period, the reading's time (the guest's clock) moved to the host's clock by the offset
    measured at that boot. A sensor with no reading of that boot delivered counts from the first
    reading of its tag, or, when the tag streamed but nothing of it arrived, from the time the
    daemon's log says the tag began streaming; not at all when it had not.

The offset is the smallest (host arrival - guest send time) over the guest's clock messages of
the boot, so it is over by the network latency (milliseconds): losses are under by as much.

  Tests/vm/powercut-check.py RUN_DIR [--bound-ms 3000]
"""
import argparse
import datetime
import json
import os
import re
import sys


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("--bound-ms", type=int, default=3000)
    return p.parse_args()


def periods(conf_path):
    """{(tag, sensor): seconds} from the daemon's configuration (the [[tag]] sections written by
    powercut.sh: name, then [tag.sensors.X] with period_ms)."""
    result, tag, sensor = {}, None, None
    for line in open(conf_path):
        line = line.strip()
        m = re.match(r'name = "([^"]+)"', line)
        if m:
            tag = m.group(1)
        m = re.match(r"\[tag\.sensors\.([a-z_]+)\]", line)
        if m:
            sensor = m.group(1)
        m = re.match(r"period_ms = (\d+)", line)
        if m and tag and sensor:
            result[(tag, sensor)] = int(m.group(1)) / 1000
    return result


def iso_seconds(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def main():
    args = parse_args()
    run = args.run
    bound = args.bound_ms / 1000
    sensors = periods(os.path.join(run, "collectord.conf"))

    boots, drained, cuts, fails, end = {}, [], {}, [], None
    for line in open(os.path.join(run, "cuts.log")):
        w = line.split()
        if w[0] == "boot":
            boots[int(w[1])] = int(w[2]) / 1e6
        elif w[0] == "drained":
            drained.append(int(w[1]))
        elif w[0] == "cut":
            cuts[int(w[1])] = (w[2], int(w[3]), int(w[4]) / 1e6)
        elif w[0] == "end":
            end = (int(w[1]), int(w[2]) / 1e6)
        elif w[0] == "fail":
            fails.append((int(w[1]), " ".join(w[2:])))

    offsets, started = {}, {}  # boot -> seconds (host - guest); boot -> daemon start, guest clock
    readings = []  # (arrival, tag, sensor, seq, guest time, payload)
    stats = []  # (arrival, payload)
    line_re = re.compile(r"^(\d+\.\d+) (\S+) (.*)$")
    for line in open(os.path.join(run, "mqtt.log"), errors="replace"):
        m = line_re.match(line.rstrip("\n"))
        if not m:
            continue
        arrival, topic, payload = float(m.group(1)), m.group(2), m.group(3)
        if topic == "vmrig/guest":
            w = payload.split()
            if len(w) == 4 and w[0] == "boot":
                k, t = int(w[1]), float(w[3])
                if w[2] == "clock":
                    offsets[k] = min(offsets.get(k, float("inf")), arrival - t)
                elif w[2] == "daemon":
                    started.setdefault(k, t)
        elif topic.startswith("collectord/tags/"):
            parts = topic.split("/")
            try:
                r = json.loads(payload)
                readings.append((arrival, parts[2], parts[3], int(r["seq"]), iso_seconds(r["time"]), payload))
            except (ValueError, KeyError):
                print(f"unreadable reading: {line.strip()[:200]}")
        elif topic == "collectord/daemon/vm/stats":
            stats.append((arrival, payload))

    # Each boot's daemon, on the host clock: from its start to its cut (or the end).
    windows = {}
    for k in sorted(started):
        if k not in offsets:
            continue
        stop = cuts[k][2] if k in cuts else (end[1] if end and end[0] == k else None)
        if stop is not None:
            windows[k] = (started[k] + offsets[k], stop)

    by_boot = {}  # boot -> {(tag, sensor): [(host time, arrival), ...]}
    seqs = {}  # boot -> {(tag, sensor): {seq, ...}}
    first = {}  # boot -> host time of its first reading
    unplaced = 0
    seen = {}  # (tag, sensor, seq) -> {payload: boot}
    reused = []
    for arrival, tag, sensor, seq, t, payload in readings:
        placed = None
        for k, (a, b) in windows.items():
            h = t + offsets[k]
            if a - 1 <= h <= b + 0.5:
                placed = k
                break
        if placed is None:
            unplaced += 1
        else:
            h = t + offsets[placed]
            by_boot.setdefault(placed, {}).setdefault((tag, sensor), []).append((h, arrival))
            seqs.setdefault(placed, {}).setdefault((tag, sensor), set()).add(seq)
            first[placed] = min(first.get(placed, h), h)
        owners = seen.setdefault((tag, sensor, seq), {})
        if payload not in owners:
            owners[payload] = placed
            if len(owners) == 2:
                reused.append((tag, sensor, seq, list(owners.values())))

    # How long a daemon takes from its start to its first reading, at the least: for a boot whose
    # readings were all lost, the loss counts from then.
    latencies = [first[k] - windows[k][0] for k in first if k in windows]
    startup = min(latencies) if latencies else 0.0

    failures, worst, per_phase = 0, (0.0, None, None), {}
    if reused:
        print(f"FAIL: {len(reused)} sequence number(s) used for two different readings, e.g.:")
        for tag, sensor, seq, boots_ in reused[:10]:
            print(f"  {tag}/{sensor} seq {seq} (boots {boots_})")
    fail_of = {}
    for k, why in fails:
        fail_of.setdefault(k, []).append(why)
    print(f"{'cut':>4} {'phase':<7} {'delay':>7} {'loss':>7}  {'worst sensor':<15} {'replayed':>8}  next boot: repairs")
    for k in sorted(cuts):
        phase, delay_ms, t_cut = cuts[k]
        problems = []
        if k not in windows:
            problems.append("no clock or start message from this boot")
            loss, who, replayed = float("nan"), "-", 0
        else:
            loss, who, replayed = 0.0, "-" if k in first else "(no reading yet)", 0
            got = by_boot.get(k, {})
            live = streaming(run, k)
            for (tag, sensor), period in sorted(sensors.items()):
                times = got.get((tag, sensor), [])
                replayed += sum(1 for _, arrival in times if arrival > t_cut)
                last = max((h for h, _ in times), default=None)
                tag_first = min((h for (t, _), ts in got.items() if t == tag for h, _ in ts), default=None)
                if last is not None:
                    lost, why = t_cut - last - period, ""
                elif tag not in live:
                    lost, why = 0.0, ""  # the tag never streamed in this boot: nothing was made
                elif tag_first is not None:
                    lost, why = t_cut - tag_first - period, " (none)"  # its other sensors did
                else:  # streaming began then; its first reading a period later
                    lost, why = t_cut - (live[tag] + offsets[k]) - period, " (none)"
                if lost > loss:
                    loss, who = lost, f"{tag}/{sensor}{why}"
        missing = sum(gaps(seqs.get(k, {})).values())
        if missing:
            problems.append(f"{missing} reading(s) missing before the last one delivered ({gaps(seqs[k])})")
        nxt = k + 1
        if nxt not in started:
            problems.append("the next boot did not start the daemon")
        if not any(j > k for j in drained):
            problems.append("the spool was never drained after it")
        for why in fail_of.get(nxt, []):
            problems.append(f"next boot: {why}")
        if loss == loss and loss > bound:
            problems.append(f"loss {loss:.2f} s > bound {bound:.2f} s")
        repairs = recovery(run, nxt, stats, boots.get(nxt), cuts[nxt][2] if nxt in cuts else None)
        status = "ok" if not problems else "FAIL: " + "; ".join(problems)
        if problems:
            failures += 1
        if loss == loss and loss > worst[0]:
            worst = (loss, k, phase)
        if loss == loss:
            per_phase.setdefault(phase, []).append(loss)
        print(f"{k:>4} {phase:<7} {delay_ms / 1000:>6.2f}s {loss:>6.2f}s  {who:<15} {replayed:>8}  {repairs}  {status}")

    if end and gaps(seqs.get(end[0], {})):
        failures += 1
        print(f"FAIL: the last boot's readings have gaps: {gaps(seqs[end[0]])}")
    if offsets:
        print(f"guest clock behind the host's by {min(offsets.values()):.3f}-{max(offsets.values()):.3f} s "
              f"({len(offsets)} boots); daemon start to first reading at least {startup:.2f} s")
    if unplaced:
        print(f"note: {unplaced} reading(s) fell outside every boot's window (clock offset?)")
    for phase, losses in sorted(per_phase.items()):
        losses.sort()
        print(f"phase {phase}: {len(losses)} cut(s), loss median {losses[len(losses) // 2]:.2f} s, worst {losses[-1]:.2f} s")
    if reused:
        failures += 1
    n = len(cuts)
    w = f"{worst[0]:.2f} s (cut {worst[1]}, {worst[2]})" if worst[1] else "0.00 s"
    print(f"{n} cut(s), {failures} failed, worst loss {w}, bound {bound:.2f} s, "
          f"{len(readings)} readings received, {len(reused)} sequence number(s) reused")
    return 1 if failures or n == 0 else 0


def gaps(numbers):
    """{"tag/sensor": how many numbers are missing} for one boot: every boot ends in a cut, so it
    numbers from a block start (a multiple of the 36,000 reserve: the first boot from 0, each
    next from the block the last one reserved at its first reading), and what it delivered must
    be every number from there to the newest delivered: the spool is a FIFO, so only the tail
    may be lost."""
    result = {}
    for (tag, sensor), got in numbers.items():
        start = min(got) // 36000 * 36000
        n = max(got) - start + 1 - len(got)
        if n:
            result[f"{tag}/{sensor}"] = n
    return result


def streaming(run, boot):
    """{tag: guest time} of the tags that began streaming in boot, by its daemon log (the serial
    port's file, written as the daemon writes it, each line stamped with the guest's time: a tag
    without its line had made no reading when the power went)."""
    try:
        with open(os.path.join(run, f"boot-{boot}", "daemon.log"), errors="replace") as f:
            return {m.group(2): float(m.group(1)) for m in
                    re.finditer(r"^(\d+\.\d+) <\d>(\S+): streaming \(", f.read(), re.M)}
    except OSError:
        return {}


def recovery(run, boot, stats, start, stop):
    """What boot's daemon said about the state it found: its log lines about the spool and the
    sequence numbers, and its first statistics' repairs."""
    said, up = [], False
    try:
        for line in open(os.path.join(run, f"boot-{boot}", "daemon.log"), errors="replace"):
            line = line.strip()
            m = re.search(r"spool: repaired \S+ on open: (.*)", line)
            w = re.search(r"spool: (\d+) messages waiting from before", line)
            if re.search(r"collectord \S+ running:", line):
                up = True
            if m:
                said.append("spool " + m.group(1))
            elif w:
                said.append(f"{w.group(1)} spooled")
            elif "sequence numbers:" in line and "not clean" in line:
                said.append("seq jump")
            elif re.search(r"<[0-4]>(spool|sequence numbers|state file)|damaged", line):
                said.append(line[:160])
    except OSError:
        return "no daemon log"
    for arrival, payload in stats:
        if start is not None and arrival >= start and (stop is None or arrival <= stop):
            try:
                spool = json.loads(payload)["spool"]
            except (ValueError, KeyError):
                break
            r = spool.get("repaired_on_open", {})
            if spool.get("lost_to_damage") or any(r.values()):
                said.append(f"stats: lost_to_damage {spool.get('lost_to_damage')}, repaired {r}")
            break
    if not up:
        said.append("(cut before the daemon was up)")
    return ", ".join(said) if said else "nothing to repair"


if __name__ == "__main__":
    sys.exit(main())
