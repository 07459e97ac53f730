"""Accelerated endurance run of the daemon (issue #7): N emulated tags streaming every sensor at
100 ms (10x the usual 1 s), random link drops every few seconds, one silent tag, malformed PDUs,
the broker restarted every minute, and the daemon itself stopped and killed: a clean restart
during a broker outage (--restart-every), and SIGKILLs (--kill-every), every second one during a
broker outage (--kill-outage-every). The daemon faults happen in the first 60% of the run
(--quiet-tail), so the last incarnation runs long enough for memory to be measured. The defaults
fit the run: ten minutes with one restart and two kills; `--minutes 2` (CI) one restart and two
kills in the first 72 s; `--long` (two hours) a restart and a kill every 10 minutes for 72 minutes.

Each reading belongs to the daemon incarnation that numbered it, found from its `time` field
(when the daemon received the notification) against the incarnations' start times; spooled
readings and QoS 1 resends that a later incarnation delivers count where they were numbered. The
incarnations form runs of `seq`: a clean stop continues a run (the next incarnation goes on from
the exact next number), a SIGKILL ends it (the next one goes on from a block reserved ahead). Where
each run starts is read from the daemon's `sequences` file in the spool directory while the
daemon is down (0 for the first run). After each restart or kill the soak waits (120 s at
most) until every streaming tag's readings of the new incarnation arrive.

Pass when:
  * within every run, per tag and sensor, every number from the run's start to the highest
    delivered arrived (a gap = a loss; duplicates are allowed: QoS 1 is at least once), and the
    spool bound was never reached (dropped = 0 in every stats message);
  * across every clean restart nothing was lost: the stopped incarnation delivered every number
    below the one its successor starts from, and its successor started from exactly that;
  * across every SIGKILL numbers only went forward (the new run starts above every number the
    killed one delivered, by at most the 36,000 reserve plus the lost tail), and the tail lost
    with the killed process is short: per sensor, kill time minus the `time` of the killed run's
    last delivered reading, at most --kill-tail-limit (2.5 s) for every sensor of a tag that was
    streaming: not silent, and connected without a link event for the 3 s before the kill (the
    emulator logs each connection and disconnection; a tag whose link dropped just before the
    kill has an old last reading for a legitimate reason). The maximum and its count estimate
    (the sensor's rate x the tail, which includes up to one interval of phase: a sensor that lost
    nothing shows up to 100 ms) are reported per kill, with the sum of the estimates;
  * the last incarnation's own reading counter equals the readings it numbered;
  * every exit of the daemon was one the soak caused: clean stops (SIGTERM, during a restart and at
    the end) exited 0, killed ones by SIGKILL; it never exited on its own;
  * in the longest incarnation (the last one, by the quiet tail), from its minute 2 (its first
    third when shorter) to its end, resident memory and descriptors are flat: the least-squares
    slope of anonymous memory under --rss-slope-kb-per-min (RSS reported too); no more
    descriptors open in its last minute (last third when shorter) than at the most in its first
    half, and when that window is 4 minutes or more their slope under 0.5 per minute.

Each gap is reported with when the readings around it were made, and whether the broker was
stopped then for a daemon stop or kill: readings in flight (unacknowledged) at that moment are
lost with that daemon if it keeps them only in libmosquitto's memory. --known-in-flight-loss
reports those without failing (for a daemon that does; every other loss still fails).

Output: a summary line, and the whole result as JSON (--out).
"""

import argparse
import json
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib as bl  # noqa: E402

# Numbers the daemon reserves ahead per sensor (Sources/Relay/SequenceStore.swift): after a
# SIGKILL a run goes on less than this above the killed run's last number.
RESERVE = 36_000
# A tag counts as streaming at a kill when connected without a link event for this long before.
STREAMING_WINDOW = 3.0


def read_sequences(path):
    """The daemon's `sequences` file: ("clean"|"running", {"<tag> <sensor>": next}), or None."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    head = lines[0].split() if lines else []
    if len(head) != 3 or head[0] != "collectord-sequences":
        return None
    values = {}
    for line in lines[1:]:
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            values[parts[0] + " " + parts[1]] = int(parts[2])
    return head[2], values


def streaming_at_kill(links, address, kill_at):
    """Whether the tag at `address` was streaming at a kill: connected, with no link event in the
    STREAMING_WINDOW seconds before it (per the emulator's log)."""
    return address is not None and links.connected_throughout(address, kill_at - STREAMING_WINDOW, kill_at)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", required=True)
    p.add_argument("--minutes", type=float, help="length of the run (default 10; 120 with --long)")
    p.add_argument("--long", action="store_true", help="the two-hour run with every fault (--minutes 120)")
    p.add_argument("--tags", type=int, default=8)
    p.add_argument("--interval-ms", type=int, default=100)
    p.add_argument("--drop-every", type=float, default=3, help="mean seconds between random link drops")
    p.add_argument("--malformed-every", type=float, default=2, help="mean seconds between malformed PDUs")
    p.add_argument("--silent-tags", type=int, default=1)
    p.add_argument("--broker-every", type=float, default=60, help="seconds between broker restarts")
    p.add_argument("--broker-down", type=float, default=2, help="seconds the broker stays down")
    p.add_argument("--restart-every", type=float,
                   help="seconds between clean daemon restarts during a broker outage (0: none; default: half the "
                        "faulty part of the run, at most 600)")
    p.add_argument("--kill-every", type=float,
                   help="seconds between SIGKILLs of the daemon, the first at half of it (0: none; default as "
                        "--restart-every)")
    p.add_argument("--kill-outage-every", type=int, default=2,
                   help="every n-th kill happens during a broker outage (0: never)")
    p.add_argument("--fault-outage", type=float, default=3,
                   help="seconds the broker is down before the daemon is stopped or killed in an outage")
    p.add_argument("--quiet-tail", type=float, default=0.4,
                   help="fraction of the run at its end without daemon restarts or kills")
    p.add_argument("--kill-tail-limit", type=float, default=2.5,
                   help="seconds of readings a kill may lose per streaming sensor")
    p.add_argument("--known-in-flight-loss", action="store_true",
                   help="report, without failing, readings lost because they were in flight (unacknowledged) when "
                        "the broker went down for a daemon stop or kill: the daemon before its spool keeps them")
    p.add_argument("--sample-every", type=float, default=5)
    p.add_argument("--rss-slope-kb-per-min", type=float, default=16, help="pass limit for anonymous memory")
    p.add_argument("--out")
    args = p.parse_args()
    if args.minutes is None:
        args.minutes = 120 if args.long else 10
    return args


class Accounting:
    """What account_runs finds over every topic: readings numbered (assigned) and delivered, lost
    within runs of `seq` (and how many of them were in flight at a fault's outage), lost across
    clean restarts, and per kill its tails and jumps."""

    def __init__(self, incarnations, wall0):
        self.lost_in_runs, self.missing, self.gaps, self.lost_in_flight = 0, {}, [], 0
        self.clean_lost, self.clean_breaks = 0, []
        self.assigned = self.delivered = 0
        self.kill_reports = {i: {"incarnation": i, "at_s": round(inc["kill_wall"] - wall0, 2), "tails": {}, "jumps": [],
                                 "excluded_tags": []}
                             for i, inc in enumerate(incarnations) if inc["end"] == "kill"}


class Memory:
    """What measure_longest_incarnation finds: the incarnation measured and its length, the late
    samples (from its minute 2) and their slopes, descriptors besides the links and link sockets."""
    measured = length = late = late_kinds = rss_slope = anon_slope = fd_slope = window = fd_max = most_links = None


class Soak:
    """One endurance run: the rig (broker, subscriber, emulated tags), the daemon's incarnations,
    the faults done to them, and what the run found."""

    def __init__(self, args):
        """The set-up: the schedule of daemon faults, the broker, the subscriber, the emulated tags
        (with link drops, malformed PDUs and silent tags) and the daemon's configuration."""
        self.args = args
        self.duration = args.minutes * 60
        self.quiet_from = self.duration * (1 - args.quiet_tail)
        self.restart_every = args.restart_every if args.restart_every is not None else min(600, self.quiet_from / 2)
        self.kill_every = args.kill_every if args.kill_every is not None else min(600, self.quiet_from / 2)

        self.work = bl.Workdir("cd-soak.")
        self.broker = bl.Broker(self.work).start()
        self.sub = bl.RunSubscriber(self.broker.port, client_id="soak-sub")
        self.links = bl.EmulatorLinks(self.work.file("emulate.log"))
        self.emulators = bl.Emulators(args.binary, self.work, args.tags, args.interval_ms * 1000,
                                      seed=random.randrange(1 << 30),
                                      extra=["--drop-every", str(args.drop_every),
                                             "--malformed-every", str(args.malformed_every),
                                             "--silent-tags", str(args.silent_tags)])
        self.emulators.wait_ready()
        self.config = bl.daemon_config(self.work, self.broker.port, args.tags, client_id="soak", stats_interval=5)
        self.addresses = {f"t{i + 1}": bl.address(bl.Emulators.FIRST, i) for i in range(args.tags)}
        self.silent = {f"t{i + 1}" for i in range(args.tags - args.silent_tags, args.tags)}
        self.streaming_tags = [t for t in self.addresses if t not in self.silent]
        self.sequences_path = os.path.join(self.work.file("spool"), "sequences")

        self.start, self.wall0 = time.monotonic(), time.time()
        self.incarnations = []  # dicts: start_wall, start_t, proc, end ("term"|"kill"|None), ...
        self.failures = []
        self.faults = []
        self.outages = []       # [from, to, "broker"|"term"|"kill"] in seconds from the start, each time the broker was down
        self.samples = []
        self.kinds = []         # (seconds, incarnation, descriptors by kind), beside samples
        # Set by wind_down.
        self.emulated = self.stats = self.numbered = self.snap = None

    # MARK: the daemon's incarnations

    def start_incarnation(self):
        inc = {"index": len(self.incarnations), "start_wall": time.time(), "start_t": time.monotonic() - self.start,
               "end": None}
        self.sub.started.append(inc["start_wall"])  # before the process exists: its readings come after
        inc["proc"] = bl.Daemon(self.args.binary, self.work, self.config, self.emulators).proc
        inc["pid"] = inc["proc"].pid
        self.incarnations.append(inc)
        return inc

    def stop_incarnation(self, kind):
        """Stops the running incarnation: SIGKILL for a "kill", else SIGTERM; checks its exit and
        the state its `sequences` file was left in."""
        inc = self.incarnations[-1]
        if kind == "kill":
            inc["kill_wall"] = time.time()
            code = inc["proc"].stop(signal.SIGKILL, timeout=60)
        else:
            code = inc["proc"].stop(signal.SIGTERM, timeout=60)
        inc["end"], inc["exit"] = kind, code
        inc["end_wall"], inc["end_t"] = time.time(), time.monotonic() - self.start
        # Read while no daemon runs: where the next incarnation's numbers start.
        inc["sequences"] = read_sequences(self.sequences_path)
        expected = -signal.SIGKILL if kind == "kill" else 0
        if code != expected:
            self.failures.append(f"incarnation {inc['index']} exited with {code} on "
                                 f"{'SIGKILL' if kind == 'kill' else 'SIGTERM'}")
        if inc["sequences"] is None:
            self.failures.append(f"no readable sequences file after incarnation {inc['index']}")
        elif inc["sequences"][0] != ("running" if kind == "kill" else "clean"):
            self.failures.append(f"the sequences file says {inc['sequences'][0]} after a {kind}")

    def daemon_fault(self, kind, outage):
        """A clean restart ("term") or a kill of the daemon, during a broker outage or not; then
        waits until every streaming tag's readings of the new incarnation arrive."""
        sub, streaming_tags = self.sub, self.streaming_tags
        t0 = time.monotonic()
        event = {"at_s": round(time.time() - self.wall0, 2), "kind": kind, "outage": outage,
                 "incarnation": len(self.incarnations) - 1}
        if kind == "kill" and not outage:
            # Kill while readings flow: every streaming tag's readings of the last second delivered.
            current = len(self.incarnations) - 1
            if not bl.wait_for(lambda: sub.flowing(current, streaming_tags, time.time() - 1), 60):
                self.failures.append(f"readings were not flowing before the kill at {event['at_s']} s")
        if outage:
            self.broker.stop()
            self.outages.append([round(time.time() - self.wall0, 2), None, kind])
            time.sleep(self.args.fault_outage)  # the outage itself: readings pile up in the spool
        self.stop_incarnation(kind)
        event["exit"] = self.incarnations[-1]["exit"]
        new = self.start_incarnation()
        if outage:
            # The new incarnation streams into its spool before the broker comes back.
            if not bl.wait_for(lambda: all(self.links.connected_since(self.addresses[t], new["start_wall"])
                                           for t in streaming_tags), 60):
                self.failures.append(f"the tags did not reconnect within 60 s after the {kind} at {event['at_s']} s")
            self.broker.start()
            self.outages[-1][1] = round(time.time() - self.wall0, 2)
        if not bl.wait_for(lambda: sub.flowing(new["index"], streaming_tags, new["start_wall"]), 120):
            self.failures.append(f"readings did not flow again within 120 s after the {kind} at {event['at_s']} s")
        event["readings_again_after_s"] = round(time.monotonic() - t0, 2)
        self.faults.append(event)
        print(f"  {(time.monotonic() - self.start) / 60:5.1f} min: {'killed' if kind == 'kill' else 'restarted'} "
              f"the daemon{' during a broker outage' if outage else ''} (exit {event['exit']}), readings again "
              f"after {event['readings_again_after_s']} s", file=sys.stderr)

    # MARK: the run

    def run(self):
        """The run itself, until --minutes have passed or the daemon exits on its own: a sample of
        the daemon every --sample-every seconds, the broker restarted every --broker-every
        seconds, and in the first quiet_from seconds the daemon restarted cleanly every
        restart_every seconds and killed every kill_every seconds (the first at half of it)."""
        args, start = self.args, self.start
        self.start_incarnation()
        end = start + self.duration
        next_sample = start
        next_broker = start + args.broker_every
        next_restart = start + self.restart_every if self.restart_every > 0 else float("inf")
        next_kill = start + self.kill_every / 2 if self.kill_every > 0 else float("inf")
        kills = 0
        print(f"soak: {args.tags} tags every {args.interval_ms} ms ({args.silent_tags} silent), drops every "
              f"~{args.drop_every:g} s, malformed PDUs every ~{args.malformed_every:g} s, broker restarted every "
              f"{args.broker_every:g} s, daemon restarted every {self.restart_every:g} s and killed every "
              f"{self.kill_every:g} s (in the first {self.quiet_from:g} s), for {args.minutes:g} min; work in "
              f"{self.work.path}", file=sys.stderr)
        while time.monotonic() < end:
            now = time.monotonic()
            inc = self.incarnations[-1]
            if not inc["proc"].alive():
                self.failures.append(f"the daemon exited on its own with {inc['proc'].p.returncode} after "
                                     f"{now - start:.0f} s")
                inc["end"], inc["exit"] = "exited", inc["proc"].p.returncode
                break
            if now >= next_sample:
                self.sample(inc, now)
                next_sample = max(next_sample + args.sample_every, now)
            if now >= next_broker:
                self.restart_broker()
                next_broker += args.broker_every
            if now >= next_restart:
                next_restart += self.restart_every
                if now - start < self.quiet_from:
                    self.daemon_fault("term", outage=True)
            if now >= next_kill:
                next_kill += self.kill_every
                if now - start < self.quiet_from:
                    kills += 1
                    self.daemon_fault("kill", outage=args.kill_outage_every > 0 and kills % args.kill_outage_every == 0)
            time.sleep(0.2)

    def sample(self, inc, now):
        """The running incarnation's memory, descriptors (by kind) and CPU; every 12th printed."""
        try:
            s = inc["proc"].sample()
            self.samples.append((now - self.start, s.rss_kb, s.fds, s.cpu, s.anon_kb, inc["index"]))
            self.kinds.append((now - self.start, inc["index"], bl.fd_kinds(inc["proc"].p.pid)))
            if len(self.samples) % 12 == 1:
                print(f"  {(now - self.start) / 60:5.1f} min: {self.sub.unique()} readings, RSS {s.rss_kb} kB, "
                      f"{s.fds} FDs, CPU {s.cpu:.1f} s, broker restarts {self.broker.restarts}, incarnation "
                      f"{inc['index']}", file=sys.stderr)
        except OSError:
            pass

    def restart_broker(self):
        down = time.time() - self.wall0
        self.broker.restart(self.args.broker_down)
        self.outages.append([round(down, 2), round(time.time() - self.wall0, 2), "broker"])

    # MARK: wind down

    def start_of(self, i, topic):
        """Where incarnation i numbered `topic` from: 0 for the first; else from the sequences file
        its predecessor left (0 for a sensor not in it); None when that file was unreadable."""
        if i == 0:
            return 0
        seqs = self.incarnations[i - 1].get("sequences")
        if seqs is None:
            return None
        return seqs[1].get(bl.reading_key(topic), 0)

    def last_numbered(self):
        """The readings the last incarnation numbered, and those of them delivered."""
        last = self.incarnations[-1]
        snap = self.sub.snapshot()
        numbered = delivered = 0
        for (topic, i), (intervals, n, *_) in snap.items():
            if i == last["index"]:
                s = self.start_of(i, topic)
                numbered += intervals[-1][1] + 1 - (s if s is not None else intervals[0][0])
                delivered += n
        return numbered, delivered

    def drained(self):
        """Whether the last incarnation's stats say nothing is pending and it counted as many
        readings as it numbered, all delivered."""
        stats = self.sub.stats_by_incarnation.get(self.incarnations[-1]["index"]) or {}
        numbered, delivered = self.last_numbered()
        return stats.get("spool", {}).get("pending") == 0 and stats.get("readings") == numbered == delivered

    def wind_down(self):
        """The tags stop; the spool drains to the (running) broker, perhaps after the daemon's
        reconnect backoff (150 s at most); the last incarnation is stopped cleanly, and what the
        subscriber has is taken."""
        self.emulated = self.emulators.stop()
        self.links.stop()
        last = self.incarnations[-1]
        if last["proc"].alive():
            bl.wait_for(self.drained, 150, step=1)
            self.stop_incarnation("term")
        self.sub.wait_quiet(quiet=1)
        self.stats = self.sub.stats_by_incarnation.get(last["index"]) or {}
        self.numbered, _ = self.last_numbered()
        self.snap = self.sub.snapshot()
        self.sub.stop()
        self.broker.stop()

    # MARK: accounting per run of `seq`

    def account_runs(self):
        """Every topic's runs of `seq`: losses within each, across clean restarts, the jumps at
        kills, and per kill the tail each streaming sensor lost."""
        acc = Accounting(self.incarnations, self.wall0)
        for topic in sorted({t for t, _ in self.snap}):
            runs = self.runs_of(topic, acc)
            for r in range(len(runs)):
                self.account_run(topic, runs, r, acc)
            self.measure_kill_tails(topic, acc)
        # The gaps nothing explains first.
        acc.gaps = [text for _, text in sorted(acc.gaps, key=lambda g: g[0])]
        return acc

    def runs_of(self, topic, acc):
        """The topic's runs of `seq`, [start, [interval lists], [incarnations]]: a new one at the
        first incarnation and after each kill. Across each clean restart, checks that the stopped
        incarnation delivered everything below where the next one started, and that the next one
        started there."""
        snap, incarnations = self.snap, self.incarnations
        runs = []
        for i, inc in enumerate(incarnations):
            part = snap.get((topic, i))
            begins = self.start_of(i, topic)
            if i == 0 or incarnations[i - 1]["end"] == "kill":
                runs.append([begins, [], []])
            elif begins is not None:
                # After a clean stop: the stopped incarnation delivered everything below `begins`,
                # and this one started there.
                prev = snap.get((topic, i - 1))
                prev_start = self.start_of(i - 1, topic)
                if prev is not None and prev_start is not None:
                    lost = begins - prev_start - prev[1]
                    if lost:
                        acc.clean_lost += lost
                        acc.clean_breaks.append(f"{topic}: incarnation {i - 1} numbered {prev_start}…{begins - 1}, "
                                                f"delivered {prev[1]}")
                if part is not None and part[0][0][0] != begins:
                    acc.clean_breaks.append(f"{topic}: incarnation {i} started at {part[0][0][0]}, not {begins}")
                    acc.clean_lost += max(0, part[0][0][0] - begins)
            runs[-1][2].append(i)
            if part is not None:
                runs[-1][1].append(part[0])
        return runs

    def account_run(self, topic, runs, r, acc):
        """Run r of the topic: numbers below its start (used twice), its gaps with when the
        readings around them were made, and, when a SIGKILL ended it, the jump to the next run."""
        snap, wall0 = self.snap, self.wall0
        begins, parts, members = runs[r]
        if not parts:
            return
        merged = bl.SeqRanges.merge(x for p in parts for x in p)
        if begins is None:
            begins = merged[0][0]
        top = merged[-1][1]
        count, first = bl.SeqRanges.missing(merged, begins, top)
        acc.assigned += top + 1 - begins
        acc.delivered += sum(hi + 1 - lo for lo, hi in merged)
        if merged[0][0] < begins:
            self.failures.append(f"{topic}: run {r} holds {merged[0][0]}, below its start {begins} (a number used twice)")
        if count:
            acc.lost_in_runs += count
            acc.missing[f"{topic} run {r}"] = first
            # When the readings around each gap were made (seconds from the start).
            timed = sorted(x for i in members if (topic, i) in snap for x in snap[(topic, i)][4] if x[0] >= begins)
            prev = (begins - 1, None)
            for lo, hi, lo_t, hi_t in timed:
                if lo > prev[0] + 1 and len(acc.gaps) < 40:
                    a, b = (prev[1] or lo_t) - wall0, lo_t - wall0
                    near = [o for o in self.outages if a - 1 <= o[0] <= b + 1]
                    # Readings in flight when the broker went down for a daemon stop or kill,
                    # lost with that daemon before the broker came back.
                    in_flight = bool(near) and near[0][2] != "broker"
                    if in_flight:
                        acc.lost_in_flight += lo - 1 - prev[0]
                    acc.gaps.append((in_flight, f"{topic} {prev[0] + 1}…{lo - 1} ({lo - 1 - prev[0]}), made between "
                                     f"{'?' if prev[1] is None else round(a, 2)} s and {round(b, 2)} s"
                                     + (f" (broker stopped at {near[0][0]} s" if near else "")
                                     + (f" for a daemon {'stop' if near[0][2] == 'term' else 'kill'})" if in_flight else
                                        ")" if near else "")))
                if hi > prev[0]:
                    prev = (hi, hi_t)
        # The SIGKILL that ended this run: the jump to the next run and the lost tail.
        killed = members[-1] if self.incarnations[members[-1]]["end"] == "kill" else None
        if killed is not None and r + 1 < len(runs):
            nxt = runs[r + 1]
            report = acc.kill_reports[killed]
            nxt_first = min((p[0][0] for p in nxt[1]), default=None)
            if nxt[0] is not None:
                jump = nxt[0] - top
                report["jumps"].append(jump)
                if jump <= 0 or (nxt_first is not None and nxt_first <= top):
                    self.failures.append(f"{topic}: after the kill at {report['at_s']} s numbers went back "
                                         f"({top} delivered, next run from {nxt[0]})")

    def measure_kill_tails(self, topic, acc):
        """Tails, per kill, for this topic: kill time minus the `time` of the killed run's last
        delivered reading, and its count estimate, for a tag streaming at the kill. Report-on-change
        sensors (battery, keys) publish when their value changes (and once after setup), not at an
        interval: no tail to measure."""
        tag = topic.split("/")[2]
        if topic.split("/")[-1] in ("battery", "keys"):
            return
        for i, report in acc.kill_reports.items():
            inc = self.incarnations[i]
            kill_at = inc["kill_wall"]
            if tag in self.silent or not streaming_at_kill(self.links, self.addresses.get(tag), kill_at):
                if tag not in self.silent and tag not in report["excluded_tags"]:
                    report["excluded_tags"].append(tag)
                continue
            part = self.snap.get((topic, i))
            last_time = part[3] if part else inc["start_wall"]
            tail = max(0.0, kill_at - last_time)
            if part and part[3] - part[2] > 1:
                rate = part[1] / (part[3] - part[2])
            else:
                rate = 1000 / self.args.interval_ms
            report["tails"][topic] = (round(tail, 3), round(rate * tail, 1))

    def summarise_kills(self, acc):
        """Per kill: the longest tail and its sensor, the estimated readings lost, the jumps; a
        failure for a tail over --kill-tail-limit, no streaming sensor, or a jump past the reserve."""
        kills_out = []
        for i, report in sorted(acc.kill_reports.items()):
            tails = report.pop("tails")
            worst = max(tails.items(), key=lambda kv: kv[1][0], default=(None, (None, None)))
            jumps = report.pop("jumps")
            report.update({
                "outage": any(f["kind"] == "kill" and f["incarnation"] == i and f["outage"] for f in self.faults),
                "streaming_sensors": len(tails), "max_tail_s": worst[1][0], "max_tail_sensor": worst[0],
                "max_tail_readings_estimate": worst[1][1],
                "lost_readings_estimate": round(sum(c for _, c in tails.values())),
                "jump_min_max": [min(jumps), max(jumps)] if jumps else None,
            })
            kills_out.append(report)
            if worst[1][0] is not None and worst[1][0] > self.args.kill_tail_limit:
                self.failures.append(f"the kill at {report['at_s']} s lost {worst[1][0]} s of {worst[0]} "
                                     f"(limit {self.args.kill_tail_limit} s)")
            if not tails:
                self.failures.append(f"no streaming sensor to measure at the kill at {report['at_s']} s")
            if jumps and max(jumps) > RESERVE + 100:
                self.failures.append(f"after the kill at {report['at_s']} s a sensor jumped {max(jumps)} "
                                     f"(reserve {RESERVE})")
        return kills_out

    # MARK: memory and descriptors, in the longest incarnation

    def measure_longest_incarnation(self):
        """From minute 2 (its first third when shorter) of the longest incarnation to its end: the
        slopes of RSS, anonymous memory and descriptors, and the descriptors besides the links."""
        m = Memory()
        for inc in self.incarnations:
            inc.setdefault("end_t", time.monotonic() - self.start)
        measured = m.measured = max(self.incarnations, key=lambda inc: (inc["end_t"] - inc["start_t"], inc["index"]))
        m.length = measured["end_t"] - measured["start_t"]
        settle = min(120, m.length / 3)
        own = [(t - measured["start_t"], rss, fds, anon) for t, rss, fds, _, anon, i in self.samples
               if i == measured["index"]]
        late = m.late = [(t / 60, rss, fds, anon) for t, rss, fds, anon in own if t >= settle]
        m.rss_slope = bl.slope([(mm, rss) for mm, rss, _, _ in late])
        # The leak criterion is on anonymous memory (heap, stacks): file pages of the binary that a
        # rarely taken path faults in for the first time also raise RSS, once.
        m.anon_slope = bl.slope([(mm, a) for mm, _, _, a in late])
        m.fd_slope = bl.slope([(mm, fds) for mm, _, fds, _ in late])
        m.window = late[-1][0] - late[0][0] if late else 0
        tail_window = min(1, m.window / 3)
        middle = (late[0][0] + late[-1][0]) / 2 if late else 0
        # A tag's link is one SOCK_SEQPACKET Unix socket here (the emulator's, as L2CAP's), so the links
        # move the count between the fixed descriptors and that plus one per tag, as they drop and come
        # back. The fixed ones (event loop, signals, broker and libmosquitto's socketpair, spool, log)
        # are judged by their ceiling; the links by their bound.
        own_kinds = [(t - measured["start_t"], k) for t, i, k in self.kinds if i == measured["index"]]
        m.late_kinds = [(t / 60, k) for t, k in own_kinds if t >= settle]
        fixed = [(mm, sum(k.values()) - k.get("unix-seqpacket", 0)) for mm, k in m.late_kinds]
        # A leaked descriptor stays: growth is the end's floor above the first half's ceiling. A
        # descriptor open for a moment (a state file being replaced, the broker's socket while
        # libmosquitto reconnects) shows in one sample, more often on a loaded machine, and not
        # in the next.
        m.fd_max = (max(f for mm, f in fixed if mm <= middle), min(f for mm, f in fixed if mm >= late[-1][0] - tail_window)) \
            if fixed else None
        m.most_links = max((k.get("unix-seqpacket", 0) for _, k in own_kinds), default=0)
        return m

    # MARK: the result

    def per_incarnation(self):
        out = []
        for inc in self.incarnations:
            mine = [s for s in self.samples if s[5] == inc["index"]]
            out.append({
                "index": inc["index"], "pid": inc["pid"], "from_s": round(inc["start_t"], 1), "to_s": round(inc["end_t"], 1),
                "end": inc["end"], "exit": inc.get("exit"),
                "rss_kb_first_last": [mine[0][1], mine[-1][1]] if mine else None,
                "anon_kb_first_last": [mine[0][4], mine[-1][4]] if mine else None,
                "fd_first_last": [mine[0][2], mine[-1][2]] if mine else None,
                "cpu_s": mine[-1][3] if mine else None})
        return out

    def daemon_counters(self):
        """Link counters and decode errors summed over the last stats message of each incarnation."""
        link = {}
        decode_errors = 0
        for st in self.sub.stats_by_incarnation.values():
            for t in st.get("tags", {}).values():
                for k, v in t.get("link", {}).items():
                    link[k] = link.get(k, 0) + v
                decode_errors += sum(s.get("decode_errors", 0) for s in t.get("sensors", {}).values())
        return link, decode_errors

    def result(self, acc, kills_out, m):
        args, late, late_kinds = self.args, m.late, m.late_kinds
        per_incarnation = self.per_incarnation()
        link, decode_errors = self.daemon_counters()
        reconnects = {name: t.get("reconnects") for name, t in self.stats.get("tags", {}).items()}
        return {
            "machine": bl.machine(), "minutes": args.minutes, "tags": args.tags, "interval_ms": args.interval_ms,
            "emulator": self.emulated, "broker_restarts": self.broker.restarts,
            "restart_every_s": self.restart_every, "kill_every_s": self.kill_every, "faults": self.faults,
            "clean_restarts": sum(1 for f in self.faults if f["kind"] == "term"), "kills": len(kills_out),
            "readings_assigned": acc.assigned, "readings_delivered": acc.delivered, "duplicates": self.sub.duplicates,
            "lost_within_runs": acc.lost_in_runs, "lost_in_flight_at_fault_outages": acc.lost_in_flight,
            "missing": acc.missing, "gaps": acc.gaps,
            "broker_outages_s": self.outages,
            "lost_across_clean_restarts": acc.clean_lost, "clean_restart_breaks": acc.clean_breaks[:20],
            "kill_tails": kills_out,
            "last_incarnation_readings_counter": self.stats.get("readings"), "last_incarnation_numbered": self.numbered,
            "spool_dropped_max": self.sub.max_dropped, "decode_errors": decode_errors, "link_counters": link,
            "reconnects_last_incarnation": reconnects, "incarnations": per_incarnation,
            "measured_incarnation": m.measured["index"],
            "measured_from_to_min": [round(late[0][0], 2), round(late[-1][0], 2)] if late else None,
            "rss_kb_first_last": [late[0][1], late[-1][1]] if late else None, "rss_slope_kb_per_min": m.rss_slope,
            "anon_kb_first_last": [late[0][3], late[-1][3]] if late else None, "anon_slope_kb_per_min": m.anon_slope,
            "fd_first_last": [late[0][2], late[-1][2]] if late else None, "fd_slope_per_min": m.fd_slope,
            "fixed_fd_max_first_half_min_last_part": m.fd_max, "most_link_sockets": m.most_links,
            "fd_kinds_first_last": [late_kinds[0][1], late_kinds[-1][1]] if late_kinds else None,
            "daemon_cpu_s": sum(x["cpu_s"] or 0 for x in per_incarnation),
            "samples": self.samples, "work": self.work.path,
        }

    def judge(self, acc, kills_out, m):
        """The pass criteria not already checked on the way (see the module's docstring)."""
        args, failures, late = self.args, self.failures, m.late
        clean_restarts = sum(1 for f in self.faults if f["kind"] == "term")
        if acc.missing and not (args.known_in_flight_loss and acc.lost_in_flight == acc.lost_in_runs):
            failures.append(f"readings missing within runs ({acc.lost_in_runs}): {'; '.join(acc.gaps[:6])}")
        if (acc.clean_lost or acc.clean_breaks) and not (args.known_in_flight_loss and acc.lost_in_flight == acc.lost_in_runs):
            failures.append(f"readings lost across clean restarts ({acc.clean_lost}): {'; '.join(acc.clean_breaks[:5])}")
        if self.stats.get("readings") != self.numbered:
            failures.append(f"the last incarnation counted {self.stats.get('readings')} readings, the subscriber "
                            f"accounts for {self.numbered}")
        if self.sub.max_dropped != 0:
            failures.append(f"spool dropped {self.sub.max_dropped} (its bound must not be reached at this load)")
        if len(late) >= 2 and m.anon_slope > args.rss_slope_kb_per_min:
            failures.append(f"anonymous memory grows {m.anon_slope:.1f} kB/min in incarnation {m.measured['index']} "
                            f"(limit {args.rss_slope_kb_per_min})")
        # Links and broker outages move the count by one or two, which in a short window makes a
        # large slope; a leak (one per drop, per reconnect or per broker restart) raises the ceiling.
        # So the ceiling decides, and the slope too on windows long enough for it to mean something.
        if len(late) >= 2 and m.fd_max and (m.fd_max[1] > m.fd_max[0] or (m.window >= 4 and m.fd_slope > 0.5)):
            failures.append(f"open descriptors grow: slope {m.fd_slope:+.3f}/min, at most {m.fd_max[0]} besides the "
                            f"links in the first half, at least {m.fd_max[1]} throughout the end ({m.late_kinds[0][1]} then "
                            f"{m.late_kinds[-1][1]})")
        if m.most_links > args.tags:
            failures.append(f"{m.most_links} link sockets open at once for {args.tags} tags")
        if len(late) < 2:
            failures.append(f"too few samples in the longest incarnation ({m.length:.0f} s) to measure memory")
        if self.emulated.get("drops", 0) == 0 or self.emulated.get("malformed", 0) == 0 or self.broker.restarts == 0:
            failures.append("the mischief did not happen (no drops, malformed PDUs or broker restarts)")
        if (self.restart_every > 0 and self.restart_every < self.quiet_from and clean_restarts == 0) or \
                (self.kill_every > 0 and self.kill_every / 2 < self.quiet_from and not kills_out):
            failures.append("the daemon faults did not happen (no clean restart or no kill)")

    def report(self, result, m):
        """The result as JSON (--out), the summary line and the failures on stderr."""
        text = json.dumps(result, indent=1)
        if self.args.out:
            with open(self.args.out, "w") as f:
                f.write(text + "\n")

        def fmt(v, spec):
            return "?" if v is None else format(v, spec)
        kills_out, emulated, fd_max = result["kill_tails"], self.emulated, m.fd_max
        tails = ", ".join(f"{k['max_tail_s']} s ≈ {k['max_tail_readings_estimate']} readings of one sensor, "
                          f"≈ {k['lost_readings_estimate']} in all{' (outage)' if k['outage'] else ''}" for k in kills_out)
        print(f"soak: {result['readings_delivered']} of {result['readings_assigned']} numbered readings delivered "
              f"({self.sub.duplicates} duplicates), {result['lost_within_runs']} lost within runs "
              f"({result['lost_in_flight_at_fault_outages']} in flight when the broker went down for a daemon "
              f"stop or kill), {result['lost_across_clean_restarts']} lost across {result['clean_restarts']} clean "
              f"restarts; {len(kills_out)} kills, tails {tails or 'none'}; {self.broker.restarts} broker restarts, "
              f"{emulated.get('drops')} link drops, {emulated.get('malformed')} malformed PDUs (counted: "
              f"{result['decode_errors']} decode errors, link {result['link_counters']}), spool dropped "
              f"{self.sub.max_dropped}; incarnation {m.measured['index']} "
              f"({m.length / 60:.1f} min): RSS {result['rss_kb_first_last']} kB (slope {fmt(m.rss_slope, '+.2f')} kB/min), "
              f"anonymous {result['anon_kb_first_last']} kB (slope {fmt(m.anon_slope, '+.2f')} kB/min), FDs "
              f"{result['fd_first_last']} (slope {fmt(m.fd_slope, '+.3f')}/min; besides the links at most "
              f"{fd_max[0] if fd_max else None} in the first half, at least {fd_max[1] if fd_max else None} throughout the end; at most "
              f"{m.most_links} link sockets; {result['fd_kinds_first_last']})", file=sys.stderr)
        for f in self.failures:
            print("soak: FAIL: " + f, file=sys.stderr)
        print("soak: " + ("passed" if not self.failures else "failed"), file=sys.stderr)


def main():
    soak = Soak(parse_args())
    soak.run()
    soak.wind_down()
    acc = soak.account_runs()
    kills = soak.summarise_kills(acc)
    memory = soak.measure_longest_incarnation()
    result = soak.result(acc, kills, memory)
    soak.judge(acc, kills, memory)
    result["failures"] = soak.failures
    result["passed"] = not soak.failures
    soak.report(result, memory)
    sys.exit(0 if not soak.failures else 1)


if __name__ == "__main__":
    main()
