"""Request body parsers beyond DRF's defaults."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


class YamlTextParser(BaseParser):
    """Hands a YAML body over as text, for endpoints that validate it themselves."""

    media_type = "application/yaml"

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> str:
        try:
            return stream.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError("The body is not UTF-8 text.") from exc
