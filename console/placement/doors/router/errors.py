"""Errors in OpenAI's shape, so OpenAI clients raise their usual exceptions on them:
`{"error": {"message", "type", "param", "code"}}` (the OpenAI API reference, "Error codes";
vLLM's server answers the same shape). Locus adds `reasons` (node -> why it could not serve)
to a 503, and `errors` (field -> messages) to a 400 that names fields."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

# OpenAI's `type` per status (its Python client maps the status, the type is for people).
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable_error",
}


class RouterError(Exception):
    """Answer the client with `status` and this error; nothing was forwarded."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.extra = extra
        self.headers: dict[str, str] = {}

    def with_headers(self, headers: dict[str, str]) -> RouterError:
        self.headers = {**self.headers, **headers}
        return self

    def body(self) -> dict[str, Any]:
        error = {
            "message": self.message,
            "type": _TYPES.get(self.status, "server_error"),
            "param": self.param,
            "code": self.code,
            **self.extra,
        }
        return {"error": error}

    def response(self) -> web.Response:
        return web.Response(
            status=self.status,
            body=orjson.dumps(self.body()),
            content_type="application/json",
            headers=self.headers,
        )
