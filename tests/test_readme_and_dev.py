"""The README's examples follow the port ./dev serve was given, and ./dev says so before
its long first install (issue: first ./dev serve was silent for minutes)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

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
