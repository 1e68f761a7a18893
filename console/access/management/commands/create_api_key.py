"""`manage.py create_api_key NAME --role ROLE [--owner USERNAME]`: print a new API key once
(docs/contracts.md §0).

`--owner` names the person the key acts for (docs/operations.md "Four eyes"). Without it the
key belongs to nobody: it may register versions and read, but never approve or promote. This
command is the only way to make such a key.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.access.choices import Role
from console.access.services import api_key_create
from console.api.errors import ApplicationError


class Command(BaseCommand):
    help = "Create an API key and print it. The key is shown only this once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="A unique name for the key, e.g. the calling service.")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument(
            "--owner",
            metavar="USERNAME",
            help="The person the key acts for (an existing user). Without it the key belongs "
            "to nobody and may not approve or promote policies.",
        )

    def handle(
        self, *args: Any, name: str, role: str, owner: str | None = None, **options: Any
    ) -> None:
        person = None
        if owner is not None:
            person = User.objects.filter(username=owner).first()
            if person is None:
                raise CommandError(f"--owner: no user named {owner!r}.")
        try:
            issued = api_key_create(name=name, role=role, owner=person)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(issued.secret)
