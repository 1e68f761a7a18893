"""The single-page app's entry: every dashboard route answers with the built index.html.

The page's assets are hashed files under STATIC_URL, served by WhiteNoise; index.html itself is
read once per process (it changes only with a new build, which comes with a restart).
"""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe


def _read_index() -> str | None:
    index = settings.FRONTEND_DIST / "index.html"
    return index.read_text(encoding="utf-8") if index.is_file() else None


_cached_index = cache(_read_index)


@require_safe
@never_cache
@ensure_csrf_cookie  # the app's fetch wrapper sends this cookie back as X-CSRFToken
def spa(request: HttpRequest) -> HttpResponse:
    html = _read_index() if settings.DEBUG else _cached_index()
    if html is None:
        return HttpResponse(
            "The dashboard is not built: run `make setup` (or `npm ci && npm run build` in "
            "frontend/). The API is at /api/v1/ and its docs at /api/docs/.",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(html)
