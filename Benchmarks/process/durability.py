"""What collectord writes to disk, and how much memory it holds, when things go wrong on purpose
(docs/performance.md, "Disk writes and bounded memory"). Two measurements, each printing a table
on stderr and writing JSON:

  disk    8 emulated tags notifying every sensor every 1 s (40 readings/s), QoS 1, the spool on a
          real disk; the daemon's /proc/PID/io over a window after start-up has settled, per hour:
            steady    the broker acknowledges promptly (expected: nothing written);
            outage    the broker stopped: readings spooled (then the broker back: the replay);
            stalled   the broker SIGSTOPped once the daemon is connected: it accepts, never acks.
          Start-up (exec → window) and stop (SIGTERM → exit) are reported apart, and so are the
          rewrites of the `sequences` file and of the spool's cursor.
  memory  VmRSS / VmHWM (peak) / RssAnon in bounded scenarios, each to stay under 16 MB:
            flood     one tag notifying one sensor every 500 µs (2,000/s) against a 1000 ms
                      period: with flood_limit at its default (2), and off;
            stalled   8 tags at 10 ms (4,000 readings/s) to a SIGSTOPped broker, spool bound 50 MB;
            replay    a 10 GB bound (max_mb = 10240): the spool prefilled by the daemon itself with
                      the broker down at a high rate, then a new daemon (the same directory) with the
                      broker back, until the whole spool has been replayed;
            files     junk in the spool directory at start (a 300 MB sparse file and a garbage file
                      named like segments, a big file with another name), beside an empty one.

What the numbers mean: `write_bytes` is what the process caused to be sent to the block layer,
counted when a page of a file becomes dirty (a whole page, 4 KiB, each time a clean page is
dirtied again: appending 300 bytes to a page already dirty adds nothing, appending to one that an
fdatasync has just cleaned adds 4 KiB). It does not include the filesystem's metadata and journal
(written by the kernel's jbd2 thread, not charged to the process), nor anything on tmpfs (no
writeback there), which is why the spool must be on a real disk. `cancelled_write_bytes` is the
part of it truncated or deleted before it was written back. `wchar` is every byte passed to
write(2)-family calls, sockets and pipes included; the file part is estimated as wchar less the
bytes written to the MQTT connection (tcp_info from `ss`) less the log (the daemon's stderr is a
pipe here, as under journald, so its log costs no disk of its own).

Run through scripts/measure (`scripts/measure disk`, `scripts/measure memory`), which builds the
release binary and the Python environment.
"""

import argparse
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib as bl  # noqa: E402

MB = 1024 * 1024
STATS = re.compile(rb"stats: (\d+)/(\d+) tags streaming, (\d+) readings, spool (\d+) pending, (\d+) dropped")
WAITING = re.compile(rb"spool: (\d+) messages waiting from before")


def log(text):
    print(text, file=sys.stderr, flush=True)


def filesystem(path):
    return subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True).stdout.strip()


_spools = []


@atexit.register
def _remove_spools():
    """A run stopped half-way (an exception, SIGTERM from smoke.py's time limit)
    leaves no spool behind: its processes first, then the directories."""
    bl._kill_leftovers()
    for path in _spools:
        shutil.rmtree(path, ignore_errors=True)


def spool_directory(parent):
    """A fresh spool directory under `parent`, which must be on a disk: /proc/PID/io counts no
    write to tmpfs."""
    os.makedirs(parent, exist_ok=True)
    kind = filesystem(parent)
    if kind in ("tmpfs", "ramfs"):
        raise SystemExit(f"{parent} is on {kind}, whose writes /proc/PID/io does not count: give --spool-parent on a disk")
    path = tempfile.mkdtemp(prefix="collectord-spool.", dir=parent)
    _spools.append(path)
    return path, kind


class Watch:
    """Samples the daemon every `period` seconds on a thread: memory, /proc/PID/io, bytes written
    to its MQTT connections, its log, the spool directory, and rewrites of `sequences` and
    `cursor` (each is replaced by a rename, so a new inode or mtime is a new write; two within one
    period count once)."""

    def __init__(self, daemon, spool, port, period=0.25):
        self.daemon = daemon
        self.spool = spool
        self.port = port
        self.period = period
        self.lock = threading.Lock()
        self.samples = []
        self.tcp_last = {}
        self.files = {"sequences": None, "cursor": None}
        self.rewrites = {"sequences": 0, "cursor": 0}
        self.stats = None
        self.waiting = None
        self.connected_at = None
        self.connects = []
        self.released_at = None  # the start-up code release (ResidentCode.swift), about 5 s after start
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def on_line(self, line):
        w = WAITING.search(line)
        if w:
            self.waiting = int(w.group(1))
        if self.released_at is None and b"memory: released" in line:
            self.released_at = time.monotonic()
        if b"mqtt: connected" in line:
            self.connects.append(time.monotonic())
            if self.connected_at is None:
                self.connected_at = self.connects[0]
        m = STATS.search(line)
        if m:
            streaming, tags, readings, pending, dropped = (int(x) for x in m.groups())
            self.stats = {"streaming": streaming, "tags": tags, "readings": readings, "pending": pending,
                          "dropped": dropped, "at": time.monotonic()}

    def _run(self):
        while not self.stopping.wait(self.period):
            try:
                self.sample()
            except (FileNotFoundError, ProcessLookupError):
                return

    def sample(self, label=None):
        with self.lock:
            pid = self.daemon.pid
            s = {"t": time.monotonic(), "label": label}
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    for key, name in (("VmRSS:", "rss_kb"), ("VmHWM:", "hwm_kb"), ("RssAnon:", "anon_kb")):
                        if line.startswith(key):
                            s[name] = int(line.split()[1])
            s.update(bl.proc_io(pid))
            if self.port:
                self.tcp_last.update(bl.tcp_written(pid, self.port))
            s["tcp"] = sum(self.tcp_last.values()) if self.port else None
            s["log"] = self.daemon.log_bytes
            for name in self.files:
                try:
                    st = os.stat(os.path.join(self.spool, name))
                    key = (st.st_ino, st.st_mtime_ns, st.st_size)
                except FileNotFoundError:
                    key = None
                if key is not None and key != self.files[name]:
                    self.rewrites[name] += 1
                self.files[name] = key
            s["sequences_writes"] = self.rewrites["sequences"]
            s["cursor_writes"] = self.rewrites["cursor"]
            s["spool_bytes"], s["segments"] = spool_size(self.spool)
            s["stats"] = dict(self.stats) if self.stats else None
            self.samples.append(s)
            return s

    def reset_peak(self):
        """Resets VmHWM to the current RSS (clear_refs 5), so the peak that follows is the scenario's."""
        with open(f"/proc/{self.daemon.pid}/clear_refs", "w") as f:
            f.write("5")

    def final_io(self):
        """/proc/PID/io once the process has exited but before it is reaped (so the stop's writes count)."""
        os.waitid(os.P_PID, self.daemon.pid, os.WEXITED | os.WNOWAIT)
        return bl.proc_io(self.daemon.pid)

    def stop(self):
        self.stopping.set()
        self.thread.join()

    def between(self, a, b):
        return [s for s in self.samples if a["t"] <= s["t"] <= b["t"]]


def spool_size(path):
    total = n = 0
    try:
        for name in os.listdir(path):
            if name.endswith(".spool"):
                try:
                    total += os.stat(os.path.join(path, name)).st_blocks * 512
                    n += 1
                except FileNotFoundError:
                    pass
    except FileNotFoundError:
        pass
    return total, n


def io_window(a, b):
    """Writes between two samples, and per hour."""
    dt = b["t"] - a["t"]
    d = {k: b[k] - a[k] for k in ("wchar", "syscw", "rchar", "read_bytes", "write_bytes", "cancelled_write_bytes",
                                  "log", "sequences_writes", "cursor_writes")}
    # Without the MQTT connection's bytes (not tracked), wchar cannot be split.
    d["tcp"] = b["tcp"] - a["tcp"] if a["tcp"] is not None else None
    d["file_wchar"] = d["wchar"] - d["tcp"] - d["log"] if d["tcp"] is not None else None
    out = {"seconds": dt}
    out.update(d)
    for k in ("write_bytes", "cancelled_write_bytes", "wchar", "file_wchar", "tcp"):
        out[k + "_per_hour"] = d[k] * 3600 / dt if dt and d[k] is not None else None
    return out


def mb(x):
    return x / MB


# MARK: - disk

class Rig:
    def __init__(self, args, tags, interval_us, spool_max_mb=None, flood_limit=None, extra_tag="",
                 subscriber="paho", broker=True, spool=None, track_tcp=False):
        self.args = args
        self.work = bl.Workdir("cd-durability.")
        self.spool, self.fs = spool or spool_directory(args.spool_parent)
        self.track_tcp = track_tcp
        self.broker = bl.Broker(self.work)
        self.sub = None
        if broker:
            self.broker.start()
            if subscriber:
                self.sub = bl.Subscriber(self.broker.port, transport=subscriber, log=self.work.file("sub.log"))
        self.tags = tags
        self.emulators = bl.Emulators(args.binary, self.work, tags, interval_us)
        self.emulators.wait_ready()
        self.config = bl.daemon_config(self.work, self.broker.port, tags, stats_interval=args.stats_interval,
                                       flood_limit=flood_limit, spool_path=self.spool, qos=1,
                                       spool_max_mb=spool_max_mb, extra_tag=extra_tag)
        self.start_daemon()

    def start_daemon(self):
        self.watch = None
        self.daemon = bl.Daemon(self.args.binary, self.work, self.config, self.emulators, pipe_log=True,
                                on_line=lambda line: self.watch and self.watch.on_line(line)).proc
        self.watch = Watch(self.daemon, self.spool, self.broker.port if self.track_tcp else None,
                           period=0.5 if self.track_tcp else 0.25)
        self.watch.sample("exec")

    def require_streaming(self, sensors, limit=30):
        """Until `sensors` topics have had a reading at the subscriber (bl.wait_streaming); exits
        when they have not within `limit` seconds."""
        if not bl.wait_streaming(self.sub, sensors, limit):
            raise SystemExit(f"not every sensor streamed; see {self.work.path}")

    def stop_daemon(self):
        """SIGTERM; returns the writes from the signal to the exit."""
        before = self.watch.sample("stop")
        self.daemon.p.send_signal(signal.SIGTERM)
        try:
            end = self.watch.final_io()
        except ChildProcessError:
            end = None
        self.watch.stop()
        code = self.daemon.stop()
        if end is None:
            return {"exit": code}
        return {"exit": code, "seconds": None, "write_bytes": end["write_bytes"] - before["write_bytes"],
                "cancelled_write_bytes": end["cancelled_write_bytes"] - before["cancelled_write_bytes"],
                "wchar": end["wchar"] - before["wchar"]}

    def broker_signal(self, sig):
        os.kill(self.broker.proc.pid, sig)

    def finish(self, keep_spool=False):
        if self.sub:
            self.sub.stop()
        emulated = self.emulators.stop()
        if self.broker.proc:
            try:
                self.broker_signal(signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.broker.stop()
        if not keep_spool:
            shutil.rmtree(self.spool, ignore_errors=True)
        return emulated


def disk(args):
    out = {"spool_filesystem": None, "scenarios": {}}
    for name in args.scenarios:
        rig = Rig(args, 8, 1_000_000, track_tcp=True)
        out["spool_filesystem"] = rig.fs
        rig.require_streaming(8 * bl.PERIODIC)
        time.sleep(args.settle)
        start = rig.watch.sample("window")
        r = {"startup": {k: start[k] for k in ("write_bytes", "cancelled_write_bytes", "wchar", "sequences_writes",
                                               "cursor_writes")},
             "startup_seconds": start["t"] - rig.watch.samples[0]["t"]}
        r["startup"]["file_wchar"] = start["wchar"] - start["tcp"] - start["log"]
        if name == "outage":
            rig.broker.stop()
        elif name == "stalled":
            rig.broker_signal(signal.SIGSTOP)
        if name != "steady":
            time.sleep(args.transition)
            start = rig.watch.sample("window")
        time.sleep(args.seconds)
        end = rig.watch.sample("end")
        r["window"] = io_window(start, end)
        r["stats_before"], r["stats_after"] = start["stats"], end["stats"]
        r["spool_bytes_end"], r["segments_end"] = end["spool_bytes"], end["segments"]
        if name == "outage":
            # The broker back: the replay, until the spool is empty again.
            rig.broker.start()
            a = rig.watch.sample("back")
            drained = bl.wait_for(lambda: (rig.watch.stats or {}).get("pending", 1) == 0 and rig.watch.stats["at"] > a["t"],
                               120, 0.2)
            time.sleep(args.stats_interval + 1)
            r["replay"] = io_window(a, rig.watch.sample("replayed"))
            r["replay"]["drained"] = drained
            again = [t for t in rig.watch.connects if t > a["t"]]
            r["replay"]["reconnected_after_s"] = again[0] - a["t"] if again else None
        elif name == "stalled":
            rig.broker_signal(signal.SIGCONT)
        r["stop"] = rig.stop_daemon()
        rig.finish()
        out["scenarios"][name] = r
        w = r["window"]
        log(f"  {name:8}: start-up {r['startup']['write_bytes'] / 1024:.0f} KiB written ({r['startup']['sequences_writes']} "
            f"sequences, {r['startup']['cursor_writes']} cursor writes); window {w['seconds']:.0f} s: write_bytes "
            f"{w['write_bytes']} B = {mb(w['write_bytes_per_hour']):.2f} MiB/h (cancelled {mb(w['cancelled_write_bytes_per_hour']):.2f}), "
            f"file wchar ≈ {mb(w['file_wchar_per_hour']):.2f} MiB/h, socket {mb(w['tcp_per_hour']):.1f} MiB/h, "
            f"sequences {w['sequences_writes']}, cursor {w['cursor_writes']}, spool {mb(r['spool_bytes_end']):.1f} MiB; "
            f"stop {r['stop'].get('write_bytes', 0) / 1024:.0f} KiB")
        if "replay" in r:
            p = r["replay"]
            log(f"            the broker back: reconnected after {p['reconnected_after_s'] or 0:.1f} s (backoff), spool "
                f"empty after {p['seconds']:.1f} s; meanwhile write_bytes {p['write_bytes']} B, "
                f"cancelled {p['cancelled_write_bytes']} B, cursor {p['cursor_writes']}")
    out.update(settle=args.settle, seconds=args.seconds, transition=args.transition)
    return out


# MARK: - memory

def memory_summary(watch, a, b, lifetime_hwm):
    """RSS at start (1 s after exec), the lifetime peak, the peak and largest anonymous memory
    within [a, b] (VmHWM was reset at a), and at the end."""
    samples = watch.samples
    t0 = samples[0]["t"]
    at_1s = next((s for s in samples if s["t"] - t0 >= 1.0), samples[-1])
    inside = watch.between(a, b) or [b]
    # VmHWM is kept from the kernel's RSS counters, which are per-CPU and approximate: a sampled
    # VmRSS can exceed it by a few hundred kB. The peak is the larger of the two.
    sampled = max(s["rss_kb"] for s in inside)
    scenario = max(b["hwm_kb"], sampled)
    return {"rss_start_kb": at_1s["rss_kb"], "hwm_lifetime_kb": max(lifetime_hwm, scenario, max(s["rss_kb"] for s in samples)),
            "hwm_scenario_kb": scenario, "vmhwm_end_kb": b["hwm_kb"], "rss_max_sampled_kb": sampled,
            # Once the start-up code is released (about 5 s after start), sampled every 0.25 s.
            "rss_max_after_release_kb": max((s["rss_kb"] for s in inside
                                             if watch.released_at and s["t"] >= watch.released_at + 0.3), default=None),
            "anon_max_kb": max(s["anon_kb"] for s in inside), "rss_end_kb": b["rss_kb"], "anon_end_kb": b["anon_kb"],
            "seconds": b["t"] - a["t"]}


def memory_line(name, m, extra=""):
    limit = "OK" if m["hwm_lifetime_kb"] < 16 * 1024 else "OVER 16 MB"
    log(f"  {name:22}: RSS at 1 s {m['rss_start_kb'] / 1024:.1f} MB, peak {m['hwm_lifetime_kb'] / 1024:.1f} MB "
        f"(in the scenario {m['hwm_scenario_kb'] / 1024:.1f}; once start-up code was released "
        f"{(m['rss_max_after_release_kb'] or 0) / 1024:.1f}), end {m['rss_end_kb'] / 1024:.1f} MB, anonymous ≤ "
        f"{m['anon_max_kb'] / 1024:.1f} MB [{limit}]{extra}")


def settle_and_reset(rig, seconds=None):
    """Past the start-up code release (about 5 s; or `seconds` after start): returns the lifetime
    peak so far and a sample just after resetting VmHWM."""
    if seconds is None:
        bl.wait_for(lambda: rig.watch.released_at is not None, 15)
        time.sleep(0.5)
    else:
        bl.wait_for(lambda: time.monotonic() - rig.daemon.started >= seconds, seconds + 1)
    before = rig.watch.sample("before reset")
    rig.watch.reset_peak()
    return before["hwm_kb"], rig.watch.sample("scenario")


def flood(args):
    out = {}
    for label, limit in (("flood_limit 2 (default)", None), ("flood_limit 0 (off)", 0)):
        rig = Rig(args, 1, args.flood_interval_us, flood_limit=limit, subscriber="mosquitto_sub",
                  extra_tag="[tag.sensors.temperature]\nperiod_ms = 1000\n")
        sent0 = time.monotonic()
        rig.require_streaming(1)
        lifetime, a = settle_and_reset(rig)
        time.sleep(max(0.0, args.flood_seconds - (time.monotonic() - sent0)))
        b = rig.watch.sample("end")
        m = memory_summary(rig.watch, a, b, lifetime)
        rig.stop_daemon()
        rig.sub.wait_quiet(1.0, 10)
        emulated = rig.finish()
        stats = rig.sub.stats or {}
        temperature = (((stats.get("tags") or {}).get("t1") or {}).get("sensors") or {}).get("temperature") or {}
        m.update(notifications=emulated.get("notifications"), seconds_flooded=time.monotonic() - sent0,
                 readings_delivered=rig.sub.unique(), rate_limited=temperature.get("rate_limited"),
                 notifications_counted=temperature.get("notifications"))
        m["notifications_per_s"] = (m["notifications"] or 0) / m["seconds_flooded"]
        out[label] = m
        memory_line("flood, " + label, m, f"; {m['notifications_per_s']:.0f} notifications/s sent, "
                    f"{m['readings_delivered']} readings delivered, rate_limited {m['rate_limited']}")
    return out


def stalled(args):
    rig = Rig(args, 8, args.stalled_interval_us, spool_max_mb=args.stalled_max_mb, flood_limit=0,
              subscriber="mosquitto_sub")
    rig.require_streaming(8 * bl.PERIODIC)
    lifetime, a = settle_and_reset(rig)
    rig.broker_signal(signal.SIGSTOP)
    time.sleep(args.stalled_seconds)
    b = rig.watch.sample("end")
    m = memory_summary(rig.watch, a, b, lifetime)
    rig.broker_signal(signal.SIGCONT)
    rig.stop_daemon()
    rig.finish()
    m.update(stats_end=b["stats"], spool_bytes_end=b["spool_bytes"], max_mb=args.stalled_max_mb,
             interval_us=args.stalled_interval_us)
    s = b["stats"] or {}
    memory_line("stalled broker", m, f"; spool {mb(b['spool_bytes']):.1f} MiB on disk, {s.get('pending')} pending, "
                f"{s.get('dropped')} dropped by the {args.stalled_max_mb} MB bound")
    return m


def replay(args):
    # Prefill: no broker at all, 8 tags as fast as the emulator goes, a 10 GB bound.
    rig = Rig(args, 8, args.prefill_interval_us, spool_max_mb=10240, flood_limit=0, subscriber=None, broker=False)
    lifetime, a = settle_and_reset(rig, 2.0)
    time.sleep(args.prefill_seconds)
    b = rig.watch.sample("prefilled")
    prefill = memory_summary(rig.watch, a, b, lifetime)
    prefill.update(io=io_window(a, b), stats=b["stats"], seconds=b["t"] - rig.watch.samples[0]["t"])
    prefill["stop"] = rig.stop_daemon()
    rig.emulators.stop()
    spooled, segments = spool_size(rig.spool)
    prefill.update(spool_bytes=spooled, segments=segments)
    memory_line("prefill (no broker)", prefill, f"; {mb(spooled):.0f} MiB in {segments} segments, "
                f"{(b['stats'] or {}).get('pending')} readings, write_bytes {mb(prefill['io']['write_bytes_per_hour']) / 3600:.1f} MiB/s, "
                f"sequences rewritten {prefill['io']['sequences_writes']} times")
    # Out of the page cache (these files only), so the replay reads them from the disk as it
    # would after a long outage.
    os.sync()
    for name in os.listdir(rig.spool):
        fd = os.open(os.path.join(rig.spool, name), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    # The broker back, a new daemon on the same spool, 8 tags at 1 s: until the spool is empty.
    rig.broker.start()
    rig.emulators = bl.Emulators(args.binary, rig.work, 8, 1_000_000)
    rig.emulators.wait_ready()
    rig.start_daemon()
    t0 = rig.daemon.started
    lifetime, a = settle_and_reset(rig, 1.0)
    drained = bl.wait_for(lambda: (rig.watch.stats or {}).get("pending", 1) == 0, args.replay_limit, 0.5)
    b = rig.watch.sample("replayed")
    m = memory_summary(rig.watch, a, b, lifetime)
    # I/O from exec: opening the spool reads (checks) every segment before connecting.
    m.update(drained=drained, stats_end=b["stats"], spool_bytes_end=b["spool_bytes"],
             io=io_window(rig.watch.samples[0], b))
    m["waiting_at_open"] = rig.watch.waiting
    connected = rig.watch.connected_at or t0
    m["replay_seconds"] = (rig.watch.stats or {}).get("at", b["t"]) - connected
    m["open_seconds"] = connected - t0  # exec → connected: opening (scanning) the spool, mostly
    rig.stop_daemon()
    rig.finish()
    rate = (m["waiting_at_open"] or 0) / m["replay_seconds"]
    memory_line("replay of the spool", m, f"; {m['waiting_at_open']} messages waiting at open, "
                f"connected {m['open_seconds']:.1f} s after exec, {'all' if drained else 'NOT all'} replayed within "
                f"{m['replay_seconds']:.0f} s of connecting "
                f"(≈ {rate:.0f} readings/s), read {mb(b['rchar']):.0f} MiB ({mb(b['read_bytes']):.0f} MiB from the disk) since exec")
    return {"prefill": prefill, "replay": m, "prefill_interval_us": args.prefill_interval_us}


def files(args):
    out = {}
    for label in ("empty spool directory", "junk in the spool directory"):
        work_spool, kind = spool = spool_directory(args.spool_parent)
        planted = []
        if label.startswith("junk"):
            def plant(name, size, how):
                path = os.path.join(work_spool, name)
                with open(path, "wb") as f:
                    if how == "sparse":
                        f.truncate(size)
                    else:
                        block = os.urandom(min(size, MB)) if how == "garbage" else b"\0" * MB
                        for _ in range(max(1, size // MB)):
                            f.write(block)
                planted.append({"name": name, "bytes": size, "kind": how})
            # Scaled down, still larger than a segment may be (1 MB), as at full size.
            scaled = lambda n: max(2 * MB, int(n * args.junk_scale) // MB * MB)  # noqa: E731
            plant("0000000000000001.spool", scaled(300 * MB), "sparse")
            plant("0000000000000002.spool", scaled(20 * MB), "garbage")
            plant("0000000000000003.spool", MB, "garbage")  # the largest a segment may be: read and repaired
            plant("big-file.bin", scaled(200 * MB), "zeros")
            os.sync()
        rig = Rig(args, 8, 1_000_000, subscriber="paho", spool=spool)
        rig.require_streaming(8 * bl.PERIODIC)
        lifetime, a = settle_and_reset(rig, 1.0)
        bl.wait_for(lambda: time.monotonic() - rig.daemon.started >= args.files_seconds, args.files_seconds + 1)
        b = rig.watch.sample("end")
        m = memory_summary(rig.watch, rig.watch.samples[0], b, lifetime)
        m["hwm_scenario_kb"] = m["hwm_lifetime_kb"]
        stop = rig.stop_daemon()
        m.update(planted=planted, left=sorted((n, os.path.getsize(os.path.join(rig.spool, n)))
                                              for n in os.listdir(rig.spool)),
                 log=[line for line in open(rig.daemon.log_path, errors="replace") if "spool" in line.lower()][:20],
                 delivered=rig.sub.unique(), exit=stop.get("exit"))
        rig.finish()
        out[label] = m
        memory_line(label, m, f"; {m['delivered']} readings delivered; left: "
                    + ", ".join(f"{n} {s / MB:.1f} MiB" for n, s in m["left"] if s > 4096 or n.endswith(".spool")))
    return out


def memory(args):
    out = {}
    for name in args.scenarios:
        out[name] = globals()[name](args)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", required=True)
    p.add_argument("--out", help="write the results here as JSON")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--spool-parent", default="/var/tmp", help="the spool directories go here (a disk, not tmpfs)")
    common.add_argument("--stats-interval", type=int, default=2,
                        help="the daemon's stats_interval_s (its stats line is read from its log, a pipe)")
    sub = p.add_subparsers(dest="what", required=True)
    d = sub.add_parser("disk", parents=[common])
    d.add_argument("--seconds", type=float, default=90, help="each window")
    d.add_argument("--settle", type=float, default=10, help="from every sensor streaming to the steady window")
    d.add_argument("--transition", type=float, default=5, help="from the broker stopped or SIGSTOPped to the window")
    d.add_argument("scenarios", nargs="*", default=["steady", "outage", "stalled"])
    m = sub.add_parser("memory", parents=[common])
    m.add_argument("--flood-seconds", type=float, default=30)
    m.add_argument("--flood-interval-us", type=int, default=500)
    m.add_argument("--stalled-seconds", type=float, default=90)
    m.add_argument("--stalled-interval-us", type=int, default=10000)
    m.add_argument("--stalled-max-mb", type=int, default=50)
    m.add_argument("--prefill-seconds", type=float, default=60)
    m.add_argument("--prefill-interval-us", type=int, default=1000)
    m.add_argument("--replay-limit", type=float, default=240, help="most seconds to wait for the replay")
    m.add_argument("--files-seconds", type=float, default=25)
    m.add_argument("--junk-scale", type=float, default=1.0,
                   help="files: the planted junk's sizes (300 MB sparse, 20 MB garbage, 200 MB zeros) times this")
    m.add_argument("scenarios", nargs="*", default=["flood", "stalled", "replay", "files"])
    args = p.parse_args()
    result = {"machine": bl.machine(), "what": args.what, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                       cwd=os.path.dirname(__file__)).stdout.strip()}
    result.update(globals()[args.what](args))
    bl.emit(result, args.out)


if __name__ == "__main__":
    main()
