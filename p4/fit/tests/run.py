"""Runs the resource model's tests (p4/fit/tests) and prints one PASS/FAIL
line per test, as scripts/test.sh counts them. Exits non-zero if any failed.

    python3 p4/fit/tests/run.py [-v]
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
P4 = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, P4)


class Lines(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        self.stream.write(f"PASS p4-fit.{test.id().split('.', 1)[1]}\n")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.stream.write(f"FAIL p4-fit.{test.id().split('.', 1)[1]}\n")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.stream.write(f"SKIP p4-fit.{test.id().split('.', 1)[1]} ({reason})\n")

    def addError(self, test, err):
        super().addError(test, err)
        self.stream.write(f"FAIL p4-fit.{test.id().split('.', 1)[1]}\n")


def main():
    verbosity = 2 if "-v" in sys.argv else 0
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=P4)
    result = unittest.TextTestRunner(stream=sys.stdout, resultclass=Lines, verbosity=verbosity).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
