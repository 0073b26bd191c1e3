#!/usr/bin/env python3
"""Tests of scripts/shared-switch.py's checks on made-up jobs and made-up scrapes of the
switch's metrics: each verdict passes on good runs and fails on each kind of bad one (a
job not exact, a job whose servers got no aggregate, two jobs that did not aggregate at
the same time, a third job admitted, a fourth job never admitted once there was room, a
job starved behind a shaped link). Needs neither
root nor the clients.

Prints one line per test, "PASS name" or "FAIL name (...)", for scripts/test.sh.

  python3 tests/testbed/test_shared_switch_checks.py
"""

import contextlib
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from types import SimpleNamespace

from test_pslaunch import ROOT
import benchtest

sys.path.insert(0, os.path.join(ROOT, "scripts"))
_spec = importlib.util.spec_from_file_location("shared_switch", os.path.join(ROOT, "scripts", "shared-switch.py"))
shared_switch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shared_switch)

REFUSED = ("[2026-11-27T07:51:47.590Z WARN  zebra_hotpath::switch_node] switch: job 21 (2 workers, 32768 hot "
           "values) from 10.96.0.13:34062 not admitted: jobs need 3072 slots per register, the switch has 2048\n")
REFUSED_D = ("[2026-11-27T07:51:49.100Z WARN  zebra_hotpath::switch_node] switch: job 31 (2 workers, 32768 hot "
             "values) from 10.96.0.17:41000 not admitted: jobs need 3072 slots per register, the switch has 2048\n")
ADMITTED_D = ("[2026-11-27T07:52:20.300Z INFO  zebra_hotpath::switch_node] switch: admitted job 31 (2 workers, "
              "32768 hot values) for 10.96.0.17:41000\n")


class Checks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="shared-switch-checks.")
        self.args = SimpleNamespace(interval=0.5, min_share=0.5)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, path, text):
        path = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def job(self, label, client, servers, job_id, aggregates=5, wrong=False, aside=False):
        """A finished job's logs (2 workers) and its servers' statistics."""
        d = f"{label.lower()}-{client}"
        for r in range(2):
            if client == "mxnet":
                self.write(f"{d}/worker-{r}.log", f"mxnet dist_sync: OK checked 100 values (worker {r} of 2)\n")
            else:
                self.write(f"{d}/worker-{r}.log", "exact_sums: FAIL worker rank 0: 1 of 1000 values wrong\n"
                           if wrong and r == 0 else f"exact_sums: OK checked 1000 values (worker rank {r} of 2)\n")
        for s in range(servers):
            line = ("mxnet dist_sync server: OK\n" if client == "mxnet"
                    else "exact_sums: server rank 0 handled 8 pushes and 8 pulls, no errors\n")
            if aside:
                line = "[...] server 0: stepping aside: its workers' pushes go to it unchanged\n" + line
            self.write(f"{d}/server-{s}.log", line)
            self.write(f"{d}/stats/{100 + s}", f"  agent: ServerAgentStats {{ forced: 0, aggregates: {aggregates}, "
                       f"sum_values: {aggregates * 10}, lost_values: 0 }}\n")
        return SimpleNamespace(label=label, client=client, servers=servers, workers=2, job_id=job_id,
                               logdir=os.path.join(self.dir, d), switch_jobs=[job_id + s for s in range(servers)],
                               job=SimpleNamespace(failure=None, elapsed=10.0))

    def switch(self, name, scrapes, log=""):
        """A switch whose scraper saw `scrapes`: [(t, {job: pairs summed})] (each scraped job
        also shows its hot values), plus the whole switch's counters."""
        path = os.path.join(self.dir, f"{name}.jsonl")
        with open(path, "w") as f:
            for t, jobs in scrapes:
                s = [["zebra_switch_jobs_admitted_total", "", str(len(jobs))],
                     ["zebra_switch_registrations_refused_total", 'zebra_job="none"', "3"],
                     ["zebra_switch_fallbacks_total", 'zebra_job="1",reason="Late"', "1"]]
                for job, pairs in jobs.items():
                    s += [["zebra_switch_pairs_summed_total", f'zebra_job="{job}"', str(pairs)],
                          ["zebra_switch_job_hot_values", f'zebra_job="{job}"', "16384"]]
                f.write(json.dumps({"t": t, "s": s}) + "\n")
        return SimpleNamespace(samples=lambda: shared_switch.read_samples(path), text=lambda: log)

    def verdicts(self, check, *a):
        """Runs a check of the script, its output kept from scripts/test.sh's count: the
        verdict of each of its lines, by name."""
        run = shared_switch.Run(self.args, None)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            check(run, *a)
        lines = [l for l in out.getvalue().splitlines() if l.split(" ", 1)[0] in ("PASS", "FAIL")]
        return {l.split(" (")[0].split(" ", 2)[2]: l.split(" ", 1)[0] for l in lines}, out.getvalue()

    def admission(self, a_job, b_job, c_job, d_job, scrapes, log=REFUSED + REFUSED_D + ADMITTED_D):
        return self.verdicts(shared_switch.Run.check_admission, [a_job, b_job, c_job, d_job],
                             self.switch("admission", scrapes, log))

    def good_jobs(self):
        return (self.job("A", "exact_sums", 2, 1), self.job("B", "mxnet", 2, 11),
                self.job("C", "exact_sums", 1, 21, aggregates=0, aside=True),
                self.job("D", "exact_sums", 1, 31, aside=True))

    @staticmethod
    def together(n=10, d_from=None):
        """Jobs 1, 2 (A) and 11, 12 (B) summing at once; job 31 (D) after them, from scrape
        `d_from` on."""
        out = [(t * 0.5, {1: 100 * t, 2: 100 * t, 11: 10 * t, 12: 10 * t}) for t in range(n)]
        if d_from is not None:
            out += [(t * 0.5, {31: 50 * (t - d_from)}) for t in range(max(n, d_from), max(n, d_from) + 6)]
        return out

    def test_good_runs_pass(self):
        v, out = self.admission(*self.good_jobs(), self.together(d_from=14))
        self.assertEqual(v, {"A exact_sums": "PASS", "B mxnet": "PASS", "A and B at once": "PASS",
                             "C refused": "PASS", "D admitted later": "PASS"}, out)

    def test_a_wrong_value_fails_its_job(self):
        a, b, c, d = self.good_jobs()
        v, out = self.admission(self.job("A", "exact_sums", 2, 1, wrong=True), b, c, d, self.together(d_from=14))
        self.assertEqual(v["A exact_sums"], "FAIL", out)
        self.assertEqual(v["B mxnet"], "PASS", out)

    def test_a_job_whose_servers_got_no_aggregate_fails(self):
        # --break same-id: the switch summed pairs of "jobs 1 and 2", but they were B's.
        a, b, c, d = self.good_jobs()
        v, out = self.admission(self.job("A", "exact_sums", 2, 1, aggregates=0), b, c, d, self.together(d_from=14))
        self.assertEqual(v["A exact_sums"], "FAIL", out)
        self.assertIn("received no aggregate", out)

    def test_a_job_the_switch_summed_nothing_of_fails(self):
        scrapes = [(t * 0.5, {1: 100 * t, 2: 100 * t, 11: 0, 12: 0}) for t in range(10)]
        v, out = self.admission(*self.good_jobs(), scrapes)
        self.assertEqual(v["B mxnet"], "FAIL", out)
        self.assertEqual(v["A and B at once"], "FAIL", out)

    def test_jobs_that_summed_one_after_the_other_fail(self):
        scrapes = [(t * 0.5, {1: 100 * min(t, 5), 2: 100 * min(t, 5), 11: 10 * max(0, t - 6), 12: 0})
                   for t in range(14)]
        v, out = self.admission(*self.good_jobs(), scrapes)
        self.assertEqual(v["A and B at once"], "FAIL", out)
        self.assertEqual(v["A exact_sums"], "PASS", out)

    def test_a_third_job_admitted_fails(self):
        # --break room: the switch had room for C.
        a, b, _, d = self.good_jobs()
        scrapes = [(t, {**j, 21: 50 * i}) for i, (t, j) in enumerate(self.together(d_from=14))]
        v, out = self.admission(a, b, self.job("C", "exact_sums", 1, 21), d, scrapes, log=REFUSED_D + ADMITTED_D)
        self.assertEqual(v["C refused"], "FAIL", out)
        self.assertIn("not refused", out)

    def test_a_third_job_not_exact_fails(self):
        a, b, _, d = self.good_jobs()
        v, out = self.admission(a, b, self.job("C", "exact_sums", 1, 21, aggregates=0, aside=True, wrong=True), d,
                                self.together(d_from=14))
        self.assertEqual(v["C refused"], "FAIL", out)

    def test_a_refusal_that_stays_final_fails(self):
        # As before the fix: D, refused while A and B ran, never admitted once they ended.
        a, b, c, _ = self.good_jobs()
        d = self.job("D", "exact_sums", 1, 31, aggregates=0, aside=True)
        v, out = self.admission(a, b, c, d, self.together(), log=REFUSED + REFUSED_D)
        self.assertEqual(v["D admitted later"], "FAIL", out)
        self.assertIn("never admitted job 31", out)
        self.assertEqual(v["C refused"], "PASS", out)

    def test_a_fourth_job_never_refused_fails(self):
        # The switch had room for D from the start: nothing shows that a refusal is not final.
        v, out = self.admission(*self.good_jobs(), self.together(d_from=14), log=REFUSED + ADMITTED_D)
        self.assertEqual(v["D admitted later"], "FAIL", out)
        self.assertIn("never refused job 31", out)

    def window(self, rates_on, rates_off):
        """Both halves of the window scenario, each job summing at the given pairs a second."""
        results = {}
        for tag, rates in (("on", rates_on), ("off", rates_off)):
            specs = [self.job(f"{tag}{label}", "exact_sums", 2, job_id) for label, job_id in (("P", 1), ("Q", 11))]
            for s, label in zip(specs, "PQ"):
                s.label = label
            scrapes = [(t * 0.5, {1: rates[0] * t / 2, 2: rates[0] * t / 2, 11: rates[1] * t / 2,
                                  12: rates[1] * t / 2}) for t in range(1, 20)]
            results[tag] = (specs, self.switch(f"window-{tag}", scrapes), {"to the switch": 0, "from the switch": 0})
        return self.verdicts(shared_switch.Run.check_window, results)

    def test_two_jobs_that_both_progress_pass(self):
        v, out = self.window((40000, 38000), (1000, 30000))
        self.assertEqual(v["window both progress"], "PASS", out)
        self.assertEqual(v["window on P exact"], "PASS", out)

    def test_a_starved_job_fails(self):
        v, out = self.window((40000, 4000), (35000, 32000))
        self.assertEqual(v["window both progress"], "FAIL", out)
        self.assertIn("a job starved", out)


if __name__ == "__main__":
    benchtest.main()
