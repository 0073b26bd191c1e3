#!/usr/bin/env python3
"""Tests of scripts/pslaunch.py's emulated testbed (--net netns).

Each test checks what the testbed promises: the job runs with one namespace per node,
the servers' link is shaped, and nothing the run created (namespaces, processes) is left
behind after success, failure, Ctrl-C, or SIGKILL of the launcher (the next run removes
the leftovers). Without root every test is skipped with the reason, except the fallback
test, which runs as an unprivileged user when root can switch to one.

Prints one line per test, "PASS name", "FAIL name (...)" or "SKIP name (reason)", for
scripts/test.sh; exits non-zero when a test failed.

  python3 tests/testbed/test_pslaunch.py [-k PATTERN]
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCHER = os.path.join(ROOT, "scripts", "pslaunch.py")
EXACT_SUMS = os.path.join(ROOT, ".build", "byteps-pslite", "tests", "exact_sums")
IS_ROOT = os.geteuid() == 0


def namespaces_of(pid):
    out = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if re.match(rf"psl{pid}-", line)]


def sleepers(marker):
    """Pids of `sleep MARKER` processes (MARKER: a duration unique to the test)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if comm == "sleep" and marker.encode() in argv:
            found.append(int(entry))
    return found


def launch(args, **kw):
    return subprocess.Popen([sys.executable, LAUNCHER] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kw)


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@unittest.skipUnless(IS_ROOT, "netns mode needs root")
class NetnsTestbed(unittest.TestCase):
    def setUp(self):
        self.logdir = tempfile.mkdtemp(prefix="pslaunch-test.")
        self.launched = []

    def tearDown(self):
        for p in self.launched:  # a failed test must not leave its launcher running
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)

    def netns(self, servers, workers, *args):
        """Starts the launcher on a netns testbed; ARGS: more options, then `--` and the command."""
        p = launch(["--net", "netns", "--servers", str(servers), "--workers", str(workers), "--timeout", "60",
                    "--logdir", self.logdir] + list(args))
        self.launched.append(p)
        return p

    def finish(self, p, code):
        """Waits for the launcher; checks its exit code; returns its output."""
        out, _ = p.communicate(timeout=120)
        self.assertEqual(p.returncode, code, out)
        return out

    def start_sleepers(self, servers, workers, marker, count, *args):
        """A job of `sleep MARKER` nodes (and services in ARGS), once COUNT sleepers run."""
        p = self.netns(servers, workers, *args, "--", "sleep", marker)
        self.assertTrue(wait_for(lambda: len(sleepers(marker)) == count, 30), "the job did not start")
        return p

    def assertNothingLeft(self, pid, marker=None):
        self.assertEqual(namespaces_of(pid), [], "namespaces left behind")
        if marker:
            self.assertEqual(sleepers(marker), [], "processes left behind")

    @unittest.skipUnless(os.access(EXACT_SUMS, os.X_OK), "exact_sums not built (scripts/build-pslite.sh)")
    def test_exact_sums_2_servers_2_workers(self):
        p = self.netns(2, 2, "--server-rate", "500mbit", "--", EXACT_SUMS)
        self.assertIn("on netns", self.finish(p, 0))
        with open(os.path.join(self.logdir, "pslaunch.json")) as f:
            report = json.load(f)
        self.assertEqual(report["net"], "netns")
        addresses = {n["address"] for n in report["nodes"].values()}
        self.assertEqual(len(addresses), 5, "one address per node")
        for name in ("worker-0", "worker-1"):
            with open(os.path.join(self.logdir, f"{name}.log")) as f:
                self.assertRegex(f.read(), r"exact_sums: OK checked [1-9][0-9]* values")
        for name in ("server-0", "server-1"):
            self.assertGreater(report["nodes"][name]["net"]["rx_bytes"], 1000, f"{name} received nothing")
            self.assertEqual(report["nodes"][name]["exit"], 0)
        self.assertNothingLeft(p.pid)

    def test_user_stack_settings_per_node(self):
        """--user-stack: no kernel address on a node's veth, and each process's ZEBRA_NET,
        ZEBRA_IP (its node's address) and, for DPDK, EAL arguments of its own."""
        show = "ip -4 -o addr show dev eth0; env | grep '^ZEBRA_' | sort"
        for stack in ("raw", "dpdk"):
            with self.subTest(stack=stack):
                p = self.netns(1, 1, "--user-stack", stack, "--", "sh", "-c", show)
                self.finish(p, 0)
                with open(os.path.join(self.logdir, "pslaunch.json")) as f:
                    nodes = json.load(f)["nodes"]
                prefixes = set()
                for name, node in nodes.items():
                    with open(os.path.join(self.logdir, f"{name}.log")) as f:
                        text = f.read()
                    self.assertNotIn(" inet ", text, f"{name}: eth0 has a kernel address")
                    self.assertIn(f"ZEBRA_IP={node['address']}/24", text)
                    if stack == "raw":
                        self.assertIn("ZEBRA_NET=raw:eth0", text)
                    else:
                        self.assertIn("ZEBRA_NET=dpdk", text)
                        args = re.search(r"^ZEBRA_DPDK_ARGS=(.*)$", text, re.M).group(1)
                        self.assertIn("iface=eth0", args)
                        prefixes.add(re.search(r"--file-prefix=(\S+)", args).group(1))
                if stack == "dpdk":
                    self.assertEqual(len(prefixes), len(nodes), "one EAL file prefix per process")
                self.assertNothingLeft(p.pid)

    def transfer(self, size, receiver, *shaping):
        """Seconds the RECEIVER (server-0 or worker-0) took to get SIZE bytes from the other
        over TCP on a 1-server, 1-worker testbed with SHAPING options."""
        sender = "worker-0" if receiver == "server-0" else "server-0"
        prog = (
            "import os, socket, sys, time\n"
            "name, size = os.environ['PSLAUNCH_NAME'], int(sys.argv[1])\n"
            "addr = (os.environ['SINK_HOST'], int(os.environ['SINK_PORT']))\n"
            f"if name == {receiver!r}:\n"
            "    s = socket.create_server(addr)\n"
            "    c, _ = s.accept(); got = 0; t0 = None\n"
            "    while got < size:\n"
            "        b = c.recv(65536)\n"
            "        if not b: break\n"
            "        t0 = t0 or time.monotonic(); got += len(b)\n"
            "    print(f'received {got} bytes in {time.monotonic() - t0:.3f} s')\n"
            f"elif name == {sender!r}:\n"
            "    for _ in range(100):\n"
            "        try:\n"
            "            c = socket.create_connection(addr); break\n"
            "        except OSError: time.sleep(0.1)\n"
            "    c.sendall(b'x' * size); c.close()\n"
        )
        p = self.netns(1, 1, *shaping, "--env", f"SINK_HOST={{ip:{receiver}}}", "--env",
                       "SINK_PORT={port:sink}", "--", sys.executable, "-c", prog, str(size))
        self.finish(p, 0)
        with open(os.path.join(self.logdir, f"{receiver}.log")) as f:
            m = re.search(r"received (\d+) bytes in ([0-9.]+) s", f.read())
        self.assertIsNotNone(m, f"{receiver} did not report the transfer")
        self.assertEqual(int(m.group(1)), size)
        self.assertNothingLeft(p.pid)
        return float(m.group(2))

    def test_server_link_rate_is_the_bottleneck(self):
        # worker-0 sends 2.5 MB to server-0; the server's link is 20 Mbit/s, so the
        # transfer takes at least 1 s (and well under 1 s on an unshaped veth).
        size = 2_500_000
        took = self.transfer(size, "server-0", "--server-rate", "20mbit")
        self.assertGreater(took, 0.8 * size * 8 / 20e6, "the 20mbit limit did not hold")

    def test_server_ingress_rate_shapes_only_what_servers_receive(self):
        size = 2_500_000
        limit = 0.8 * size * 8 / 20e6
        took = self.transfer(size, "server-0", "--server-ingress-rate", "20mbit")
        self.assertGreater(took, limit, "what the server receives is limited")
        took = self.transfer(size, "worker-0", "--server-ingress-rate", "20mbit")
        self.assertLess(took, limit, "what the server sends is not")

    def test_failure_tears_down(self):
        marker = f"{os.getpid()}.25"
        prog = f'[ "$PSLAUNCH_NAME" = worker-1 ] && exit 3; exec sleep {marker}'
        p = self.netns(1, 2, "--", "sh", "-c", prog)
        self.assertIn("FAIL worker-1 exited with code 3", self.finish(p, 1))
        self.assertNothingLeft(p.pid, marker)

    def test_ctrl_c_tears_down(self):
        marker = f"{os.getpid()}.5"
        p = self.start_sleepers(1, 2, marker, 5, "--service", f"idle=sleep {marker}")  # 4 nodes, 1 service
        self.assertEqual(len(namespaces_of(p.pid)), 6)  # and the bridge's
        p.send_signal(signal.SIGINT)
        self.assertIn("interrupted", self.finish(p, 130))
        self.assertNothingLeft(p.pid, marker)

    def test_service_failure_fails_the_job(self):
        p = self.netns(1, 1, "--service", "broken=sh -c 'exit 7'", "--", "sleep", "30")
        self.assertIn("broken service exited early with code 7", self.finish(p, 1))
        self.assertNothingLeft(p.pid)

    def test_sigkill_leftovers_removed_by_next_run(self):
        marker = f"{os.getpid()}.75"
        p = self.start_sleepers(1, 1, marker, 3)
        p.kill()
        p.wait()
        self.assertEqual(len(namespaces_of(p.pid)), 4, "SIGKILL cannot tear down: leftovers expected")
        for pid in sleepers(marker):
            os.kill(pid, signal.SIGKILL)
        q = self.netns(1, 1, "--", "true")
        self.assertIn("removed stale namespace", self.finish(q, 0))
        self.assertEqual(namespaces_of(p.pid), [])


class Fallback(unittest.TestCase):
    @unittest.skipUnless(IS_ROOT, "needs root to run the launcher as an unprivileged user")
    def test_without_root_falls_back_to_loopback(self):
        logdir = tempfile.mkdtemp(prefix="pslaunch-test.")
        os.chmod(logdir, 0o777)
        python = "/usr/bin/python3"  # root's interpreter may sit in a directory others cannot enter
        probe = subprocess.run([python, "-c", f"open({LAUNCHER!r}).close()"], user=65534, group=65534,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode != 0:
            self.skipTest(f"user 65534 cannot run {python} {LAUNCHER}")
        p = subprocess.Popen([python, LAUNCHER, "--net", "netns", "--servers", "1", "--workers", "1",
                              "--logdir", logdir, "--", "true"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, user=65534, group=65534, cwd="/")
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("falling back to loopback", out)
        self.assertIn("on loopback", out)


class Watch(unittest.TestCase):
    def test_every_process_found_failed_at_once_is_named(self):
        sys.path.insert(0, os.path.dirname(LAUNCHER))
        import pslaunch

        job = pslaunch.Job(pslaunch.parse_args(["--logdir", tempfile.mkdtemp(prefix="pslaunch-test."), "--", "true"]),
                           pslaunch.Loopback())

        class Proc:
            def __init__(self, code):
                self.code = code

            def poll(self):
                return self.code

        job.procs = [("scheduler", Proc(None), "s.log", False), ("server-0", Proc(-signal.SIGABRT), "a.log", False),
                     ("worker-0", Proc(0), "w0.log", False), ("worker-1", Proc(-signal.SIGKILL), "w1.log", False)]
        self.assertEqual(job.watch(time.monotonic() + 5), (
            "server-0", "exited with signal SIGABRT (also: worker-1 exited with signal SIGKILL)", "a.log"))


class LineResult(unittest.TextTestResult):
    """PASS/FAIL/SKIP lines, as scripts/test.sh counts them."""

    def addSuccess(self, test):
        super().addSuccess(test)
        print(f"PASS testbed {test._testMethodName}", flush=True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        print(f"FAIL testbed {test._testMethodName} ({err[1]})", flush=True)

    def addError(self, test, err):
        super().addError(test, err)
        print(f"FAIL testbed {test._testMethodName} (error: {err[1]})", flush=True)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        print(f"SKIP testbed {test._testMethodName} ({reason})", flush=True)


if __name__ == "__main__":
    runner = unittest.TextTestRunner(resultclass=LineResult, verbosity=0, stream=sys.stderr)
    sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
