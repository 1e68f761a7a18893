"""`manage.py create_api_key NAME --role ROLE`: print a new API key once (docs/contracts.md §0)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.access.choices import Role
from console.access.services import api_key_create
from console.api.errors import ApplicationError


class Command(BaseCommand):
    help = "Create an API key and print it. The key is shown only this once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="A unique name for the key, e.g. the calling service.")
        parser.add_argument("--role", required=True, choices=Role.values)

    def handle(self, *args: Any, name: str, role: str, **options: Any) -> None:
        try:
            issued = api_key_create(name=name, role=role)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(issued.secret)
