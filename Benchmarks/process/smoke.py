"""A smoke run of every `scripts/measure` mode (issue #23): each with tiny parameters, a few
seconds of measuring, so that a change elsewhere (topics, payloads, log lines, options) cannot
break a measurement silently. Each mode runs as `scripts/measure MODE` would (measure.py or
durability.py, the same binary, its own broker, emulated tags and subscriber) and passes when it
exits 0 within its time limit, writes its JSON result, and the result is sane: readings counted,
nothing lost where nothing may be, every tag back after a reconnect, the spool replayed. No
figure is judged against a target: on a shared machine they are noise at these durations.

    scripts/measure smoke [MODE ...]     # default: every mode; exit 1 if any fails

Results go to `<out-dir>/<mode>.json` (.build-static/results/smoke/ through scripts/measure) and
a summary to `<out-dir>/smoke.json`. About 2 minutes on a busy 2-core machine.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib as bl  # noqa: E402

# mode -> (script, arguments, time limit in seconds). The limits are generous (several times a run
# on a loaded machine): they are there to stop a hang, not to judge speed.
MODES = {
    "throughput": ("measure.py", ["--tags", "2", "--seconds", "2", "--intervals", "10000"], 180),
    "compare": ("measure.py", ["--tags", "2", "--interval", "10000", "--seconds", "2"], 300),
    "idle": ("measure.py", ["--seconds", "2"], 180),
    "startup": ("measure.py", ["--tags", "2", "--repeat", "1"], 120),
    "reconnect": ("measure.py", ["--tags", "2", "--repeat", "1", "--away", "1", "--streamed", "2"], 240),
    "disk": ("durability.py", ["--seconds", "3", "--settle", "1", "--transition", "1"], 400),
    "memory": ("durability.py", ["--flood-seconds", "2", "--stalled-seconds", "2", "--prefill-seconds", "2",
                                 "--replay-limit", "120", "--files-seconds", "3", "--junk-scale", "0.05"], 600),
}


class Problems(list):
    def need(self, ok, what):
        if not ok:
            self.append(what)
        return ok


def positive(x):
    return isinstance(x, (int, float)) and x > 0


def check_throughput(r, p):
    rows = r.get("rows") or []
    p.need(len(rows) == 1, f"{len(rows)} rows, expected 1")
    for row in rows:
        p.need(positive(row.get("readings")), f"no readings counted at {row.get('interval_us')} µs")
        p.need(positive(row.get("daemon_readings")), "the daemon's stats said no readings published")
        p.need(positive(row.get("cpu_s_per_reading")), "no CPU per reading")
        p.need(row.get("lost") == 0, f"{row.get('lost')} readings lost at {row.get('interval_us')} µs")
    return rows and f"{rows[0]['readings_per_s']:.0f} readings/s, {1e6 * rows[0]['cpu_s_per_reading']:.1f} µs/reading"


def check_compare(r, p):
    runs = r.get("runs") or []
    p.need(len(runs) == 1, f"{len(runs)} runs, expected 1")
    for run in runs:
        for pipeline in ("collectord", "reference"):
            x = run.get(pipeline) or {}
            p.need(positive(x.get("readings")), f"{pipeline}: no readings counted")
            p.need(positive(x.get("cpu_s_per_reading")), f"{pipeline}: no CPU per reading")
        p.need((run.get("collectord") or {}).get("lost") == 0, f"collectord lost {(run.get('collectord') or {}).get('lost')}")
        p.need(positive(run.get("ratio_cpu_per_reading")), "no CPU ratio")
    if p or not runs:
        return None
    c, ref = runs[0]["collectord"], runs[0]["reference"]
    return (f"collectord {1e6 * c['cpu_s_per_reading']:.1f} µs/reading, reference {1e6 * ref['cpu_s_per_reading']:.1f} "
            f"({runs[0]['ratio_cpu_per_reading']:.1f}×)")


def check_idle(r, p):
    none, eight = r.get("no_tags") or {}, r.get("eight_tags_1s") or {}
    p.need(positive(none.get("seconds")) and positive(none.get("rss_kb")), "no sample of the daemon without tags")
    p.need(positive(eight.get("readings")), "8 tags at 1 s: no readings counted")
    p.need(positive(eight.get("rss_kb")), "8 tags at 1 s: no RSS")
    return eight.get("readings") and (f"no tags {none.get('wakeups_per_s', 0):.2f} wakeups/s; 8 tags "
                                      f"{eight['readings_per_s']:.1f} readings/s, {eight.get('wakeups_per_s', 0):.1f} wakeups/s")


def check_startup(r, p):
    runs = r.get("runs") or []
    p.need(len(runs) == 1, f"{len(runs)} runs, expected 1")
    for run in runs:
        keys = ("mqtt_connected_ms", "first_reading_ms", "every_tag_reading_ms")
        p.need(all(positive(run.get(k)) for k in keys), f"missing times: {run}")
        if not p:
            p.need(run["mqtt_connected_ms"] <= run["first_reading_ms"] <= run["every_tag_reading_ms"],
                   f"times out of order: {run}")
    m = r.get("median") or {}
    return m and f"first reading {m.get('first_reading_ms', 0):.1f} ms, every tag {m.get('every_tag_reading_ms', 0):.1f} ms"


def check_reconnect(r, p):
    tags = r.get("tags")
    for key in ("drop_all", "gone_and_back"):
        runs = r.get(key) or []
        p.need(len(runs) == 1, f"{key}: {len(runs)} runs, expected 1")
        for run in runs:
            p.need(len(run) == tags and all(positive(x) for x in run), f"{key}: {len(run)} of {tags} tags back: {run}")
    if p:
        return None
    return (f"links dropped: all back after {r['drop_all_median']['last_tag_ms']:.0f} ms; gone and back: "
            f"{r['gone_and_back_median']['last_tag_ms']:.0f} ms")


def check_disk(r, p):
    scenarios = r.get("scenarios") or {}
    for name in ("steady", "outage", "stalled"):
        s = scenarios.get(name)
        if not p.need(s, f"{name}: missing"):
            continue
        p.need(isinstance((s.get("window") or {}).get("write_bytes"), int), f"{name}: no write_bytes")
        p.need(positive((s.get("stats_after") or {}).get("readings")), f"{name}: the daemon's stats said no readings")
        p.need((s.get("stop") or {}).get("exit") == 0, f"{name}: the daemon exited {(s.get('stop') or {}).get('exit')}")
    outage = scenarios.get("outage") or {}
    p.need((outage.get("replay") or {}).get("drained") is True, "outage: the spool was not replayed once the broker was back")
    if p:
        return None
    return ", ".join(f"{n} {scenarios[n]['window']['write_bytes_per_hour'] / 1048576:.1f} MiB/h"
                     for n in ("steady", "outage", "stalled"))


def check_memory(r, p):
    peaks = []
    for label, s in (r.get("flood") or {}).items():
        p.need(positive(s.get("readings_delivered")), f"flood, {label}: no readings delivered")
        peaks.append(s.get("hwm_lifetime_kb") or 0)
    p.need(len(r.get("flood") or {}) == 2, "flood: expected 2 runs")
    stalled = r.get("stalled") or {}
    p.need(positive((stalled.get("stats_end") or {}).get("readings")), "stalled: the daemon's stats said no readings")
    peaks.append(stalled.get("hwm_lifetime_kb") or 0)
    replay = (r.get("replay") or {}).get("replay") or {}
    p.need(positive(replay.get("waiting_at_open")), "replay: nothing waiting in the spool at open")
    p.need(replay.get("drained") is True, "replay: the spool was not replayed")
    peaks.append(replay.get("hwm_lifetime_kb") or 0)
    for label, s in (r.get("files") or {}).items():
        p.need(positive(s.get("delivered")), f"files, {label}: no readings delivered")
        p.need(s.get("exit") == 0, f"files, {label}: the daemon exited {s.get('exit')}")
        peaks.append(s.get("hwm_lifetime_kb") or 0)
    p.need(len(r.get("files") or {}) == 2, "files: expected 2 runs")
    return f"peaks {min(peaks) / 1024:.1f}–{max(peaks) / 1024:.1f} MB, {replay.get('waiting_at_open')} readings replayed"


def run_mode(mode, args):
    script, extra, limit = MODES[mode]
    out = os.path.join(args.out_dir, mode + ".json")
    log_path = os.path.join(args.out_dir, mode + ".log")
    if os.path.exists(out):
        os.unlink(out)
    argv = [sys.executable, os.path.join(HERE, script), "--binary", args.binary, "--out", out, mode] + extra
    if script == "durability.py" and args.spool_parent:
        argv += ["--spool-parent", args.spool_parent]
    started = time.monotonic()
    with open(log_path, "wb") as log:
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        try:
            code = child.wait(limit * args.limit_scale)
            timed_out = False
        except subprocess.TimeoutExpired:
            # SIGTERM first: the harness then stops what it started (benchlib's atexit).
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            code, timed_out = None, True
    seconds = time.monotonic() - started
    with open(log_path, errors="replace") as f:
        text = f.read()
    p = Problems()
    summary = None
    if timed_out:
        p.append(f"did not finish within {limit * args.limit_scale:.0f} s")
    elif code != 0:
        p.append(f"exited {code}")
    for line in text.splitlines():
        if "did not" in line or "Traceback" in line:
            p.append(line.strip())
    if not p:
        try:
            with open(out) as f:
                result = json.load(f)
        except (OSError, ValueError) as e:
            result = None
            p.append(f"no JSON result at {out}: {e}")
        if result is not None and p.need(result.get("what") == mode, f"the result says what={result.get('what')!r}"):
            try:
                summary = globals()["check_" + mode](result, p)
            except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
                p.append(f"result not as expected: {type(e).__name__}: {e}")
    return {"mode": mode, "seconds": seconds, "ok": not p, "problems": list(p), "summary": summary or None,
            "log": log_path, "result": out, "table": [l for l in text.splitlines() if l.startswith("  ")]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--spool-parent", help="for disk and memory: where their spools go (a disk; default /var/tmp)")
    ap.add_argument("--limit-scale", type=float, default=1.0, help="multiply every mode's time limit")
    ap.add_argument("modes", nargs="*", metavar="MODE", help="any of " + ", ".join(MODES) + " (default: all)")
    args = ap.parse_args()
    modes = args.modes or list(MODES)
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"no mode {', '.join(unknown)}: the modes are {', '.join(MODES)}")
    os.makedirs(args.out_dir, exist_ok=True)
    # Every mode's scratch directories (brokers, sockets, logs) in one place: removed if all pass.
    scratch = tempfile.mkdtemp(prefix="cd-smoke.", dir="/tmp")
    os.environ["COLLECTORD_BENCH_TMP"] = scratch
    started = time.monotonic()
    results = []
    for mode in modes:
        print(f"== smoke {mode}", file=sys.stderr, flush=True)
        r = run_mode(mode, args)
        results.append(r)
        for line in r["table"]:
            print(line, file=sys.stderr)
        if r["ok"]:
            print(f"  ok in {r['seconds']:.0f} s: {r['summary']}", file=sys.stderr, flush=True)
        else:
            print(f"  FAILED after {r['seconds']:.0f} s (log: {r['log']}):", file=sys.stderr)
            for problem in r["problems"]:
                print("    " + problem, file=sys.stderr)
            sys.stderr.flush()
    total = time.monotonic() - started
    failed = [r["mode"] for r in results if not r["ok"]]
    verdict = f"FAILED: {', '.join(failed)}" if failed else "every mode ran"
    if failed:
        verdict += f" (their scratch directories are kept in {scratch})"
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"== smoke: {len(results) - len(failed)} of {len(results)} modes ok in {total:.0f} s; {verdict}",
          file=sys.stderr, flush=True)
    bl.emit({"machine": bl.machine(), "what": "smoke", "seconds": total, "ok": not failed, "modes": results},
            os.path.join(args.out_dir, "smoke.json"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
