"""Parts for measuring whole processes: a real mosquitto broker on a loopback port, the emulated
tags in their own process (`collectord emulate --socket-dir`), the daemon (`collectord run
--tag-sockets`), a subscriber that checks every reading's sequence number, and /proc sampling.

Used by the scripts beside it: measure.py (throughput, idle, start-up, reconnect, side by side),
durability.py (disk writes, bounded memory) and soak.py (endurance: also RunSubscriber, which
accounts per daemon incarnation, and EmulatorLinks, which follows the emulated tags' links).
Standard library plus paho-mqtt (requirements.txt).
"""

import atexit
import bisect
import calendar
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as mqtt

CLOCK_TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
# The cc2650 sensors with a period (temperature, humidity, barometer, light, movement): the
# reading topics an emulated tag streams.
PERIODIC = 5


def wait_for(condition, timeout, step=0.05):
    """Asks condition() every `step` seconds until it holds: True, or False when it still does
    not after `timeout` seconds (asked once more then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def address(first, n):
    """`first` (B0:B4:48:00:00:01) plus n in its last three bytes, as `collectord emulate` numbers tags."""
    b = [int(x, 16) for x in first.split(":")]
    low = (b[3] << 16 | b[4] << 8 | b[5]) + n
    b[3:] = [(low >> 16) & 0xFF, (low >> 8) & 0xFF, low & 0xFF]
    return ":".join("%02X" % x for x in b)


class Workdir:
    """A scratch directory with a short path (AF_UNIX paths stop at 107 bytes), under /tmp or
    $COLLECTORD_BENCH_TMP (smoke.py's own directory, removed when every mode passed)."""

    def __init__(self, prefix="cd-bench."):
        self.path = tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("COLLECTORD_BENCH_TMP", "/tmp"))

    def file(self, name):
        return os.path.join(self.path, name)


# MARK: - /proc

class ProcSample:
    __slots__ = ("at", "cpu", "rss_kb", "anon_kb", "hwm_kb", "voluntary", "involuntary", "fds")

    def __init__(self, pid):
        self.at = time.monotonic()
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # utime and stime are fields 14 and 15 of stat; counted for the whole thread group.
        self.cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICK
        self.rss_kb = self.anon_kb = self.hwm_kb = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    self.rss_kb = int(line.split()[1])
                elif line.startswith("RssAnon:"):
                    self.anon_kb = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    self.hwm_kb = int(line.split()[1])
        # Context switches are per thread: sum over the live ones.
        self.voluntary = self.involuntary = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/status") as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches:"):
                            self.voluntary += int(line.split()[1])
                        elif line.startswith("nonvoluntary_ctxt_switches:"):
                            self.involuntary += int(line.split()[1])
            except FileNotFoundError:
                pass
        self.fds = len(os.listdir(f"/proc/{pid}/fd"))


def fd_kinds(pid):
    """The process's open descriptors by kind: "unix-stream", "unix-seqpacket", "unix-dgram",
    "tcp", "socket" (another family), the anonymous inode's name ("[eventpoll]", "[signalfd]", …)
    or "file". Sockets are told apart by their inode in the process's /proc/PID/net tables."""
    unix_types = {"0001": "unix-stream", "0002": "unix-dgram", "0005": "unix-seqpacket"}
    tables = {}
    for name in ("unix", "tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if name == "unix" and len(parts) > 6:
                tables[parts[6]] = unix_types.get(parts[4], "unix")
            elif name != "unix" and len(parts) > 9:
                tables[parts[9]] = "tcp"
    kinds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            kind = tables.get(target[8:-1], "socket")
        elif target.startswith("anon_inode:"):
            kind = target[len("anon_inode:"):]
        else:
            kind = "file"
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def proc_io(pid):
    """/proc/PID/io as a dict of ints (rchar, wchar, syscr, syscw, read_bytes, write_bytes,
    cancelled_write_bytes), for the whole thread group."""
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(":") for line in f)}


def tcp_written(pid, port):
    """Bytes the process wrote so far to each of its TCP connections to 127.0.0.1:port, by local
    port: bytes acknowledged by the peer (less the SYN) plus those still in the send queue, from
    `ss -ti` (tcp_info). A connection closed between two calls takes its last bytes with it."""
    try:
        out = subprocess.run(["ss", "-tinpH", "state", "established", f"( dport = :{port} )"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    written = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if f"pid={pid}," not in line or i + 1 >= len(lines):
            continue
        fields = line.split()
        send_q, local = int(fields[1]), fields[2]
        info = dict(f.split(":", 1) for f in lines[i + 1].split() if f.startswith("bytes_acked:"))
        acked = int(info.get("bytes_acked", "1"))
        written[int(local.rsplit(":", 1)[1])] = max(0, acked - 1) + send_q
    return written


def rates(a, b):
    """Per-second figures between two samples of one process."""
    dt = b.at - a.at
    return {
        "seconds": dt,
        "cpu_s": b.cpu - a.cpu,
        "cpu_percent": 100 * (b.cpu - a.cpu) / dt,
        "wakeups_per_s": (b.voluntary - a.voluntary) / dt,
        "involuntary_per_s": (b.involuntary - a.involuntary) / dt,
        "rss_kb": b.rss_kb,
        "anon_kb": b.anon_kb,
        "peak_rss_kb": b.hwm_kb,
        "fds": b.fds,
    }


def slope(points):
    """Least-squares slope of (x, y) points."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


# MARK: - Processes

# Every process started here runs in its own session (a Ctrl-C meant for the script must not reach
# the daemon under measurement first), so nothing stops them when the script dies. A script that
# fails half-way (an exception, SIGINT, SIGTERM) kills what it started on its way out; an earlier
# version left a daemon, a broker and emulated tags streaming at 2,000 readings/s behind.
_running = []


def _kill_leftovers():
    for p in _running:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(_kill_leftovers)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class Process:
    """A child process in its own session, stderr to `log`. With `pipe_log`, stderr is a pipe that
    a thread of this process copies to `log` (as journald would read it): the child's own disk
    writes (/proc/PID/io) then do not include its log, and `log_bytes` counts what it wrote there;
    `on_line(bytes)` sees each line. `pass_fds`: descriptors the child inherits."""

    def __init__(self, argv, log, stdout=None, env=None, pipe_log=False, on_line=None, pass_fds=()):
        self.argv = argv
        self.log_path = log
        self.log = open(log, "ab")
        self.out_path = stdout
        self.log_bytes = 0
        self.on_line = on_line
        self.reader = None
        out = open(stdout, "wb") if stdout else subprocess.DEVNULL
        err = subprocess.PIPE if pipe_log else self.log
        self.p = subprocess.Popen(argv, stdout=out, stderr=err, env=env, start_new_session=True, pass_fds=pass_fds)
        self.started = time.monotonic()
        _running.append(self.p)
        if pipe_log:
            self.reader = threading.Thread(target=self._copy_log, daemon=True)
            self.reader.start()

    def _copy_log(self):
        for line in self.p.stderr:
            self.log_bytes += len(line)
            self.log.write(line)
            self.log.flush()
            if self.on_line:
                self.on_line(line)

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p.poll() is None

    def sample(self):
        return ProcSample(self.p.pid)

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        if self.reader:
            self.reader.join(5)
        if not (self.reader and self.reader.is_alive()):  # a child of the child may hold the pipe still
            self.log.close()
        return self.p.returncode

    def output(self):
        with open(self.out_path) as f:
            return f.read()


class Broker:
    """mosquitto on 127.0.0.1:port with persistence, so queued QoS 1 messages for a persistent
    subscriber survive a restart."""

    def __init__(self, work, port=None):
        self.work = work
        self.port = port or free_port()
        self.conf = work.file("mosquitto.conf")
        os.makedirs(work.file("mosquitto-db"), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                    f"persistence true\npersistence_location {work.file('mosquitto-db')}/\n"
                    "autosave_interval 0\nmax_queued_messages 0\nmax_inflight_messages 0\n"
                    # As root, mosquitto would switch to its own user, who cannot write here.
                    f"user {pwd.getpwuid(os.getuid()).pw_name}\n")
        self.proc = None
        self.restarts = 0

    def start(self):
        self.proc = Process(["mosquitto", "-c", self.conf], self.work.file("mosquitto.log"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("mosquitto did not start; see " + self.work.file("mosquitto.log"))

    def stop(self):
        if self.proc:
            self.proc.stop()
            self.proc = None

    def restart(self, down_seconds=0.0):
        self.stop()
        time.sleep(down_seconds)
        self.start()
        self.restarts += 1


class Emulators:
    """`collectord emulate --socket-dir`: N tags in one process."""

    FIRST = "B0:B4:48:00:00:01"

    def __init__(self, binary, work, tags, interval_us=None, seed=1, extra=()):
        self.directory = work.file("tags")
        os.makedirs(self.directory, exist_ok=True)
        argv = [binary, "emulate", "--socket-dir", self.directory, "--tags", str(tags),
                "--first-address", self.FIRST, "--seed", str(seed)]
        if interval_us:
            argv += ["--interval-us", str(interval_us)]
        argv += list(extra)
        self.tags = tags
        log = work.file("emulate.log")
        # The log is appended to by every emulator of the run: this one's lines start here.
        self.log_start = os.path.getsize(log) if os.path.exists(log) else 0
        self.proc = Process(argv, log, stdout=work.file("emulate.out"))

    def _connected(self):
        """The addresses this process has logged a connection to: their sockets were there."""
        with open(self.proc.log_path, "rb") as f:
            f.seek(self.log_start)
            lines = f.read().decode(errors="replace").splitlines()
        return {line.split()[1] for line in lines if line.startswith("<7>emulate: ") and line.endswith(" connected")}

    def wait_ready(self, timeout=10):
        """Waits until every tag has advertised (its socket appeared); returns when the first did.
        A tag's socket goes again as soon as a daemon connects, so a daemon already trying can
        take a tag between two looks at the directory (on a busy machine, often): each is counted
        once seen, or once the emulator has logged a connection to it."""
        addresses = [address(self.FIRST, i) for i in range(self.tags)]
        seen = set()
        first = None
        next_log = 0.0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for a in addresses:
                if a not in seen and os.path.exists(os.path.join(self.directory, a)):
                    seen.add(a)
                    if first is None:
                        first = time.monotonic()
            if len(seen) < len(addresses) and time.monotonic() >= next_log:
                next_log = time.monotonic() + 0.02
                for a in self._connected() - seen:
                    seen.add(a)
                    if first is None:
                        first = time.monotonic()
            if len(seen) == len(addresses):
                return first
            time.sleep(0.001)
        raise RuntimeError(f"emulated tags did not appear: {len(seen)} of {len(addresses)} seen in {timeout} s")

    def stop(self):
        self.proc.stop()
        try:
            return json.loads(self.proc.output().strip().splitlines()[-1])
        except (IndexError, ValueError):
            return {}


def daemon_config(work, broker_port, tags, client_id="bench", extra_tag="", stats_interval=0, spool_max_mb=None,
                  flood_limit=0, spool_path=None, qos=None, max_inflight=None, tag_tables=None):
    # The emulators notify every --interval-us whatever the configured periods, far faster than
    # the flood limit lets through: it is off here (flood_limit=None leaves the default), and the
    # measurements see every reading. `tag_tables`: the [[tag]] tables' lines instead of `tags`
    # emulated CC2650s (advertisements.py's devices that only advertise).
    lines = [f"stats_interval_s = {stats_interval}", "log_level = \"info\""]
    if flood_limit is not None:
        lines.append(f"flood_limit = {flood_limit}")
    lines += ["", "[mqtt]", f"brokers = [\"127.0.0.1:{broker_port}\"]", f"client_id = \"{client_id}\""]
    if qos is not None:
        lines.append(f"qos = {qos}")
    if max_inflight is not None:
        lines.append(f"max_inflight = {max_inflight}")
    lines += ["", "[spool]", f"path = \"{spool_path or work.file('spool')}\""]
    if spool_max_mb:
        lines.append(f"max_mb = {spool_max_mb}")
    lines += ["", "[homeassistant]", "discovery = false", ""]
    if tag_tables is not None:
        for table in tag_tables:
            lines += ["[[tag]]"] + table + [""]
    else:
        for i in range(tags):
            lines += ["[[tag]]", f"name = \"t{i + 1}\"", f"address = \"{address(Emulators.FIRST, i)}\"",
                      "model = \"cc2650\"", extra_tag, ""]
    path = work.file("collectord.conf")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


class Daemon:
    def __init__(self, binary, work, config, emulators, pipe_log=False, on_line=None):
        self.proc = Process([binary, "run", "--config", config, "--tag-sockets", emulators.directory],
                            work.file("collectord.log"), pipe_log=pipe_log, on_line=on_line)


# MARK: - The subscriber

def topic_kind(topic):
    """What a topic under the one-level prefix "collectord" carries (topic layout v2):
    "reading" for collectord/tags/<tag>/<sensor>, "availability" for collectord/availability/<tag>,
    "status", "events" or "stats" for collectord/daemon/<client>/<leaf>; None otherwise."""
    parts = topic.split("/")
    if len(parts) == 4 and parts[1] == "tags":
        return "reading"
    if len(parts) == 3 and parts[1] == "availability":
        return "availability"
    if len(parts) == 4 and parts[1] == "daemon" and parts[3] in ("status", "events", "stats"):
        return parts[3]
    return None


def wait_streaming(sub, topics, limit=30):
    """Until `topics` reading topics have had a reading at the Subscriber `sub`: False when they
    have not within `limit` seconds."""
    def enough():
        with sub.lock:
            return len(sub.first_reading_per_topic) >= topics
    return wait_for(enough, limit, step=0.01)


def reading_key(topic):
    """"<tag> <sensor>" of a reading's topic, as the sequences file keys it."""
    return " ".join(topic.split("/")[2:4])


class Subscriber:
    """Counts readings per (tag, sensor) topic and checks their sequence numbers: unique ones,
    duplicates (QoS 1 is at least once), and gaps below the highest seen. Also keeps retained
    status/availability, events and the daemon's stats messages, with arrival times. A persistent
    session (clean session off) so messages queued while it is away are delivered.

    Two transports: paho-mqtt in this process (reconnects across broker restarts: the soak), or
    mosquitto_sub (C) piped in, for rates a Python MQTT client cannot take (throughput)."""

    def __init__(self, port, client_id="bench-sub", prefix="collectord", transport="paho", log=None):
        self.lock = threading.Lock()
        self.seqs = {}           # topic -> set of seq
        self.duplicates = 0
        self.total = 0
        self.first_reading_at = None
        self.first_reading_per_topic = {}
        self.events = []         # (arrival monotonic, topic, payload)
        self.stats = None
        self.connected = threading.Event()
        self.subscribed = threading.Event()  # the broker acknowledged the subscription
        self.connects = 0
        self.prefix = prefix
        self.on_reading = None   # optional callback(arrival, topic)
        self.transport = transport
        if transport == "paho":
            self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False)
            self.c.on_connect = self._on_connect
            self.c.on_subscribe = lambda *_: self.subscribed.set()
            self.c.on_message = lambda client, userdata, msg: self._record(msg.topic, msg.payload)
            self.c.reconnect_delay_set(0.05, 0.5)
            self.c.connect_async("127.0.0.1", port, keepalive=30)
            self.c.loop_start()
            # Until the SUBACK: a reading published before it would be missed and counted lost.
            if not self.subscribed.wait(30):
                raise RuntimeError("subscriber could not connect and subscribe in 30 s")
        else:
            self.p = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-c",
                                       "-i", client_id, "-t", prefix + "/#", "-v"],
                                      stdout=subprocess.PIPE, stderr=open(log or os.devnull, "ab"), bufsize=1 << 20)
            _running.append(self.p)
            self.probe = f"{prefix}/bench-probe/{client_id}"
            self.reader = threading.Thread(target=self._read_pipe, daemon=True)
            self.reader.start()
            # mosquitto_sub says nothing on subscribing: a probe message published until it comes
            # back tells that it is (a fixed pause would be a guess on a loaded machine).
            self._wait_probe(port, 30)
            self.connected.set()

    def _wait_probe(self, port, limit):
        deadline = time.monotonic() + limit
        while not self.subscribed.is_set():
            if time.monotonic() > deadline or self.p.poll() is not None:
                raise RuntimeError(f"mosquitto_sub did not subscribe within {limit} s (exit {self.p.poll()})")
            subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-t", self.probe,
                            "-m", "probe"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=limit)
            self.subscribed.wait(0.2)

    def _on_connect(self, client, userdata, flags, reason, properties):
        if reason.is_failure:
            return
        self.connects += 1
        client.subscribe(self.prefix + "/#", qos=1)
        self.connected.set()

    def _read_pipe(self):
        for line in self.p.stdout:
            topic, _, payload = line.rstrip(b"\n").partition(b" ")
            topic = topic.decode()
            if topic == self.probe:
                self.subscribed.set()
                continue
            self._record(topic, payload)

    def _record(self, topic, payload):
        now = time.monotonic()
        kind = topic_kind(topic)
        if kind is None:
            return
        if kind != "reading":
            try:
                value = json.loads(payload) if payload[:1] == b"{" else payload.decode()
            except ValueError:
                value = payload
            with self.lock:
                if kind == "stats":
                    self.stats = value
                self.events.append((now, topic, value))
            return
        # Readings: only the sequence number is needed, found without parsing the whole payload.
        i = payload.find(b'"seq":') + 6
        seq = int(payload[i:payload.index(b",", i)])
        with self.lock:
            self.total += 1
            s = self.seqs.setdefault(topic, set())
            if seq in s:
                self.duplicates += 1
            else:
                s.add(seq)
            if self.first_reading_at is None:
                self.first_reading_at = now
            self.first_reading_per_topic.setdefault(topic, now)
        if self.on_reading:
            self.on_reading(now, topic)

    def unique(self):
        with self.lock:
            return sum(len(s) for s in self.seqs.values())

    def account(self):
        """Per topic: highest seq, how many distinct seqs arrived, and the missing ones."""
        with self.lock:
            missing = {}
            highest = 0
            for topic, s in self.seqs.items():
                top = max(s)
                highest += top + 1
                gaps = top + 1 - len(s)
                if gaps:
                    missing[topic] = sorted(set(range(top + 1)) - s)[:20]
            return {"topics": len(self.seqs), "unique": sum(len(s) for s in self.seqs.values()),
                    "expected": highest, "duplicates": self.duplicates, "received": self.total,
                    "missing": missing}

    def wait_quiet(self, quiet=2.0, limit=120):
        """Until no reading arrived for `quiet` seconds."""
        deadline = time.monotonic() + limit
        last = -1
        stable_since = time.monotonic()
        while time.monotonic() < deadline:
            n = self.total
            if n != last:
                last, stable_since = n, time.monotonic()
            elif time.monotonic() - stable_since >= quiet:
                return True
            time.sleep(0.1)
        return False

    def stop(self):
        if self.transport == "paho":
            self.c.loop_stop()
            self.c.disconnect()
        else:
            self.p.terminate()
            self.p.wait()


class SeqRanges:
    """A set of integers kept as sorted disjoint intervals [lo, hi]: a few intervals while numbers
    arrive mostly in order, so two hours of readings take kilobytes, not a set of millions. With
    each interval, the times given with its two ends (to say when the readings around a gap were
    made)."""

    __slots__ = ("lo", "hi", "lo_t", "hi_t", "n")

    def __init__(self):
        self.lo, self.hi, self.lo_t, self.hi_t, self.n = [], [], [], [], 0

    def add(self, x, t=None):
        """False when x was there already."""
        i = bisect.bisect_right(self.lo, x) - 1  # the interval starting at or below x
        if i >= 0 and x <= self.hi[i]:
            return False
        left = i >= 0 and self.hi[i] == x - 1
        right = i + 1 < len(self.lo) and self.lo[i + 1] == x + 1
        if left and right:
            self.hi[i], self.hi_t[i] = self.hi[i + 1], self.hi_t[i + 1]
            del self.lo[i + 1], self.hi[i + 1], self.lo_t[i + 1], self.hi_t[i + 1]
        elif left:
            self.hi[i], self.hi_t[i] = x, t
        elif right:
            self.lo[i + 1], self.lo_t[i + 1] = x, t
        else:
            self.lo.insert(i + 1, x)
            self.hi.insert(i + 1, x)
            self.lo_t.insert(i + 1, t)
            self.hi_t.insert(i + 1, t)
        self.n += 1
        return True

    def timed(self):
        """[(lo, hi, time of lo, time of hi)]."""
        return list(zip(self.lo, self.hi, self.lo_t, self.hi_t))

    def __len__(self):
        return self.n

    def min(self):
        return self.lo[0] if self.lo else None

    def max(self):
        return self.hi[-1] if self.hi else None

    def intervals(self):
        return list(zip(self.lo, self.hi))

    @staticmethod
    def union(parts):
        """The intervals of several sets together (merged where they touch or overlap)."""
        return SeqRanges.merge(iv for p in parts for iv in p.intervals())

    @staticmethod
    def merge(intervals):
        """(lo, hi) intervals as sorted disjoint [lo, hi] lists, merged where they touch or overlap."""
        out = []
        for lo, hi in sorted(intervals):
            if out and lo <= out[-1][1] + 1:
                out[-1][1] = max(out[-1][1], hi)
            else:
                out.append([lo, hi])
        return out

    @staticmethod
    def missing(intervals, start, end, limit=20):
        """How many of start…end (inclusive) the intervals lack, and the first `limit` of them."""
        count, first, at = 0, [], start
        for lo, hi in intervals:
            if hi < at:
                continue
            if lo > end:
                break
            if lo > at:
                count += lo - at
                first.extend(range(at, min(lo, at + limit - len(first))))
            at = max(at, hi + 1)
        if at <= end:
            count += end + 1 - at
            first.extend(range(at, min(end + 1, at + limit - len(first))))
        return count, first[:limit]


class RunSubscriber(Subscriber):
    """The soak's subscriber, for a daemon that is restarted and killed: each reading goes to the
    daemon incarnation that made it, by its `time` field (when the daemon received the
    notification, wall clock) against the incarnations' start times (`started`, which the caller
    extends before starting each one). So a reading spooled by one incarnation and sent by the
    next, or a QoS 1 resend arriving after a restart, is counted where it was numbered. Keeps, per
    (topic, incarnation): the sequence numbers (SeqRanges), the earliest and latest reading times;
    per tag and incarnation, the latest reading time (readings flowing again)."""

    def __init__(self, port, client_id="soak-sub", prefix="collectord"):
        self.started = []            # wall-clock start of each incarnation, ascending
        self.runs = {}               # (topic, incarnation) -> [SeqRanges, first time, last time]
        self.tag_latest = {}         # (tag, incarnation) -> latest reading time
        self.stats_by_incarnation = {}
        self.max_dropped = 0
        self._second = (None, 0)
        super().__init__(port, client_id=client_id, prefix=prefix)

    def incarnation(self, wall):
        return max(0, bisect.bisect_right(self.started, wall) - 1)

    def _time(self, text):
        # "2026-11-22T05:03:07.123Z": the whole seconds converted once per second.
        head = text[:19]
        if self._second[0] != head:
            self._second = (head, calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S")))
        return self._second[1] + int(text[20:23]) / 1000

    def _record(self, topic, payload):
        kind = topic_kind(topic)
        if kind is None:
            return
        if kind != "reading":
            super()._record(topic, payload)
            if kind == "stats" and isinstance(self.stats, dict):
                with self.lock:
                    s = self.stats
                    at = self._time(s.get("time", "")) if s.get("time") else time.time()
                    self.stats_by_incarnation[self.incarnation(at)] = s
                    self.max_dropped = max(self.max_dropped, s.get("spool", {}).get("dropped") or 0)
            return
        i = payload.find(b'"seq":') + 6
        seq = int(payload[i:payload.index(b",", i)])
        j = payload.find(b'"time":"') + 8
        at = self._time(payload[j:j + 24].decode())
        now = time.monotonic()
        with self.lock:
            self.total += 1
            inc = self.incarnation(at)
            r = self.runs.get((topic, inc))
            if r is None:
                r = self.runs[(topic, inc)] = [SeqRanges(), at, at]
            if r[0].add(seq, at):
                r[1] = min(r[1], at)
                r[2] = max(r[2], at)
            else:
                self.duplicates += 1
            key = (topic.split("/")[2], inc)  # the tag
            if at > self.tag_latest.get(key, 0):
                self.tag_latest[key] = at
            if self.first_reading_at is None:
                self.first_reading_at = now
        if self.on_reading:
            self.on_reading(now, topic)

    def unique(self):
        with self.lock:
            return sum(len(r[0]) for r in self.runs.values())

    def flowing(self, incarnation, tags, since):
        """Whether every one of `tags` has a reading of `incarnation` made at `since` or later."""
        with self.lock:
            return all(self.tag_latest.get((t, incarnation), 0) >= since for t in tags)

    def snapshot(self):
        with self.lock:
            return {k: (SeqRanges.union([r[0]]), len(r[0]), r[1], r[2], r[0].timed()) for k, r in self.runs.items()}


class EmulatorLinks:
    """Follows `collectord emulate`'s log (its `<7>emulate: <address> connected|disconnected`
    lines) from a thread, stamping each with the wall clock when read (within ~20 ms), so the soak
    knows which tags were streaming before a kill. `disconnected` is logged when the tag advertises
    again, shortly after the drop."""

    def __init__(self, log_path):
        self.path = log_path
        self.events = {}    # address -> [(wall, up)]
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self):
        while not os.path.exists(self.path) and not self.stopping:
            time.sleep(0.02)
        with open(self.path, "rb") as f:
            pending = b""
            while not self.stopping:
                chunk = f.read()
                if not chunk:
                    time.sleep(0.02)
                    continue
                now = time.time()
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    words = line.decode(errors="replace").split()
                    if len(words) == 3 and words[0].endswith("emulate:") and words[2] in ("connected", "disconnected"):
                        with self.lock:
                            self.events.setdefault(words[1], []).append((now, words[2] == "connected"))

    def connected_throughout(self, address, start, end):
        """Whether the tag's last link event before `start` was a connection and none came in
        start…end (wall clock)."""
        with self.lock:
            events = list(self.events.get(address, ()))
        before = [up for at, up in events if at < start]
        return bool(before) and before[-1] and not any(start <= at <= end for at, _ in events)

    def connected_since(self, address, since):
        with self.lock:
            events = list(self.events.get(address, ()))
        return bool(events) and events[-1][1] and events[-1][0] >= since

    def stop(self):
        self.stopping = True
        self.thread.join(1)


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpu": model, "cores": os.cpu_count(), "kernel": os.uname().release}


def emit(result, out=None):
    """Prints a measurement's result as JSON, and writes it to `out` too when given."""
    text = json.dumps(result, indent=1, default=str)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    print(text)
