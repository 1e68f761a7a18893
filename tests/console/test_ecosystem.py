"""The Grafana dashboard and the Prometheus alert rules shipped in docs/ load, have the shape
their tools expect, and query only metrics Locus's /metrics exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from telemetry import slo_rules

DOCS = Path(__file__).resolve().parents[2] / "docs"
GRAFANA = DOCS / "grafana" / "locus.json"
ALERTS = DOCS / "prometheus" / "alerts.yaml"

pytestmark = pytest.mark.django_db

# PromQL words that are not metric names (Prometheus docs, "Querying basics" and "Operators").
_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "and", "or", "unless", "offset", "inf", "nan",
}  # fmt: skip
# Sample-name suffixes prometheus_client exposes per metric type.
_SUFFIXES = {
    "counter": ("", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers left once strings, label
    matchers, grouping clauses, ranges and Grafana variables are removed, that are neither
    a function call nor a keyword."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\$\{?\w+\}?", "", text)
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if following.startswith("(") or match.group().lower() in _KEYWORDS:
            continue
        names.add(match.group())
    return names


def test_the_metric_name_parser_finds_names_and_nothing_else() -> None:
    assert metric_names(
        'histogram_quantile(0.99, sum by (le) (rate(a_bucket{job="x",le!="1"}[5m]))) > 0.5'
    ) == {"a_bucket"}
    assert metric_names('sum(rate(b_total{ok="false"}[$__rate_interval])) / on(job) c') == {
        "b_total",
        "c",
    }


@pytest.fixture
def exposed(client_for: Any) -> set[str]:
    """Every sample name /metrics may serve, from its # TYPE lines."""
    text = client_for(None).get("/metrics").content.decode()
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE):
        base = name.removesuffix("_total") if kind == "counter" else name
        suffixes = ("_total", "_created") if kind == "counter" else _SUFFIXES.get(kind, ("",))
        names.update(base + suffix for suffix in suffixes)
    assert "locus_decisions_total" in names
    return names


def test_the_grafana_dashboard_loads_and_queries_only_exposed_metrics(
    exposed: set[str],
) -> None:
    dashboard = json.loads(GRAFANA.read_text())
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["schemaVersion"], int)
    panels = dashboard["panels"]
    assert len(panels) >= 6
    assert len({p["id"] for p in panels}) == len(panels)
    queried = set()
    for panel in panels:
        assert panel["type"] and panel["title"], panel
        assert {"x", "y", "w", "h"} <= panel["gridPos"].keys()
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names, target["expr"]
            queried |= names
    assert queried <= exposed, queried - exposed


def test_the_alert_rules_load_and_query_only_exposed_metrics(exposed: set[str]) -> None:
    rules = yaml.safe_load(ALERTS.read_text())
    (group,) = rules["groups"]
    assert group["name"] and group["rules"]
    seen = set()
    for rule in group["rules"]:
        keys = {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
        assert set(rule) <= keys, rule
        assert rule["alert"] not in seen
        seen.add(rule["alert"])
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        assert rule["annotations"]["summary"]
        for duration in ("for", "keep_firing_for"):
            if duration in rule:
                assert re.fullmatch(r"\d+[smh]", rule[duration]), rule[duration]
        names = metric_names(str(rule["expr"]))
        assert names and names <= exposed, (rule["alert"], names - exposed)


def _prometheus_duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def test_the_slo_burn_rate_alerts_follow_the_breach_rules(settings: Any) -> None:
    """Each (SLI, level) has one alert with the factor, windows, hold, clear time and minimum
    requests that open Locus's own breaches at the default 30-day period."""
    rules = yaml.safe_load(ALERTS.read_text())["groups"][0]["rules"]
    burn = {
        (r["labels"]["sli"], r["labels"]["breach"]): r for r in rules if "breach" in r["labels"]
    }
    assert set(burn) == {
        (sli, rule.severity)
        for sli in (slo_rules.WITHIN_TARGETS, slo_rules.ERROR_RATE)
        for rule in slo_rules.WORKBOOK_RULES
    }
    for (sli, severity), alert in burn.items():
        (rule,) = [r for r in slo_rules.WORKBOOK_RULES if r.severity == severity]
        expr = " ".join(str(alert["expr"]).split())
        long, short = _prometheus_duration(rule.long_s), _prometheus_duration(rule.short_s)
        budget = (
            f'{rule.factor:g} * (1 - max by (slo) (locus_slo_objective{{job="locus",sli="{sli}"}}))'
        )
        assert expr.count(f"[{long}]") == 3 and expr.count(f"[{short}]") == 2, expr
        assert expr.count(f"> on (slo) {budget}") == 2, expr
        assert expr.endswith(f">= {settings.LOCUS_SLO_MIN_REQUESTS}"), expr
        assert alert["for"] == _prometheus_duration(rule.hold_s)
        assert alert["keep_firing_for"] == _prometheus_duration(rule.clear_s)
        assert alert["labels"]["severity"] == {"page": "critical", "ticket": "warning"}[severity]
