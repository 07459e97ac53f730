"""Accelerated endurance run of the daemon (issue #7): N emulated tags streaming every sensor at
100 ms, random link drops every few seconds, one silent tag, malformed PDUs, and the broker
restarted every minute, for at least ten minutes.

Pass when:
  * every sequence number the daemon assigned reached the subscriber (per tag and sensor, no gap
    below the highest seen; duplicates are allowed: QoS 1 is at least once), and the spool bound
    was never reached (dropped = 0 in the daemon's stats);
  * the daemon's resident memory and open descriptors are flat from minute 2 to the end: the
    least-squares slope of anonymous memory under --rss-slope-kb-per-min (RSS reported too); no
    more descriptors open in the last minute than at the most before the middle of the run
    (links and broker outages make them vary by a few), and on runs of 5 minutes or more their
    slope under 0.5 per minute;
  * the daemon ran throughout as one process (no restart), and stopped cleanly at the end.
"""

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib as bl  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", required=True)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--tags", type=int, default=8)
    p.add_argument("--interval-ms", type=int, default=100)
    p.add_argument("--drop-every", type=float, default=3, help="mean seconds between random link drops")
    p.add_argument("--malformed-every", type=float, default=2, help="mean seconds between malformed PDUs")
    p.add_argument("--silent-tags", type=int, default=1)
    p.add_argument("--broker-every", type=float, default=60, help="seconds between broker restarts")
    p.add_argument("--broker-down", type=float, default=2, help="seconds the broker stays down")
    p.add_argument("--sample-every", type=float, default=5)
    p.add_argument("--rss-slope-kb-per-min", type=float, default=16, help="pass limit for anonymous memory")
    p.add_argument("--out")
    args = p.parse_args()

    work = bl.Workdir("cd-soak.")
    broker = bl.Broker(work).start()
    sub = bl.Subscriber(broker.port, client_id="soak-sub")
    emulators = bl.Emulators(args.binary, work, args.tags, args.interval_ms * 1000, seed=random.randrange(1 << 30),
                             extra=["--drop-every", str(args.drop_every), "--malformed-every", str(args.malformed_every),
                                    "--silent-tags", str(args.silent_tags)])
    emulators.wait_ready()
    config = bl.daemon_config(work, broker.port, args.tags, client_id="soak", stats_interval=5)
    daemon = bl.Daemon(args.binary, work, config, emulators).proc
    pid = daemon.pid
    start = time.monotonic()
    end = start + args.minutes * 60
    next_sample = start
    next_restart = start + args.broker_every
    samples = []
    failures = []
    print(f"soak: {args.tags} tags every {args.interval_ms} ms ({args.silent_tags} silent), drops every "
          f"~{args.drop_every:g} s, malformed PDUs every ~{args.malformed_every:g} s, broker restarted every "
          f"{args.broker_every:g} s, for {args.minutes:g} min; work in {work.path}", file=sys.stderr)
    while time.monotonic() < end:
        now = time.monotonic()
        if not daemon.alive():
            failures.append(f"the daemon exited with {daemon.p.returncode} after {now - start:.0f} s")
            break
        if now >= next_sample:
            s = daemon.sample()
            samples.append((now - start, s.rss_kb, s.fds, s.cpu, s.anon_kb))
            if len(samples) % 12 == 1:
                print(f"  {(now - start) / 60:5.1f} min: {sub.unique()} readings, RSS {s.rss_kb} kB, {s.fds} FDs, "
                      f"CPU {s.cpu:.1f} s, broker restarts {broker.restarts}", file=sys.stderr)
            next_sample += args.sample_every
        if now >= next_restart:
            broker.restart(args.broker_down)
            next_restart += args.broker_every
        time.sleep(0.2)

    # Wind down: the tags stop; the spool drains to the (running) broker, perhaps after the
    # daemon's reconnect backoff; done when a stats message says nothing is pending and the
    # subscriber holds every reading the daemon counted.
    emulated = emulators.stop()
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        stats = sub.stats or {}
        if stats.get("spool", {}).get("pending") == 0 and stats.get("readings") == sub.account()["expected"] \
                and sub.unique() == stats.get("readings"):
            break
        time.sleep(1)
    stats = sub.stats or {}
    daemon_alive = daemon.alive() and daemon.pid == pid
    code = daemon.stop()
    sub.wait_quiet(quiet=1)
    account = sub.account()
    sub.stop()
    broker.stop()

    # From minute 2 (a third of the run when shorter) to the end.
    settle = min(120, args.minutes * 20)
    late = [(t / 60, rss, fds) for t, rss, fds, _, _ in samples if t >= settle]
    rss_slope = bl.slope([(m, rss) for m, rss, _ in late])
    # The leak criterion is on anonymous memory (heap, stacks): file pages of the binary that a
    # rarely taken path faults in for the first time also raise RSS, once.
    anon = [(t / 60, a) for t, _, _, _, a in samples if t >= settle]
    anon_slope = bl.slope(anon)
    fd_slope = bl.slope([(m, fds) for m, _, fds in late])
    middle = (late[0][0] + late[-1][0]) / 2 if late else 0
    fd_max = (max(f for m, _, f in late if m <= middle), max(f for m, _, f in late if m > late[-1][0] - 1)) if late else None
    link = {}
    for t in stats.get("tags", {}).values():
        for k, v in t.get("link", {}).items():
            link[k] = link.get(k, 0) + v
    dropped = stats.get("spool", {}).get("dropped")
    decode_errors = sum(s.get("decode_errors", 0) for t in stats.get("tags", {}).values() for s in t.get("sensors", {}).values())
    reconnects = {name: t.get("reconnects") for name, t in stats.get("tags", {}).items()}
    result = {
        "machine": bl.machine(), "minutes": args.minutes, "tags": args.tags, "interval_ms": args.interval_ms,
        "emulator": emulated, "broker_restarts": broker.restarts,
        "readings_assigned": account["expected"], "readings_delivered": account["unique"],
        "duplicates": account["duplicates"], "missing": account["missing"],
        "daemon_readings_counter": stats.get("readings"), "spool_dropped": dropped, "decode_errors": decode_errors,
        "reconnects": reconnects, "rss_kb_first_last": [late[0][1], late[-1][1]] if late else None,
        "rss_slope_kb_per_min": rss_slope, "anon_kb_first_last": [anon[0][1], anon[-1][1]] if anon else None,
        "anon_slope_kb_per_min": anon_slope, "fd_first_last": [late[0][2], late[-1][2]] if late else None,
        "fd_slope_per_min": fd_slope, "fd_max_first_half_last_minute": fd_max, "link_counters": link, "daemon_cpu_s": samples[-1][3] if samples else None,
        "daemon_exit": code, "samples": samples, "work": work.path,
    }
    if account["missing"]:
        failures.append(f"readings missing: {json.dumps(account['missing'])[:400]}")
    if stats.get("readings") is not None and stats["readings"] != account["expected"]:
        failures.append(f"the daemon counted {stats['readings']} readings, the subscriber accounts for {account['expected']}")
    if dropped != 0:
        failures.append(f"spool dropped {dropped} (its bound must not be reached at this load)")
    if not daemon_alive:
        failures.append("the daemon did not run throughout as one process")
    if code != 0:
        failures.append(f"the daemon exited with {code} on SIGTERM")
    if len(anon) >= 2 and anon_slope > args.rss_slope_kb_per_min:
        failures.append(f"anonymous memory grows {anon_slope:.1f} kB/min from minute 2 (limit {args.rss_slope_kb_per_min})")
    # Links and broker outages move the count by one or two, which in a short window makes a
    # large slope; a leak (one per drop, per reconnect or per broker restart) raises the ceiling.
    # So the ceiling decides, and the slope too on runs long enough for it to mean something.
    if len(late) >= 2 and (fd_max[1] > fd_max[0] or (args.minutes >= 5 and fd_slope > 0.5)):
        failures.append(f"open descriptors grow: slope {fd_slope:+.3f}/min, at most {fd_max[0]} in the first half, "
                        f"{fd_max[1]} in the last minute")
    if emulated.get("drops", 0) == 0 or emulated.get("malformed", 0) == 0 or broker.restarts == 0:
        failures.append("the mischief did not happen (no drops, malformed PDUs or broker restarts)")
    result["failures"] = failures
    result["passed"] = not failures
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(f"soak: {account['unique']} of {account['expected']} readings delivered ({account['duplicates']} duplicates), "
          f"{broker.restarts} broker restarts, {emulated.get('drops')} link drops, {emulated.get('malformed')} malformed PDUs "
          f"(counted: {decode_errors} decode errors, link {link}), spool dropped {dropped}; RSS {result['rss_kb_first_last']} kB "
          f"(slope {rss_slope:+.2f} kB/min), anonymous {result['anon_kb_first_last']} kB (slope {anon_slope:+.2f} kB/min), FDs {result['fd_first_last']} (slope {fd_slope:+.3f}/min, most {fd_max[0] if fd_max else None} in the first half, {fd_max[1] if fd_max else None} in the last minute)", file=sys.stderr)
    for f in failures:
        print("soak: FAIL: " + f, file=sys.stderr)
    print("soak: " + ("passed" if not failures else "failed"), file=sys.stderr)
    sys.exit(0 if not failures else 1)


if __name__ == "__main__":
    main()
