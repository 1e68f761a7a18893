"""Filler text: a trace's prefix sharing becomes sharing in the prompt text's blocks."""

from __future__ import annotations

import pytest

from optimizer.emulator import output_text, trace_prompt
from optimizer.prompts import prompt_blocks
from optimizer.traces import load_trace
from tests.optimizer.fleets import MOONCAKE


@pytest.mark.parametrize("tokens", [0, 1, 511, 512, 513, 2048, 2049])
def test_the_prompt_has_the_trace_requests_token_count_and_full_blocks(tokens: int) -> None:
    counted, blocks = prompt_blocks(trace_prompt(list(range(5)), tokens))
    assert counted == tokens and len(blocks) == tokens // 512


def test_blocks_are_shared_exactly_as_far_as_the_hash_ids_are() -> None:
    a = prompt_blocks(trace_prompt([1, 2, 3, 4], 2048))[1]
    b = prompt_blocks(trace_prompt([1, 2, 3, 9], 2100))[1]
    c = prompt_blocks(trace_prompt([7, 2, 3, 4], 2048))[1]
    assert a[:3] == b[:3] and a[3] != b[3]
    assert not set(a) & set(c)  # a different first block: nothing is shared after it
    assert trace_prompt([1, 2, 3, 4], 2048) == trace_prompt([1, 2, 3, 4], 2048)


def test_a_trace_line_with_too_few_hash_ids_is_still_filled_to_its_length() -> None:
    counted, blocks = prompt_blocks(trace_prompt([5], 1536))
    assert counted == 1536 and len(set(blocks)) == 3
    assert prompt_blocks(trace_prompt([], 600))[0] == 600
    with pytest.raises(ValueError):
        trace_prompt([1], -1)


def test_the_shipped_traces_sharing_survives_the_round_trip() -> None:
    trace = load_trace(MOONCAKE, limit=300)
    ids: dict[tuple[int, ...], tuple[int, ...]] = {}
    back: dict[tuple[int, ...], tuple[int, ...]] = {}
    shared = 0
    for request in trace:
        blocks = prompt_blocks(trace_prompt(request.hash_ids, request.prompt_tokens))[1]
        full = request.hash_ids[: len(blocks)]
        for k in range(1, len(full) + 1):
            # The same leading trace ids give the same leading block ids, and only they do.
            shared += full[:k] in ids
            assert ids.setdefault(full[:k], blocks[:k]) == blocks[:k]
            assert back.setdefault(blocks[:k], full[:k]) == full[:k]
    assert shared > 100  # the slice does share prefixes


def test_output_text_is_four_characters_a_token() -> None:
    assert len(output_text(7)) == 28
    assert output_text(3, start=2) == output_text(5)[8:]
