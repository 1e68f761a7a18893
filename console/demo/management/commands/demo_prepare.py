"""`manage.py demo_prepare`: make the console ready for the living demo (idempotent).

Loads the demo fleet when the inventory is empty, points every node's telemetry at its own
`/metrics` (served by the emulated node `demo_fleet` runs at the node's address), creates an
admin (password kept in var/demo/) and a service key for the traffic (the demo's clients send
it to the router as their OpenAI API key), activates a heuristic when no policy is active,
registers the shipped PPO scorer and the generalist as candidates, starts one PPO training run
in the background (fine-tuning the generalist on the fleet's trace), and schedules a
calibration of the first minutes of traffic (docs/twin.md). A second start reuses all of it
and only prints the sign-in again.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from console.access.identity import SYSTEM
from console.access.keyring import digest_of
from console.access.models import ApiKey
from console.access.services import api_key_create
from console.inventory.models import Node
from console.inventory.services import topology_import
from console.policies.jobs import training_start
from console.policies.models import PolicyVersion, TrainingRun
from console.policies.services import policy_bootstrap, policy_register
from console.twin.models import CalibrationRun
from console.twin.services import calibration_start
from optimizer.decide.registry import GENERALIST, GENERALIST_DIR
from optimizer.topology_files import load_topology

DEMO_TOPOLOGY = Path(settings.BASE_DIR) / "optimizer" / "topologies" / "fleet-demo.yaml"
SHIPPED_SCORER = Path(settings.BASE_DIR) / "optimizer" / "trained" / "ppo-fleet-demo"


def demo_dir() -> Path:
    path = Path(settings.VAR_DIR) / "demo"
    path.mkdir(parents=True, exist_ok=True)
    return path


class Command(BaseCommand):
    help = "Prepare the living demo (fleet, telemetry URLs, admin, service key, policies)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--topology", default=str(DEMO_TOPOLOGY))
        parser.add_argument("--web-url", default=settings.LOCUS_DEMO_WEB_URL)
        parser.add_argument(
            "--no-training",
            action="store_true",
            help="Do not start the background PPO training run.",
        )
        parser.add_argument(
            "--no-signin",
            action="store_true",
            help="Do not print the sign-in line (`make run`'s demo_signin prints it once the "
            "console answers).",
        )
        parser.add_argument(
            "--no-calibration",
            action="store_true",
            help="Do not schedule the calibration of the first minutes of traffic.",
        )

    def handle(
        self,
        *args: Any,
        topology: str,
        web_url: str,
        no_training: bool,
        no_calibration: bool,
        no_signin: bool,
        **options: Any,
    ) -> None:
        if not Node.objects.exists():
            summary = topology_import(topology=load_topology(topology))
            self.stdout.write(f"loaded {topology}: {summary}")
        # The emulated node serves vLLM's /metrics at its address (docs/emulator.md).
        for node in Node.objects.filter(exporter_urls=[]).exclude(address=""):
            node.exporter_urls = [f"http://{node.address}/metrics"]
            node.save(update_fields=["exporter_urls"])
        password = self._admin_password()
        self._service_key()
        if (active := policy_bootstrap(heuristic=settings.LOCUS_DEFAULT_POLICY)) is not None:
            self.stdout.write(f"active policy: {active}")
        if (SHIPPED_SCORER / "scorer.pt").is_file() and not PolicyVersion.objects.filter(
            name="ppo", version="shipped"
        ).exists():
            policy_register(name="ppo", version="shipped", artifact_dir=str(SHIPPED_SCORER))
        # The default learned policy: the generalist (docs/learned-policy.md).
        if (GENERALIST_DIR / "scorer.pt").is_file() and not PolicyVersion.objects.filter(
            name=GENERALIST, version="shipped"
        ).exists():
            policy_register(name=GENERALIST, version="shipped", artifact_dir=str(GENERALIST_DIR))
        if not no_training and not TrainingRun.objects.exists():
            run = training_start(
                config={
                    "trace": settings.LOCUS_FLEET_TRACE,
                    "timesteps": settings.LOCUS_DEMO_TRAINING_TIMESTEPS,
                    "seed": 0,
                    "init": settings.LOCUS_TRAINING_INIT,
                },
                started_by=None,
            )
            self.stdout.write(f"started training run {run.pk} in the background")
        if not no_calibration and not CalibrationRun.objects.exists():
            # The demo fleet runs at fleet-demo-truth.yaml's speeds (docs/twin.md): calibrate
            # its first minutes of traffic once they are recorded, so the Twin page shows what
            # the inventory got wrong and the fidelity a fix would bring.
            minutes = settings.LOCUS_DEMO_CALIBRATION_MINUTES
            now = timezone.now()
            calibration = calibration_start(
                since=now,
                until=now + timedelta(minutes=minutes),
                min_samples=settings.LOCUS_CALIBRATION_MIN_SAMPLES,
                requested_by=SYSTEM,
                after_s=minutes * 60 + 30,
            )
            self.stdout.write(
                f"calibration run {calibration.pk} scheduled after {minutes:g} minutes"
            )
        if no_signin:
            self.stdout.write(f"the admin's password is in {demo_dir() / 'admin-password'}")
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"\nLocus demo: open {web_url}/ and sign in as admin / {password}\n"
                )
            )

    def _admin_password(self) -> str:
        path = demo_dir() / "admin-password"
        if path.is_file() and User.objects.filter(username="admin").exists():
            return path.read_text().strip()
        password = secrets.token_urlsafe(12)
        user, _ = User.objects.get_or_create(
            username="admin", defaults={"is_staff": True, "is_superuser": True}
        )
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        path.write_text(password + "\n")
        path.chmod(0o600)
        return password

    def _service_key(self) -> str:
        path = demo_dir() / "service-key"
        if path.is_file():
            secret = path.read_text().strip()
            if ApiKey.objects.filter(digest=digest_of(secret), revoked_at__isnull=True).exists():
                return secret
        issued = api_key_create(name=f"demo-traffic-{secrets.token_hex(3)}", role="service")
        path.write_text(issued.secret + "\n")
        path.chmod(0o600)
        return issued.secret
