"""The README's examples follow the port ./dev serve was given, and ./dev says so before
its long first install (issue: first ./dev serve was silent for minutes)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIRST_RUN = "Installing into .venv: the first run takes a few minutes..."


def test_the_readme_says_the_default_port_once_and_its_examples_use_base() -> None:
    text = (ROOT / "README.md").read_text()

    assert len(re.findall(r"\b8000\b", text)) == 1
    assert "It serves on port 8000 by default; `PORT=8123 ./dev serve`" in text
    assert re.findall(r"(?:localhost|127\.0\.0\.1):\d", text) == []
    assert "API=$BASE/v1/memory/working" in text and "MEM=$BASE/v1/memory" in text


def _fake_project(tmp_path: Path) -> Path:
    """A copy of ./dev and pyproject.toml with a .venv whose python only logs its calls."""
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/../calls"\n')
    python.chmod(0o755)
    return tmp_path


def _dev_test(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["./dev", "test"], cwd=project, env=env, capture_output=True, text=True, timeout=30, check=True
    )


def test_dev_says_before_the_first_install_and_then_not_again(tmp_path: Path) -> None:
    project = _fake_project(tmp_path)

    first = _dev_test(project)
    second = _dev_test(project)

    assert first.stderr.splitlines()[0] == FIRST_RUN
    assert "pip install" in (project / ".venv" / "calls").read_text()
    assert FIRST_RUN not in second.stderr and "updating" not in second.stderr


def test_dev_says_it_updates_when_pyproject_changed(tmp_path: Path) -> None:
    project = _fake_project(tmp_path)
    _dev_test(project)
    with (project / "pyproject.toml").open("a") as f:
        f.write("\n# changed\n")

    again = _dev_test(project)

    assert again.stderr.splitlines()[0] == "pyproject.toml changed: updating .venv..."


# --- ./dev serve prints the demo lines once the server listens -----------------------------

FAKE_MANAGE = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/../calls"
case "$2" in
  demo_setup) printf '\\nMemory service demo\\n  export BASE=%s\\n  export KEY=mk_fake\\n' "$4" ;;
  db_worker|end_idle_threads) exec sleep 120 ;;
esac
"""
# uvicorn that listens on --port only once the file "go" exists beside it (or exits with
# the number written in "exit" there).
FAKE_UVICORN = """#!/usr/bin/python3
import os, socket, sys, time
here = os.path.dirname(os.path.abspath(__file__))
port = int(sys.argv[sys.argv.index("--port") + 1])
while not os.path.exists(os.path.join(here, "go")):
    if os.path.exists(os.path.join(here, "exit")):
        sys.exit(int(open(os.path.join(here, "exit")).read()))
    time.sleep(0.05)
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", port))
sock.listen(8)
while True:
    sock.accept()[0].close()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serving_project(tmp_path: Path) -> Path:
    project = _fake_project(tmp_path)
    bin_dir = project / ".venv" / "bin"
    for name, text in (("python", FAKE_MANAGE), ("uvicorn", FAKE_UVICORN)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return project


@contextmanager
def _dev_serve(project: Path, port: int) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``./dev serve`` on ``port`` in its own process group (stopped at the end), and the
    lines of its stdout and stderr as they come, tagged ``out:`` / ``err:``."""
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PORT": str(port)}
    process = subprocess.Popen(
        ["./dev", "serve"], cwd=project, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    readers = [
        threading.Thread(target=lambda s=stream, tag=tag: lines.extend(f"{tag}{x.rstrip()}" for x in s), daemon=True)
        for stream, tag in ((process.stdout, "out:"), (process.stderr, "err:"))
    ]  # fmt: skip
    for reader in readers:
        reader.start()
    try:
        yield process, lines
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
        for reader in readers:
            reader.join(timeout=5)


def _until(condition: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_dev_serve_prints_the_demo_lines_once_the_server_accepts_connections(tmp_path: Path) -> None:
    project = _serving_project(tmp_path)
    port = _free_port()
    base = f"out:  export BASE=http://127.0.0.1:{port}/"

    with _dev_serve(project, port) as (process, lines):
        _until(lambda: f"err:Starting the server on http://127.0.0.1:{port}/ ..." in lines)
        time.sleep(1.0)  # ./dev looks every 0.1 s: it would have printed by now
        assert [x for x in lines if "export" in x] == []
        (project / ".venv" / "bin" / "go").touch()  # the server now listens
        _until(lambda: "out:  export KEY=mk_fake" in lines)

        assert process.poll() is None
        assert [x for x in lines if x.startswith("out:  export")] == [base, "out:  export KEY=mk_fake"]
        assert "manage.py demo_setup --url http://127.0.0.1:" in (project / ".venv" / "calls").read_text()


def test_dev_serve_prints_no_demo_lines_when_the_server_dies_first(tmp_path: Path) -> None:
    project = _serving_project(tmp_path)
    (project / ".venv" / "bin" / "exit").write_text("3")

    with _dev_serve(project, _free_port()) as (process, lines):
        assert process.wait(timeout=15) == 3

    assert [x for x in lines if "export" in x] == []


def test_dev_serve_says_when_the_port_is_taken(tmp_path: Path) -> None:
    project = _serving_project(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = int(taken.getsockname()[1])
        with _dev_serve(project, port) as (process, lines):
            assert process.wait(timeout=15) == 1

    assert lines == [
        f"err:Port {port} is already in use: stop what runs there, or serve on another port (PORT=8123 ./dev serve)."
    ]
    assert not (project / ".venv" / "calls").exists()  # not even installing first


@pytest.mark.parametrize("port", ["70000", "65536", "0", "-1", "80a", " 8000", "08000", "1e3"])
def test_dev_serve_refuses_a_port_outside_1_to_65535(tmp_path: Path, port: str) -> None:
    project = _serving_project(tmp_path)
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PORT": port}
    done = subprocess.run(
        ["./dev", "serve"], cwd=project, env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"PORT must be a number from 1 to 65535, not '{port}' (PORT=8123 ./dev serve).\n"
    assert not (project / ".venv" / "calls").exists()  # nothing installed, migrated or served
