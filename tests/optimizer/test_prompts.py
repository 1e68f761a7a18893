"""Prompt text to tokens and prefix block ids (optimizer/prompts.py): one mapping for every
caller, so gateway and REST traffic share cache affinity."""

from __future__ import annotations

import hashlib

from optimizer.decide.request import BLOCK_TOKENS
from optimizer.prompts import (
    BLOCK_CHARS,
    chat_text,
    prompt_blocks,
    prompt_token_blocks,
)


def test_a_block_is_512_tokens_of_four_characters() -> None:
    assert BLOCK_TOKENS == 512 and BLOCK_CHARS == 2048
    assert prompt_blocks("") == (0, ())
    assert prompt_blocks("abcde") == (2, ())  # tokens round up
    tokens, ids = prompt_blocks("x" * (2 * BLOCK_CHARS + 5))
    assert tokens == 1026 and len(ids) == 2  # the partial third block gets no id


def test_the_first_block_id_is_blake2b_of_zero_parent_and_text() -> None:
    text = "é" * BLOCK_CHARS  # counted in code points, hashed as UTF-8
    digest = hashlib.blake2b(bytes(8) + text.encode(), digest_size=8).digest()
    assert prompt_blocks(text)[1] == (int.from_bytes(digest, "big", signed=True),)


def test_prompts_share_ids_only_while_their_prefixes_agree() -> None:
    common = "system prompt " * 400  # 5600 characters: two full blocks
    _, a = prompt_blocks(common + "first question " * 200)
    _, b = prompt_blocks(common + "second question " * 200)
    assert a[:2] == b[:2] and a[2] != b[2]
    _, c = prompt_blocks("X" + common[1:] + "first question " * 200)
    assert not set(a) & set(c)  # a change in block 0 changes every later id (chained)


def test_ids_fit_a_signed_64_bit_integer_and_nul_or_surrogates_hash() -> None:
    _, ids = prompt_blocks(("\x00\ud800" * 2 * BLOCK_CHARS)[: 3 * BLOCK_CHARS])
    assert len(ids) == 3 and all(-(2**63) <= i < 2**63 for i in ids)


def test_token_id_prompts_count_exactly_and_hash_512_id_blocks() -> None:
    tokens, ids = prompt_token_blocks(list(range(1100)))
    assert tokens == 1100 and len(ids) == 2
    assert prompt_token_blocks(list(range(512)) + [7])[1] == ids[:1]


def test_a_later_chat_turn_shares_the_earlier_turns_blocks() -> None:
    turn1 = [
        {"role": "system", "content": "You are terse. " * 300},
        {"role": "user", "content": [{"type": "text", "text": "Summarise. " * 300}]},
    ]
    turn2 = [*turn1, {"role": "assistant", "content": "Done."}, {"role": "user", "content": "?"}]
    assert chat_text(turn1).startswith("<|system|>\nYou are terse.")
    _, first = prompt_blocks(chat_text(turn1))
    _, second = prompt_blocks(chat_text(turn2))
    assert len(first) >= 3 and second[: len(first)] == first
