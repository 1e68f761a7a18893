"""The exploration probe's note as a response header, for the doors that answer with the node's
own body and so cannot add a JSON field (the ext_proc picker, the router; docs/twin.md,
"Exploration probe").

`x-locus-probe` carries the members of the REST answer's `probe` object
(`console.placement.engine.probing.ProbeArm.apply`: `id`, `node`, `policy_pick`, `ttft_ms`,
`ttft_target_ms`) as an HTTP Structured Field Dictionary (RFC 9651 §3.2), which any
structured-field parser reads: `id=7, node="fra-a10-1", policy_pick="fra-h100-1",
ttft_ms=412.5, ttft_target_ms=800.0`. It is set on a probe's answers only and is absent on the
policy's own, as the JSON field is; a door removes a node's own header of that name, so an
answer never claims a probe it was not.
"""

from __future__ import annotations

import math
from typing import Any

PROBE_HEADER = "x-locus-probe"
# RFC 9651 §4.1.5: a Decimal has at most 12 integer digits and 3 fractional ones.
_DECIMAL_LIMIT = 1e12


def probe_header(note: dict[str, Any]) -> str:
    """The header's value for a probe's note. A member the format cannot carry (an estimate
    of 1e12 ms or more, or not finite) is left out; the receipt keeps it."""
    members = []
    for key, value in note.items():
        item = _item(value)
        if item is not None:
            members.append(f"{key}={item}")
    return ", ".join(members)


def _item(value: Any) -> str | None:
    if isinstance(value, int):  # the probe's id, a database key: well within 15 digits
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value) or abs(round(value, 3)) >= _DECIMAL_LIMIT:
            return None
        text = f"{value:.3f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return _string(str(value))


def _string(text: str) -> str:
    """A String (§3.3.3) when `text` is printable ASCII, else a Display String (§3.3.8,
    percent-encoded UTF-8): node names are the topology's, which may be any text."""
    if all(" " <= c <= "~" for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    encoded = "".join(
        chr(b) if 0x20 <= b <= 0x7E and b not in (0x22, 0x25) else f"%{b:02x}"
        for b in text.encode("utf-8")
    )
    return f'%"{encoded}"'
