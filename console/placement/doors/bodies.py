"""Request bodies of the decision hot path, validated with pydantic.

A DRF serializer costs about 0.9 ms a request to build and run here (field deep copies,
validators), more than the decision itself; pydantic's compiled validators take tens of
microseconds. drf-spectacular documents these models directly (its pydantic extension), so
each body has this one definition.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from rest_framework import exceptions

MAX_PREFIX_HASHES = 4096  # 2M tokens of 512-token blocks: beyond any context window
MAX_BATCH = 1000
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class PlacementRequestBody(BaseModel):
    """POST /api/v1/placements (docs/contracts.md §4). Strict: `"1800"` is not a token count and
    `"yes"` not a boolean (the scheduler extender, whose annotations are strings, validates
    with `strict=False`)."""

    model_config = ConfigDict(extra="ignore", protected_namespaces=(), strict=True)

    model: str = Field(min_length=1, max_length=200)
    source: str | None = Field(
        default=None, max_length=100, description="A registered source (gives the site and SLO)."
    )
    site: str | None = Field(
        default=None, max_length=100, description="For callers without a registered source."
    )
    slo: str | None = Field(
        default=None, max_length=100, description="Defaults to the source's SLO."
    )
    prompt_tokens: int = Field(ge=0, le=10_000_000)
    max_output_tokens: int = Field(ge=1, le=10_000_000)
    prefix_hashes: list[Int64] = Field(
        default_factory=list,
        max_length=MAX_PREFIX_HASHES,
        description="Ids of the prompt's 512-token blocks.",
    )
    session_id: str | None = Field(
        default=None, max_length=200, description="Keeps a session on one rollout arm."
    )
    explain: bool = False

    @model_validator(mode="after")
    def _one_origin(self) -> PlacementRequestBody:
        if (self.source is None) == (self.site is None):
            raise ValueError("Give exactly one of source and site.")
        return self


class PlacementBatchBody(BaseModel):
    """POST /api/v1/placements:batch."""

    requests: list[PlacementRequestBody] = Field(min_length=1, max_length=MAX_BATCH)


class OutcomeBody(BaseModel):
    """POST /api/v1/placements/{decision_id}/outcome."""

    model_config = ConfigDict(allow_inf_nan=False, strict=True)

    ok: bool
    ttft_ms: float | None = Field(default=None, ge=0)
    e2e_ms: float | None = Field(default=None, ge=0)
    # A caller that ran a split decision's two phases itself says how the prefill went; the
    # prefill node's breaker hears it (absent: only the decode node's does).
    prefill_ok: bool | None = None

    @field_validator("e2e_ms")
    @classmethod
    def _e2e_includes_ttft(cls, e2e_ms: float | None, info: ValidationInfo) -> float | None:
        ttft_ms = info.data.get("ttft_ms")
        if e2e_ms is not None and ttft_ms is not None and e2e_ms < ttft_ms:
            raise ValueError("The end-to-end latency includes the TTFT, so cannot be less.")
        return e2e_ms


Body = TypeVar("Body", bound=BaseModel)


def parse(body_type: type[Body], data: Any) -> Body:
    """Validate `data`, or raise a DRF ValidationError in the API's error shape: field errors
    nested along their path (`{"requests": {"3": {"model": ["..."]}}}`)."""
    try:
        return body_type.model_validate(data)
    except ValidationError as exc:
        raise exceptions.ValidationError(_nest(exc)) from None


def _nest(exc: ValidationError) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    for error in exc.errors():
        # A whole-object rule (one of source/site) belongs to `source`, as its message says.
        path = [str(part) for part in error["loc"]] or ["source"]
        if error["type"] == "value_error" and path[-1].isdigit():
            path.append("source")
        node = errors
        for part in path[:-1]:
            node = node.setdefault(part, {})
        message = str(error["msg"]).removeprefix("Value error, ")
        node.setdefault(path[-1], []).append(message)
    return errors
