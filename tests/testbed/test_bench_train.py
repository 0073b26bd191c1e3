#!/usr/bin/env python3
"""Smoke test of scripts/bench-train.py, the benchmark behind scripts/demo.sh.

Two workers train mf_train on MovieLens-100k for at most an epoch on the netns testbed
(the server's ingress shaped), on the real libzmq, with Zebra beside `zebra switch`, the
same with online hot keys instead of the profiled file (on+online) and with 1 % of the
hot-path datagrams dropped (on+switch~1%); the test checks
that every run reached the target RMSE, that the switch summed pairs in rounds that
completed, that the online run found most of the profiled hot rows, that the lossy run
dropped datagrams and still summed, and that the table (with the cost of the loss),
the runs and the plot were written. Skipped
with the reason without root or without the built clients (scripts/setup.sh --clients).

  python3 tests/testbed/test_bench_train.py
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtest import main, needs, run_bench  # noqa: E402


@needs(".build/byteps-pslite/tests/mf_train", ".build/data/ml-100k.inter", "dist/lib/libzmq.so.5",
       "target/release/zebra")
class BenchTrainSmoke(unittest.TestCase):
    def test_two_workers_libzmq_and_switch(self):
        out, runs = run_bench(self, "bench-train.py", [
            "--workers", "2", "--configs", "libzmq,on+switch,on+online,on+switch~1%", "--repeats", "1", "--epochs", "1",
            "--target-rmse", "1.04", "--eval-every", "2", "--server-rate", "20mbit", "--shape", "ingress",
            "--subnet", "10.97.0.0/24", "--timeout", "240",
            # The job stops at the target after 8-25 steps of each worker: the servers must
            # decide before (every worker's 5th push), or nothing is summed.
            "--online-rounds", "5"])
        for config in ("libzmq", "on+switch", "on+online"):
            self.assertTrue(runs[config]["ok"], config)
            self.assertIsNotNone(runs[config]["time_to_target_s"], f"{config} did not reach RMSE 1.04")
            self.assertGreater(runs[config]["server_ingress_bytes"], 0)
            self.assertGreater(runs[config]["server_egress_bytes"], 0)
        zebra = runs["on+switch"]
        self.assertGreater(zebra["switch_pairs"], 0, "the switch summed nothing")
        self.assertGreater(zebra["rounds_completed"], 0, "no round completed")
        online = runs["on+online"]
        self.assertGreater(online["switch_pairs"], 0, "nothing summed with the online keys")
        self.assertGreaterEqual(online["online_precision"][0], 0.7, online["online_precision"])
        lossy = runs["on+switch~1%"]
        self.assertIsNotNone(lossy["time_to_target_s"], "on+switch~1% did not reach RMSE 1.04")
        self.assertGreater(lossy["hot_dropped"], 0, "no hot-path datagram dropped at 1 %")
        self.assertGreater(lossy["switch_pairs"], 0, "nothing summed at 1 % loss")
        for name in ("table.md", "rmse_N2.png"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        with open(os.path.join(out, "table.md")) as f:
            table = f.read()
        self.assertIn("N=2: to test RMSE 1.04", table)
        self.assertIn("| 2 | on+switch~1% | on+switch |", table)


if __name__ == "__main__":
    main()
