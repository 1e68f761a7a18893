"""A Redis outage is logged once with its traceback and once when it ends, not once per live
event (issue 13: ~19 tracebacks a second). Events go through the real `send_event`, after
commit, to a channels_redis layer pointed at a port where nothing listens."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from console.live.events import send_event

pytestmark = pytest.mark.django_db
DEAD_REDIS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
    }
}
EVENT = {"node": "muc-l4-1", "fresh": False, "age_s": None, "ts": "2026-11-24T12:00:00+00:00"}


def _lines(caplog: pytest.LogCaptureFixture, needle: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and needle in r.getMessage()]


def test_an_outage_is_logged_once_and_its_end_once(
    settings: Any, caplog: pytest.LogCaptureFixture, django_capture_on_commit_callbacks: Any
) -> None:
    memory = settings.CHANNEL_LAYERS
    settings.CHANNEL_LAYERS = DEAD_REDIS
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(40):
            send_event("node.freshness", EVENT)
    down = _lines(caplog, "live stream (channel layer) unavailable")
    assert len(down) == 1 and down[0].exc_info is not None  # the traceback, once
    # Only this logger's lines: other background threads of the test process (the key ring's
    # reload, for one) may warn about their own troubles meanwhile.
    events = [r for r in caplog.records if r.name == "console.live.events"]
    assert len([r for r in events if r.levelno >= logging.WARNING]) == 1

    settings.CHANNEL_LAYERS = memory
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(3):
            send_event("node.freshness", EVENT)
    up = _lines(caplog, "live stream (channel layer) recovered")
    assert len(up) == 1 and "40 failed calls" in up[0].getMessage()
