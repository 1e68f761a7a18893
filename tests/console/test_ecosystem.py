"""The Grafana dashboard and the Prometheus alert rules shipped in docs/ load, have the shape
their tools expect, and query only metrics Locus's /metrics exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

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
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert rule["alert"] not in seen
        seen.add(rule["alert"])
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        assert rule["annotations"]["summary"]
        if "for" in rule:
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]
        names = metric_names(str(rule["expr"]))
        assert names and names <= exposed, (rule["alert"], names - exposed)
