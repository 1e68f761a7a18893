"""`send_event` from threads with no event loop (the engine's recorder, a Celery task) goes
out on the process's one sender loop: every event arrives, in order, and no thread is started
per event."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from console.live.events import LIVE_GROUP, send_event

pytestmark = pytest.mark.django_db
EVENT = {"node": "muc-l4-1", "fresh": False, "age_s": None, "ts": "2026-11-24T12:00:00+00:00"}


def test_events_sent_off_any_event_loop_arrive_through_one_sender_thread(
    django_capture_on_commit_callbacks: Any,
) -> None:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(LIVE_GROUP, channel)
    before = threading.active_count()

    def recorder() -> None:  # a thread with no event loop, as the recorder's
        for age in range(30):
            send_event("node.freshness", EVENT | {"age_s": float(age)})

    with django_capture_on_commit_callbacks(execute=True):
        worker = threading.Thread(target=recorder)
        worker.start()
        worker.join()
    senders = [t for t in threading.enumerate() if t.name == "locus-live-events"]
    assert len(senders) == 1
    assert threading.active_count() <= before + 1  # the sender, if this test started it
    received = [async_to_sync(layer.receive)(channel) for _ in range(30)]
    assert [m["event"]["age_s"] for m in received] == [float(a) for a in range(30)]
