#!/usr/bin/env python3
"""Tests of the soak (scripts/soak.py): its memory and descriptor checks on made-up samples
(no root), each passing a flat job and failing a leaking one; then, as root with the clients
built, a short soak of the issue's shape (8 workers, 2 servers, the switch, on the kernel's
network against the real libzmq) that must pass, and the same with every process of the
Zebra job leaking heap and sockets on purpose (--inject-leak), which must fail on every
check: heap and RSS of every PS-lite process and of the switch, descriptors and sockets.

Prints one line per test, "PASS name", "FAIL name (...)" or "SKIP name (...)", for
scripts/test.sh (parts `soak-checks`: the class Checks, and `soak`: ShortSoak).

  python3 tests/testbed/test_soak.py
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

from test_pslaunch import ROOT
from benchtest import main, needs

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import soak  # noqa: E402

MB = soak.MB


def samples(steps, rss_mb, heap_mb, fds=20, socks=8):
    """One sample per step: values linear in the step from the given (start, per-step) pairs,
    fds and sockets given per step (a list) or constant."""
    out = []
    for i, step in enumerate(steps):
        out.append({"t": i, "step": step, "rss": int((rss_mb[0] + rss_mb[1] * step) * MB),
                    "heap": int((heap_mb[0] + heap_mb[1] * step) * MB),
                    "fds": fds[i] if isinstance(fds, list) else fds,
                    "socks": socks[i] if isinstance(socks, list) else socks})
    return out


STEPS = list(range(0, 1001, 50))


class Checks(unittest.TestCase):
    """The pure checks, on jobs of 1000 steps, warm-up 100."""

    def reference(self, worker_rate=0.01):
        # libzmq's job: its workers grow 10 MB per 1000 steps (PS-lite's own growth).
        return {"scheduler": samples(STEPS, (10, 0), (1, 0)), "server-0": samples(STEPS, (20, 0.002), (5, 0.002)),
                "worker-0": samples(STEPS, (30, worker_rate), (6, worker_rate))}

    def soaked(self, worker=(30, 0.01), switch=(10, 0), fds=20, socks=8):
        return {"scheduler": samples(STEPS, (10, 0), (1, 0)), "server-0": samples(STEPS, (20, 0.002), (5, 0.002)),
                "worker-0": samples(STEPS, worker, worker), "switch": samples(STEPS, switch, switch, fds, socks)}

    def memory(self, soaked, reference=None, max_growth_mb=16, slack_mb=8):
        return soak.memory_problems(soaked, 100, reference or self.reference(), 100, max_growth_mb, slack_mb)[0]

    def test_a_job_growing_as_libzmq_passes(self):
        self.assertEqual(self.memory(self.soaked()), [])

    def test_a_worker_growing_faster_than_libzmq_fails_in_rss_and_heap(self):
        # 30 MB per 1000 steps against libzmq's 10: 18 MB more over 900 steps, beyond 8 MB.
        problems = self.memory(self.soaked(worker=(30, 0.03)))
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(all(p.startswith("worker-0's") for p in problems), problems)
        self.assertIn("rss", problems[0])
        self.assertIn("heap", problems[1])

    def test_a_tiny_slack_fails_what_the_default_passes(self):
        # 12 MB per 1000 steps against 10: 1.8 MB more, within 8 MB, beyond 1 MB.
        self.assertEqual(self.memory(self.soaked(worker=(30, 0.012))), [])
        self.assertEqual(len(self.memory(self.soaked(worker=(30, 0.012)), slack_mb=1)), 2)

    def test_growth_during_the_warm_up_is_not_counted(self):
        job = self.soaked()
        for s in job["worker-0"]:
            if s["step"] < 100:
                s["rss"] -= 50 * MB  # it grew 50 MB while warming up
        self.assertEqual(self.memory(job), [])

    def test_the_switch_is_judged_absolutely(self):
        self.assertEqual(self.memory(self.soaked(switch=(10, 0.015))), [])  # 13.5 MB after the warm-up
        problems = self.memory(self.soaked(switch=(10, 0.02)))  # 18 MB
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(all(p.startswith("the switch's") for p in problems), problems)

    def test_a_process_without_samples_after_the_warm_up_fails(self):
        job = self.soaked()
        job["worker-0"] = [s for s in job["worker-0"] if s["step"] < 150]
        self.assertTrue(any("fewer than two samples" in p for p in self.memory(job)))

    def test_a_role_missing_from_the_reference_fails(self):
        ref = self.reference()
        del ref["worker-0"]
        self.assertTrue(any("no reference" in p for p in self.memory(self.soaked(), ref)))

    def test_descriptors(self):
        flat = soak.fd_problems(self.soaked(), 100, 0)[0]
        self.assertEqual(flat, [])
        # More descriptors during the start and fewer at the end (teardown) are no leak.
        start = [30, 25] + [20] * (len(STEPS) - 3) + [12]
        self.assertEqual(soak.fd_problems(self.soaked(fds=start, socks=start), 100, 0)[0], [])
        # One more at the end than after the warm-up: a leak, unless the slack allows it.
        leak = [20] * (len(STEPS) - 1) + [21]
        problems = soak.fd_problems(self.soaked(fds=leak), 100, 0)[0]
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("switch held 21 file descriptors", problems[0])
        self.assertEqual(soak.fd_problems(self.soaked(fds=leak), 100, 1)[0], [])
        problems = soak.fd_problems(self.soaked(fds=leak, socks=[8] * (len(STEPS) - 1) + [9]), 100, 0)[0]
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("sockets", problems[1])


SHORT = ["--net", "kernel", "--workers", "8", "--batch", "512", "--epochs", "2", "--eval-every", "4",
         "--sample-s", "1", "--subnet", "10.95.0.0/24", "--timeout", "300"]


def run_soak(extra):
    out = tempfile.mkdtemp(prefix="soak-test.")
    res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "soak.py")] + SHORT + extra + ["--out", out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    return res.returncode, res.stdout


@needs(".build/byteps-pslite/tests/mf_train", ".build/data/ml-100k.inter", "dist/lib/libzmq.so.5",
       "target/release/zebra")
class ShortSoak(unittest.TestCase):
    def test_eight_workers_against_libzmq(self):
        code, out = run_soak([])
        self.assertEqual(code, 0, out[-3000:])
        self.assertIn("the switch completed", out)
        # Every process was sampled: the scheduler, 2 servers, 8 workers and the switch.
        self.assertEqual(len(re.findall(r"^soak:   descriptors: ", out, re.M)), 12, out[-3000:])
        print(out.strip().splitlines()[-1], file=sys.stderr)

    def test_a_leaking_job_fails_every_check(self):
        code, out = run_soak(["--inject-leak"])
        self.assertEqual(code, 1, out[-3000:])
        fails = re.findall(r"^soak: FAIL (.*)$", out, re.M)
        for name in ["scheduler", "server-0", "server-1"] + [f"worker-{i}" for i in range(8)]:
            for key in ("rss", "heap"):
                self.assertTrue(any(f.startswith(f"{name}'s {key} grew") for f in fails), f"{name} {key}: {fails}")
        for name in ["scheduler", "server-0", "server-1", "switch"] + [f"worker-{i}" for i in range(8)]:
            for what in ("file descriptors", "sockets"):
                self.assertTrue(any(f.startswith(f"{name} held") and what in f for f in fails), f"{name} {what}")
        self.assertTrue(any(f.startswith("the switch's rss grew") for f in fails), fails)
        self.assertTrue(any(f.startswith("the switch's heap grew") for f in fails), fails)


if __name__ == "__main__":
    main()
