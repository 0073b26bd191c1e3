#!/usr/bin/env python3
"""Smoke test of scripts/bench-online.py, online hot keys in a live job.

Four workers replay a small OA-like trace (trace_replay, every sum checked) beside
`zebra switch` on loopback with 1 % loss on the hot path: from a stale hot set, with
ZEBRA_HOT=online:5 from that set and from none, and with the right set. The test checks that every run was exact,
that the online run changed both servers' keys at a round, found most of the hot keys,
and cost the servers fewer bytes than the stale set. Skipped with the reason without the
built clients (scripts/setup.sh --clients).

  python3 tests/testbed/test_bench_online.py
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtest import main, run_bench  # noqa: E402
from test_pslaunch import ROOT  # noqa: E402

NEEDED = [".build/byteps-pslite/tests/trace_replay", "dist/lib/libzmq.so.5", "target/release/zebra"]
MISSING = [p for p in NEEDED if not os.path.exists(os.path.join(ROOT, p))]


@unittest.skipIf(MISSING, f"clients not built (scripts/setup.sh --clients): {MISSING}")
class BenchOnlineSmoke(unittest.TestCase):
    def test_online_from_a_stale_set(self):
        _, runs = run_bench(self, "bench-online.py", ["--rounds-counted", "5", "--trace-rounds", "15"])
        self.assertEqual(set(runs), {"stale", "online:5", "none:5", "oracle"})
        for name, r in runs.items():
            self.assertTrue(r["exact"], name)
        online, stale = runs["online:5"], runs["stale"]
        self.assertIsNotNone(online["from_round"], "no server changed its keys")
        self.assertEqual(len(online["precision"]), 2)
        self.assertGreaterEqual(min(online["precision"]), 0.8, online)
        self.assertEqual(max(stale["precision"]), 0.0, "the stale set shares no hot key")
        self.assertLess(online["bytes_ratio"], stale["bytes_ratio"])
        none = runs["none:5"]
        self.assertIsNotNone(none["from_round"], "no server found keys without a file")
        self.assertGreaterEqual(min(none["precision"]), 0.7, none)
        self.assertLess(none["bytes_ratio"], stale["bytes_ratio"])


if __name__ == "__main__":
    main()
