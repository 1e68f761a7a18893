"""The embedded broker never hands a consumer a half-written message (console/broker.py)."""

from __future__ import annotations

from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from django.conf import settings
from kombu import Connection

import console.broker


def _connection(folder: Path, transport: str = "console.broker:Transport") -> Connection:
    return Connection(
        "filesystem://",
        transport=transport,
        transport_options={
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            # Declaring a queue writes its exchange table here; kombu's default is
            # ./control, which would land in the checkout.
            "control_folder": str(folder / "control"),
            "store_processed": False,
        },
    )


def test_a_poll_during_a_write_sees_no_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consumer polls while the producer is between creating the message's file and
    writing it: the stock transport handed it an empty file there (a JSONDecodeError that
    killed the worker); this one shows nothing until the message is whole."""
    seen: list[object] = []
    with _connection(tmp_path) as consumer, _connection(tmp_path) as producer:
        polling = consumer.default_channel
        real_dumps = console.broker.dumps

        def dumps_while_polled(payload: Any) -> str:
            try:
                seen.append(polling._get("q"))
            except Empty:
                seen.append("empty")
            return str(real_dumps(payload))

        monkeypatch.setattr(console.broker, "dumps", dumps_while_polled)
        producer.default_channel._put("q", {"n": 1})
        monkeypatch.undo()
        assert seen == ["empty"]
        assert polling._get("q") == {"n": 1}
    assert not list(tmp_path.iterdir())


def test_messages_round_trip(tmp_path: Path) -> None:
    """Every message arrives once (within one millisecond the stock names do not keep order,
    and neither do these: Celery does not rely on it)."""
    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue("q")
        for i in range(20):
            queue.put({"n": i})
        assert sorted(queue.get(timeout=5).payload["n"] for _ in range(20)) == list(range(20))
        queue.close()
    # The queue's exchange table went to the test's folder, not into the checkout.
    assert (tmp_path / "control" / "q.exchange").is_file()


def test_filesystem_urls_use_it_in_the_celery_app() -> None:
    from kombu.transport import resolve_transport

    from console.celery import app

    assert resolve_transport("filesystem") is console.broker.Transport
    if settings.CELERY_BROKER_URL == "filesystem://":
        with app.connection_for_write() as conn:
            assert isinstance(conn.transport, console.broker.Transport)


def test_connecting_says_nothing_of_a_missing_hostname(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A directory has no host: kombu's "No hostname was supplied" warning, which every
    process of `make run` logged, is not raised for this transport."""
    with _connection(tmp_path) as connection:
        connection.default_channel.queue_declare("q")
        assert connection.info()["hostname"] is None
    assert "No hostname" not in caplog.text
