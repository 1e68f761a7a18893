"""Deterministic filler text: prompts that carry a trace's prefix sharing, and completions.

A trace (Mooncake's `hash_ids`, docs/traces.md) says which 512-token blocks two requests share;
a real client sends text. `trace_prompt` writes, for a trace request, a prompt whose blocks
reproduce that sharing under the one mapping Locus uses for text (`optimizer.prompts`: 4
characters a token, 2048-character blocks with chained ids):

- its length is exactly `4 * input_length` characters, so `prompt_blocks` counts
  `input_length` tokens and `input_length // 512` full blocks;
- block k is the filler of the trace's `hash_ids[k]` alone, so two requests whose first k
  hash ids agree have the same first k blocks of text, hence the same chained block ids, and
  one differing id makes every later block id differ, as in the trace (whose ids are per
  prefix: the same id at position k means the same first k+1 blocks);
- the last, partial block is the start of its hash id's filler; blocks beyond the given
  `hash_ids` (a trace line with too few) are filled from the last id and their position.

Completions are `output_text(n)`: n pieces of exactly 4 characters, so a client that counts
tokens the same way counts n.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache

from optimizer.prompts import BLOCK_CHARS, CHARS_PER_TOKEN

# Short lower-case words for prompts.
_WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "that",
    "this",
    "are",
    "was",
    "be",
    "it",
    "or",
    "an",
    "not",
    "node",
    "edge",
    "site",
    "fleet",
    "cache",
    "block",
    "token",
    "model",
    "batch",
    "queue",
    "route",
    "link",
    "core",
    "rack",
    "river",
    "stone",
    "light",
    "north",
    "south",
    "east",
    "west",
    "green",
    "amber",
    "quiet",
    "rapid",
    "early",
    "late",
    "paper",
    "glass",
    "metal",
    "water",
    "field",
    "forest",
    "valley",
    "harbor",
    "signal",
    "packet",
    "stream",
    "window",
)
# Output pieces: one 4-character token each (a space and a three-letter word).
_PIECES = tuple(
    " " + w
    for w in (
        "the",
        "and",
        "for",
        "now",
        "new",
        "one",
        "two",
        "see",
        "how",
        "way",
        "day",
        "may",
        "all",
        "can",
        "her",
        "you",
        "out",
        "get",
        "use",
    )
)


@lru_cache(maxsize=8192)
def block_text(seed: int | str) -> str:
    """The `BLOCK_CHARS` characters of filler that one block id stands for."""
    rng = random.Random(seed)  # seeded by an int or str: the same text on every run
    text = ""
    while len(text) < BLOCK_CHARS:
        text += " " + " ".join(rng.choices(_WORDS, k=512))
    return text[:BLOCK_CHARS]


def trace_prompt(hash_ids: Sequence[int], input_length: int) -> str:
    """Prompt text of `input_length` tokens whose blocks share as the trace's `hash_ids` do
    (see the module docstring)."""
    if input_length < 0:
        raise ValueError(f"input_length must be >= 0, got {input_length}")
    chars = input_length * CHARS_PER_TOKEN
    blocks = -(-chars // BLOCK_CHARS)
    parts: list[str] = []
    last = hash_ids[-1] if hash_ids else 0
    for k in range(blocks):
        seed: int | str = hash_ids[k] if k < len(hash_ids) else f"{last}+{k}"
        parts.append(block_text(seed))
    return "".join(parts)[:chars]


def output_text(tokens: int, start: int = 0) -> str:
    """Tokens `start` to `start + tokens` of a completion: 4 characters each."""
    return "".join(_PIECES[i % len(_PIECES)] for i in range(start, start + tokens))
