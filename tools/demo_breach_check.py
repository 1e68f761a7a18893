"""Issue #28's living-demo check, read from the demo's own SQLite database after a `make run`:

    python3 -m tools.demo_breach_check [--db var/locus.sqlite3] [--since ISO] [--until ISO]
        [--window 900] [--max-opens 3] [--log RUN.log]

1. residency: no breach of a resident SLO names a node outside the SLO's jurisdiction (the
   breach's own `node`, or a (model, node) pair in its `burning` rows); the decisions of
   resident SLOs placed outside it are counted as well;
2. flapping: no alert opens more than `--max-opens` times, an alert being (SLO, model, node,
   SLI, severity) as the one-open-breach constraint keys it (telemetry/models.py); also shown
   per (SLO, model, node) over every SLI and level, and per burning pair;
3. tiles: at the end (`--until`, default the last decision), an SLO whose tile reads at least
   its 95% objective has no open page-level breach. A tile is what the dashboard shows:
   outcomes of the SLO's decisions made in the last `--window` seconds, met / reported
   (console/placement/selectors.py, `decision_overview`). The same is checked every 30 s
   of the run, as the tiles read then (outcomes reported by that time), and page breaches
   opened for an SLO whose tile then read >= 95% are listed (a burst can page and still
   leave the 15-minute tile above the objective, so that line informs, not fails).
`--log` counts tracebacks and error lines in the run's output. Standard library only; the
database is opened read-only, so it can be read while the demo runs. Exits 1 on a FAIL.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta

OBJECTIVE = 0.95  # an SLO's p95 targets: 95% of requests within them
STEP_S = 30


def _t(value: object) -> datetime | None:
    """A time as the database stores it (text, or bytes or a datetime through a connection
    with converters, as Django's), as naive UTC."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode()
    at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return at if at.tzinfo is None else at.astimezone(UTC).replace(tzinfo=None)


def _rows(db: sqlite3.Connection, sql: str, *args: object) -> list[dict[str, object]]:
    cur = db.execute(sql, args)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur]


def tiles(db: sqlite3.Connection, at: datetime, window_s: float) -> dict[str, tuple[int, int]]:
    """Per SLO, (met, outcomes) as the tile reads at `at`."""
    start = (at - timedelta(seconds=window_s)).isoformat(" ")
    found = db.execute(
        "SELECT slo, SUM(slo_met = 1), COUNT(*) FROM placement_decisionrecord"
        " WHERE created_at >= ? AND created_at < ? AND slo != '' AND slo_met IS NOT NULL"
        " AND outcome_at <= ? GROUP BY slo",
        (start, at.isoformat(" "), at.isoformat(" ")),
    )
    return {slo: (int(met), int(n)) for slo, met, n in found}


def open_at(breach: dict[str, object], at: datetime) -> bool:
    opened, resolved = _t(breach["opened_at"]), _t(breach["resolved_at"])
    return opened is not None and opened <= at and (resolved is None or resolved > at)


def check(db: sqlite3.Connection, args: argparse.Namespace) -> bool:
    ok = True
    first = db.execute("SELECT MIN(created_at), MAX(created_at) FROM placement_decisionrecord")
    lo, hi = first.fetchone()
    since = _t(args.since) or _t(lo)
    until = _t(args.until) or _t(hi)
    if since is None or until is None:
        print("no decisions recorded")
        return False
    print(f"window {since.isoformat()} .. {until.isoformat()} ({(until - since).seconds} s)")
    span = (since.isoformat(" "), until.isoformat(" "))
    counts = db.execute(
        "SELECT COUNT(*), COUNT(outcome_at), SUM(ok = 0), SUM(slo_met = 0)"
        " FROM placement_decisionrecord WHERE created_at >= ? AND created_at <= ?",
        span,
    ).fetchone()
    print(f"decisions {counts[0]}, outcomes {counts[1]}, failed {counts[2] or 0}, "
          f"missed an SLO {counts[3] or 0}")  # fmt: skip

    jurisdiction = dict(
        db.execute(
            "SELECT n.name, s.jurisdiction FROM inventory_node n"
            " JOIN inventory_site s ON s.id = n.site_id"
        )
    )
    residency = {n: r for n, r in db.execute("SELECT name, residency FROM inventory_slo") if r}
    breaches = _rows(
        db,
        "SELECT id, slo, model, node, metric, severity, status, opened_at, resolved_at,"
        " observed, worst, samples FROM telemetry_slabreach"
        " WHERE opened_at >= ? AND opened_at <= ? ORDER BY opened_at",
        *span,
    )
    burning: dict[object, list[dict[str, object]]] = {}
    for row in _rows(db, "SELECT breach_id, model, node, bad, requests FROM telemetry_breachnode"):
        burning.setdefault(row["breach_id"], []).append(row)
    print(f"\nbreaches opened: {len(breaches)}")
    for b in breaches:
        named = ", ".join(
            f"{p['node']}/{p['model']} {p['bad']}/{p['requests']}" for p in burning.get(b["id"], [])
        )
        where = f" {b['model']}@{b['node']}" if b["node"] else ""
        print(f"  #{b['id']} {b['slo']}{where} {b['metric']} {b['severity'] or '-'} "
              f"{b['status']} opened {b['opened_at']} resolved {b['resolved_at']} "
              f"burn {b['observed']:.1f} (worst {b['worst']:.1f}, {b['samples']} req) "
              f"[{named}]")  # fmt: skip
    by_node = Counter(
        (b["slo"], p["node"]) for b in breaches for p in burning.get(b["id"], [])
    ) + Counter((b["slo"], b["node"]) for b in breaches if b["node"])
    print("  by (SLO, node): " + ", ".join(f"{s}/{n} {c}" for (s, n), c in sorted(by_node.items())))

    # 1. residency
    outside = [
        (b["id"], b["slo"], node)
        for b in breaches
        if b["slo"] in residency
        for node in [b["node"]] + [p["node"] for p in burning.get(b["id"], [])]
        if node and jurisdiction.get(node) != residency[b["slo"]]
    ]
    placed = db.execute(
        "SELECT d.slo, d.node, COUNT(*) FROM placement_decisionrecord d JOIN inventory_slo s"
        " ON s.name = d.slo WHERE s.residency != '' AND d.created_at >= ? AND d.created_at <= ?"
        " GROUP BY d.slo, d.node",
        span,
    ).fetchall()
    placed_out = [(s, n, c) for s, n, c in placed if jurisdiction.get(n) != residency.get(s)]
    verdict = "PASS" if not outside else "FAIL"
    ok &= not outside
    print(f"\n1. resident-SLO breaches naming a node outside the jurisdiction: {len(outside)} "
          f"{outside[:10]} -> {verdict}")  # fmt: skip
    print(f"   resident-SLO decisions placed outside it: {sum(c for *_, c in placed_out)} "
          f"{placed_out[:10]}")  # fmt: skip

    # 2. flapping
    alerts = Counter(
        (b["slo"], b["model"], b["node"], b["metric"], b["severity"]) for b in breaches
    )
    keys = Counter((b["slo"], b["model"], b["node"]) for b in breaches)
    pairs = Counter(
        (b["slo"], p["model"], p["node"]) for b in breaches for p in burning.get(b["id"], [])
    )
    worst = max(alerts.values(), default=0)
    verdict = "PASS" if worst <= args.max_opens else "FAIL"
    ok &= worst <= args.max_opens
    print(f"\n2. max opens per alert (SLO, model, node, SLI, severity): {worst} -> {verdict}")
    for key, n in alerts.most_common(8):
        print(f"   {n}x {key}")
    print(f"   max opens per (SLO, model, node), any SLI or level: {max(keys.values(), default=0)}")
    top = pairs.most_common(3)
    print(f"   max breaches naming one burning (SLO, model, node): {top[0][1] if top else 0} {top}")

    # 3. tiles against open page breaches, at the end and every STEP_S seconds
    disagree: list[str] = []
    paged_ok: set[tuple[object, object]] = set()
    at = since + timedelta(seconds=STEP_S)
    while True:
        at = min(at, until)
        read = tiles(db, at, args.window)
        for b in breaches:
            met, n = read.get(str(b["slo"]), (0, 0))
            if b["severity"] != "page" or not n or met / n < OBJECTIVE:
                continue
            if open_at(b, at):
                disagree.append(f"{at:%H:%M:%S} {b['slo']} tile {met / n:.1%} #{b['id']} open")
            opened = _t(b["opened_at"])
            if opened is not None and at - timedelta(seconds=STEP_S) < opened <= at:
                paged_ok.add((b["id"], f"{b['slo']} {met / n:.1%}"))
        if at >= until:
            break
        at += timedelta(seconds=STEP_S)
    final = tiles(db, until, args.window)
    print(f"\n3. tiles at {until:%H:%M:%S} (last {args.window:.0f} s):")
    for slo in sorted(set(final) | {str(b["slo"]) for b in breaches}):
        met, n = final.get(slo, (0, 0))
        pages = [b["id"] for b in breaches if b["slo"] == slo and b["severity"] == "page"]
        still = [b["id"] for b in breaches if b["slo"] == slo and b["severity"] == "page"
                 and open_at(b, until)]  # fmt: skip
        share = f"{met / n:.2%}" if n else "-"
        print(f"   {slo}: {share} ({met}/{n}); page breaches opened {len(pages)}, open {still}")
    at_end = [d for d in disagree if d.startswith(f"{until:%H:%M:%S}")]
    verdict = "PASS" if not at_end else "FAIL"
    ok &= not at_end
    print(f"   open page breach on an SLO whose tile meets 95%, at the end: {len(at_end)} -> "
          f"{verdict}")  # fmt: skip
    print(f"   the same at any 30-s step of the run: {len(disagree)} {disagree[:8]}")
    print(f"   page breaches opened while their tile read >= 95%: {len(paged_ok)} "
          f"{sorted(paged_ok, key=str)[:8]}")  # fmt: skip
    return ok


def log_counts(path: str) -> None:
    text = open(path, encoding="utf-8", errors="replace").read()  # noqa: SIM115
    lines = text.splitlines()
    errors = [ln for ln in lines if re.search(r"\bERROR\b|\bError\b|CRITICAL", ln)]
    print(f"\nlog {path}: {len(lines)} lines, {text.count('Traceback (most recent call last)')} "
          f"tracebacks, {len(errors)} error lines")  # fmt: skip
    for line in errors[:10]:
        print(f"   {line[:200]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="var/locus.sqlite3")
    parser.add_argument("--since", help="ISO time (UTC); default the first decision")
    parser.add_argument("--until", help="ISO time (UTC); default the last decision")
    parser.add_argument("--window", type=float, default=900.0, help="the tiles' window, s")
    parser.add_argument("--max-opens", type=int, default=3)
    parser.add_argument("--log", help="the run's output, to count tracebacks and errors")
    args = parser.parse_args(argv)
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    ok = check(db, args)
    if args.log:
        log_counts(args.log)
    print(f"\n{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
