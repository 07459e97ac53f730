#!/usr/bin/env python3
"""collectord's advertisement decoders against independent implementations (issue #25).

  compare.py --collectord PATH [--count N] [--format F[,F…]] [--seed N] [--show N] [--jobs N]
  compare.py --self-check [--count N] [--format …] [--seed N]

Generates N valid advertisements per format (generate.py, seeded, so a run can be repeated),
decodes each with every oracle that covers its format (oracles.py) and, with --collectord, with
`collectord decode --advert-batch` in one process; then reports per format how many were
compared, how many agreed, and the first disagreements with the advertisement's hex, each
oracle's reading and ours. collectord is held both to every oracle and to the generator's own
expectation (worked out from the specifications), and the specifications' vectors (vectors.py)
are decoded by collectord too. Numbers agree within half of each side's rounding step. Where an
oracle departs from the specification (findings.py) the difference is counted under that
finding, not hidden. What the specifications define and collectord deliberately does not
publish (vocabulary.NOT_PUBLISHED_KINDS) is left out of the comparison with collectord only.
Each format's disagreements are also summed up by class (the key, its "_2"… dropped, and what
differs), so that one cause shows as one line.

--self-check runs without collectord: every oracle against the formats' specification vectors
(vectors.py), the generator's encryption against the specification's example, and every oracle
against the generator's own expectations on the N advertisements. It proves the generator and
the normalisation into our vocabulary (vocabulary.py) before collectord is compared with them.

Exit status 0 when everything agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import io
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vocabulary as V                                               # noqa: E402
from common import Decoded, Diff, Value, differences, same_value   # noqa: E402
from findings import FINDINGS, explain                              # noqa: E402
from generate import FORMATS, bthome_encrypt, generate              # noqa: E402
from oracles import ORACLES, oracles_for                            # noqa: E402
import vectors                                                      # noqa: E402

ADVERTS: dict = {}   # format -> adverts; set before the worker processes fork


def run_oracle(task: tuple) -> tuple:
    fmt, oracle, lo, hi = task
    fn = ORACLES[oracle][0]
    out = []
    for advert in ADVERTS[fmt][lo:hi]:
        try:
            out.append(fn(advert))
        except Exception as error:   # an oracle crashing on a valid packet is a finding too
            out.append(Decoded(error=f"{oracle} raised {type(error).__name__}: {error}"))
    return fmt, oracle, lo, out


def decode_with_oracles(formats: list[str], jobs: int) -> dict:
    """format -> oracle -> list of Decoded, in the adverts' order."""
    tasks = []
    for fmt in formats:
        n = len(ADVERTS[fmt])
        step = max(1, -(-n // (jobs * 2)))
        for oracle in oracles_for(fmt):
            tasks += [(fmt, oracle, lo, min(n, lo + step)) for lo in range(0, n, step)]
    results: dict = {fmt: {o: [None] * len(ADVERTS[fmt]) for o in oracles_for(fmt)} for fmt in formats}
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(run_oracle, tasks, chunksize=1)
    else:
        parts = [run_oracle(t) for t in tasks]
    for fmt, oracle, lo, out in parts:
        results[fmt][oracle][lo:lo + len(out)] = out
    return results


def ours_from_json(text: str) -> Decoded:
    """collectord's JSON line in the comparison's form."""
    try:
        doc = json.loads(text)
    except ValueError:
        return Decoded(error=f"not JSON: {text[:80]!r}")
    if "error" in doc:
        return Decoded(error=str(doc["error"]))
    out = Decoded()
    for reading in doc.get("readings", []):
        for name, f in reading.get("fields", {}).items():
            out.values[f"{reading.get('sensor')}/{name}"] = Value(f.get("value"), f.get("unit") or "", 0.0)
    for e in doc.get("events", []):
        out.events.append((e.get("sensor"), e.get("event"), e.get("steps")))
    for key in (V.ID_BTHOME, V.ID_RUUVI, V.ID_THERMOMETER, V.ID_UNKNOWN_OBJECT):
        if key in doc:
            out.ids[key] = doc[key]
    out.formats = doc.get("formats", [])
    out.encrypted = doc.get("encrypted")
    return out


class Collectord:
    """Every advertisement through one `collectord decode --advert-batch`, started before the
    oracles run and read after them, so that the two decode at the same time. Input and output
    go through files: nothing has to be read while the oracles' processes work."""

    def __init__(self, binary: str, adverts: list):
        self.binary, self.count, self.started = binary, len(adverts), time.monotonic()
        self.stdin, self.stdout, self.stderr = (tempfile.TemporaryFile("w+") for _ in range(3))
        self.stdin.write("".join(a.line() + "\n" for a in adverts))
        self.stdin.seek(0)
        self.proc = subprocess.Popen([binary, "decode", "--advert-batch"], stdin=self.stdin, stdout=self.stdout,
                                     stderr=self.stderr, text=True)

    def results(self) -> list[str]:
        """collectord's JSON lines, in the advertisements' order."""
        try:
            code = self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            sys.exit(f"compare: `{self.binary} decode --advert-batch` took more than 300 s")
        self.seconds = time.monotonic() - self.started
        self.stdout.seek(0)
        out = self.stdout.read().splitlines()
        if code != 0 or len(out) != self.count:
            self.stderr.seek(0)
            sys.exit(f"compare: `{self.binary} decode --advert-batch` exited {code} with {len(out)} lines "
                     f"for {self.count}; its stderr:\n{self.stderr.read()[-2000:]}")
        return out


def published_only(d: Decoded) -> Decoded:
    """An oracle's or the generator's decoding without what collectord deliberately does not
    publish; collectord's own side is never filtered, so publishing one of those is reported."""
    out = copy.copy(d)
    out.values = {k: v for k, v in d.values.items() if V.published(k)}
    return out


def diff_class(d: Diff) -> str:
    """One cause, one line: the key without its ordinal and what differs."""
    if d.key in ("decoded", "events"):
        return d.key
    key = re.sub(r"_\d+$", "", d.key)
    if d.ours is None:
        return f"{key}: collectord lacks it"
    if d.theirs is None:
        return f"{key}: only collectord has it"
    if isinstance(d.ours, Value) and isinstance(d.theirs, Value) and same_value(d.ours, d.theirs):
        return f"{key}: unit {d.ours.unit!r} vs {d.theirs.unit!r}"
    return f"{key}: value"


def format_checks(fmt: str, advert, ours: Decoded) -> list[str]:
    """What the JSON says about the packet besides the readings."""
    problems = []
    if ours.error is None:
        if V.FORMAT_NAMES[fmt] not in getattr(ours, "formats", []):
            problems.append(f"formats: {getattr(ours, 'formats', None)} lacks {V.FORMAT_NAMES[fmt]!r}")
        if fmt.startswith("bthome") and getattr(ours, "encrypted", None) != (fmt == "bthome-encrypted"):
            problems.append(f"encrypted: {getattr(ours, 'encrypted', None)}")
    return problems


def report_line(label: str, d: Decoded) -> str:
    return f"      {label:13} {json.dumps(d.brief(), ensure_ascii=False, default=str)}"


COMPARED: dict = {}   # "oracles", "ours": set before the comparing processes fork


def compare_format(task: tuple) -> tuple[bool, str]:
    """One format's comparison of collectord with the oracles and the specification: whether
    every packet agreed, and the report's text."""
    fmt, show = task
    oracle_results, ours_results = COMPARED["oracles"], COMPARED["ours"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        adverts = ADVERTS[fmt]
        names = oracles_for(fmt)
        agreed, shown = 0, 0
        vs_oracle = {o: 0 for o in names}
        explained = {}
        vs_generator = 0
        classes: collections.Counter = collections.Counter()
        for i, advert in enumerate(adverts):
            ours = ours_from_json(ours_results[fmt][i])
            problems = [p for p in format_checks(fmt, advert, ours)]
            classes.update(f"{p.split(':')[0]}: wrong" for p in problems)
            for o in names:
                nc = V.NOT_COVERED[o]
                theirs = published_only(oracle_results[fmt][o][i])
                left, used = explain(o, fmt, differences(ours, theirs, nc["keys"], nc["ids"]), advert)
                for u in used:
                    explained[u] = explained.get(u, 0) + 1
                if left:
                    vs_oracle[o] += 1
                    problems += [f"vs {o}: {d.text}" for d in left]
                    classes.update(f"vs {o}: {diff_class(d)}" for d in left)
            gen = differences(ours, published_only(advert.truth))
            if gen:
                vs_generator += 1
                problems += [f"vs specification: {d.text}" for d in gen]
                classes.update(f"vs specification: {diff_class(d)}" for d in gen)
            if problems:
                if shown < show:
                    shown += 1
                    print(f"  {fmt} #{i}: {advert.line()}")
                    for p in problems:
                        print(f"      {p}")
                    print(report_line("collectord", ours))
                    for o in names:
                        print(report_line(o, oracle_results[fmt][o][i]))
                    print(report_line("specification", advert.truth))
            else:
                agreed += 1
        ok = agreed == len(adverts)
        per = "".join(f"{o} disagrees on {n}; " for o, n in vs_oracle.items())
        against = ", ".join(names) + " and " if names else "no other parser (none decodes it), only "
        print(f"{fmt}: {len(adverts)} compared with {against}the specification; {agreed} agreed "
              f"({per}the specification's expectation on {vs_generator})")
        for name, n in classes.most_common(12):
            print(f"    disagreement {name}: {n} times")
        for name, n in sorted(explained.items()):
            print(f"    oracle finding {name}: {n} packets (not counted against collectord)")
    return ok, out.getvalue()


def compare_collectord(formats, oracle_results, ours_results, show, jobs) -> bool:
    """Every format's comparison, the formats in parallel."""
    COMPARED.update(oracles=oracle_results, ours=ours_results)
    tasks = [(fmt, show) for fmt in formats]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            done = pool.map(compare_format, tasks, chunksize=1)
    else:
        done = [compare_format(t) for t in tasks]
    for _, text in done:
        print(text, end="")
    return all(ok for ok, _ in done)


def vectors_for(formats: list[str]) -> list:
    """The specification vectors of the formats checked (Ruuvi's invalid vector with format 5)."""
    chosen = [(label, a) for label, a in vectors.VECTORS
              if a.fmt in formats or (a.fmt == "bthome-encrypted" and "bthome" in formats)]
    chosen += [(f"{label} (no reading)", a) for label, a in vectors.RUUVI_INVALID if a.fmt in formats]
    return chosen


def compare_vectors(chosen: list, ours: list[Decoded]) -> bool:
    """collectord on the specifications' own vectors."""
    print("collectord on the specification vectors:")
    ok = True
    for (label, advert), got in zip(chosen, ours):
        left = format_checks(advert.fmt, advert, got) + [d.text for d in differences(got, published_only(advert.truth))]
        print(f"  {'ok' if not left else 'FAILED':6} {label}")
        for text in left:
            print(f"           {text}")
        ok &= not left
    return ok


def self_check(formats, oracle_results) -> bool:
    ok = True
    print("specification vectors:")
    for label, advert in vectors.VECTORS:
        if advert.fmt not in formats and not (advert.fmt == "bthome-encrypted" and "bthome" in formats):
            continue
        for o in oracles_for(advert.fmt):
            nc = V.NOT_COVERED[o]
            got = ORACLES[o][0](advert)
            left, used = explain(o, advert.fmt, differences(advert.truth, got, nc["keys"], nc["ids"]), advert)
            status = "ok" if not left else "FAILED"
            extra = f" (finding: {', '.join(used)})" if used else ""
            print(f"  {status:6} {o:13} {label}{extra}")
            for d in left:
                print(f"           {d.text}")
            ok &= not left
    for label, advert in vectors.RUUVI_INVALID:
        if advert.fmt not in formats:
            continue
        for o in oracles_for(advert.fmt):
            nc = V.NOT_COVERED[o]
            got = ORACLES[o][0](advert)
            left, used = ([], []) if got.error is not None else explain(
                o, advert.fmt, differences(advert.truth, got, nc["keys"], nc["ids"]), advert)
            good = not left
            extra = f" (finding: {', '.join(used)})" if used else ""
            print(f"  {'ok' if good else 'FAILED':6} {o:13} {label} (no reading){extra}")
            for d in left:
                print(f"           {d.text}")
            ok &= good
    e = vectors.BTHOME_ENCRYPTION_EXAMPLE
    sealed = bthome_encrypt(bytes.fromhex(e["key"]), bytes.fromhex(e["mac"]), e["info"],
                            bytes.fromhex(e["counter"]), bytes.fromhex(e["plain"]))
    good = sealed == bytes.fromhex(e["sealed"])
    print(f"  {'ok' if good else 'FAILED':6} generator     BTHome encryption example ({sealed.hex()})")
    ok &= good

    print("oracles against the generator's expectations:")
    seen_findings = set()
    for fmt in formats:
        for o in oracles_for(fmt):
            nc = V.NOT_COVERED[o]
            bad, explained, first = 0, {}, []
            for advert, got in zip(ADVERTS[fmt], oracle_results[fmt][o]):
                left, used = explain(o, fmt, differences(advert.truth, got, nc["keys"], nc["ids"]), advert)
                for u in used:
                    explained[u] = explained.get(u, 0) + 1
                if left:
                    bad += 1
                    if len(first) < 3:
                        first.append((advert, got, left))
            seen_findings |= set(explained)
            notes = "".join(f"; finding {k}: {n}" for k, n in sorted(explained.items()))
            print(f"  {'ok' if not bad else 'FAILED':6} {fmt:16} {o:13} {len(ADVERTS[fmt]) - bad}/{len(ADVERTS[fmt])} agree{notes}")
            for advert, got, left in first:
                print(f"           {advert.line()}")
                for d in left:
                    print(f"             {d.text}")
            ok &= not bad
    relevant = [f for f in FINDINGS if f.formats & set(formats)]
    for f in relevant:
        if f.name not in seen_findings and len(ADVERTS[next(iter(f.formats & set(formats)))]) >= 1000:
            print(f"  FAILED finding {f.name} no longer shows: update findings.py and NOTES.md")
            ok = False
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collectord", help="the collectord binary to check")
    parser.add_argument("--self-check", action="store_true", help="check the generator and the oracles only")
    parser.add_argument("--count", type=int, default=10000, help="advertisements per format (10000)")
    parser.add_argument("--format", default=",".join(FORMATS), help=f"comma-separated, of: {', '.join(FORMATS)}")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--show", type=int, default=5, help="disagreements shown per format (5)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    formats = [{"bthome-plain": "bthome", "ruuvi": "ruuvi5", "ruuvi-c5": "ruuvic5"}.get(f, f) for f in formats]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not (args.self_check or args.collectord):
        parser.error(f"unknown format {unknown}" if unknown else "give --collectord PATH or --self-check")

    started = time.monotonic()
    for fmt in formats:
        ADVERTS[fmt] = generate(fmt, args.count, args.seed)
    generated = time.monotonic()
    if args.collectord:
        chosen = vectors_for(formats)
        collectord = Collectord(args.collectord, [a for fmt in formats for a in ADVERTS[fmt]] + [a for _, a in chosen])
    oracle_results = decode_with_oracles(formats, args.jobs)
    decoded = time.monotonic()
    print(f"{args.count} advertisements per format, seed {args.seed}: generated in {generated - started:.1f} s, "
          f"oracles took {decoded - generated:.1f} s on {args.jobs} processes")
    ok = True
    if args.self_check:
        ok &= self_check(formats, oracle_results)
    if args.collectord:
        decoded_all = collectord.results()
        print(f"collectord decoded {len(decoded_all)} advertisements in {collectord.seconds:.1f} s, beside the oracles")
        ours, i = {}, 0
        for fmt in formats:
            ours[fmt] = decoded_all[i:i + len(ADVERTS[fmt])]
            i += len(ADVERTS[fmt])
        ok &= compare_vectors(chosen, [ours_from_json(t) for t in decoded_all[i:]])
        ok &= compare_collectord(formats, oracle_results, ours, args.show, args.jobs)
    print(f"{'all agree' if ok else 'DISAGREEMENTS'} ({time.monotonic() - started:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
