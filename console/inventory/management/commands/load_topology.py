"""`manage.py load_topology FILE`: import a topology file (docs/contracts.md §1), atomically."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.inventory.services import topology_import
from optimizer.errors import InputFileError
from optimizer.topology_files import load_topology


class Command(BaseCommand):
    help = (
        "Import a topology file into the inventory. Idempotent: entries are matched by "
        "name and updated in place; a file with any error imports nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="Delete inventory entries that the file does not list.",
        )

    def handle(self, *args: Any, file: str, prune: bool, **options: Any) -> None:
        try:
            topology = load_topology(file)
            summary = topology_import(topology=topology, prune=prune, source=file)
        except InputFileError as exc:
            raise CommandError(
                f"{file}: not imported, {len(exc.problems)} problem(s):\n" + str(exc)
            ) from exc
        verdict = "updated" if summary.changed else "unchanged"
        self.stdout.write(f"{file}: inventory {verdict} ({summary})")
