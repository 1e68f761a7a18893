"""The one rule every inventory name follows (sites, accelerators, models, nodes, SLOs,
sources), wherever the name comes from: the API, a topology file or `PUT /api/v1/topology`.

A name is also a path segment of the API (`/api/v1/nodes/<name>`), so it must be addressable
there: 1 to 100 characters, no whitespace, control character or "/", and not "." or ".."
(which clients collapse as path segments).
"""

from __future__ import annotations

import re

NAME_MAX_LENGTH = 100
NAME_RULE = (
    f"Names are 1 to {NAME_MAX_LENGTH} characters, without whitespace, control characters "
    'or "/", and not "." or "..".'
)
_NAME = re.compile(rf"(?!\.\.?\Z)[^\s/\x00-\x1f\x7f]{{1,{NAME_MAX_LENGTH}}}\Z")


def name_problem(name: str) -> str | None:
    """Why `name` is not a valid inventory name, or None if it is."""
    if _NAME.match(name) is None:
        return NAME_RULE
    return None
