"""Devices that only advertise, side by side (issue #25): the same stream of advertisements through
collectord and through TheengsDecoder driven from Python the way Theengs Gateway drives it
(theengs_pipeline.py), each into a real mosquitto: CPU seconds per advertisement and RSS.

The stream: DEVICES devices of each of RuuviTag 5, pvvx and ATC1441 (the built-in formats
TheengsDecoder also decodes; it has no generic BTHome decoder), each measuring every 2 s and sending
each packet twice, a report every second per device, all devices in step: what
`collectord run --emulated-tags` makes of a configuration with those devices (EmulatedAdvertiser
through the emulated kernel's management channel). collectord cannot be fed from outside without a
kernel's Bluetooth stack (this machine has none), so it runs as that, a process of its own with
the stream made inside it: its figures include making the stream, an upper bound of what the
daemon spends (AdvertisementProbe emulator measures that part alone; printed beside). The Python
side gets the same stream from outside, so its figures are its own: `AdvertisementProbe stream`
writes the Device Found events the same emulators make (same formats, seeds, addresses, timing;
the room's values differ with the time of day), and a thread of this script replays them, tick by
tick, on a SOCK_SEQPACKET socket the pipeline reads as bluetoothd reads the kernel's.

Both publish with QoS 1. collectord drops each packet's second sending as a repeat and publishes
one message per reading (4 to 6 per advertisement); the Python side, like BlueZ with an unchanged
RSSI, has no callback for the second sending, and publishes one message per advertisement. The
figures per advertisement are per distinct advertisement (each heard twice).

Run through scripts/measure advertisements, which builds the release binary, the probe and the
Python environment (paho-mqtt, TheengsDecoder).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib as bl  # noqa: E402
from measure import cpu_s, machine_busy_s, own_cpu_s  # noqa: E402

FORMATS = ("ruuvi", "pvvx", "atc1441")


def devices(formats, per_format):
    """(name, address, format) of each device, in the configuration's order, numbered as
    `AdvertisementProbe stream` numbers them (A4:C1:38 is where TheengsDecoder looks for pvvx and
    ATC1441 thermometers)."""
    out, n = [], 0
    for f in formats:
        for d in range(per_format):
            n += 1
            out.append((f"{f}{d + 1}", "A4:C1:38:%02X:%02X:%02X" % (n >> 16 & 255, n >> 8 & 255, n & 255), f))
    return out


def record(probe, formats, per_format, seconds):
    """The stream as (ms since the start, [Device Found frames]) ticks."""
    out = subprocess.run([probe, "stream", ",".join(formats), str(per_format), str(seconds)],
                         capture_output=True, text=True, check=True, timeout=600).stdout
    ticks = {}
    for line in out.splitlines():
        ms, frame = line.split()
        ticks.setdefault(int(ms), []).append(bytes.fromhex(frame))
    return sorted(ticks.items())


class Window:
    """CPU, RSS and counts of one pipeline over a steady window; also what the rest of the
    machine used meanwhile."""

    def __init__(self, proc, rig_pids, count):
        self.proc, self.rig_pids, self.count = proc, rig_pids, count

    def measure(self, seconds):
        m0, o0 = machine_busy_s(), sum(cpu_s(p) for p in self.rig_pids) + own_cpu_s()
        a, c0 = self.proc.sample(), self.count()
        time.sleep(seconds)
        b, c1 = self.proc.sample(), self.count()
        m1, o1 = machine_busy_s(), sum(cpu_s(p) for p in self.rig_pids) + own_cpu_s()
        r = bl.rates(a, b)
        adverts, messages = c1[0] - c0[0], c1[1] - c0[1]
        r.update(advertisements=adverts, advertisements_per_s=adverts / r["seconds"],
                 messages=messages, messages_per_s=messages / r["seconds"],
                 cpu_s_per_advertisement=r["cpu_s"] / adverts if adverts else None,
                 machine_cpu_percent=100 * (m1 - m0) / r["seconds"],
                 others_cpu_percent=max(0.0, 100 * ((m1 - m0) - (o1 - o0) - r["cpu_s"]) / r["seconds"]))
        return r


def run_collectord(args, devs):
    work = bl.Workdir()
    broker = bl.Broker(work).start()
    sub = bl.Subscriber(broker.port, transport="mosquitto_sub", log=work.file("sub.log"))
    counts = [0, 0]  # distinct advertisements (each has one temperature reading), readings
    last = [0.0]

    def on_reading(at, topic):
        counts[1] += 1
        last[0] = at
        if topic.endswith("/temperature"):
            counts[0] += 1
    sub.on_reading = on_reading
    tables = [[f'name = "{name}"', f'address = "{address}"', f'model = "{fmt}"', "min_interval_s = 0"]
              for name, address, fmt in devs]
    config = bl.daemon_config(work, broker.port, 0, tag_tables=tables)
    daemon = bl.Process([args.binary, "run", "--config", config, "--emulated-tags"], work.file("collectord.log"))
    if not bl.wait_for(lambda: counts[0] >= len(devs), 60):
        raise SystemExit(f"advertisements: collectord published no reading of every device; see {work.path}")
    time.sleep(max(0.0, args.warmup - (time.monotonic() - daemon.started)))
    # The devices report together once a second, a new packet every other second: the window
    # starts between two bursts (nothing arrived for 0.3 s) and, lasting an even number of seconds,
    # ends between two, so it holds whole bursts, as many of new packets as of their repeats.
    if not bl.wait_for(lambda: time.monotonic() - last[0] >= 0.3, 5, step=0.01):
        raise SystemExit(f"advertisements: collectord's readings never paused between bursts; see {work.path}")
    r = Window(daemon, [broker.proc.pid, sub.p.pid], lambda: tuple(counts)).measure(args.seconds)
    code = daemon.stop()
    sub.wait_quiet(quiet=1.0)
    account = sub.account()
    sub.stop()
    broker.stop()
    r.update(lost=account["expected"] - account["unique"], duplicates=account["duplicates"], exit=code, work=work.path,
             reports_per_s=2 * r["advertisements_per_s"])
    return r


def run_theengs(args, stream):
    work = bl.Workdir()
    broker = bl.Broker(work).start()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    script = os.path.join(os.path.dirname(__file__), "theengs_pipeline.py")
    log = work.file("theengs.log")
    pipe = bl.Process([sys.executable, script, "--fd", str(theirs.fileno()), "--broker", f"127.0.0.1:{broker.port}"],
                      log, stdout=work.file("theengs.out"), pass_fds=(theirs.fileno(),))
    theirs.close()

    def ready():
        with open(log) as f:
            return "ready" in f.read()
    if not bl.wait_for(ready, 30):
        raise SystemExit(f"advertisements: the Theengs pipeline did not start; see {work.path}")
    counts = [0, 0]  # distinct advertisements sent (a packet's first sending), reports sent
    stopping = threading.Event()

    def feed():
        last = {}
        for ms, frames in stream:
            delay = started + ms / 1000 - time.monotonic()
            if delay > 0 and stopping.wait(delay):
                return
            for frame in frames:
                ours.send(frame)
                counts[1] += 1
                if last.get(frame[6:12]) != frame:
                    last[frame[6:12]] = frame
                    counts[0] += 1
            if stopping.is_set():
                return
    feeder = threading.Thread(target=feed, daemon=True)
    started = time.monotonic() + 0.05
    feeder.start()
    # Half a second after a tick, as for collectord: whole bursts in the window.
    time.sleep(round(args.warmup) + 0.5 - (time.monotonic() - started))
    r = Window(pipe, [broker.proc.pid], lambda: tuple(counts)).measure(args.seconds)
    r["reports_per_s"] = r.pop("messages") / r["seconds"]
    stopping.set()
    feeder.join(10)
    sent = tuple(counts)
    code = pipe.stop()
    ours.close()
    broker.stop()
    try:
        books = json.loads(pipe.output().strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"advertisements: the Theengs pipeline printed no result; see {work.path}")
    r.update(books=books, sent_distinct=sent[0], sent_reports=sent[1], exit=code, work=work.path,
             fed_seconds=time.monotonic() - started)
    # Its messages per advertisement come from its own books (one per decoded advertisement).
    r["messages_per_s"] = r["advertisements_per_s"] * books["published"] / max(books["callbacks"], 1)
    problems = []
    if books["callbacks"] != sent[0]:
        problems.append(f"{books['callbacks']} callbacks for {sent[0]} distinct advertisements sent")
    if books["decoded"] != books["callbacks"]:
        problems.append(f"TheengsDecoder decoded {books['decoded']} of {books['callbacks']}")
    if books["acked"] != books["published"]:
        problems.append(f"{books['acked']} of {books['published']} acknowledged")
    r["problems"] = problems
    return r


def emulator_share(probe, formats):
    """CPU µs per advertisement that `run --emulated-tags` spends making the stream, per format."""
    share = {}
    for f in formats:
        out = subprocess.run([probe, "emulator", f"advertisement/{f}", "20000"], capture_output=True, text=True,
                             check=True, timeout=600).stdout.split()
        share[f] = float(out[1]) / 1000
    return share


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", required=True)
    p.add_argument("--probe", required=True, help="Benchmarks' AdvertisementProbe (release)")
    p.add_argument("--out", help="write the results here as JSON")
    # 240 devices report 240 times at once: about what the emulated kernel's socket (212,992 bytes
    # of send buffer, a few hundred bytes a frame) takes; it drops what does not fit, unsaid.
    p.add_argument("--devices", type=int, default=80, help="devices per format")
    p.add_argument("--seconds", type=int, default=30, help="the steady window, an even number of seconds")
    p.add_argument("--warmup", type=float, default=8, help="seconds from the start to the window (past collectord's "
                   "release of its start-up code at 5 s)")
    args = p.parse_args()
    if args.seconds < 2 or args.seconds % 2:
        raise SystemExit("advertisements: --seconds must be even, so that the window holds as many of the devices' "
                         "new packets (every 2 s) as of their second sendings")
    total = len(FORMATS) * args.devices
    # The emulated kernel gives device k an RSSI of -60 - k (an Int8): more than 68 devices, unless
    # the count wraps past 188, overflow it.
    if not (total <= 68 or 188 <= total % 256 or total % 256 <= 68):
        raise SystemExit(f"advertisements: {total} devices overflow the emulated kernel's RSSI; choose another --devices")
    devs = devices(FORMATS, args.devices)
    result = {"machine": bl.machine(), "what": "advertisements", "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "devices": total, "formats": FORMATS, "seconds": args.seconds, "warmup": args.warmup}
    stream = record(args.probe, FORMATS, args.devices, int(args.warmup + args.seconds + 5))
    result["stream"] = {"ticks": len(stream), "reports": sum(len(f) for _, f in stream)}
    print(f"  {total} devices ({args.devices} each of {', '.join(FORMATS)}), a report each per second, each packet "
          f"sent twice: {total} reports/s, {total / 2:.0f} advertisements/s", file=sys.stderr)
    out = {}
    for name, run in (("collectord", lambda: run_collectord(args, devs)), ("theengs", lambda: run_theengs(args, stream))):
        r = run()
        out[name] = r
        us = 1e6 * r["cpu_s_per_advertisement"] if r["cpu_s_per_advertisement"] else float("nan")
        print(f"    {name:>10}: {r['advertisements_per_s']:6.1f} advertisements/s, {r['messages_per_s']:6.1f} messages/s, "
              f"{r['cpu_percent']:5.1f} % CPU = {us:7.1f} µs per advertisement, RSS {r['rss_kb'] / 1024:.1f} MB "
              f"(the rest of the machine meanwhile: {r['others_cpu_percent']:.0f} % of a core)", file=sys.stderr)
    share = emulator_share(args.probe, FORMATS)
    out["emulator_us_per_report"] = share
    c, t = out["collectord"], out["theengs"]
    out["ratio_cpu_per_advertisement"] = t["cpu_s_per_advertisement"] / c["cpu_s_per_advertisement"]
    out["ratio_rss"] = t["rss_kb"] / c["rss_kb"]
    print(f"    collectord's figure includes making the stream: {', '.join(f'{f} {v:.1f}' for f, v in share.items())} µs "
          "per report (two reports per advertisement), AdvertisementProbe emulator", file=sys.stderr)
    print(f"    Theengs (Python) spends {out['ratio_cpu_per_advertisement']:.1f}× the CPU per advertisement and "
          f"{out['ratio_rss']:.1f}× the memory", file=sys.stderr)
    result.update(out)
    bl.emit(result, args.out)
    problems = list(t["problems"])
    for name, r in (("collectord", c), ("theengs", t)):
        if abs(r["advertisements_per_s"] - total / 2) > total / 200:
            problems.append(f"{name} got {r['advertisements_per_s']:.1f} advertisements/s of {total / 2:.0f} "
                            "(collectord: the emulated kernel drops reports its socket cannot take; use fewer --devices)")
    if c["lost"]:
        problems.append(f"collectord: {c['lost']} readings lost")
    if problems:
        raise SystemExit("advertisements: " + "; ".join(problems))


if __name__ == "__main__":
    main()
