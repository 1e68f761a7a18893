"""Refuse NUL characters in the URL before any view sees them (docs/hardening.md).

A path parameter or query parameter holding U+0000 (`/api/v1/nodes/a%00b`, `?node=a%00b`)
reached PostgreSQL as a lookup value, which it refuses with an error: a 500 on every detail
route. One check here covers every route, present and future; bodies are covered by the
parsers (console/api/parsers.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from console.api.errors import error_body
from console.api.jsonbody import NUL_MESSAGE


class RefuseNulMiddleware:
    """400 in the API's error shape for a path or query string holding U+0000."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            return _refuse({"path": [NUL_MESSAGE]})
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return _refuse({name.replace("\x00", "\\u0000"): [NUL_MESSAGE]})
        return self.get_response(request)


def _refuse(errors: dict[str, list[str]]) -> JsonResponse:
    return JsonResponse(error_body("The request is invalid.", errors), status=400)
