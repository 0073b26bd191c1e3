"""Runs every test of the controller (and of p4/lns) with unittest and prints
one `PASS name` or `FAIL name` line per test, as the project's test runner
counts them. Exits non-zero if any failed.

    python3 p4/controller/tests/run.py [-v]
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


class Lines(unittest.TextTestResult):
    def _name(self, test):
        return test.id().replace("tests.", "", 1)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.stream.write(f"PASS {self._name(test)}\n")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.stream.write(f"FAIL {self._name(test)}\n")

    def addError(self, test, err):
        super().addError(test, err)
        self.stream.write(f"FAIL {self._name(test)}\n")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.stream.write(f"SKIP {self._name(test)} ({reason})\n")


def main():
    verbosity = 2 if "-v" in sys.argv else 0
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=os.path.dirname(HERE))
    runner = unittest.TextTestRunner(stream=sys.stdout, resultclass=Lines, verbosity=verbosity)
    result = runner.run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
