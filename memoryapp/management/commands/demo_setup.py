"""``manage.py demo_setup``: the demo user, project and API key the README's run command uses.

Idempotent: the user and project are created once; a fresh API key is issued on every
run (secrets are never stored, so an old one cannot be shown again) and printed with the
login, ready to paste into the README's curl examples.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from memoryapp.models import ApiKey, Membership, Project


class Command(BaseCommand):
    help = "Create the demo user, project and an API key; print the login and the key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo-password")
        parser.add_argument("--project", default="demo")
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        user = user_model.objects.filter(username=options["username"]).first()
        if user is None:
            user = user_model.objects.create_user(
                username=options["username"], password=options["password"]
            )
        project, _ = Project.objects.get_or_create(
            slug=options["project"], defaults={"name": "Demo project"}
        )
        Membership.objects.get_or_create(
            user=user, project=project, defaults={"role": Membership.Role.OWNER}
        )
        _, secret = ApiKey.issue(project=project, name="demo")
        url = options["url"]
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "Memory service demo",
                    f"  Dashboard: {url}",
                    f"  Login:     {options['username']} / {options['password']}",
                    f"  API key:   {secret}",
                    f"  API docs:  {url}v1/docs",
                    "",
                    f"  export KEY={secret}",
                    "",
                ]
            )
        )
