"""Which node a scrape is about: inventory names cached for ingest, `host:port` instances
renamed to their known host, and nodes the inventory does not know refused or, when
configured, registered cordoned."""

from __future__ import annotations

import threading
import time

from rest_framework import status

from console.api.errors import ApplicationError
from console.inventory.selectors import node_names
from console.inventory.services import node_register_cordoned
from telemetry import conf
from telemetry.models import BatchKind
from telemetry.parsing import Scrape


class _KnownNodes:
    """Inventory node names, cached for a few seconds (ingest must not query per sample)."""

    ttl_s = 5.0

    def __init__(self) -> None:
        self._names: frozenset[str] = frozenset()
        self._at = 0.0
        self._lock = threading.Lock()

    def get(self, *, refresh: bool = False) -> frozenset[str]:
        with self._lock:
            if refresh or time.monotonic() - self._at > self.ttl_s:
                self._names = frozenset(node_names())
                self._at = time.monotonic()
            return self._names

    def clear(self) -> None:
        with self._lock:
            self._at = 0.0


known_nodes = _KnownNodes()


def resolve_nodes(scrapes: list[Scrape]) -> set[str]:
    """Rename `host:port` instances to their known host; return the names still unknown."""
    names = known_nodes.get()
    if not {s.node for s in scrapes} <= names:
        names = known_nodes.get(refresh=True)
    unknown: set[str] = set()
    for scrape in scrapes:
        if scrape.node in names:
            continue
        host = scrape.node.rsplit(":", 1)[0]
        if host in names:
            scrape.node = host
        else:
            unknown.add(scrape.node)
    return unknown


def node_register_unknown(*, names: set[str]) -> None:
    """Add nodes first seen in telemetry to the inventory, cordoned until an operator looks.

    Needs LOCUS_TELEMETRY_REGISTER_SITE and _ACCELERATOR: a node row requires both.
    """
    registered = node_register_cordoned(
        names=names,
        site=conf.register_site(),
        accelerator=conf.register_accelerator(),
        reason="registered from telemetry; review before use",
        labels={"registered_by": "telemetry"},
    )
    if not registered:
        raise ApplicationError(
            "Registering unknown nodes needs LOCUS_TELEMETRY_REGISTER_SITE and "
            "LOCUS_TELEMETRY_REGISTER_ACCELERATOR naming an existing site and accelerator.",
            status_code=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    known_nodes.clear()


def refuse_unknown(kind: str, scrapes: list[Scrape], unknown: set[str]) -> None:
    message = f"Unknown node(s): {', '.join(sorted(unknown)[:10])}; nothing was stored."
    if kind == BatchKind.JSON:
        errors = {
            str(i): {"node": [f"unknown node {s.node!r}"]}
            for i, s in enumerate(scrapes)
            if s.node in unknown
        }
        raise ApplicationError(message, errors={"samples": errors})
    raise ApplicationError(message, errors={"node": [f"unknown node {n!r}" for n in unknown]})
