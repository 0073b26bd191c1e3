"""Runs the resource model's tests (p4/fit/tests) and prints one PASS/FAIL/SKIP
line per test, as scripts/test.sh counts them. Exits non-zero if any failed.

    python3 p4/fit/tests/run.py [-v]
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
P4 = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, P4)
sys.path.insert(0, os.path.join(os.path.dirname(P4), "tests", "lib"))
from testlines import discover_and_run  # noqa: E402

if __name__ == "__main__":
    sys.exit(discover_and_run(HERE, P4, lambda test: "p4-fit." + test.id().split(".", 1)[1]))
