"""What the picker refuses, and how: a request it will not place ends its stream with an
ImmediateResponse in the API's error shape (docs/gateway.md, "Errors"). The checks here read
only the request's headers or the engine's queues, never the stream's state, so they stand
apart from the message order the stream follows (picker.py).
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings

from console.placement.doors.extproc import headers
from console.placement.doors.openai import PATHS
from console.placement.engine.inputs import DecisionInput
from console.placement.engine.runtime import Runtime


class Refused(Exception):
    """Answer the client with `status` and the API's error shape, and end the stream."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.payload = {"message": message, **extra}


def check_request_headers(request: dict[str, str]) -> float | None:
    """The TTFT target (ms) the request headers name, or None; Refused when the path, the
    encoding, the target or a session or fairness id cannot be served."""
    path = request.get(":path", "").partition("?")[0]
    if path not in PATHS:
        raise Refused(404, f"Locus places {' and '.join(PATHS)} requests, not {path!r}.")
    encoding = request.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        # Never inflate a client's body here (a compression bomb would be ours to hold).
        raise Refused(415, f"Send the body uncompressed, not {encoding!r}.")
    ttft_target_ms: float | None = None
    ttft_header, ttft = headers.read(request, headers.TTFT)
    if ttft is not None:
        try:
            ttft_target_ms = float(ttft)
        except ValueError:
            ttft_target_ms = math.nan
        if not (math.isfinite(ttft_target_ms) and 0 < ttft_target_ms <= 1e9):
            raise Refused(
                400,
                "Invalid request headers.",
                errors={ttft_header: ["A positive number of milliseconds."]},
            )
    fairness_header, _ = headers.read(request, headers.FAIRNESS)
    for header in (headers.SESSION, fairness_header):
        if len(request.get(header, "")) > 200:
            raise Refused(
                400, "Invalid request headers.", errors={header: ["At most 200 characters."]}
            )
    return ttft_target_ms


def shed_if_saturated(rt: Runtime, body: DecisionInput) -> None:
    """429 when every endpoint that may serve the request (hard constraints applied) is
    saturated: its queue, as the engine sees it, at least LOCUS_PICKER_SHED_QUEUE_DEPTH (0:
    never shed). The reference picker's saturation detector judges a pool by queue depth
    too (docs/gateway.md, "Shedding")."""
    limit = settings.LOCUS_PICKER_SHED_QUEUE_DEPTH
    if limit <= 0:
        return
    queues = rt.engine.queues(body)
    if queues and min(queues.values()) >= limit:
        raise Refused(429, "Every endpoint for this request is saturated.", queue_depth=queues)
