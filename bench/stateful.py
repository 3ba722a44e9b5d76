"""The longer run of the Hypothesis state machine over the memory domain (issue 12 item
2, tests/test_stateful.py): many more programs, and longer ones, than CI runs, each
with fresh randomness; prints how often each outcome (compactions committed and failed,
episode jobs, refused and accepted tool calls, deletes) happened.

Usage: ``.venv/bin/python bench/stateful.py [EXAMPLES [STEPS]]`` (default 200 programs
of at most 60 steps); add ``DATABASE_URL=postgres://...`` for PostgreSQL. Exits
non-zero when an invariant broke, after printing the shrunk program that broke it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    examples = sys.argv[1] if len(sys.argv) > 1 else "200"
    steps = sys.argv[2] if len(sys.argv) > 2 else "60"
    env = {**os.environ, "STATEFUL_EXAMPLES": examples, "STATEFUL_STEPS": steps}
    command = [sys.executable, "-m", "pytest", "tests/test_stateful.py", "-q", "-s"]
    return subprocess.call([*command, "-p", "no:cacheprovider"], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
