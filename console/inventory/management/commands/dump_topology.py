"""`manage.py dump_topology [-o FILE]`: export the inventory as a topology file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.inventory.selectors import InvalidInventory, inventory_topology
from optimizer.topology_files import dump_topology


class Command(BaseCommand):
    help = "Write the inventory in the topology file format (to stdout, or to --output)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--output", help="File to write instead of stdout.")

    def handle(self, *args: Any, output: str | None, **options: Any) -> None:
        try:
            text = dump_topology(inventory_topology())
        except InvalidInventory as exc:
            raise CommandError(
                f"the inventory is not a valid topology, {len(exc.problems)} problem(s):\n"
                + "\n".join(exc.problems)
            ) from exc
        if output:
            Path(output).write_text(text, encoding="utf-8")
        else:
            self.stdout.write(text, ending="")
