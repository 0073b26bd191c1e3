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

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtest import main, needs, run_bench  # noqa: E402


@needs(".build/byteps-pslite/tests/trace_replay", "dist/lib/libzmq.so.5", "target/release/zebra")
class BenchAggSmoke(unittest.TestCase):
    def test_two_workers_libzmq_and_switch(self):
        out, runs = run_bench(self, "bench-agg.py", [
            "--workers", "2", "--configs", "libzmq,on+switch", "--repeats", "1", "--rounds", "4",
            "--keys", "500000", "--keys-per-push", "150", "--values", "4", "--subnet", "10.96.0.0/24",
            "--timeout", "240"])
        for config in ("libzmq", "on+switch"):
            self.assertTrue(runs[config]["ok"], config)
            self.assertGreater(runs[config]["pairs_per_s"], 0)
            self.assertGreater(runs[config]["checked"], 0)
        zebra, base = runs["on+switch"], runs["libzmq"]
        self.assertEqual(zebra["pairs"], base["pairs"], "both runs pushed the same trace")
        self.assertGreater(zebra["switch_pairs"], 0, "the switch summed nothing")
        self.assertGreater(zebra["rounds_completed"], 0, "no round completed")
        self.assertLess(zebra["server_ingress_bytes"], base["server_ingress_bytes"])
        self.assertLess(zebra["push_bytes_ratio"], 1.0, "the pushes cost the servers less than whole")
        self.assertTrue(os.path.exists(os.path.join(out, "throughput.png")))
        with open(os.path.join(out, "table.md")) as f:
            self.assertIn("| 2 | on+switch | 1/1 |", f.read())


if __name__ == "__main__":
    main()
