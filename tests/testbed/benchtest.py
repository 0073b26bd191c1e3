"""What the benchmark smoke tests share: skipping without root or the built clients,
running a scripts/ benchmark into a fresh directory, and reading its runs."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from test_pslaunch import IS_ROOT, ROOT, LineResult


def needs(*paths):
    """Skips a test class without root (the netns testbed) or without these built files
    (relative to the repository)."""
    missing = [p for p in paths if not os.path.exists(os.path.join(ROOT, p))]

    def wrap(cls):
        cls = unittest.skipUnless(IS_ROOT, "the netns testbed needs root")(cls)
        return unittest.skipIf(missing, f"clients not built (scripts/setup.sh --clients): {missing}")(cls)
    return wrap


def run_bench(test, script, args):
    """Runs scripts/SCRIPT with ARGS and --out a new directory; fails `test` unless it
    exits 0. Returns the directory and the runs of runs.json by configuration."""
    out = tempfile.mkdtemp(prefix=f"{script}-test.")
    res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script)] + args + ["--out", out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    test.assertEqual(res.returncode, 0, res.stdout[-3000:])
    with open(os.path.join(out, "runs.json")) as f:
        runs = {r["config"]: r for r in json.load(f)["runs"]}
    print(res.stdout.strip().splitlines()[-1], file=sys.stderr)
    return out, runs


def main():
    runner = unittest.TextTestRunner(resultclass=LineResult, verbosity=0, stream=sys.stderr)
    sys.exit(not unittest.main(module="__main__", testRunner=runner, exit=False).result.wasSuccessful())
