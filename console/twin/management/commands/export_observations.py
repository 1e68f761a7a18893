"""`manage.py export_observations --since T --until T --out FILE`: recorded traffic as
observations (docs/twin.md), the same records `GET /api/v1/observations` streams."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.twin.api.serializers import WindowSerializer
from console.twin.selectors import observation_records
from optimizer.observations import write_observations


class Command(BaseCommand):
    help = "Write the decisions made in [--since, --until) with their outcomes as JSONL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", required=True, help="RFC 3339, e.g. 2026-11-24T09:00:00Z")
        parser.add_argument("--until", required=True, help="RFC 3339 (exclusive)")
        parser.add_argument("--out", required=True, help="the JSONL file to write ('-': stdout)")

    def handle(self, *args: Any, since: str, until: str, out: str, **options: Any) -> None:
        window = WindowSerializer(data={"since": since, "until": until})
        if not window.is_valid():
            raise CommandError(
                "; ".join(
                    f"--{field}: {' '.join(str(m) for m in messages)}"
                    for field, messages in window.errors.items()
                )
            )
        records = observation_records(**window.validated_data)
        if out == "-":
            count = write_observations(self.stdout, records)
        else:
            path = Path(out)
            # Written beside the target and renamed, so a failed export leaves no half file.
            partial = path.with_name(path.name + ".partial")
            try:
                with partial.open("w", encoding="utf-8") as handle:
                    count = write_observations(handle, records)
                partial.replace(path)
            except OSError as exc:
                partial.unlink(missing_ok=True)
                raise CommandError(f"{out}: cannot write: {exc.strerror}") from exc
            self.stderr.write(f"wrote {count} observations to {path}")
