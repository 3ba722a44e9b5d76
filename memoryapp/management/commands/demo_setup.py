"""``manage.py demo_setup``: the demo user, project and API key the README's run command uses.

Idempotent: the user and project are created once. The demo API key's secret is kept in
a file next to manage.py (git-ignored, mode 0600; the database still holds only its hash)
so every ``./dev serve`` prints the same key; delete the file, or revoke the key, for a
new one. One file per database (demo_key_file): ``.demo-key`` for the default SQLite
database, ``.demo-key.<engine>-<host>-<port>-<name>`` for any other (DATABASE_URL or
SQLITE_PATH set), so running against another database never replaces the key of the
first. It is printed with the login, ready to paste into the README's curl
examples. A project with no threads also
gets a short sample conversation, auto-compacted once, so the dashboard is not empty on
first run. The sample is written with the offline model whatever the settings choose
(its summary names that model): seeding makes no model call, so a first start with
GEMINI_API_KEY set neither waits on Gemini nor fails when it is unreachable.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.test.utils import override_settings

from memoryapp import compaction, working
from memoryapp.models import ApiKey, Membership, Project, Thread

SAMPLE_DATASET = "demo_user"
# Small enough that the sample folds once: messages 1-5 go into the summary (#7), #6 stays.
SAMPLE_THRESHOLD = 6
SAMPLE_CONVERSATION: list[tuple[str, str]] = [
    ("user", "Hi! I'm looking for a family car. We have two kids and a dog."),
    ("assistant", "Happy to help. What matters most: space, running costs, or something else?"),
    ("user", "Running costs. I drive about 60 km a day, mostly in town."),
    ("assistant", "Then a hybrid fits well: town driving is where they save the most fuel."),
    ("user", "We already have a Honda Civic, but the boot is too small for the dog crate."),
    ("assistant", "A hybrid estate or a compact SUV would take the crate. Any budget in mind?"),
    ("user", "Around 30,000 euros. What about resale value?"),
    ("assistant", "Hybrids hold their value well; the Toyota Corolla Touring Sports is a safe pick."),
]


def demo_key_file(database: dict[str, Any] | None = None) -> Path:
    """Where the demo key of ``database`` (settings.DATABASES's default when None) is
    kept: ``.demo-key`` next to manage.py for the default SQLite database (db.sqlite3
    there), else ``.demo-key.`` plus the engine, host, port and name of the database with
    anything but letters, digits, ``.``, ``_`` and ``-`` made ``-``
    (``.demo-key.postgresql-127.0.0.1-5432-memory``, ``.demo-key.sqlite3-tmp-other.db``)."""
    db = database if database is not None else settings.DATABASES["default"]
    # memoryapp.sqlite_backend is SQLite too; name the engine as people know it.
    engine = "sqlite3" if "sqlite" in str(db["ENGINE"]) else str(db["ENGINE"]).rsplit(".", 1)[-1]
    name = str(db.get("NAME") or "")
    if engine == "sqlite3" and name == str(settings.BASE_DIR / "db.sqlite3"):
        return settings.BASE_DIR / ".demo-key"
    fields = (engine, db.get("HOST"), db.get("PORT"), name)
    safe = (re.sub(r"[^A-Za-z0-9._-]+", "-", str(f)).strip("-.") for f in fields if f)
    label = "-".join(part for part in safe if part)
    return settings.BASE_DIR / f".demo-key.{label}"


class Command(BaseCommand):
    help = "Create the demo user, project and an API key; print the login and the key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo-password")
        parser.add_argument("--project", default="demo")
        parser.add_argument("--url", default="http://127.0.0.1:8000/")
        parser.add_argument(
            "--key-file",
            default=None,
            help="Where the demo key's secret is kept between runs (git-ignored); by default "
            "one file per database: .demo-key for the default SQLite database, "
            ".demo-key.<engine>-<host>-<port>-<name> for another.",
        )

    def _demo_key(self, project: Project, key_file: str) -> str:
        """Reuse the secret in ``key_file`` while it is still a live key of ``project``;
        otherwise issue a new one and write it there (mode 0600)."""
        path = Path(key_file)
        if path.exists():
            secret = path.read_text(encoding="utf-8").strip()
            key = ApiKey.authenticate(secret)
            if key is not None and key.project_id == project.pk:
                return secret
        _, secret = ApiKey.issue(project=project, name="demo")
        path.write_text(secret + "\n", encoding="utf-8")
        path.chmod(0o600)
        return secret

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
        if not Thread.objects.filter(project=project).exists():
            # The offline model folds it: no model call, whatever MEMORY_LLM_ADAPTER and
            # GEMINI_API_KEY say (the sample's four appends past the threshold would
            # otherwise each try Gemini, with its retries, before the server starts).
            with override_settings(MEMORY_LLM_ADAPTER="offline"):
                self._sample_thread(project)
        key_file = Path(options["key_file"] or demo_key_file())
        secret = self._demo_key(project, str(key_file))
        shown_file = key_file.name if key_file.parent == settings.BASE_DIR else str(key_file)
        url = options["url"]
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "Memory service demo",
                    f"  Dashboard: {url}",
                    f"  Login:     {options['username']} / {options['password']}",
                    f"  API key:   {secret}",
                    f"  Key file:  {shown_file} (one per database; delete it for a new key)",
                    f"  API docs:  {url}v1/docs",
                    "",
                    f"  export BASE={url.rstrip('/')}",
                    f"  export KEY={secret}",
                    "",
                ]
            )
        )

    def _sample_thread(self, project: Project) -> None:
        """A short conversation through the domain functions, as a client would write it."""
        thread = working.thread_create(
            project=project,
            dataset=SAMPLE_DATASET,
            tags=["sample"],
            auto_compact_threshold=SAMPLE_THRESHOLD,
        )
        for role, content in SAMPLE_CONVERSATION:
            words = len(content.split())
            tokens = (
                {"input": 120 + 10 * words, "output": words * 2, "total": 120 + 12 * words}
                if role == "assistant"
                else None
            )
            compaction.message_append_compacting(
                thread=thread,
                role=role,
                content=content,
                tokens=tokens,
                model="demo-model" if role == "assistant" else None,
            )
        self.stderr.write(f"Created a sample thread {thread.pk} in dataset {SAMPLE_DATASET!r}.")
