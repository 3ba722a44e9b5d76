"""Browser tests: Playwright driving Debian's chromium against a real server.

The server is uvicorn serving memoryapp.asgi, as ``./dev serve`` runs it, in a forked
child process on the test database, so HTTP, static files and WebSockets behave as in
production. The browser is /usr/bin/chromium, never a downloaded build; without it these
tests are skipped with a message saying how to install it.

Screenshots go to ``test-output/`` at the project root (or $TEST_OUTPUT_DIR).
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from memoryapp.models import Membership, Project

#: The password of the browser tests' users (tests.e2e.test_browser.log_in's default).
PASSWORD = "e2e-correct-horse-battery"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT_S = 30


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def output_dir() -> Path:
    """Where screenshots are saved (created on demand)."""
    path = Path(
        os.environ.get("TEST_OUTPUT_DIR", Path(__file__).resolve().parents[2] / "test-output")
    )
    path.mkdir(parents=True, exist_ok=True)
    return path


def _configure_server(database_name: str) -> None:
    """Runs in the server process before it serves: the test database and the offline model.

    channels' own ``set_database_connection`` derives the name from TEST["NAME"] or by
    prefixing "test_" to NAME, which on PostgreSQL (NAME already rewritten to the test
    database by pytest-django) names a database that does not exist; the parent's real
    name is passed instead. The autouse ``offline_model`` fixture only changes the test
    process's settings, so the server pins the offline adapter itself: the browser tests
    must never call a real model, even with GEMINI_API_KEY in the environment.
    """
    from django.conf import settings
    from django.test.utils import override_settings

    settings.DATABASES["default"]["NAME"] = database_name
    settings.MEMORY_LLM_ADAPTER = "offline"
    # Jobs as ./dev serve runs them: queued in the database for the db worker, whose
    # events come back through the relay table (or Redis with REDIS_URL); whatever the
    # test process's fixtures had set when it forked.
    override_settings(
        TASKS={"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}},
        MEMORY_EVENT_RELAY=True,
    ).enable()
    # Fresh channel layers: with REDIS_URL, the parent's layer holds connections made on
    # the parent's event loops, which a forked child must not reuse.
    from channels.layers import channel_layers

    channel_layers.backends = {}


def _fork(target: Any, *args: Any) -> Any:
    """Start ``target(*args)`` in a forked child; call with database access unblocked.

    The child must not share the parent's open database sockets, and it must not inherit
    pytest-django's "database access not allowed" block (the fork copies whatever state
    the parent is in at start()).
    """
    from django.db import connections

    connections.close_all()
    for conn in connections.all():
        # psycopg's pool (PostgreSQL) keeps sockets and worker threads; a fork must start
        # with none and build its own.
        close_pool = getattr(conn, "close_pool", None)
        if close_pool is not None:
            close_pool()
    process = multiprocessing.get_context("fork").Process(target=target, args=args, daemon=True)
    process.start()
    return process


def _work(database_name: str) -> None:
    """The worker process: django-tasks' ``db_worker``, as ``./dev serve`` runs it."""
    from django.core.management import call_command

    _configure_server(database_name)
    call_command("db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.1", verbosity=0)


def _serve(database_name: str, sock: socket.socket) -> None:
    """The server process: uvicorn (as ``./dev serve`` runs it) on the inherited socket."""
    import importlib

    import uvicorn
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    _configure_server(database_name)
    # And a fresh thread for asgiref's thread-sensitive calls (database_sync_to_async in
    # the WebSocket consumer): if the parent ever used it, the forked copy believes a
    # worker thread exists that the fork did not bring along, and every call would hang.
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)
    # A fresh application: the parent may have imported memoryapp.asgi, and its HTTP
    # thread pool must not be shared across a fork.
    import memoryapp.asgi

    importlib.reload(memoryapp.asgi)
    app = ASGIStaticFilesHandler(memoryapp.asgi.application)
    config = uvicorn.Config(app, fd=sock.fileno(), log_level="warning", lifespan="off")
    uvicorn.Server(config).run()


@pytest.fixture(scope="package")
def live_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """Base URL of a uvicorn server (child process) serving memoryapp.asgi on the test DB.

    The same server and application as ``./dev serve``; static files through Django's
    ASGI static handler, as runserver would. Data the tests create must be committed to
    be seen here: use ``transactional_db``. Package-scoped: stopped when the browser tests
    are done, so the rest of the suite does not run beside it (and PostgreSQL can drop the
    test database at the end).
    """
    from django.db import connection

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # E2E_PORT pins the port (a machine whose ports are shared out); else any free one.
    sock.bind(("127.0.0.1", int(os.environ.get("E2E_PORT", "0"))))
    sock.listen(128)
    port = sock.getsockname()[1]
    with django_db_blocker.unblock():
        database_name = str(connection.settings_dict["NAME"])
        process = _fork(_serve, database_name, sock)
    sock.close()  # the child holds its own copy
    url = f"http://127.0.0.1:{port}"
    # Poll so a server that dies on start-up fails at once instead of timing out.
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(f"{url}/login/", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if not process.is_alive() or time.monotonic() > deadline:
            process.terminate()
            raise RuntimeError(f"the test server did not start (exit code {process.exitcode})")
        time.sleep(0.1)
    try:
        yield url
    finally:
        process.terminate()
        process.join(timeout=10)


@pytest.fixture(scope="package")
def db_worker(live_url: str, django_db_blocker: Any) -> Iterator[Any]:
    """A ``manage.py db_worker`` process (forked, like the server) running the jobs the
    server queues on the test database; stopped (SIGTERM) after the browser tests."""
    from django.db import connection

    with django_db_blocker.unblock():
        process = _fork(_work, str(connection.settings_dict["NAME"]))
    try:
        yield process
    finally:
        process.terminate()
        process.join(timeout=10)


@pytest.fixture(autouse=True)
def no_broadcasts_from_the_test_process(live_url: str, settings: Any) -> None:
    """Domain calls that seed data in the test process broadcast nothing.

    Nobody listens in this process (the pages' WebSockets are on the server, which has
    its own channel layer), and async_to_sync refuses to run here anyway: Playwright's
    sync API keeps an event loop running in this thread, so every broadcast would log a
    RuntimeError. Depends on ``live_url`` so the server is forked before the setting
    changes (it keeps its own channel layer).
    """
    settings.CHANNEL_LAYERS = {}


@pytest.fixture(scope="package")
def browser(live_url: str, db_worker: Any) -> Iterator[Any]:
    """A headless Debian chromium driven by Playwright (skipped when it is not installed).

    Package-scoped, not session-scoped: Playwright's sync API keeps an asyncio loop
    running in the main thread for as long as it is open, and the rest of the suite
    (pytest-asyncio tests, async_to_sync) cannot start a loop of its own meanwhile; so it
    closes when the last browser test is done. For that time the tests' own ORM calls,
    synchronous and in the main thread, are allowed despite that running loop. Starts
    after ``live_url`` and ``db_worker``, so the forked server and worker inherit neither
    that loop nor the pipes to Playwright's driver.
    """
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as pw:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def new_page(browser: Any) -> Iterator[Any]:
    """A factory of fresh pages (each in its own context, so sessions do not mix)."""
    contexts: list[Any] = []

    def make(width: int = 1280, height: int = 900) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        return page

    yield make
    for context in contexts:
        context.close()


@dataclass
class Owner:
    """A user who owns ``project`` (and can log in with PASSWORD)."""

    user: User
    project: Project


def make_owner(project_name: str = "Acme") -> Owner:
    """``ann`` (log_in's default user, password PASSWORD) owning a new project (slug
    ``acme``) named ``project_name``."""
    project = Project.objects.create(slug="acme", name=project_name)
    user = User.objects.create_user("ann", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=Membership.Role.OWNER)
    return Owner(user=user, project=project)


@pytest.fixture
def owner() -> Owner:
    """``ann`` owning Acme: the browser tests' user."""
    return make_owner()
