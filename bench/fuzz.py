"""The longer schemathesis run over /v1 (issue 12 item 2): the checks of
tests/test_openapi_fuzz.py with many more cases per operation, schemathesis' coverage
phase on (boundary and negative values of every parameter and field), and the per-key
rate limit off. Usage: ``.venv/bin/python bench/fuzz.py [EXAMPLES]`` (default 200);
exits non-zero on any 500, undocumented status or response that breaks its schema.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    examples = sys.argv[1] if len(sys.argv) > 1 else "200"
    env = {
        **os.environ,
        "FUZZ_MAX_EXAMPLES": examples,
        "FUZZ_COVERAGE": "1",
        "MEMORY_API_RATE_LIMIT": "",
    }
    command = [sys.executable, "-m", "pytest", "tests/test_openapi_fuzz.py", "-q"]
    return subprocess.call([*command, "-p", "no:cacheprovider"], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
