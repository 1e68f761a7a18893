"""The one JSON reader of every entry point that takes JSON: the DRF parser, the decision fast
path, the scheduler extender and telemetry's JSON samples.

It refuses, as a 400 naming the field, what the database or a later step would fail on
(docs/hardening.md):
- a string or key holding U+0000 (PostgreSQL text cannot store NUL; a row with one used to
  poison the decision recorder's write queue);
- nesting deeper than Python's recursion limit (`json.loads` raises RecursionError, which
  DRF's own JSONParser does not catch: a 100,000-deep array was a 500).

Finding NUL is cheap: JSON can only carry U+0000 as the escape `\\u0000` (a raw control
character is invalid JSON), so a UTF-8 body without those six bytes is clean and only a body
with them is walked to name the field.
"""

from __future__ import annotations

import json
from typing import Any

NUL_MESSAGE = "Must not contain the NUL character (U+0000)."
_NUL_ESCAPE = b"\\u0000"


class JsonBodyError(ValueError):
    """A body that is not acceptable JSON. `errors` follows the API's error shape: for a NUL,
    the message under the field's path (`{"requests": {"3": {"session_id": [...]}}}`);
    for a parse failure, under `body`."""

    def __init__(self, message: str, errors: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors


def loads(body: bytes | str) -> Any:
    """Parse a JSON body, refusing NUL characters and absurd nesting (raises JsonBodyError)."""
    try:
        data = json.loads(body)
    except RecursionError:
        problem = "JSON parse error - nested too deeply"
        raise JsonBodyError(problem, {"body": [problem]}) from None
    except (ValueError, UnicodeDecodeError) as exc:
        problem = f"JSON parse error - {exc}"
        raise JsonBodyError(problem, {"body": [problem]}) from None
    raw = body.encode() if isinstance(body, str) else body
    # JSON may also come as UTF-16 or UTF-32 (RFC 8259 §8.1, which json.loads reads), where
    # the escape is other bytes: such a body is always walked.
    if _NUL_ESCAPE in raw or json.detect_encoding(raw) != "utf-8":
        path = nul_path(data)
        if path is not None:
            raise JsonBodyError(
                f"{'.'.join(path) or 'body'}: {NUL_MESSAGE}", nest(path or ["body"], NUL_MESSAGE)
            )
    return data


def nul_path(value: Any) -> list[str] | None:
    """The path to the first string or key holding U+0000 (a key's own path for a bad key),
    or None. Iterative, so it cannot overflow on what `json.loads` accepted."""
    stack: list[tuple[list[str], Any]] = [([], value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if "\x00" in key:
                    return [*path, key.replace("\x00", "\\u0000")]
                stack.append(([*path, key], child))
        elif isinstance(item, list):
            stack.extend(([*path, str(index)], child) for index, child in enumerate(item))
    return None


def nest(path: list[str], message: str) -> dict[str, Any]:
    """`message` under `path` in the API's nested error shape."""
    errors: dict[str, Any] = {path[-1]: [message]}
    for part in reversed(path[:-1]):
        errors = {part: errors}
    return errors
