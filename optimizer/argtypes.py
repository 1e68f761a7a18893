"""Command-line argument types: numbers that must be finite and in range, fractions, names
and URLs, each refusing bad input with a message argparse prints beside the option's name
(`python -m optimizer ...` and the console's management commands)."""

from __future__ import annotations

import argparse
import math
from typing import Any
from urllib.parse import urlsplit

MAX_NAME_LENGTH = 200


def number(text: str, kind: type[int] | type[float], *, low: float, strict: bool) -> Any:
    """`text` as `kind`, finite and above `low` (at or above when not `strict`)."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < low or (strict and value == low):
        bound = f"{'>' if strict else '>='} {low:g}"
        raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}")
    return value


def positive(text: str) -> float:
    return float(number(text, float, low=0, strict=True))


def non_negative(text: str) -> float:
    return float(number(text, float, low=0, strict=False))


def port(text: str) -> int:
    """A TCP port to listen on or connect to, 1-65535."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port (1-65535), got {text!r}")
    return value


def count(text: str) -> int:
    """A whole number >= 1 (timesteps, a request limit, repeats)."""
    return int(number(text, int, low=1, strict=False))


def natural(text: str) -> int:
    """A whole number >= 0 (seeds, warm-start steps)."""
    return int(number(text, int, low=0, strict=False))


def positives(text: str) -> list[float]:
    """A comma-separated list of positive numbers (loads)."""
    return [positive(v) for v in text.split(",") if v.strip()]


def naturals(text: str) -> list[int]:
    """A comma-separated list of whole numbers >= 0 (seeds)."""
    return [natural(v) for v in text.split(",") if v.strip()]


def names(text: str) -> list[str]:
    """A comma-separated, non-empty list of names (policies)."""
    listed = [p.strip() for p in text.split(",") if p.strip()]
    if not listed:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return listed


def fraction(text: str) -> float:
    """A share in (0, 1] (a canary's share of traffic)."""
    value = positive(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def name(text: str) -> str:
    """A non-blank name of printable characters (no NUL or control characters, which the
    database or the API would refuse later and less clearly)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a name, got a blank one")
    if len(text) > MAX_NAME_LENGTH or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"expected up to {MAX_NAME_LENGTH} printable characters, got {text[:40]!r}"
        )
    return text


def http_url(text: str) -> str:
    """An http:// or https:// URL with a host (a console's base URL)."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected an http(s) URL with a host, got {text!r}")
    return text.rstrip("/")
