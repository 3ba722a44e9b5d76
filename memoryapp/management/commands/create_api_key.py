"""``manage.py create_api_key --project SLUG [--create] [--name NAME]``.

Prints the new key's secret alone on the last line (the only time it is shown), so
scripts can take it with ``| tail -n 1``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryapp.models import ApiKey, Project


class Command(BaseCommand):
    help = "Create an API key for a project and print its secret (shown once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="The project's slug.")
        parser.add_argument("--create", action="store_true", help="Create the project if missing.")
        parser.add_argument("--name", default="cli", help="A name to tell the key apart.")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["project"]
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            if not options["create"]:
                raise CommandError(f"No project {slug!r}; pass --create to make it.")
            project = Project.objects.create(slug=slug, name=slug)
            self.stderr.write(f"Created project {slug!r}.")
        key, secret = ApiKey.issue(project=project, name=options["name"])
        self.stderr.write(f"API key {key.name!r} (prefix {key.prefix}) for project {slug!r}:")
        self.stdout.write(secret)
