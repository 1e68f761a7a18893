"""Request body parsers beyond DRF's defaults."""

from __future__ import annotations

from collections.abc import Mapping
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
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            return stream.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError("The body is not UTF-8 text.") from exc
