#!/usr/bin/env python3
"""Tests of the chaos suite's checks (scripts/chaoslib.py) on made-up job logs: each check
passes on a good job and fails on each kind of bad one, so that a scenario of
scripts/chaos.py cannot pass on a wrong result. Needs neither root nor the clients.

Prints one line per test, "PASS name" or "FAIL name (...)", for scripts/test.sh.

  python3 tests/testbed/test_chaos_checks.py
"""

import os
import shutil
import signal
import sys
import tempfile
import unittest
from types import SimpleNamespace

from test_pslaunch import ROOT
import benchtest

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import chaoslib  # noqa: E402

OK_WORKER = "exact_sums: OK checked 1000 values (worker rank {r} of 2, 1 servers, 4 rounds, 48 keys, val_len 4)\n"
OK_SERVER = "exact_sums: server rank 0 handled 8 pushes and 8 pulls, no errors\n"
WRONG = ("exact_sums: FAIL push-pull round 0 key 16777216 (index 0, server 0, all workers, integers) elem 0: "
         "got 5, expected 4 (2 contributions)\nexact_sums: FAIL worker rank {r}: 1 of 1000 values wrong\n")
SWITCH = """zebra switch statistics
  added            {packets} packets, {pairs} pairs
  rounds           {done} completed, 0 flushed, {open} open
  aggregate parts  10 sent, 0 resent, 10 acked, {pending} pending, 0 abandoned, 0 unroutable
  registrations    2 accepted, 0 refused, 0 jobs admitted
  injected faults  {dropped} dropped, 0 duplicated, 0 delayed of 500
"""
WORKER_STATS = ("  agent: WorkerAgentStats {{ bytes_before: 1000, bytes_after: 600, trailer_bytes: 20, "
                "settle_bytes: 0 }}\n  link job 1: WorkerLinkStats {{ io: IoStats {{ faults: FaultStats "
                "{{ offered: 100, dropped: {dropped}, duplicated: 0, delayed: 0 }} }} }}\n")
SERVER_STATS = ("  agent: ServerAgentStats {{ forced: {forced}, lost_values: {lost} }}\n"
                "  link: ServerLinkStats {{ server: ServerStats {{ parts: 4, duplicate_parts: 0 }}, "
                "io: IoStats {{ rx_bytes: 200 }} }}\n")


class Logs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="chaos-checks.")
        os.makedirs(os.path.join(self.dir, "stats"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def exact_sums_job(self, wrong_worker=None, server_ok=True):
        for r in range(2):
            self.write(f"worker-{r}.log", (WRONG if r == wrong_worker else OK_WORKER).format(r=r))
        self.write("server-0.log", OK_SERVER if server_ok else "exact_sums: FAIL server rank 0: key 7 got 3 pushes\n")

    def hot_job(self, pairs=100, forced=0, lost=0, dropped=0, open_rounds=0, pending=0):
        self.write("switch.log", SWITCH.format(packets=pairs // 10, pairs=pairs, done=4, open=open_rounds,
                                               pending=pending, dropped=dropped))
        self.write("stats/1", WORKER_STATS.format(dropped=dropped))
        self.write("stats/2", SERVER_STATS.format(forced=forced, lost=lost))


class ExactSums(Logs):
    def test_exact_job_passes(self):
        self.exact_sums_job()
        problems, checked = chaoslib.exact_sums_ok(self.dir, 2, 1)
        self.assertEqual(problems, [])
        self.assertIn("2 of 2 workers found all their pulled values exact (2,000 checked)", checked[0])

    def test_a_wrong_value_fails_naming_it(self):
        self.exact_sums_job(wrong_worker=1)
        problems, _ = chaoslib.exact_sums_ok(self.dir, 2, 1)
        self.assertEqual(len(problems), 1)
        self.assertIn("got 5, expected 4", problems[0])

    def test_a_server_error_fails(self):
        self.exact_sums_job(server_ok=False)
        problems, _ = chaoslib.exact_sums_ok(self.dir, 2, 1)
        self.assertEqual(problems, ["server 0: exact_sums: FAIL server rank 0: key 7 got 3 pushes"])

    def test_a_missing_worker_log_fails(self):
        self.exact_sums_job()
        problems, _ = chaoslib.exact_sums_ok(self.dir, 3, 1)
        self.assertEqual(problems, ["worker 2: no OK line"])


class Mxnet(Logs):
    def job(self):
        for r in range(2):
            self.write(f"worker-{r}.log", "mxnet dist_sync: OK checked 50 values (...)\n")
            self.write(f"server-{r}.log", "mxnet dist_sync server: OK applied 12 updates\n")

    def test_ok_job_passes(self):
        self.job()
        self.assertEqual(chaoslib.mxnet_ok(self.dir, 2, 2)[0], [])

    def test_a_traceback_fails(self):
        self.job()
        self.write("server-1.log", "mxnet dist_sync server: OK\nTraceback (most recent call last):\n")
        self.assertEqual(chaoslib.mxnet_ok(self.dir, 2, 2)[0], ["server-1.log: Traceback (most recent call last)"])

    def test_a_missing_ok_line_fails(self):
        self.job()
        self.write("worker-1.log", "mxnet dist_sync: FAIL 3 values wrong\n")
        problems = chaoslib.mxnet_ok(self.dir, 2, 2)[0]
        self.assertIn("1 of 2 workers printed their OK line", problems)
        self.assertIn("worker-1.log: dist_sync: FAIL", problems)


class HotPath(Logs):
    def test_aggregating_job_passes(self):
        self.hot_job()
        problems, b = chaoslib.hot_ok(self.dir)
        self.assertEqual(problems, [])
        self.assertEqual(b["pairs"], 100)

    def test_forced_or_lost_fails(self):
        for forced, lost in ((1, 0), (0, 3)):
            self.hot_job(forced=forced, lost=lost)
            self.assertTrue(chaoslib.hot_ok(self.dir)[0], (forced, lost))
            self.assertEqual(chaoslib.server_counters(self.dir), {"forced": forced, "lost_values": lost})

    def test_nothing_aggregated_fails_unless_not_required(self):
        self.hot_job(pairs=0)
        self.assertTrue(chaoslib.hot_ok(self.dir)[0])
        self.assertEqual(chaoslib.hot_ok(self.dir, require_pairs=False)[0], [])

    def test_switch_statistics_the_last_block_counts(self):
        self.hot_job(pairs=100, open_rounds=2, pending=1)
        with open(os.path.join(self.dir, "switch.log"), "a") as f:
            f.write(SWITCH.format(packets=30, pairs=300, done=9, open=0, pending=0, dropped=0))
        s = chaoslib.switch_stats(os.path.join(self.dir, "switch.log"))
        self.assertEqual((s["pairs"], s["completed"], s["open"], s["pending"], s["registrations"]), (300, 9, 0, 0, 2))

    def test_faults_are_summed_and_required(self):
        self.hot_job(dropped=7)
        f = chaoslib.faults(self.dir)
        self.assertEqual((f["dropped"], f["offered"]), (14, 600))
        self.assertTrue(chaoslib.injected_enough("drop=0.05,seed=1", f))
        self.assertFalse(chaoslib.injected_enough("drop=0.05,dup=0.05", f))
        self.assertTrue(chaoslib.injected_enough("dup=0.001", f))  # 0.6 expected: not required


class Failover(Logs):
    def standby_job(self, pairs=500, moves=1, forced=0):
        self.write("standby.log", SWITCH.format(packets=50, pairs=pairs, done=pairs // 100, open=0, pending=0,
                                                dropped=0))
        for s in range(2):
            self.write(f"stats/server-{s}", SERVER_STATS.replace("{{ forced", f"{{{{ switch_moves: {moves}, forced")
                       .format(forced=forced, lost=0))
        return os.path.join(self.dir, "standby.log")

    def test_a_standby_that_took_over_passes(self):
        problems, checked = chaoslib.failover_ok(self.dir, self.standby_job(), {"pairs": 0}, servers=2)
        self.assertEqual(problems, [])
        self.assertIn("2 moves to the standby", checked[1])

    def test_each_failure_of_a_failover_fails(self):
        cases = [
            ({}, {}, "statistics at the kill were not read"),
            ({"pairs": 7}, {}, "had added 7 pairs before the kill"),
            ({"pairs": 0}, {"pairs": 0}, "the standby aggregated nothing"),
            ({"pairs": 0}, {"moves": 0}, "moved their jobs 0 times"),
            ({"pairs": 0}, {"moves": 2}, "moved their jobs 4 times"),
            ({"pairs": 0}, {"forced": 1}, "forced 2 requests"),
        ]
        for at_kill, job, want in cases:
            problems, _ = chaoslib.failover_ok(self.dir, self.standby_job(**job), at_kill, servers=2)
            self.assertTrue(any(want in p for p in problems), (want, problems))


def fake_job(logdir, exits, kill_at=3.0):
    nodes = [("scheduler", "scheduler"), ("server", "server-0"), ("worker", "worker-0"), ("worker", "worker-1")]
    return SimpleNamespace(logdir=logdir, nodes=nodes, failure=None, problems=[], kill_times={"worker-1": kill_at},
                           exits=dict(exits, **{"worker-1": (-signal.SIGKILL, kill_at + 0.05)}))


class WorkerKill(Logs):
    def test_the_same_outcome_passes(self):
        problems, checked = chaoslib.compare_after_kill(fake_job(self.dir, {}), fake_job(self.dir, {}), "worker-1", 10)
        self.assertEqual(problems, [])
        self.assertIn("still waiting: scheduler, server-0, worker-0", checked[1])
        self.assertEqual(checked[2], "the same processes ended by themselves on both")

    def test_pslite_aborting_with_its_message_passes_and_differences_are_shown(self):
        self.write("server-0.log", "terminate called\n  what():  [12:58:22] src/./zmq_van.h:274: Check failed: 0 "
                   "Host unreachable\n\nStack trace returned 10 entries:\n[bt] (0) libstdc++\n")
        zeb = fake_job(self.dir, {"server-0": (-signal.SIGABRT, 3.1)})
        problems, checked = chaoslib.compare_after_kill(fake_job(self.dir, {}), zeb, "worker-1", 10)
        self.assertEqual(problems, [])
        self.assertIn("'Check failed: 0 Host unreachable'", checked[1])
        self.assertIn("server-0 ended by themselves on one and not the other", checked[2])

    def test_a_crash_fails(self):
        zeb = fake_job(self.dir, {"worker-0": (-signal.SIGSEGV, 4.0)})
        problems, _ = chaoslib.compare_after_kill(fake_job(self.dir, {}), zeb, "worker-1", 10)
        self.assertEqual(problems, ["worker-0 crashed on Zebra: signal SIGSEGV ('')"])

    def test_a_panic_of_zebra_fails(self):
        self.write("worker-0.log", "zebra: thread zebra-io-0 panicked: oops; aborting\n")
        zeb = fake_job(self.dir, {"worker-0": (-signal.SIGABRT, 4.0)})
        problems, _ = chaoslib.compare_after_kill(fake_job(self.dir, {}), zeb, "worker-1", 10)
        self.assertEqual(len(problems), 1)
        self.assertIn("worker-0 crashed on Zebra", problems[0])

    def test_an_exit_without_a_message_fails(self):
        self.write("worker-0.log", "[12:00:00] src/./zmq_van.h:299: Start ZMQ recv thread\n")
        zeb = fake_job(self.dir, {"worker-0": (1, 4.0)})
        problems, _ = chaoslib.compare_after_kill(fake_job(self.dir, {}), zeb, "worker-1", 10)
        self.assertIn("worker-0 ended on Zebra with code 1 and no clear message", problems[0])

    def test_a_kill_after_the_job_ended_fails(self):
        lib = fake_job(self.dir, {"worker-0": (0, 2.0), "server-0": (0, 2.0), "scheduler": (0, 2.0)})
        problems, _ = chaoslib.compare_after_kill(lib, fake_job(self.dir, {}), "worker-1", 10)
        self.assertIn("not in the middle of the job", problems[0])


if __name__ == "__main__":
    benchtest.main()
