"""Serializer fields shared by the apps' APIs: JSON types taken strictly, never coerced."""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers


class StrictFloatField(serializers.FloatField):
    """A JSON number only: `"0.3"` and `true` are refused, as are NaN and infinities."""

    default_error_messages = {"invalid": "A number is required (not a string)."}

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if not math.isfinite(data):
            self.fail("invalid")
        return float(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false only: `"yes"` and `1` are refused (a budget is confirmed on
    purpose, never by a loosely typed value)."""

    default_error_messages = {"invalid": "true or false is required."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data
