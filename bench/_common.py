"""Shared helpers of the bench scripts: a throwaway database with Django set up on it,
a JSON client for /v1 with a fresh API key, percentiles, and EXPLAIN of a captured query.

Import this module (``from _common import ...``) before anything that touches Django
models: ``throwaway_database`` sets the environment the settings module reads, then calls
``django.setup()`` and migrates. Nothing here is used by the service itself.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
BASE = "/v1/memory/working"
# The DB the throwaway PostgreSQL database is created from (CREATE/DROP DATABASE run there).
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"
# The LoCoMo conversations (evaluation data, never copied into this repo) live in the
# shared folder beside the project's checkout; LOCOMO_DATA overrides.
LOCOMO_DATA = Path(os.environ.get("LOCOMO_DATA", REPO.parent / "shared" / "data" / "locomo"))

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@contextmanager
def throwaway_database(engine: str, postgres_url: str = DEFAULT_POSTGRES_URL) -> Iterator[str]:
    """Set Django up on a new, empty, migrated database; drop it on exit.

    ``engine`` is ``"sqlite"`` (a file in a temporary directory, with the service's own
    pragmas) or ``"postgres"`` (``CREATE DATABASE bench_<random>`` on the server of
    ``postgres_url``). Yields a label saying which database it is. The model adapter is
    forced to ``offline`` so no bench ever makes a network call.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
    os.environ["MEMORY_LLM_ADAPTER"] = "offline"
    os.environ["DEBUG"] = "false"  # no per-query log kept in memory
    # Production settings redirect plain HTTP to HTTPS; a bench speaks plain HTTP on
    # loopback, as the service does behind a TLS-terminating proxy.
    os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
    # A bench is not a client to throttle (the LoCoMo benches send thousands of requests).
    os.environ.setdefault("MEMORY_API_RATE_LIMIT", "")
    os.environ.setdefault("SECRET_KEY", "bench-only-" + secrets.token_hex(16))
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # WhiteNoise warns on every client when collectstatic never ran; irrelevant to /v1.
    warnings.filterwarnings("ignore", message="No directory at")
    tmpdir: tempfile.TemporaryDirectory[str] | None = None
    pg_name = ""
    if engine == "sqlite":
        tmpdir = tempfile.TemporaryDirectory(prefix="bench-")
        os.environ.pop("DATABASE_URL", None)
        os.environ["SQLITE_PATH"] = str(Path(tmpdir.name) / "bench.sqlite3")
        label = f"SQLite ({os.environ['SQLITE_PATH']})"
    elif engine == "postgres":
        import psycopg

        pg_name = f"bench_{secrets.token_hex(4)}"
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{pg_name}"')
        parts = urlsplit(postgres_url)
        os.environ["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{pg_name}"))
        label = f"PostgreSQL (database {pg_name}, dropped at exit)"
    else:
        raise ValueError(f"engine must be sqlite or postgres, not {engine!r}")

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    try:
        yield label
    finally:
        from django.db import connections

        connections.close_all()
        if pg_name:
            import psycopg

            with psycopg.connect(postgres_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
        if tmpdir is not None:
            tmpdir.cleanup()


@dataclass
class Api:
    """A JSON client for /v1 in this process (Django's test client, no server, no network).

    Every call goes through the real URL routing, middleware, auth and ninja validation.
    """

    key: str
    client: Any

    @classmethod
    def for_new_project(cls, slug: str = "bench") -> Api:
        """Create a project and an API key for it; return a client using that key."""
        from django.test import Client

        from memoryapp.models import ApiKey, Project

        project = Project.objects.create(slug=slug, name=slug)
        _, secret = ApiKey.issue(project=project, name="bench")
        return cls(key=secret, client=Client())

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> tuple[int, Any]:
        """``(status, parsed JSON body)``; ``params`` become the query string."""
        headers = {"Authorization": f"Bearer {self.key}"}
        if method == "GET":
            resp = self.client.get(path, params, headers=headers)
        else:
            data = "" if body is None else json.dumps(body)
            resp = self.client.generic(
                method, path, data=data, content_type="application/json", headers=headers
            )
        return resp.status_code, (json.loads(resp.content) if resp.content else None)

    def ok(self, method: str, path: str, body: Any = None, expect: int = 200, **params: Any) -> Any:
        """Like request() but exits the bench when the status is not ``expect``."""
        status, data = self.request(method, path, body, **params)
        if status != expect:
            raise SystemExit(f"{method} {path} answered {status}, expected {expect}: {data}")
        return data


def percentile(samples: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``, inclusive method."""
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1]


def explain(sql: str, params: Any) -> str:
    """The plan of ``sql`` on the default database: EXPLAIN QUERY PLAN on SQLite, EXPLAIN
    (ANALYZE, BUFFERS) on PostgreSQL (so it is the plan that ran, with real row counts)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            return "\n".join(str(row[0]) for row in cursor.fetchall())
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        return "\n".join(str(row[-1]) for row in cursor.fetchall())


@contextmanager
def capture_queries(match: Callable[[str], bool]) -> Iterator[list[tuple[str, Any]]]:
    """Collect ``(sql, params)`` of the queries run on the default connection whose SQL
    satisfies ``match``, as the driver receives them (so they can be EXPLAINed)."""
    from django.db import connection

    captured: list[tuple[str, Any]] = []

    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        if match(sql):
            captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield captured


def analyze_tables() -> None:
    """Refresh the planner's statistics, as autovacuum / a maintenance job would."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def locomo_arguments(doc: str | None) -> argparse.Namespace:
    """Parse the options every LoCoMo bench takes: --database, --postgres-url, --data."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--data", type=Path, default=LOCOMO_DATA)
    return parser.parse_args()


def conversation_files(data: Path) -> list[Path]:
    """The conv-*.json files under ``data``, sorted; exits with status 2 when there are none."""
    files = sorted(data.glob("conv-*.json"))
    if not files:
        raise SystemExit(f"no conv-*.json in {data} (set LOCOMO_DATA or pass --data)")
    return files
