"""Decision ids (console/placement/engine/ids.py): valid, distinct uuid4s across pool refills
and threads."""

import threading
import uuid

from console.placement.engine.ids import DecisionIds


def test_it_draws_version_4_uuids_in_hex():
    ids = DecisionIds()
    for _ in range(1000):  # several 4 KiB pools (256 ids each)
        value = ids.next()
        parsed = uuid.UUID(value)
        assert parsed.hex == value
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_it_never_repeats_an_id_across_threads():
    ids = DecisionIds()
    seen: list[list[str]] = [[] for _ in range(4)]

    def draw(out: list[str]) -> None:
        out.extend(ids.next() for _ in range(5000))

    threads = [threading.Thread(target=draw, args=(out,)) for out in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    drawn = [value for out in seen for value in out]
    assert len(set(drawn)) == len(drawn) == 20_000
