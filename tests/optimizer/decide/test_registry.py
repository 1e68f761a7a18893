"""The registry: every plugin by name, and clear errors for unknown names."""

from __future__ import annotations

import pytest

from optimizer.decide.registry import (
    FILTERS,
    GENERALIST,
    POLICY_NAMES,
    get_filter,
    get_picker,
    is_learned,
    resolve_policy_dir,
)


def test_every_filter_and_picker_is_built_by_name() -> None:
    assert get_filter("constraints").name == "constraints"
    assert get_filter("min-free-kv", min_free=0.1).name == "min-free-kv"
    assert get_picker("top-k").name == "top-k"
    assert {"constraints", "among", "breakers", "stale-telemetry", "min-free-kv"} <= set(FILTERS)


def test_an_unknown_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown filter 'nope'; built-in filters: constraints"):
        get_filter("nope")
    with pytest.raises(KeyError, match="unknown picker"):
        get_picker("nope")


def test_learned_is_anything_but_a_heuristic() -> None:
    assert not any(is_learned(name) for name in POLICY_NAMES)
    assert is_learned(GENERALIST) and is_learned("/some/dir")
    assert (resolve_policy_dir(GENERALIST) / "scorer.pt").is_file()
