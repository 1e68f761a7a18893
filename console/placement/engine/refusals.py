"""A batch the database refuses for any reason but a lost connection: a row it cannot store
must never block the rows behind it (docs/hardening.md). The batch is split in halves until
the refused rows stand alone; each is logged once, counted
(`locus_decision_records_refused_total`) and dropped, and every other row is written."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from django.db import InterfaceError, OperationalError

from console.placement.metrics import RECORDS_REFUSED

logger = logging.getLogger(__name__)
# Failures of the connection, not of a row: the whole batch waits and is retried.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    sqlite3.OperationalError,
)
Item = dict[str, Any]


@dataclass
class RecorderStats:
    written: int = 0
    outcomes: int = 0
    dropped: int = 0
    refused: int = 0
    failures: int = 0
    last_error: str = ""


def write_in_halves(
    items: list[Item], write: Callable[[list[Item]], None], kind: str, stats: RecorderStats
) -> tuple[list[Item], Exception] | None:
    """Write `items` ("record" or "outcome") in ever smaller chunks; (the unwritten items,
    the error) if the connection failed, else None."""
    stack = [items] if items else []
    while stack:
        chunk = stack.pop()
        try:
            write(chunk)
        except Exception as exc:
            if isinstance(exc, CONNECTION_ERRORS):
                return [item for rest in (chunk, *reversed(stack)) for item in rest], exc
            if len(chunk) == 1:
                _refuse(chunk[0], kind, exc, stats)
            else:
                middle = len(chunk) // 2
                stack += [chunk[middle:], chunk[:middle]]  # the first half goes first
            continue
        if kind == "record":
            stats.written += len(chunk)
        else:
            stats.outcomes += len(chunk)
    return None


def _refuse(item: Item, kind: str, exc: Exception, stats: RecorderStats) -> None:
    stats.refused += 1
    stats.last_error = str(exc)
    RECORDS_REFUSED.labels(kind=kind).inc()
    # Logged once: a refused row is dropped, never retried.
    logger.error(
        "decision %s %s refused by the database and dropped: %s", kind, item.get("id"), exc
    )
