"""Runs every test of the controller (and of p4/lns) with unittest and prints
one `PASS name`, `FAIL name` or `SKIP name (reason)` line per test, as the project's test runner
counts them. Exits non-zero if any failed.

    python3 p4/controller/tests/run.py [-v]
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "tests", "lib"))
from testlines import discover_and_run  # noqa: E402

if __name__ == "__main__":
    sys.exit(discover_and_run(HERE, os.path.dirname(HERE), lambda test: test.id().replace("tests.", "", 1)))
