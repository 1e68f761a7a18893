"""Argument types shared by the optimizer's CLI and the console's commands."""

from __future__ import annotations

import argparse

import pytest

from optimizer import argtypes


@pytest.mark.parametrize("text", ["0.25", "1", "1e-3"])
def test_a_fraction_takes_shares_up_to_one(text: str) -> None:
    assert argtypes.fraction(text) == float(text)


@pytest.mark.parametrize("text", ["0", "-0.5", "1.01", "nan", "inf", "half", ""])
def test_a_fraction_refuses_anything_outside_zero_to_one(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        argtypes.fraction(text)


def test_numbers_must_be_finite_and_in_range() -> None:
    assert argtypes.non_negative("0") == 0.0
    assert argtypes.positive("2.5") == 2.5
    for bad, kind in (("-1", argtypes.non_negative), ("0", argtypes.positive)):
        with pytest.raises(argparse.ArgumentTypeError, match="finite number"):
            kind(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="finite number"):
        argtypes.positive("1e999")


@pytest.mark.parametrize("text", ["", "   ", "a\x00b", "tab\there", "x" * 201])
def test_a_name_refuses_blank_control_characters_and_huge(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        argtypes.name(text)


def test_a_url_needs_http_and_a_host() -> None:
    assert argtypes.http_url("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    for bad in ("ftp://host", "http://", "127.0.0.1:8000", "javascript:alert(1)"):
        with pytest.raises(argparse.ArgumentTypeError, match="http"):
            argtypes.http_url(bad)


@pytest.mark.parametrize("text", ["0", "65536", "-1", "80.5", "http", ""])
def test_a_port_is_one_to_65535(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="TCP port"):
        argtypes.port(text)
    assert argtypes.port("9400") == 9400
