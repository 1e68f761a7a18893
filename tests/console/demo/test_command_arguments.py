"""The demo's commands refuse bad options before they touch the database, a port or the API."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--share", "5"], "--share: expected a fraction in (0, 1]"),
        (["--share", "nan"], "--share: expected a finite number > 0"),
        (["--minutes", "-1"], "--minutes: expected a finite number >= 0"),
        (["--policy", "gen\x00eralist"], "--policy: expected up to 200 printable"),
        (["--web-url", "ftp://console"], "--web-url: expected an http(s) URL"),
        (["--evaluation-timeout", "0"], "--evaluation-timeout: expected a finite number > 0"),
    ],
)
def test_it_names_the_bad_option(argv: list[str], message: str) -> None:
    with pytest.raises(CommandError) as refused:
        call_command("demo_canary", *argv)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("command", "argv", "message"),
    [
        ("demo_fleet", ["--load", "nan"], "--load: expected a finite number > 0"),
        ("demo_fleet", ["--hours", "-1"], "--hours: expected a finite number > 0"),
        ("demo_fleet", ["--router-url", "router"], "--router-url: expected an http(s) URL"),
        ("demo_signin", ["--router-url", "ftp://r"], "--router-url: expected an http(s) URL"),
        ("demo_signin", ["--timeout", "-3"], "--timeout: expected a finite number > 0"),
    ],
)
def test_the_other_demo_commands_name_the_bad_option(
    command: str, argv: list[str], message: str
) -> None:
    with pytest.raises(CommandError) as refused:
        call_command(command, *argv)
    assert message in str(refused.value)
