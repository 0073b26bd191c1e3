#!/usr/bin/env python3
"""Smoke test of scripts/bench-agg.py, the aggregation-throughput benchmark.

Two workers replay a small OA-like trace (trace_replay, every sum checked) on the netns
testbed, on the real libzmq and with Zebra beside `zebra switch`; the test checks that
both runs succeeded, that the switch summed pairs in rounds that completed, that the
servers received fewer bytes with the switch, and that the table (with the bound) and
the plot were written. Skipped with the reason without root or without the built clients
(scripts/setup.sh --clients).

  python3 tests/testbed/test_bench_agg.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_pslaunch import IS_ROOT, ROOT, LineResult  # noqa: E402

BENCH = os.path.join(ROOT, "scripts", "bench-agg.py")
NEEDED = [os.path.join(ROOT, p) for p in (".build/byteps-pslite/tests/trace_replay", "dist/lib/libzmq.so.5",
                                           "target/release/zebra")]


@unittest.skipUnless(IS_ROOT, "the netns testbed needs root")
@unittest.skipUnless(all(os.path.exists(p) for p in NEEDED), "clients not built (scripts/setup.sh --clients)")
class BenchAggSmoke(unittest.TestCase):
    def test_two_workers_libzmq_and_switch(self):
        out = tempfile.mkdtemp(prefix="bench-agg-test.")
        res = subprocess.run(
            [sys.executable, BENCH, "--workers", "2", "--configs", "libzmq,on+switch", "--repeats", "1",
             "--rounds", "4", "--keys", "500000", "--keys-per-push", "150", "--values", "4",
             "--subnet", "10.96.0.0/24", "--timeout", "240", "--out", out],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        self.assertEqual(res.returncode, 0, res.stdout[-3000:])
        with open(os.path.join(out, "runs.json")) as f:
            runs = {r["config"]: r for r in json.load(f)["runs"]}
        for config in ("libzmq", "on+switch"):
            self.assertTrue(runs[config]["ok"], config)
            self.assertGreater(runs[config]["pairs_per_s"], 0)
            self.assertGreater(runs[config]["checked"], 0)
        zebra, base = runs["on+switch"], runs["libzmq"]
        self.assertEqual(zebra["pairs"], base["pairs"], "both runs pushed the same trace")
        self.assertGreater(zebra["switch_pairs"], 0, "the switch summed nothing")
        self.assertGreater(zebra["rounds_completed"], 0, "no round completed")
        self.assertLess(zebra["server_ingress_bytes"], base["server_ingress_bytes"])
        self.assertTrue(os.path.exists(os.path.join(out, "throughput.png")))
        with open(os.path.join(out, "table.md")) as f:
            self.assertIn("| 2 | on+switch | 1/1 |", f.read())
        print(res.stdout.strip().splitlines()[-1], file=sys.stderr)


if __name__ == "__main__":
    runner = unittest.TextTestRunner(resultclass=LineResult, verbosity=0, stream=sys.stderr)
    sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
