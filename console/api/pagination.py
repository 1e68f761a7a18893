"""The API's one pagination: `?limit=&offset=`, with bounds (docs/hardening.md).

DRF's LimitOffsetPagination takes any integer: `?limit=9223372036854775808` reached the
database as a LIMIT no 64-bit column holds, and the query failed with a 500. A page holds at
most MAX_LIMIT items (a larger limit gives MAX_LIMIT, as DRF's own `max_limit` does), and an
offset beyond MAX_OFFSET is taken as MAX_OFFSET: an empty page, since no list here comes near
that many rows.
"""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

MAX_LIMIT = 1000
MAX_OFFSET = 10**12


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), MAX_OFFSET)
