"""Prompt text to token count and prefix block ids, without a tokenizer.

Every caller that has a prompt's text but not its tokens (the Envoy picker, a REST caller that
wants cache affinity with gateway traffic) derives `prompt_tokens` and `prefix_hashes` with
`prompt_blocks`, so the same prompt gets the same block ids on every path and the engine's
prefix index (`console/placement/engine/core.py`) matches them whichever path placed the earlier
request.

The mapping, fixed (changing it breaks affinity with blocks already indexed):
- text is measured in Unicode code points, and `CHARS_PER_TOKEN` = 4 of them make one token:
  OpenAI's rule of thumb for English text ("one token is roughly 4 characters",
  help.openai.com, "What are tokens and how to count them?"). Only an estimate: a real
  tokenizer's count differs per model and language;
- a block is `BLOCK_TOKENS` tokens (`optimizer.decision.BLOCK_TOKENS`, 512, as Mooncake's
  traces hash), so `BLOCK_CHARS` = 2048 code points;
- only full blocks get an id, as vLLM's automatic prefix caching caches only full blocks
  (docs.vllm.ai, "Automatic Prefix Caching", design);
- a block's id chains its parent's, as vLLM's block hash does (hash of the parent block's hash
  and this block's tokens), so two prompts share the id of block k only if their first k+1
  blocks are equal: the first 8 bytes (big-endian, signed) of BLAKE2b over the parent id's 8
  bytes (zero for the first block) followed by the block's text as UTF-8.

A token-id prompt (OpenAI `/v1/completions` accepts a list of token ids) is exact instead:
`prompt_token_blocks` counts the ids and hashes 512-id blocks the same chained way, over the
ids as 4-byte big-endian unsigned integers.

Chat messages become one text with `chat_text`, so a conversation's later turns share the
leading blocks of its earlier ones.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from typing import Any

from optimizer.decide.request import BLOCK_TOKENS

CHARS_PER_TOKEN = 4
BLOCK_CHARS = BLOCK_TOKENS * CHARS_PER_TOKEN
_ZERO = bytes(8)


def prompt_blocks(text: str) -> tuple[int, tuple[int, ...]]:
    """(estimated prompt tokens, ids of the prompt's full blocks in order) for `text`."""
    tokens = math.ceil(len(text) / CHARS_PER_TOKEN)
    full = len(text) // BLOCK_CHARS
    return tokens, _chain(
        text[i * BLOCK_CHARS : (i + 1) * BLOCK_CHARS].encode("utf-8", "surrogatepass")
        for i in range(full)
    )


def prompt_token_blocks(token_ids: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """(prompt tokens, block ids) for a prompt given as token ids (each 0 <= id < 2**32)."""
    full = len(token_ids) // BLOCK_TOKENS
    return len(token_ids), _chain(
        b"".join(t.to_bytes(4, "big") for t in token_ids[i * BLOCK_TOKENS : (i + 1) * BLOCK_TOKENS])
        for i in range(full)
    )


def chat_text(messages: Sequence[dict[str, Any]]) -> str:
    """One text for a chat: each message as `<|role|>` newline, content, newline, in order.
    A content given as parts (OpenAI's `[{"type": "text", "text": ...}, ...]`) contributes its
    text parts; other parts (images, audio) add no text."""
    pieces = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                part.get("text", "")
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        pieces.append(f"<|{message.get('role', '')}|>\n{content or ''}\n")
    return "".join(pieces)


def _chain(blocks: Iterable[bytes]) -> tuple[int, ...]:
    ids: list[int] = []
    parent = _ZERO
    for block in blocks:
        parent = hashlib.blake2b(parent + block, digest_size=8).digest()
        ids.append(int.from_bytes(parent, "big", signed=True))
    return tuple(ids)
