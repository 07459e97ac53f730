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


def main():
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

    duration = args.minutes * 60
    quiet_from = duration * (1 - args.quiet_tail)
    restart_every = args.restart_every if args.restart_every is not None else min(600, quiet_from / 2)
    kill_every = args.kill_every if args.kill_every is not None else min(600, quiet_from / 2)

    work = bl.Workdir("cd-soak.")
    broker = bl.Broker(work).start()
    sub = bl.RunSubscriber(broker.port, client_id="soak-sub")
    links = bl.EmulatorLinks(work.file("emulate.log"))
    emulators = bl.Emulators(args.binary, work, args.tags, args.interval_ms * 1000, seed=random.randrange(1 << 30),
                             extra=["--drop-every", str(args.drop_every), "--malformed-every", str(args.malformed_every),
                                    "--silent-tags", str(args.silent_tags)])
    emulators.wait_ready()
    config = bl.daemon_config(work, broker.port, args.tags, client_id="soak", stats_interval=5)
    addresses = {f"t{i + 1}": bl.address(bl.Emulators.FIRST, i) for i in range(args.tags)}
    silent = {f"t{i + 1}" for i in range(args.tags - args.silent_tags, args.tags)}
    streaming_tags = [t for t in addresses if t not in silent]
    sequences_path = os.path.join(work.file("spool"), "sequences")

    start, wall0 = time.monotonic(), time.time()
    incarnations = []   # dicts: start_wall, start_t, proc, end ("term"|"kill"|None), ...
    failures = []
    faults = []
    outages = []        # [from, to, "broker"|"term"|"kill"] in seconds from the start, each time the broker was down
    samples = []
    kinds = []  # (seconds, incarnation, descriptors by kind), beside samples

    def begin():
        inc = {"index": len(incarnations), "start_wall": time.time(), "start_t": time.monotonic() - start, "end": None}
        sub.started.append(inc["start_wall"])  # before the process exists: its readings come after
        inc["proc"] = bl.Daemon(args.binary, work, config, emulators).proc
        inc["pid"] = inc["proc"].pid
        incarnations.append(inc)
        return inc

    def finish(kind):
        inc = incarnations[-1]
        if kind == "kill":
            inc["kill_wall"] = time.time()
            code = inc["proc"].stop(signal.SIGKILL, timeout=60)
        else:
            code = inc["proc"].stop(signal.SIGTERM, timeout=60)
        inc["end"], inc["exit"] = kind, code
        inc["end_wall"], inc["end_t"] = time.time(), time.monotonic() - start
        # Read while no daemon runs: where the next incarnation's numbers start.
        inc["sequences"] = read_sequences(sequences_path)
        expected = -signal.SIGKILL if kind == "kill" else 0
        if code != expected:
            failures.append(f"incarnation {inc['index']} exited with {code} on {'SIGKILL' if kind == 'kill' else 'SIGTERM'}")
        if inc["sequences"] is None:
            failures.append(f"no readable sequences file after incarnation {inc['index']}")
        elif inc["sequences"][0] != ("running" if kind == "kill" else "clean"):
            failures.append(f"the sequences file says {inc['sequences'][0]} after a {kind}")

    def daemon_fault(kind, outage):
        t0 = time.monotonic()
        event = {"at_s": round(time.time() - wall0, 2), "kind": kind, "outage": outage, "incarnation": len(incarnations) - 1}
        if kind == "kill" and not outage:
            # Kill while readings flow: every streaming tag's readings of the last second delivered.
            current = len(incarnations) - 1
            if not bl.wait_for(lambda: sub.flowing(current, streaming_tags, time.time() - 1), 60):
                failures.append(f"readings were not flowing before the kill at {event['at_s']} s")
        if outage:
            broker.stop()
            outages.append([round(time.time() - wall0, 2), None, kind])
            time.sleep(args.fault_outage)  # the outage itself: readings pile up in the spool
        finish(kind)
        event["exit"] = incarnations[-1]["exit"]
        new = begin()
        if outage:
            # The new incarnation streams into its spool before the broker comes back.
            if not bl.wait_for(lambda: all(links.connected_since(addresses[t], new["start_wall"]) for t in streaming_tags), 60):
                failures.append(f"the tags did not reconnect within 60 s after the {kind} at {event['at_s']} s")
            broker.start()
            outages[-1][1] = round(time.time() - wall0, 2)
        if not bl.wait_for(lambda: sub.flowing(new["index"], streaming_tags, new["start_wall"]), 120):
            failures.append(f"readings did not flow again within 120 s after the {kind} at {event['at_s']} s")
        event["readings_again_after_s"] = round(time.monotonic() - t0, 2)
        faults.append(event)
        print(f"  {(time.monotonic() - start) / 60:5.1f} min: {'killed' if kind == 'kill' else 'restarted'} the daemon"
              f"{' during a broker outage' if outage else ''} (exit {event['exit']}), readings again after "
              f"{event['readings_again_after_s']} s", file=sys.stderr)

    begin()
    end = start + duration
    next_sample = start
    next_broker = start + args.broker_every
    next_restart = start + restart_every if restart_every > 0 else float("inf")
    next_kill = start + kill_every / 2 if kill_every > 0 else float("inf")
    kills = 0
    print(f"soak: {args.tags} tags every {args.interval_ms} ms ({args.silent_tags} silent), drops every "
          f"~{args.drop_every:g} s, malformed PDUs every ~{args.malformed_every:g} s, broker restarted every "
          f"{args.broker_every:g} s, daemon restarted every {restart_every:g} s and killed every {kill_every:g} s "
          f"(in the first {quiet_from:g} s), for {args.minutes:g} min; work in {work.path}", file=sys.stderr)
    while time.monotonic() < end:
        now = time.monotonic()
        inc = incarnations[-1]
        if not inc["proc"].alive():
            failures.append(f"the daemon exited on its own with {inc['proc'].p.returncode} after {now - start:.0f} s")
            inc["end"], inc["exit"] = "exited", inc["proc"].p.returncode
            break
        if now >= next_sample:
            try:
                s = inc["proc"].sample()
                samples.append((now - start, s.rss_kb, s.fds, s.cpu, s.anon_kb, inc["index"]))
                kinds.append((now - start, inc["index"], bl.fd_kinds(inc["proc"].p.pid)))
                if len(samples) % 12 == 1:
                    print(f"  {(now - start) / 60:5.1f} min: {sub.unique()} readings, RSS {s.rss_kb} kB, {s.fds} FDs, "
                          f"CPU {s.cpu:.1f} s, broker restarts {broker.restarts}, incarnation {inc['index']}", file=sys.stderr)
            except OSError:
                pass
            next_sample = max(next_sample + args.sample_every, now)
        if now >= next_broker:
            down = time.time() - wall0
            broker.restart(args.broker_down)
            outages.append([round(down, 2), round(time.time() - wall0, 2), "broker"])
            next_broker += args.broker_every
        if now >= next_restart:
            next_restart += restart_every
            if now - start < quiet_from:
                daemon_fault("term", outage=True)
        if now >= next_kill:
            next_kill += kill_every
            if now - start < quiet_from:
                kills += 1
                daemon_fault("kill", outage=args.kill_outage_every > 0 and kills % args.kill_outage_every == 0)
        time.sleep(0.2)

    # Wind down: the tags stop; the spool drains to the (running) broker, perhaps after the
    # daemon's reconnect backoff; done when the last incarnation's stats say nothing is pending
    # and it counted as many readings as it numbered, all delivered.
    emulated = emulators.stop()
    links.stop()
    last = incarnations[-1]

    def start_of(i, topic):
        """Where incarnation i numbered `topic` from: 0 for the first; else from the sequences file
        its predecessor left (0 for a sensor not in it); None when that file was unreadable."""
        if i == 0:
            return 0
        seqs = incarnations[i - 1].get("sequences")
        if seqs is None:
            return None
        return seqs[1].get(bl.reading_key(topic), 0)

    def last_numbered():
        snap = sub.snapshot()
        numbered = delivered = 0
        for (topic, i), (intervals, n, *_) in snap.items():
            if i == last["index"]:
                s = start_of(i, topic)
                numbered += intervals[-1][1] + 1 - (s if s is not None else intervals[0][0])
                delivered += n
        return numbered, delivered

    def drained():
        stats = sub.stats_by_incarnation.get(last["index"]) or {}
        numbered, delivered = last_numbered()
        return stats.get("spool", {}).get("pending") == 0 and stats.get("readings") == numbered == delivered

    if last["proc"].alive():
        bl.wait_for(drained, 150, step=1)
        finish("term")
    sub.wait_quiet(quiet=1)
    stats = sub.stats_by_incarnation.get(last["index"]) or {}
    numbered, _ = last_numbered()
    snap = sub.snapshot()
    sub.stop()
    broker.stop()

    # MARK: accounting per run of `seq`
    topics = sorted({t for t, _ in snap})
    lost_in_runs, missing, gaps, lost_in_flight = 0, {}, [], 0
    clean_lost, clean_breaks = 0, []
    assigned = delivered = 0
    kill_reports = {i: {"incarnation": i, "at_s": round(inc["kill_wall"] - wall0, 2), "tails": {}, "jumps": [], "excluded_tags": []}
                    for i, inc in enumerate(incarnations) if inc["end"] == "kill"}
    for topic in topics:
        runs = []  # [start, [SeqRanges-like interval lists]]
        for i, inc in enumerate(incarnations):
            part = snap.get((topic, i))
            begins = start_of(i, topic)
            if i == 0 or incarnations[i - 1]["end"] == "kill":
                runs.append([begins, [], []])
            elif begins is not None:
                # After a clean stop: the stopped incarnation delivered everything below `begins`,
                # and this one started there.
                prev = snap.get((topic, i - 1))
                prev_start = start_of(i - 1, topic)
                if prev is not None and prev_start is not None:
                    lost = begins - prev_start - prev[1]
                    if lost:
                        clean_lost += lost
                        clean_breaks.append(f"{topic}: incarnation {i - 1} numbered {prev_start}…{begins - 1}, "
                                            f"delivered {prev[1]}")
                if part is not None and part[0][0][0] != begins:
                    clean_breaks.append(f"{topic}: incarnation {i} started at {part[0][0][0]}, not {begins}")
                    clean_lost += max(0, part[0][0][0] - begins)
            runs[-1][2].append(i)
            if part is not None:
                runs[-1][1].append(part[0])
        for r, (begins, parts, members) in enumerate(runs):
            if not parts:
                continue
            merged = bl.SeqRanges.merge(x for p in parts for x in p)
            if begins is None:
                begins = merged[0][0]
            top = merged[-1][1]
            count, first = bl.SeqRanges.missing(merged, begins, top)
            assigned += top + 1 - begins
            delivered += sum(hi + 1 - lo for lo, hi in merged)
            if merged[0][0] < begins:
                failures.append(f"{topic}: run {r} holds {merged[0][0]}, below its start {begins} (a number used twice)")
            if count:
                lost_in_runs += count
                missing[f"{topic} run {r}"] = first
                # When the readings around each gap were made (seconds from the start).
                timed = sorted(x for i in members if (topic, i) in snap for x in snap[(topic, i)][4] if x[0] >= begins)
                prev = (begins - 1, None)
                for lo, hi, lo_t, hi_t in timed:
                    if lo > prev[0] + 1 and len(gaps) < 40:
                        a, b = (prev[1] or lo_t) - wall0, lo_t - wall0
                        near = [o for o in outages if a - 1 <= o[0] <= b + 1]
                        # Readings in flight when the broker went down for a daemon stop or kill,
                        # lost with that daemon before the broker came back.
                        in_flight = bool(near) and near[0][2] != "broker"
                        if in_flight:
                            lost_in_flight += lo - 1 - prev[0]
                        gaps.append((in_flight, f"{topic} {prev[0] + 1}…{lo - 1} ({lo - 1 - prev[0]}), made between "
                                    f"{'?' if prev[1] is None else round(a, 2)} s and {round(b, 2)} s"
                                    + (f" (broker stopped at {near[0][0]} s" if near else "")
                                    + (f" for a daemon {'stop' if near[0][2] == 'term' else 'kill'})" if in_flight else
                                       ")" if near else "")))
                    if hi > prev[0]:
                        prev = (hi, hi_t)
            # The SIGKILL that ended this run: the jump to the next run and the lost tail.
            killed = members[-1] if incarnations[members[-1]]["end"] == "kill" else None
            if killed is not None and r + 1 < len(runs):
                nxt = runs[r + 1]
                report = kill_reports[killed]
                nxt_first = min((p[0][0] for p in nxt[1]), default=None)
                if nxt[0] is not None:
                    jump = nxt[0] - top
                    report["jumps"].append(jump)
                    if jump <= 0 or (nxt_first is not None and nxt_first <= top):
                        failures.append(f"{topic}: after the kill at {report['at_s']} s numbers went back "
                                        f"({top} delivered, next run from {nxt[0]})")
        # Tails, per kill, for this topic. Report-on-change sensors (battery, keys) publish when
        # their value changes (and once after setup), not at an interval: no tail to measure.
        tag = topic.split("/")[2]
        if topic.split("/")[-1] in ("battery", "keys"):
            continue
        for i, report in kill_reports.items():
            inc = incarnations[i]
            kill_at = inc["kill_wall"]
            if tag in silent or not bl_connected(links, addresses.get(tag), kill_at):
                if tag not in silent and tag not in report["excluded_tags"]:
                    report["excluded_tags"].append(tag)
                continue
            part = snap.get((topic, i))
            last_time = part[3] if part else inc["start_wall"]
            tail = max(0.0, kill_at - last_time)
            if part and part[3] - part[2] > 1:
                rate = part[1] / (part[3] - part[2])
            else:
                rate = 1000 / args.interval_ms
            report["tails"][topic] = (round(tail, 3), round(rate * tail, 1))

    # The gaps nothing explains first.
    gaps = [text for _, text in sorted(gaps, key=lambda g: g[0])]
    kills_out = []
    for i, report in sorted(kill_reports.items()):
        tails = report.pop("tails")
        worst = max(tails.items(), key=lambda kv: kv[1][0], default=(None, (None, None)))
        jumps = report.pop("jumps")
        report.update({
            "outage": any(f["kind"] == "kill" and f["incarnation"] == i and f["outage"] for f in faults),
            "streaming_sensors": len(tails), "max_tail_s": worst[1][0], "max_tail_sensor": worst[0],
            "max_tail_readings_estimate": worst[1][1],
            "lost_readings_estimate": round(sum(c for _, c in tails.values())),
            "jump_min_max": [min(jumps), max(jumps)] if jumps else None,
        })
        kills_out.append(report)
        if worst[1][0] is not None and worst[1][0] > args.kill_tail_limit:
            failures.append(f"the kill at {report['at_s']} s lost {worst[1][0]} s of {worst[0]} "
                            f"(limit {args.kill_tail_limit} s)")
        if not tails:
            failures.append(f"no streaming sensor to measure at the kill at {report['at_s']} s")
        if jumps and max(jumps) > RESERVE + 100:
            failures.append(f"after the kill at {report['at_s']} s a sensor jumped {max(jumps)} (reserve {RESERVE})")

    # MARK: memory and descriptors, in the longest incarnation
    for inc in incarnations:
        inc.setdefault("end_t", time.monotonic() - start)
    measured = max(incarnations, key=lambda inc: (inc["end_t"] - inc["start_t"], inc["index"]))
    length = measured["end_t"] - measured["start_t"]
    settle = min(120, length / 3)
    own = [(t - measured["start_t"], rss, fds, anon) for t, rss, fds, _, anon, i in samples if i == measured["index"]]
    late = [(t / 60, rss, fds, anon) for t, rss, fds, anon in own if t >= settle]
    rss_slope = bl.slope([(m, rss) for m, rss, _, _ in late])
    # The leak criterion is on anonymous memory (heap, stacks): file pages of the binary that a
    # rarely taken path faults in for the first time also raise RSS, once.
    anon_slope = bl.slope([(m, a) for m, _, _, a in late])
    fd_slope = bl.slope([(m, fds) for m, _, fds, _ in late])
    window = late[-1][0] - late[0][0] if late else 0
    tail_window = min(1, window / 3)
    middle = (late[0][0] + late[-1][0]) / 2 if late else 0
    # A tag's link is one SOCK_SEQPACKET Unix socket here (the emulator's, as L2CAP's), so the links
    # move the count between the fixed descriptors and that plus one per tag, as they drop and come
    # back. The fixed ones (event loop, signals, broker and libmosquitto's socketpair, spool, log)
    # are judged by their ceiling; the links by their bound.
    own_kinds = [(t - measured["start_t"], k) for t, i, k in kinds if i == measured["index"]]
    late_kinds = [(t / 60, k) for t, k in own_kinds if t >= settle]
    fixed = [(m, sum(k.values()) - k.get("unix-seqpacket", 0)) for m, k in late_kinds]
    fd_max = (max(f for m, f in fixed if m <= middle), max(f for m, f in fixed if m >= late[-1][0] - tail_window)) \
        if fixed else None
    most_links = max((k.get("unix-seqpacket", 0) for _, k in own_kinds), default=0)
    per_incarnation = []
    for inc in incarnations:
        mine = [s for s in samples if s[5] == inc["index"]]
        per_incarnation.append({
            "index": inc["index"], "pid": inc["pid"], "from_s": round(inc["start_t"], 1), "to_s": round(inc["end_t"], 1),
            "end": inc["end"], "exit": inc.get("exit"),
            "rss_kb_first_last": [mine[0][1], mine[-1][1]] if mine else None,
            "anon_kb_first_last": [mine[0][4], mine[-1][4]] if mine else None,
            "fd_first_last": [mine[0][2], mine[-1][2]] if mine else None,
            "cpu_s": mine[-1][3] if mine else None})

    link = {}
    decode_errors = 0
    for st in sub.stats_by_incarnation.values():  # the last stats message of each incarnation
        for t in st.get("tags", {}).values():
            for k, v in t.get("link", {}).items():
                link[k] = link.get(k, 0) + v
            decode_errors += sum(s.get("decode_errors", 0) for s in t.get("sensors", {}).values())
    reconnects = {name: t.get("reconnects") for name, t in stats.get("tags", {}).items()}
    clean_restarts = sum(1 for f in faults if f["kind"] == "term")
    result = {
        "machine": bl.machine(), "minutes": args.minutes, "tags": args.tags, "interval_ms": args.interval_ms,
        "emulator": emulated, "broker_restarts": broker.restarts,
        "restart_every_s": restart_every, "kill_every_s": kill_every, "faults": faults,
        "clean_restarts": clean_restarts, "kills": len(kills_out),
        "readings_assigned": assigned, "readings_delivered": delivered, "duplicates": sub.duplicates,
        "lost_within_runs": lost_in_runs, "lost_in_flight_at_fault_outages": lost_in_flight,
        "missing": missing, "gaps": gaps,
        "broker_outages_s": outages,
        "lost_across_clean_restarts": clean_lost, "clean_restart_breaks": clean_breaks[:20],
        "kill_tails": kills_out,
        "last_incarnation_readings_counter": stats.get("readings"), "last_incarnation_numbered": numbered,
        "spool_dropped_max": sub.max_dropped, "decode_errors": decode_errors, "link_counters": link,
        "reconnects_last_incarnation": reconnects, "incarnations": per_incarnation,
        "measured_incarnation": measured["index"], "measured_from_to_min": [round(late[0][0], 2), round(late[-1][0], 2)] if late else None,
        "rss_kb_first_last": [late[0][1], late[-1][1]] if late else None, "rss_slope_kb_per_min": rss_slope,
        "anon_kb_first_last": [late[0][3], late[-1][3]] if late else None, "anon_slope_kb_per_min": anon_slope,
        "fd_first_last": [late[0][2], late[-1][2]] if late else None, "fd_slope_per_min": fd_slope,
        "fixed_fd_max_first_half_last_part": fd_max, "most_link_sockets": most_links,
        "fd_kinds_first_last": [late_kinds[0][1], late_kinds[-1][1]] if late_kinds else None,
        "daemon_cpu_s": sum(x["cpu_s"] or 0 for x in per_incarnation),
        "samples": samples, "work": work.path,
    }
    if missing and not (args.known_in_flight_loss and lost_in_flight == lost_in_runs):
        failures.append(f"readings missing within runs ({lost_in_runs}): {'; '.join(gaps[:6])}")
    if (clean_lost or clean_breaks) and not (args.known_in_flight_loss and lost_in_flight == lost_in_runs):
        failures.append(f"readings lost across clean restarts ({clean_lost}): {'; '.join(clean_breaks[:5])}")
    if stats.get("readings") != numbered:
        failures.append(f"the last incarnation counted {stats.get('readings')} readings, the subscriber accounts "
                        f"for {numbered}")
    if sub.max_dropped != 0:
        failures.append(f"spool dropped {sub.max_dropped} (its bound must not be reached at this load)")
    if len(late) >= 2 and anon_slope > args.rss_slope_kb_per_min:
        failures.append(f"anonymous memory grows {anon_slope:.1f} kB/min in incarnation {measured['index']} "
                        f"(limit {args.rss_slope_kb_per_min})")
    # Links and broker outages move the count by one or two, which in a short window makes a
    # large slope; a leak (one per drop, per reconnect or per broker restart) raises the ceiling.
    # So the ceiling decides, and the slope too on windows long enough for it to mean something.
    if len(late) >= 2 and fd_max and (fd_max[1] > fd_max[0] or (window >= 4 and fd_slope > 0.5)):
        failures.append(f"open descriptors grow: slope {fd_slope:+.3f}/min, at most {fd_max[0]} besides the links in "
                        f"the first half, {fd_max[1]} at the end ({late_kinds[0][1]} then {late_kinds[-1][1]})")
    if most_links > args.tags:
        failures.append(f"{most_links} link sockets open at once for {args.tags} tags")
    if len(late) < 2:
        failures.append(f"too few samples in the longest incarnation ({length:.0f} s) to measure memory")
    if emulated.get("drops", 0) == 0 or emulated.get("malformed", 0) == 0 or broker.restarts == 0:
        failures.append("the mischief did not happen (no drops, malformed PDUs or broker restarts)")
    if (restart_every > 0 and restart_every < quiet_from and clean_restarts == 0) or \
            (kill_every > 0 and kill_every / 2 < quiet_from and not kills_out):
        failures.append("the daemon faults did not happen (no clean restart or no kill)")
    result["failures"] = failures
    result["passed"] = not failures
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")

    def fmt(v, spec):
        return "?" if v is None else format(v, spec)
    tails = ", ".join(f"{k['max_tail_s']} s ≈ {k['max_tail_readings_estimate']} readings of one sensor, "
                      f"≈ {k['lost_readings_estimate']} in all{' (outage)' if k['outage'] else ''}" for k in kills_out)
    print(f"soak: {delivered} of {assigned} numbered readings delivered ({sub.duplicates} duplicates), "
          f"{lost_in_runs} lost within runs ({lost_in_flight} in flight when the broker went down for a daemon "
          f"stop or kill), {clean_lost} lost across {clean_restarts} clean restarts; "
          f"{len(kills_out)} kills, tails {tails or 'none'}; {broker.restarts} broker restarts, "
          f"{emulated.get('drops')} link drops, {emulated.get('malformed')} malformed PDUs (counted: {decode_errors} "
          f"decode errors, link {link}), spool dropped {sub.max_dropped}; incarnation {measured['index']} "
          f"({length / 60:.1f} min): RSS {result['rss_kb_first_last']} kB (slope {fmt(rss_slope, '+.2f')} kB/min), "
          f"anonymous {result['anon_kb_first_last']} kB (slope {fmt(anon_slope, '+.2f')} kB/min), FDs "
          f"{result['fd_first_last']} (slope {fmt(fd_slope, '+.3f')}/min; besides the links at most "
          f"{fd_max[0] if fd_max else None} in the first half, {fd_max[1] if fd_max else None} at the end; at most "
          f"{most_links} link sockets; {result['fd_kinds_first_last']})", file=sys.stderr)
    for f in failures:
        print("soak: FAIL: " + f, file=sys.stderr)
    print("soak: " + ("passed" if not failures else "failed"), file=sys.stderr)
    sys.exit(0 if not failures else 1)


def bl_connected(links, address, kill_at):
    """Whether the tag at `address` was streaming at a kill: connected, with no link event in the
    STREAMING_WINDOW seconds before it (per the emulator's log)."""
    return address is not None and links.connected_throughout(address, kill_at - STREAMING_WINDOW, kill_at)


if __name__ == "__main__":
    main()
