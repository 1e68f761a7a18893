"""One application error type, rendered by one DRF exception handler into one error shape.

Every error body is `{"message": str, "errors": {field: [str, ...]}}` (docs/contracts.md §4);
`errors` is present for validation failures (400) and may carry extra detail elsewhere.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import ProtectedError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

INTERNAL_ERROR_MESSAGE = "Internal server error; the server logged the cause."
# Paths whose callers are programs: their 500s keep the API's JSON error shape.
MACHINE_PATH_PREFIXES = ("/api/", "/extender/")


class ApplicationError(Exception):
    """A business-rule failure raised by a service, shown to the caller as is."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int = status.HTTP_400_BAD_REQUEST,
        errors: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.errors = errors or {}


def _flatten(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {key: _flatten(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_flatten(item) for item in detail]
    return str(detail)


def error_body(message: str, errors: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message}
    if errors:
        body["errors"] = errors
    return body


def parse_error_body(problem: str) -> dict[str, Any]:
    """A body that cannot be parsed at all: the problem as `errors.body`, as the telemetry
    endpoints report undecodable bodies."""
    return error_body(problem, {"body": [problem]})


def validation_error_body(detail: Any) -> dict[str, Any]:
    """The error body of a DRF ValidationError's `detail`."""
    if not isinstance(detail, dict):
        detail = {"non_field_errors": detail}
    return error_body("The request is invalid.", _flatten(detail))


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.message, exc.errors), status=exc.status_code)
    if isinstance(exc, ProtectedError):
        names = sorted({str(obj) for obj in exc.protected_objects})[:10]
        return Response(
            error_body("Still in use; remove what refers to it first.", {"referenced_by": names}),
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = validation_error_body(exc.detail)
    elif isinstance(exc, exceptions.ParseError):
        response.data = parse_error_body(str(exc.detail))
    else:
        summary = getattr(exc, "detail", None)
        response.data = error_body(str(summary) if summary is not None else str(exc))
    return response


def _machine_path(request: HttpRequest) -> bool:
    return request.path.startswith(MACHINE_PATH_PREFIXES)


# Django's error handlers (`handler400`, `handler404`, `handler500` in console/urls.py): on
# the API's paths, errors keep the API's JSON shape (a service parses JSON, not an HTML page);
# elsewhere they are Django's own pages. Django logs 500s to `django.request` itself.
def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _machine_path(request):
        return JsonResponse(error_body("Bad request."), status=400)
    return defaults.bad_request(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _machine_path(request):
        return JsonResponse(error_body(f"No such endpoint: {request.path}"), status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _machine_path(request):
        return JsonResponse(error_body(INTERNAL_ERROR_MESSAGE), status=500)
    return defaults.server_error(request)
