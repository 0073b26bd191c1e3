"""unittest results as the lines scripts/test.sh counts: one `PASS name`, `FAIL name` or
`SKIP name (reason)` line per test on standard output.

    from testlines import discover_and_run
    sys.exit(discover_and_run(start_dir, top_level_dir, lambda test: "prefix." + test.id()))
"""

import sys
import unittest


def result_class(name):
    """A TextTestResult that writes a line per test, the test named by `name(test)`."""

    class Lines(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            self.stream.write(f"PASS {name(test)}\n")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self.stream.write(f"FAIL {name(test)}\n")

        def addError(self, test, err):
            super().addError(test, err)
            self.stream.write(f"FAIL {name(test)}\n")

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self.stream.write(f"SKIP {name(test)} ({reason})\n")

    return Lines


def discover_and_run(start, top, name):
    """Runs every test_*.py under `start` (-v in argv: verbose); 0 if all passed, else 1."""
    verbosity = 2 if "-v" in sys.argv else 0
    suite = unittest.defaultTestLoader.discover(start, pattern="test_*.py", top_level_dir=top)
    runner = unittest.TextTestRunner(stream=sys.stdout, resultclass=result_class(name), verbosity=verbosity)
    return 0 if runner.run(suite).wasSuccessful() else 1
