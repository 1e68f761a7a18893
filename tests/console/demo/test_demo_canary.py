"""`manage.py demo_canary` against a live console: two admins' keys evaluate, approve and
canary a version through the REST API, then the command reports both arms' live figures."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from console.access.models import ApiKey
from console.policies.models import PolicyTransition, PolicyVersion
from console.policies.services import policy_register, policy_transition

# Slow-marked: after other tests in the same run, pytest-django's threaded live server answered
# some calls with 500s and dropped connections on the embedded SQLite test database, whose one
# in-memory connection the server threads and the test share (seen in CI on 2026-11-24, not
# diagnosed further); alone it passes. Run with `-m slow`.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def demo(fleet: Any, settings: Any, tmp_path: Any) -> PolicyVersion:
    settings.VAR_DIR = tmp_path
    User.objects.create_superuser("admin", password="pw-12345")
    return policy_register(name="least-loaded", version="v1", heuristic="least-loaded")


def _run(live_server: Any, capsys: Any, **options: Any) -> tuple[int, str]:
    try:
        call_command(
            "demo_canary",
            policy="least-loaded",
            policy_version="v1",
            web_url=live_server.url,
            **{"minutes": 0, "every": 0, **options},
        )
    except SystemExit as exc:
        return int(exc.code or 0), capsys.readouterr().out
    return 0, capsys.readouterr().out


def test_it_evaluates_approves_and_canaries_with_two_admins(
    demo: PolicyVersion, live_server: Any, capsys: Any
) -> None:
    code, out = _run(live_server, capsys, share=0.5)
    assert code == 0, out
    demo.refresh_from_db()
    assert demo.state == "canary"
    assert demo.canary_share == pytest.approx(0.5)
    assert demo.evaluations.get().status == "succeeded"
    actors = dict(PolicyTransition.objects.filter(version=demo).values_list("to_state", "actor"))
    assert actors["approved"].startswith("key:demo-canary-admin-")
    assert actors["canary"].startswith("key:demo-canary-admin2-")
    assert "least-loaded@v1 at 50%" in out and "still in canary" in out
    # The keys it issued are revoked; the second admin's password is kept for the demo.
    assert not ApiKey.objects.filter(name__startswith="demo-canary-", revoked_at=None).exists()
    assert User.objects.get(username="admin2").groups.filter(name="admin").exists()


def test_it_reports_a_canary_rolled_back_while_it_watches(
    demo: PolicyVersion, live_server: Any, capsys: Any
) -> None:
    def watchdog() -> None:  # what the canary watchdog does when the canary does worse
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            version = PolicyVersion.objects.get(pk=demo.pk)
            if version.state == "canary":
                policy_transition(policy=version, action="rollback", actor=None)
                return
            time.sleep(0.05)

    rollback = threading.Thread(target=watchdog)
    rollback.start()
    code, out = _run(live_server, capsys, minutes=0.5, every=0.2)
    rollback.join()
    assert code == 1
    assert "rolled back" in out
    assert PolicyVersion.objects.get(pk=demo.pk).state == "retired"


def test_it_names_what_is_missing(fleet: Any, live_server: Any, capsys: Any) -> None:
    with pytest.raises(CommandError, match="No user `admin`"):
        _run(live_server, capsys)
    User.objects.create_superuser("admin", password="pw-12345")
    with pytest.raises(CommandError, match="No policy version least-loaded@v1"):
        _run(live_server, capsys)
