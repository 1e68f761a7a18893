"""`manage.py demo_canary`: put a learned policy on a live canary in the running demo, the way
two admins would, and watch it (docs/learned-policy.md "The live canary").

Against the console at `--web-url`, over its REST API with one admin API key per person
(four eyes: docs/operations.md):
1. the first admin (`admin`, made by `demo_prepare`) evaluates the version if it has no
   succeeded evaluation yet, waits for the evaluation, and approves it;
2. a second admin (`--second-admin`, made here once, password in `var/demo/`) puts it on a
   canary of `--share` of the traffic;
3. every `--every` seconds for `--minutes`, the command prints both arms' live figures from
   `GET /api/v1/rollout` (outcomes, SLO attainment, breached groups, estimated USD per 1k
   requests), as the canary watchdog sees them.

It exits 0 when the canary is still serving at the end, 1 when it left canary (the watchdog
rolled it back, or someone did), 2 when it could not be started. The keys it issues are
revoked on exit.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from console.access.choices import Role
from console.access.services import api_key_create, api_key_revoke
from console.demo.management.commands.demo_prepare import demo_dir
from optimizer import argtypes

TIMEOUT_S = 30.0


class Command(BaseCommand):
    help = "Approve (two admins) and canary a policy version in the running demo, then watch it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--policy", type=argtypes.name, default="generalist", help="version name (shipped)"
        )
        parser.add_argument("--policy-version", type=argtypes.name, default="shipped")
        parser.add_argument(
            "--share", type=argtypes.fraction, default=0.5, help="canary share, (0, 1]"
        )
        parser.add_argument(
            "--minutes", type=argtypes.non_negative, default=20.0, help="how long to watch"
        )
        parser.add_argument(
            "--every", type=argtypes.non_negative, default=60.0, help="seconds between reports"
        )
        parser.add_argument("--second-admin", type=argtypes.name, default="admin2")
        parser.add_argument(
            "--web-url", type=argtypes.http_url, default=settings.LOCUS_DEMO_WEB_URL
        )
        parser.add_argument(
            "--evaluation-timeout", type=argtypes.positive, default=900.0, help="seconds to wait"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        first = User.objects.filter(username="admin").first()
        if first is None:
            raise CommandError("No user `admin`: run `manage.py demo_prepare` (or `make run`).")
        second = _second_admin(options["second_admin"])
        stamp = time.strftime("%Y%m%d-%H%M%S")
        keys = [
            api_key_create(name=f"demo-canary-{user.username}-{stamp}", role=Role.ADMIN, owner=user)
            for user in (first, second)
        ]
        try:
            api = [_Api(options["web_url"], key.secret) for key in keys]
            pk = self._start(api, options)
            code = self._watch(api[0], pk, options["minutes"], options["every"])
        finally:
            for key in keys:
                api_key_revoke(api_key=key.api_key)
        if code:
            raise SystemExit(code)

    def _start(self, api: list[_Api], options: dict[str, Any]) -> int:
        name, version = options["policy"], options["policy_version"]
        found = [
            v
            for v in api[0].get("/api/v1/policies", params={"name": name})["results"]
            if v["version"] == version
        ]
        if not found:
            raise CommandError(f"No policy version {name}@{version} is registered.")
        policy = found[0]
        pk = int(policy["id"])
        if policy["state"] == "candidate":
            evaluation = policy.get("latest_evaluation") or {}
            if evaluation.get("status") != "succeeded":
                self._evaluate(api[0], pk, options["evaluation_timeout"])
            _transition(api[0], pk, "approve", {"reason": "demo canary: approve"}, "approved")
            self.stdout.write(f"{name}@{version}: approved by admin")
        if api[0].get(f"/api/v1/policies/{pk}")["state"] != "canary":
            _transition(
                api[1],
                pk,
                "canary",
                {"reason": "demo canary: start", "canary_share": options["share"]},
                "canary",
            )
            self.stdout.write(
                f"{name}@{version}: canary at {options['share']:.0%} by {options['second_admin']}"
            )
        return pk

    def _evaluate(self, api: _Api, pk: int, timeout_s: float) -> None:
        self.stdout.write("evaluating first (approval needs a succeeded evaluation) ...")
        started = api.post(f"/api/v1/policies/{pk}/evaluate", {"seeds": [0]})
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            evaluation = api.get(f"/api/v1/policies/{pk}").get("latest_evaluation") or {}
            if evaluation.get("id") == started["id"] and evaluation["status"] == "succeeded":
                return
            if evaluation.get("id") == started["id"] and evaluation["status"] == "failed":
                raise CommandError(f"The evaluation failed: {evaluation.get('error', '')}")
            time.sleep(5)
        raise CommandError(f"The evaluation did not finish in {timeout_s:.0f} s.")

    def _watch(self, api: _Api, pk: int, minutes: float, every: float) -> int:
        deadline = time.monotonic() + minutes * 60
        started = time.monotonic()
        rollout: dict[str, Any] = {}
        while True:
            rollout = api.get("/api/v1/rollout")
            elapsed = (time.monotonic() - started) / 60
            self.stdout.write(f"[{elapsed:5.1f} min] " + _arms_line(rollout))
            if api.get(f"/api/v1/policies/{pk}")["state"] != "canary":
                self.stdout.write(self.style.ERROR("the canary left canary state (rolled back)"))
                return 1
            if time.monotonic() >= deadline:
                break
            time.sleep(min(every, max(deadline - time.monotonic(), 0.0)))
        self.stdout.write(self.style.SUCCESS("still in canary: " + _verdict(rollout)))
        return 0


class _Api:
    """The console's REST API as one admin key's holder."""

    def __init__(self, base: str, secret: str) -> None:
        self.base = base.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {secret}"
        # A fresh connection per call: this polls every few seconds, and a kept-alive one
        # races the server's idle timeout (uvicorn closes after 5 s), which showed up as
        # "Remote end closed connection without response". Reads are retried on transient
        # failures (a restarting process); rollout actions are not, so none is sent twice.
        self.session.headers["Connection"] = "close"
        self.session.mount(
            base,
            HTTPAdapter(max_retries=Retry(total=3, backoff_factor=0.5, allowed_methods={"GET"})),
        )

    def get(self, path: str, **kwargs: Any) -> Any:
        return self._answer(self.session.get(self.base + path, timeout=TIMEOUT_S, **kwargs))

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self._answer(self.session.post(self.base + path, json=body, timeout=TIMEOUT_S))

    @staticmethod
    def _answer(response: requests.Response) -> Any:
        if response.status_code >= 400:
            raise CommandError(
                f"{response.request.method} {response.url}: {response.status_code} "
                f"{response.text[:500]}"
            )
        return response.json()


def _transition(api: _Api, pk: int, verb: str, body: dict[str, Any], target: str) -> None:
    """A rollout action, sent once more only if the connection broke before an answer and
    the version has not reached `target` (a repeat is refused with 409 anyway, so none is
    applied twice)."""
    try:
        api.post(f"/api/v1/policies/{pk}/{verb}", body)
    except requests.ConnectionError:
        if api.get(f"/api/v1/policies/{pk}")["state"] != target:
            api.post(f"/api/v1/policies/{pk}/{verb}", body)


def _second_admin(username: str) -> User:
    """The demo's second admin person, made once with a password kept in var/demo/."""
    user, created = User.objects.get_or_create(username=username)
    if created:
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
        path = demo_dir() / f"{username}-password"
        path.write_text(password + "\n")
        path.chmod(0o600)
    user.groups.add(Group.objects.get_or_create(name=Role.ADMIN)[0])
    return user


def _arms_line(rollout: dict[str, Any]) -> str:
    parts = []
    for arm in ("active", "canary"):
        figures = (rollout.get("arms") or {}).get(arm)
        if figures is None:
            parts.append(f"{arm}: no outcomes yet")
            continue
        cost = figures.get("estimated_usd_per_1k")
        attributed = figures.get("attributed_usd_per_1k")
        parts.append(
            f"{arm}: {figures['outcomes']} outcomes, "
            f"{figures['slo_attainment']:.2%} SLO, "
            f"{figures['breached_groups']}/{figures['groups']} groups breached, "
            + (f"${cost:.3f}/1k est." if cost is not None else "no cost")
            + (f", ${attributed:.3f}/1k attributed" if attributed is not None else "")
        )
    return f"{rollout.get('canary')} at {rollout.get('canary_share', 0):.0%} | " + " | ".join(parts)


def _verdict(rollout: dict[str, Any]) -> str:
    arms = rollout.get("arms") or {}
    if "active" not in arms or "canary" not in arms:
        return "not enough outcomes on both arms yet"
    active, canary = arms["active"], arms["canary"]
    gap = (canary["slo_attainment"] - active["slo_attainment"]) * 100
    text = f"canary - active SLO attainment {gap:+.2f} pt"
    if compared := rollout.get("canary_vs_active"):
        low, high = (100 * end for end in compared["slo_attainment_difference_95"])
        text += f" (95% interval {low:+.2f} to {high:+.2f})"
    if canary.get("estimated_usd_per_1k") and active.get("estimated_usd_per_1k"):
        ratio = canary["estimated_usd_per_1k"] / active["estimated_usd_per_1k"]
        text += f", estimated cost per request {ratio:.3f}x the active arm's"
    if canary.get("attributed_usd_per_1k") and active.get("attributed_usd_per_1k"):
        ratio = canary["attributed_usd_per_1k"] / active["attributed_usd_per_1k"]
        text += f", attributed {ratio:.3f}x"
    return text
