"""Management commands: ``create_api_key`` (and ``demo_setup``'s key line) and
``end_idle_threads``.

Keys are stored only as a SHA-256 hash; the secret is printed once, alone on the last
line of stdout, so scripts can take it with ``| tail -n 1`` (DESIGN.md section 4).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import Client

from memoryapp import episodic, working
from memoryapp.llm import registry
from memoryapp.llm.port import ModelError
from memoryapp.management.commands import end_idle_threads
from memoryapp.management.commands.demo_setup import demo_key_file
from memoryapp.models import ApiKey, Job, Message, Project, Thread
from tests.conftest import BASE, Clock

SECRET_RE = re.compile(r"^mk_([0-9a-f]{8})_[A-Za-z0-9_-]{32}$")


def create_api_key(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("create_api_key", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def works(secret: str) -> int:
    return Client(headers={"Authorization": f"Bearer {secret}"}).get(f"{BASE}/threads").status_code


def test_it_prints_the_new_secret_alone_on_the_last_line(project: Project) -> None:
    out, err = create_api_key("--project", "acme", "--name", "ci")

    secret = out.splitlines()[-1]
    match = SECRET_RE.match(secret)
    assert match, out
    assert out == secret + "\n"  # nothing else on stdout
    key = ApiKey.objects.get(project=project)
    assert (key.name, key.prefix) == ("ci", match.group(1))
    assert "acme" in err
    assert works(secret) == 200


def test_it_stores_only_the_hash_of_the_secret(project: Project) -> None:
    out, _ = create_api_key("--project", "acme")
    secret = out.splitlines()[-1]
    # mk_<8 hex>_<random>; the random part may itself hold "_", so split from the left.
    random_part = secret.split("_", 2)[2]
    assert len(random_part) == 32

    key = ApiKey.objects.get(project=project)
    stored = [str(v) for v in ApiKey.objects.filter(pk=key.pk).values().get().values()]

    assert key.hash == hashlib.sha256(secret.encode()).hexdigest()
    assert not any(random_part in value for value in stored)
    assert not any(secret in value for value in stored)


def test_it_refuses_an_unknown_project_without_create(db: None) -> None:
    with pytest.raises(CommandError, match="No project 'ghost'; pass --create"):
        create_api_key("--project", "ghost")

    assert not Project.objects.filter(slug="ghost").exists()
    assert ApiKey.objects.count() == 0


def test_it_creates_the_project_with_create(db: None) -> None:
    out, err = create_api_key("--project", "newco", "--create")

    project = Project.objects.get(slug="newco")
    assert ApiKey.objects.get().project == project
    assert "Created project 'newco'" in err
    assert works(out.splitlines()[-1]) == 200


def test_it_does_not_duplicate_an_existing_project_with_create(project: Project) -> None:
    create_api_key("--project", "acme", "--create")

    assert Project.objects.filter(slug="acme").count() == 1
    assert ApiKey.objects.get().project == project


def test_it_issues_a_distinct_key_every_run(project: Project) -> None:
    first = create_api_key("--project", "acme")[0].splitlines()[-1]
    second = create_api_key("--project", "acme")[0].splitlines()[-1]

    assert first != second
    assert ApiKey.objects.filter(project=project).count() == 2
    assert (works(first), works(second)) == (200, 200)


def test_it_revokes_one_key_and_keeps_the_others(project: Project) -> None:
    first = create_api_key("--project", "acme")[0].splitlines()[-1]
    second = create_api_key("--project", "acme")[0].splitlines()[-1]
    key = ApiKey.objects.get(hash=hashlib.sha256(first.encode()).hexdigest())

    key.revoke()
    revoked_at = key.revoked
    key.revoke()

    assert (works(first), works(second)) == (401, 200)
    key.refresh_from_db()
    assert key.revoked == revoked_at
    assert ApiKey.authenticate(first) is None


def test_it_prints_an_export_line_for_the_demo_key(db: None, tmp_path: Path) -> None:
    out = StringIO()
    call_command("demo_setup", "--key-file", str(tmp_path / "key"), stdout=out)

    export = [line.strip() for line in out.getvalue().splitlines() if "export KEY=" in line]
    assert len(export) == 1
    secret = export[0].removeprefix("export KEY=")
    assert SECRET_RE.match(secret)
    assert works(secret) == 200


def _demo_secret(key_file: Path) -> str:
    out = StringIO()
    call_command("demo_setup", "--key-file", str(key_file), stdout=out)
    line = next(x for x in out.getvalue().splitlines() if "export KEY=" in x)
    return line.strip().removeprefix("export KEY=")


def test_it_reuses_the_demo_key_across_runs_until_it_is_revoked(db: None, tmp_path: Path) -> None:
    key_file = tmp_path / "demo-key"

    first = _demo_secret(key_file)
    second = _demo_secret(key_file)
    ApiKey.objects.get(hash=hashlib.sha256(first.encode()).hexdigest()).revoke()
    third = _demo_secret(key_file)

    assert second == first
    assert third != first
    assert key_file.read_text().strip() == third
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert ApiKey.objects.filter(project__slug="demo", revoked__isnull=True).count() == 1
    assert works(third) == 200


def test_it_prints_an_export_line_for_the_base_url_it_serves(db: None, tmp_path: Path) -> None:
    out = StringIO()
    call_command(
        "demo_setup", "--key-file", str(tmp_path / "key"), "--url", "http://127.0.0.1:8123/", stdout=out
    )

    lines = [line.strip() for line in out.getvalue().splitlines() if "export BASE=" in line]
    assert lines == ["export BASE=http://127.0.0.1:8123"]


def test_it_keeps_the_demo_key_of_each_database_in_a_file_of_its_own(settings: Any, tmp_path: Path) -> None:
    settings.BASE_DIR = tmp_path
    sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3")}
    postgres = {
        "ENGINE": "django.db.backends.postgresql", "NAME": "memory", "HOST": "127.0.0.1", "PORT": 5432,
    }  # fmt: skip

    assert demo_key_file(sqlite) == tmp_path / ".demo-key"
    # As settings.py configures the default database: this project's SQLite backend.
    assert demo_key_file({**sqlite, "ENGINE": "memoryapp.sqlite_backend"}) == tmp_path / ".demo-key"
    assert demo_key_file(postgres) == tmp_path / ".demo-key.postgresql-127.0.0.1-5432-memory"
    assert demo_key_file({**sqlite, "NAME": "/tmp/other db.sqlite3"}) == (
        tmp_path / ".demo-key.sqlite3-tmp-other-db.sqlite3"
    )
    assert demo_key_file({**postgres, "HOST": "", "PORT": ""}) == tmp_path / ".demo-key.postgresql-memory"


def test_it_leaves_the_key_file_of_another_database_alone(db: None, settings: Any, tmp_path: Path) -> None:
    # ./dev serve on the default database wrote .demo-key; now demo_setup runs against
    # another one (the test database), where that key does not exist.
    settings.BASE_DIR = tmp_path
    other = "mk_0123abcd_" + "x" * 32
    (tmp_path / ".demo-key").write_text(other + "\n")
    own = demo_key_file()
    assert own.parent == tmp_path and own.name.startswith(".demo-key.")

    out = StringIO()
    call_command("demo_setup", stdout=out)
    again = StringIO()
    call_command("demo_setup", stdout=again)

    assert (tmp_path / ".demo-key").read_text() == other + "\n"
    secret = own.read_text().strip()
    assert SECRET_RE.match(secret) and works(secret) == 200
    assert f"  export KEY={secret}" in out.getvalue().splitlines()
    assert f"  export KEY={secret}" in again.getvalue().splitlines()  # the same key next time
    assert f"  Key file:  {own.name} (one per database; delete it for a new key)" in out.getvalue().splitlines()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".demo-key", own.name]


# --- end_idle_threads --------------------------------------------------------------------


def _silent_thread(project: Project, clock: Clock, minutes: int) -> str:
    thread = working.thread_create(project=project, dataset="user_42")
    working.message_append(thread=thread, role="user", content="I live in Lisbon")
    clock.now += timedelta(minutes=minutes)
    return str(thread.pk)


def test_it_ends_the_threads_silent_past_the_projects_idle_time(
    project: Project, clock: Clock
) -> None:
    Project.objects.filter(pk=project.pk).update(auto_end_idle_minutes=30)
    quiet = _silent_thread(project, clock, 31)
    out = StringIO()

    call_command("end_idle_threads", stdout=out)

    job = Job.objects.get()
    assert out.getvalue() == f"ended thread {quiet}: messages 1-1, job {job.pk}\n"
    assert (job.kind, job.args) == ("episode", {"fromSequence": 1, "toSequence": 1})
    again = StringIO()
    call_command("end_idle_threads", stdout=again)
    assert again.getvalue() == ""


def test_it_caps_an_idle_time_too_long_to_subtract_from_now(
    project: Project, clock: Clock
) -> None:
    Project.objects.filter(pk=project.pk).update(auto_end_idle_minutes=2_000_000_000)
    _silent_thread(project, clock, 60)

    assert episodic.threads_end_idle() == []  # capped at a year, not an OverflowError


def test_it_keeps_checking_after_a_database_error(
    project: Project, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rounds: list[int] = []

    def flaky() -> list[Any]:
        rounds.append(1)
        if len(rounds) == 1:
            raise OperationalError("database is locked")
        return []

    def sleep(seconds: float) -> None:
        assert seconds == 5
        if len(rounds) == 2:
            raise _Stop

    monkeypatch.setattr(episodic, "threads_end_idle", flaky)
    monkeypatch.setattr(end_idle_threads.time, "sleep", sleep)
    with pytest.raises(_Stop):
        call_command("end_idle_threads", "--every", "5", stdout=StringIO())

    assert len(rounds) == 2
    assert "this round failed" in caplog.text


class _Stop(Exception):
    """Ends the --every loop of a test."""


class _Unreachable:
    """A model adapter that is never reachable; records what was asked of it."""

    name = "gemini"
    calls: list[str] = []

    def __getattr__(self, what: str) -> Any:
        def call(**kwargs: Any) -> Any:
            _Unreachable.calls.append(what)
            raise ModelError("Gemini summarize: connection failed", kind="unavailable")

        return call


def test_the_sample_thread_is_seeded_with_the_offline_model_whatever_the_settings(
    db: None, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GEMINI_API_KEY=x with Gemini unreachable: each of the sample's four appends past
    # the threshold tried Gemini (with its retries) and left the fold failed.
    settings.MEMORY_LLM_ADAPTER = "auto"
    settings.GEMINI_API_KEY = "x"
    _Unreachable.calls = []
    monkeypatch.setitem(
        registry.PROVIDERS, "gemini", dataclasses.replace(registry.PROVIDERS["gemini"], build=_Unreachable)
    )
    assert registry.provider_name() == "gemini"

    call_command("demo_setup", "--key-file", str(tmp_path / "key"), stdout=StringIO(), stderr=StringIO())

    assert _Unreachable.calls == []
    thread = Thread.objects.get(dataset="demo_user")
    assert (thread.compaction_count, thread.last_compaction_error) == (1, "")
    summary = Message.objects.get(thread=thread, is_summary=True)
    assert (summary.covers_from_sequence, summary.covers_to_sequence) == (1, 5)
    assert registry.provider_name() == "gemini"  # only the seeding was offline
