"""Whole-process measurements of collectord (issue #7), each printing a table and writing JSON:

  throughput  N emulated tags at ever shorter notification intervals through the real daemon to a
              real mosquitto and a sequence-checking subscriber: readings/s, loss, the daemon's CPU
              seconds per reading (so readings/s per core), its RSS.
  compare     the same workload through collectord and through the Python reference pipeline
              (reference_pipeline.py: struct, json.dumps, paho-mqtt), one after the
              other: readings/s and CPU seconds per reading, and their ratios.
  idle        the daemon connected to its broker with no tags, then with 8 tags at their 1 s
              periods: wakeups (voluntary context switches)/s against readings/s, CPU %, RSS, FDs.
  startup     process start → MQTT connected → first tag streaming → first reading → every tag.
  reconnect   every link dropped at once (SIGUSR1 to the emulator) after 11 s of streaming → each
              tag's first reading again;
              and tags gone for 5 s (emulator stopped) then back → each tag's first reading.

Run through scripts/measure, which builds the release binary and the Python environment.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib as bl  # noqa: E402

def machine_busy_s():
    """CPU seconds the whole machine has been busy (every core; /proc/stat less idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / bl.CLOCK_TICK


def cpu_s(pid):
    try:
        return bl.ProcSample(pid).cpu
    except (FileNotFoundError, ProcessLookupError):
        return 0.0


def own_cpu_s():
    """This process and its threads (the paho subscriber, when it is the one)."""
    t = os.times()
    return t.user + t.system


def wait_connected(port, limit=30):
    """Until a client holds an established TCP connection to 127.0.0.1:port (from /proc/net/tcp:
    remote port `port`, state 01)."""
    def connected():
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                    return True
        return False
    return bl.wait_for(connected, limit)


class Rig:
    """Broker, subscriber, emulated tags and one pipeline (the daemon, or the reference)."""

    def __init__(self, binary, tags, interval_us, pipeline="collectord", stats_interval=1, extra_tag=""):
        self.work = bl.Workdir()
        self.broker = bl.Broker(self.work).start()
        self.sub = bl.Subscriber(self.broker.port, transport="mosquitto_sub", log=self.work.file("sub.log"))
        self.emulators = bl.Emulators(binary, self.work, tags, interval_us)
        self.emulators.wait_ready()
        self.tags = tags
        if pipeline == "collectord":
            config = bl.daemon_config(self.work, self.broker.port, tags, stats_interval=stats_interval, extra_tag=extra_tag)
            self.pipe = bl.Daemon(binary, self.work, config, self.emulators).proc
        else:
            script = os.path.join(os.path.dirname(__file__), "reference_pipeline.py")
            self.pipe = bl.Process([sys.executable, script, "--socket-dir", self.emulators.directory,
                                    "--tags", str(tags), "--first-address", bl.Emulators.FIRST,
                                    "--broker", f"127.0.0.1:{self.broker.port}", "--client-id", "reference"],
                                   self.work.file("reference.log"), stdout=self.work.file("reference.out"))

    def steady(self, seconds):
        """Samples the pipeline and the subscriber over `seconds` of streaming. Also the CPU the
        rest of the machine used meanwhile (all of it, less the pipeline, the emulated tags, the
        broker and the subscriber): on a shared machine, what the figures competed with."""
        rig = [self.emulators.proc.pid, self.broker.proc.pid] + ([self.sub.p.pid] if hasattr(self.sub, "p") else [])
        m0, o0 = machine_busy_s(), sum(cpu_s(pid) for pid in rig) + own_cpu_s()
        a, n0 = self.pipe.sample(), self.sub.unique()
        e0 = self.emulators.proc.sample()
        time.sleep(seconds)
        b, n1 = self.pipe.sample(), self.sub.unique()
        e1 = self.emulators.proc.sample()
        m1, o1 = machine_busy_s(), sum(cpu_s(pid) for pid in rig) + own_cpu_s()
        r = bl.rates(a, b)
        readings = n1 - n0
        others = (m1 - m0) - (o1 - o0) - r["cpu_s"]
        r.update(readings=readings, readings_per_s=readings / r["seconds"],
                 cpu_s_per_reading=(r["cpu_s"] / readings) if readings else None,
                 emulator_cpu_percent=bl.rates(e0, e1)["cpu_percent"],
                 machine_cpu_percent=100 * (m1 - m0) / r["seconds"],
                 others_cpu_percent=max(0.0, 100 * others / r["seconds"]))
        return r

    def finish(self):
        """Stops the tags, lets everything drain, stops the pipeline; returns the accounting."""
        emulated = self.emulators.stop()
        self.sub.wait_quiet(quiet=2.0)
        code = self.pipe.stop()
        self.sub.wait_quiet(quiet=1.0)
        account = self.sub.account()
        account.update(emulator=emulated, exit=code, stats=self.sub.stats)
        self.sub.stop()
        self.broker.stop()
        return account


def throughput(args):
    rows = []
    for interval in args.intervals:
        rig = Rig(args.binary, args.tags, interval)
        if not bl.wait_streaming(rig.sub, args.tags * bl.PERIODIC):
            raise SystemExit(f"throughput: not every sensor streamed at {interval} µs; see {rig.work.path}")
        time.sleep(1)
        r = rig.steady(args.seconds)
        account = rig.finish()
        offered = args.tags * bl.PERIODIC * 1e6 / interval
        stats = account["stats"] or {}
        r.update(interval_us=interval, offered_per_s=offered, lost=account["expected"] - account["unique"],
                 duplicates=account["duplicates"], delivered=account["unique"], work=rig.work.path,
                 emulator_sent=account["emulator"].get("notifications"), daemon_readings=stats.get("readings"),
                 spool_dropped=stats.get("spool", {}).get("dropped"))
        rows.append(r)
        print(f"  interval {interval:>6} µs: offered {offered:8.0f}/s, delivered {r['readings_per_s']:8.0f}/s, "
              f"lost {r['lost']} (spool bound dropped {r['spool_dropped']}; tags sent {r['emulator_sent']}, daemon published {r['daemon_readings']}, subscriber got {r['delivered']}), daemon {r['cpu_percent']:5.1f} % CPU = {1e6 * r['cpu_s_per_reading']:.1f} µs/reading, "
              f"RSS {r['rss_kb'] / 1024:.1f} MB, emulator {r['emulator_cpu_percent']:.0f} %, the rest of the machine "
              f"{r['others_cpu_percent']:.0f} %", file=sys.stderr)
    return {"tags": args.tags, "seconds": args.seconds, "rows": rows}


def compare(args):
    """At each interval: one load both keep up with (CPU per reading), one that saturates the
    reference (readings/s)."""
    return {"runs": [compare_at(args, interval) for interval in args.interval]}


def compare_at(args, interval):
    out = {}
    print(f"  interval {interval} µs ({args.tags * bl.PERIODIC * 1e6 / interval:.0f} readings/s offered):", file=sys.stderr)
    for pipeline in ("collectord", "reference"):
        rig = Rig(args.binary, args.tags, interval, pipeline=pipeline)
        if not bl.wait_streaming(rig.sub, args.tags * bl.PERIODIC, limit=90):
            raise SystemExit(f"compare: {pipeline} did not stream every sensor; see {rig.work.path}")
        time.sleep(1)
        r = rig.steady(args.seconds)
        account = rig.finish()
        r.update(lost=account["expected"] - account["unique"], duplicates=account["duplicates"], work=rig.work.path)
        out[pipeline] = r
        print(f"    {pipeline:>10}: {r['readings_per_s']:8.0f} readings/s, {r['cpu_percent']:5.1f} % CPU, "
              f"{1e6 * r['cpu_s_per_reading']:.1f} µs CPU/reading, RSS {r['rss_kb'] / 1024:.1f} MB, lost {r['lost']} "
              f"(the rest of the machine meanwhile: {r['others_cpu_percent']:.0f} % of a core)", file=sys.stderr)
    c, p = out["collectord"], out["reference"]
    out["ratio_readings_per_s"] = c["readings_per_s"] / p["readings_per_s"]
    out["ratio_cpu_per_reading"] = p["cpu_s_per_reading"] / c["cpu_s_per_reading"]
    out["ratio_rss"] = p["rss_kb"] / c["rss_kb"]
    print(f"    collectord/reference: {out['ratio_readings_per_s']:.2f}× readings/s; the reference spends "
          f"{out['ratio_cpu_per_reading']:.1f}× the CPU per reading and {out['ratio_rss']:.1f}× the memory", file=sys.stderr)
    out.update(tags=args.tags, interval_us=interval, seconds=args.seconds)
    return out


def idle(args):
    out = {}
    # No tags: what the daemon costs with nothing to do but keep its broker connection.
    work = bl.Workdir()
    broker = bl.Broker(work).start()
    config = bl.daemon_config(work, broker.port, 0)
    d = bl.Process([args.binary, "run", "--config", config], work.file("collectord.log"))
    if not wait_connected(broker.port):
        raise SystemExit(f"idle: the daemon did not connect to its broker; see {work.path}")
    time.sleep(2)  # past the start-up's own wakeups
    a = d.sample()
    time.sleep(args.seconds)
    out["no_tags"] = bl.rates(a, d.sample())
    d.stop()
    broker.stop()
    print(f"  no tags: {out['no_tags']['wakeups_per_s']:.2f} wakeups/s, {out['no_tags']['cpu_percent']:.3f} % CPU, "
          f"RSS {out['no_tags']['rss_kb'] / 1024:.1f} MB", file=sys.stderr)
    # 8 tags at their configured 1 s periods (stats off, so every wakeup is the data's).
    rig = Rig(args.binary, 8, None, stats_interval=0, extra_tag="")
    if not bl.wait_streaming(rig.sub, 8 * bl.PERIODIC):
        raise SystemExit(f"idle: not every sensor streamed; see {rig.work.path}")
    time.sleep(2)
    r = rig.steady(args.seconds)
    r["perf"] = perf_stat(rig.pipe.pid, min(args.seconds, 20))
    rig.finish()
    r["wakeups_per_reading"] = r["wakeups_per_s"] / r["readings_per_s"]
    out["eight_tags_1s"] = r
    if r["perf"]:
        print("  perf stat (8 tags at 1 s): " + ", ".join(f"{k} {v:g}/s" for k, v in r["perf"].items()), file=sys.stderr)
    print(f"  8 tags at 1 s: {r['readings_per_s']:.1f} readings/s, {r['wakeups_per_s']:.1f} wakeups/s "
          f"({r['wakeups_per_reading']:.2f} per reading), {r['involuntary_per_s']:.2f} involuntary/s, "
          f"{r['cpu_percent']:.2f} % CPU, RSS {r['rss_kb'] / 1024:.1f} MB (peak {r['peak_rss_kb'] / 1024:.1f}), "
          f"{r['fds']} FDs", file=sys.stderr)
    out["seconds"] = args.seconds
    return out


def perf_stat(pid, seconds):
    """Software event rates of a running process from `perf stat -p` (this VM has no hardware
    counters, so no instructions or cycles); None when perf is missing or refused."""
    events = "task-clock,context-switches,cpu-migrations,page-faults"
    try:
        out = subprocess.run(["perf", "stat", "-x", ",", "-e", events, "-p", str(pid), "--", "sleep", str(seconds)],
                             capture_output=True, text=True, timeout=seconds + 30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    rates = {}
    for line in out.splitlines():
        f = line.split(",")
        if len(f) >= 3 and f[0] and f[0][0].isdigit():
            value = float(f[0])
            name = f[2]
            # task-clock is in ms: as a rate it is the fraction of one CPU, in per mille.
            rates[name + ("_ms" if name == "task-clock" else "")] = value / seconds
    return rates or None


def startup(args):
    runs = []
    for _ in range(args.repeat):
        work = bl.Workdir()
        broker = bl.Broker(work).start()
        sub = bl.Subscriber(broker.port)
        emulators = bl.Emulators(args.binary, work, args.tags, args.interval)
        emulators.wait_ready()
        config = bl.daemon_config(work, broker.port, args.tags)
        t0 = time.monotonic()
        daemon = bl.Daemon(args.binary, work, config, emulators).proc
        if not bl.wait_streaming(sub, args.tags * bl.PERIODIC):
            raise SystemExit(f"startup: not every sensor streamed; see {work.path}")
        with sub.lock:
            connected = next(t for t, topic, p in sub.events if topic.endswith("/status") and p == "online")
            online = sorted(t for t, topic, p in sub.events if bl.topic_kind(topic) == "availability" and p == "online")
            first_per_tag = {}
            for topic, t in sub.first_reading_per_topic.items():
                tag = topic.split("/")[2]
                first_per_tag[tag] = min(t, first_per_tag.get(tag, t))
        runs.append({"mqtt_connected_ms": 1e3 * (connected - t0), "first_tag_streaming_ms": 1e3 * (online[0] - t0),
                     "first_reading_ms": 1e3 * (sub.first_reading_at - t0),
                     "every_tag_reading_ms": 1e3 * (max(first_per_tag.values()) - t0)})
        daemon.stop()
        emulators.stop()
        sub.stop()
        broker.stop()
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print("  start-up (median of %d): MQTT connected %.1f ms, first tag streaming %.1f ms, first reading %.1f ms, "
          "all %d tags %.1f ms" % (args.repeat, med["mqtt_connected_ms"], med["first_tag_streaming_ms"],
                                   med["first_reading_ms"], args.tags, med["every_tag_reading_ms"]), file=sys.stderr)
    return {"tags": args.tags, "interval_us": args.interval, "runs": runs, "median": med}


def reconnect(args):
    rig = Rig(args.binary, args.tags, args.interval)
    if not bl.wait_streaming(rig.sub, args.tags * bl.PERIODIC):
        raise SystemExit(f"reconnect: not every sensor streamed; see {rig.work.path}")

    # Arrival of every reading, by tag (the subscriber's own books keep only the first per topic).
    arrivals = []
    rig.sub.on_reading = lambda at, topic: arrivals.append((at, topic.split("/")[2]))

    def back_after(t):
        """Per tag: the first reading after its availability went online again after t (so a
        reading already in flight when the link dropped does not count)."""
        with rig.sub.lock:
            online = {}
            for at, topic, payload in rig.sub.events:
                tag = topic.split("/")[2]
                if at > t and bl.topic_kind(topic) == "availability" and payload == "online" and tag not in online:
                    online[tag] = at
        first = {}
        for at, tag in list(arrivals):
            if tag in online and at > online[tag] and tag not in first:
                first[tag] = at
        return first

    def first_readings_after(t, limit=60):
        bl.wait_for(lambda: len(back_after(t)) == args.tags, limit, step=0.01)
        return back_after(t)

    out = {"tags": args.tags, "interval_us": args.interval, "drop_all": [], "gone_and_back": []}
    for _ in range(args.repeat):
        # Streaming long enough to count as a stable link (TagSupervisor.stableAfter, 10 s): the
        # backoff is reset and the first attempt follows the drop at once.
        time.sleep(args.streamed)
        t = time.monotonic()
        os.kill(rig.emulators.proc.pid, signal.SIGUSR1)
        time.sleep(0.001)
        got = first_readings_after(t)
        if len(got) < args.tags:
            raise SystemExit(f"reconnect: {len(got)} of {args.tags} tags streamed again after their links were "
                             f"dropped; see {rig.work.path}")
        out["drop_all"].append(sorted(1e3 * (v - t) for v in got.values()))
    for _ in range(args.repeat):
        rig.emulators.stop()
        time.sleep(args.away)
        rig.emulators = bl.Emulators(args.binary, rig.work, args.tags, args.interval)
        t = rig.emulators.wait_ready()
        got = first_readings_after(t)
        if len(got) < args.tags:
            raise SystemExit(f"reconnect: {len(got)} of {args.tags} tags streamed again after {args.away:g} s "
                             f"away; see {rig.work.path}")
        out["gone_and_back"].append(sorted(1e3 * (v - t) for v in got.values()))
        time.sleep(1)
    rig.finish()
    for key, label in (("drop_all", "every link dropped"), (f"gone_and_back", f"tags gone {args.away:g} s, back")):
        firsts = [r[0] for r in out[key] if r]
        lasts = [r[-1] for r in out[key] if r]
        out[key + "_median"] = {"first_tag_ms": statistics.median(firsts), "last_tag_ms": statistics.median(lasts)}
        print(f"  {label}: first tag's reading after {statistics.median(firsts):.1f} ms, "
              f"all {args.tags} after {statistics.median(lasts):.1f} ms (median of {args.repeat})", file=sys.stderr)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", required=True)
    p.add_argument("--out", help="write the results here as JSON")
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--tags", type=int, default=8)
    t.add_argument("--seconds", type=float, default=10)
    t.add_argument("--intervals", type=int, nargs="+", default=[100000, 10000, 2000, 1000, 500])
    c = sub.add_parser("compare")
    c.add_argument("--tags", type=int, default=8)
    c.add_argument("--interval", type=int, nargs="+", default=[10000, 2000])
    c.add_argument("--seconds", type=float, default=20)
    i = sub.add_parser("idle")
    i.add_argument("--seconds", type=float, default=60)
    s = sub.add_parser("startup")
    s.add_argument("--tags", type=int, default=8)
    s.add_argument("--interval", type=int, default=20000)
    s.add_argument("--repeat", type=int, default=5)
    r = sub.add_parser("reconnect")
    r.add_argument("--tags", type=int, default=8)
    r.add_argument("--interval", type=int, default=20000)
    r.add_argument("--repeat", type=int, default=5)
    r.add_argument("--away", type=float, default=5)
    r.add_argument("--streamed", type=float, default=11, help="seconds of streaming before each drop")
    args = p.parse_args()
    result = {"machine": bl.machine(), "what": args.what, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    result.update(globals()[args.what](args))
    bl.emit(result, args.out)


if __name__ == "__main__":
    main()
