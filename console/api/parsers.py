"""Request body parsers beyond DRF's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import BaseParser, FormParser, JSONParser, MultiPartParser

from console.api.jsonbody import NUL_MESSAGE, JsonBodyError, loads, nest, nul_path


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, reading through `console.api.jsonbody.loads`: a NUL character in
    any string is a 400 naming the field, and absurd nesting a 400 instead of a 500."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        body = stream.read() if stream is not None else b""
        try:
            return loads(body)
        except JsonBodyError as exc:
            if "body" in exc.errors:
                raise ParseError(exc.message) from None
            raise ValidationError(exc.errors) from None


def _refuse_nul_fields(data: Any) -> Any:
    """A form body's fields (a QueryDict, or multipart's DataAndFiles) with NUL refused."""
    fields = getattr(data, "data", data)
    path = nul_path({key: fields.getlist(key) for key in fields})
    if path is not None:
        raise ValidationError(nest(path[:1], NUL_MESSAGE))
    return data


class SafeFormParser(FormParser):
    """DRF's form parser; a NUL character in a field is a 400 naming it."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        return _refuse_nul_fields(super().parse(stream, media_type, parser_context))


class SafeMultiPartParser(MultiPartParser):
    """DRF's multipart parser; a NUL character in a field is a 400 naming it."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        return _refuse_nul_fields(super().parse(stream, media_type, parser_context))


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
