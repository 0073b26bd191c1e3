"""The controller's settings, read through `zebra switch --plan`: the objects
it builds from the binary's JSON, `--set` as flags, a job key's token in the
server directory, the binary's refusals reaching the user unchanged, and the
binary looked for where the docs say. The settings' rules themselves are the
binary's and tested there (rust/zebra-config/src/settings.rs,
rust/zebra-cli/tests/switch_plan.rs)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests.common import ZEBRA, data, hotpath
from zebra_ctl.cpu import ServerDirectory
from zebra_ctl.plan import PlanError, plan_job
from zebra_ctl.ports import PortsConfig
from zebra_ctl.settings import SettingsError, find_zebra, flag, load

CONTROLLER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ctl(*args, env=None):
    """python3 -m zebra_ctl ARGS, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "zebra_ctl", *args], cwd=CONTROLLER, capture_output=True,
                          text=True, timeout=60, env=env)


class FromThePlan(unittest.TestCase):
    def test_hot_conf_from_the_docs(self):
        c = hotpath(data("hot.conf"))
        self.assertEqual((c.switch.host, c.switch.port), ("10.0.0.250", 9950))
        self.assertEqual(
            [(j.id, j.workers, j.servers, j.hot_keys) for j in c.proto.jobs],
            [(1, 8, 1, 6)],
            "small keys belong to server 0 of 2: one job, server 1 owns no hot key",
        )
        self.assertEqual(c.hot_keys, {"keys": 6, "values": 6})
        self.assertEqual(c.proto.round_timeout_us, 20_000)

    def test_file_then_flags(self):
        c = hotpath(data("full.conf"), workers=6, server_addr="1=127.0.0.1:9003", switch="127.0.0.1:9950")
        p = c.proto
        self.assertEqual((c.switch.host, c.switch.port), ("127.0.0.1", 9950))
        self.assertEqual((p.registers, p.slots, p.copies, p.packet_size, p.max_seqs), (8, 64, 3, 96, 100))
        self.assertEqual(p.packing, "fill")
        self.assertEqual((p.round_timeout_us, p.aggregate_rto_us, p.worker_rto_us, p.uncertain_timeout_us),
                         (500, 3000, 4000, 60000))
        self.assertEqual(
            (p.aggregate_max_retries, p.worker_max_retries, p.worker_max_in_flight, p.server_history), (7, 5, 9, 10)
        )
        self.assertEqual(
            [(j.id, j.workers, j.servers, j.hot_keys) for j in p.jobs],
            [(3, 6, 1, 1), (4, 6, 1, 1)],
            "one job per PS-lite server that owns a hot key, as zebra switch makes them",
        )
        for j in p.jobs:
            self.assertEqual((j.number, j.frac_bits), ("fixed", 12))
            self.assertEqual((j.layout, j.layout_seed), ("random", 42))
            self.assertEqual((j.dense_ranks, j.token), (1, 0))
        self.assertTrue(c.job_per_server)
        self.assertEqual(
            {s: (a.job, a.index, a.addr.port) for s, a in c.server_addrs.items()},
            {0: (3, 0, 9001), 1: (4, 0, 9003)},
            "each pinned PS-lite server as a member of its own job; the flag replaced the file's",
        )
        self.assertEqual(c.loss["drop_ppm"], 10_000)

    def test_set_is_the_flag_of_the_key(self):
        self.assertEqual(flag("round_timeout_ms=20"), "--round-timeout-ms=20")
        self.assertEqual(flag("switch=10.0.0.1:1"), "--listen=10.0.0.1:1")
        self.assertEqual(flag("server_addr=1=10.0.0.2:9"), "--server-addr=1=10.0.0.2:9")
        self.assertEqual(flag("slots=-1"), "--slots=-1", "a value may start with -")
        with self.assertRaises(SettingsError):
            flag("workers")

    def test_a_switch_that_admits_jobs_is_refused_by_the_plan(self):
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "admit.conf")
            with open(path, "w") as f:
                f.write('switch = "10.0.0.250:9950"\nnumber = "fixed:16"\n')
            c = load(path)
            self.assertEqual((c.proto.jobs, c.admit.number), ([], "fixed"))
            with self.assertRaises(PlanError) as cm:
                plan_job(c, PortsConfig.load(data("ports.conf")))
            self.assertIn("the switch then admits jobs as their servers register", str(cm.exception))
        finally:
            shutil.rmtree(tmp)


class JobKey(unittest.TestCase):
    """A key file gives every job its token (derived by the binary); the
    server directory then requires it from a server's first REGISTER."""

    def test_the_token_comes_from_the_key(self):
        tmp = tempfile.mkdtemp()
        try:
            key = os.path.join(tmp, "job.key")
            with open(key, "w") as f:
                f.write("s3cret\n")
            os.chmod(key, 0o600)
            c = hotpath(data("tofino.conf"), job_key_file=key)
            token = c.job.token
            self.assertTrue(c.keyed)
            self.assertNotEqual(token, 0)
            self.assertEqual(hotpath(data("tofino.conf"), job_key_file=key).job.token, token, "derived, not drawn")
            from zebra_ctl.backend import FakeBackend
            from zebra_ctl.controller import Controller
            from zebra_ctl import program as P

            ctl_ = Controller(FakeBackend(P.REGISTER_SIZES))
            ctl_.load(c, PortsConfig.load(data("ports.conf")))
            d = ctl_.servers[7]
            self.assertEqual((d.token, d.keyed), (token, True))
            self.assertIsNone(d.on_register(7, 0, 1, 2, 3, token=0), "no token, no slot")
            self.assertEqual(d.refused_token, 1)
            self.assertIsNotNone(d.on_register(7, 0, 1, 2, 3, token=token))
            self.assertIsNone(d.on_register(7, 0, 1, 2, 3, token=token ^ 1), "a wrong token afterwards")
            os.chmod(key, 0o644)
            with self.assertRaises(SettingsError) as cm:
                hotpath(data("tofino.conf"), job_key_file=key)
            self.assertIn("readable by every user", cm.exception.message)
        finally:
            shutil.rmtree(tmp)

    def test_without_a_key_the_directory_draws_one(self):
        d = ServerDirectory(7, 2)
        self.assertFalse(d.keyed)
        self.assertIsNotNone(d.on_register(7, 0, 1, 2, 3, token=0), "its address is its proof")


class TheBinarysWords(unittest.TestCase):
    def test_a_bad_setting_is_the_binarys_message_and_exit_2(self):
        out = ctl("--config", data("bad.conf"), "--ports", data("ports.conf"), "--dry-run", "--set", "slots=-1")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertEqual(out.stdout, "")
        run = subprocess.run([ZEBRA, "switch", "--config", data("bad.conf"), "--slots=-1"], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertEqual(out.stderr, run.stderr, "word for word what zebra switch says")
        for want in [
            "zebra switch: invalid hot-path configuration:",
            'bad.conf:2: workers = 65: expected an integer in 1..=64',
            '--slots "-1": expected an integer in 1..=65536',
        ]:
            self.assertIn(want, out.stderr)
        out = ctl("--config", data("tofino.conf"), "--ports", data("ports.conf"), "--dry-run", "--set", "nope=1")
        self.assertEqual(out.returncode, 2)
        self.assertIn("--nope", out.stderr, "an unknown key is the flag zebra switch does not know")

    def test_a_good_file_loads(self):
        out = ctl("--config", data("tofino.conf"), "--ports", data("ports.conf"), "--dry-run",
                  "--set", "round_timeout_ms=10")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("job 7: 4 workers, 2 servers, 1000 hot keys", out.stdout)

    def test_no_binary_is_a_clear_error(self):
        env = dict(os.environ, PATH="/nonexistent")
        env.pop("ZEBRA_BIN", None)
        out = ctl("--config", data("tofino.conf"), "--ports", data("ports.conf"), "--dry-run",
                  "--zebra", "/nonexistent/zebra", env=env)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--zebra /nonexistent/zebra: not an executable file", out.stderr)
        env["ZEBRA_BIN"] = "/nonexistent/zebra"
        out = ctl("--config", data("tofino.conf"), "--ports", data("ports.conf"), "--dry-run", env=env)
        self.assertEqual(out.returncode, 2)
        self.assertIn("ZEBRA_BIN=/nonexistent/zebra: not an executable file", out.stderr)

    def test_the_binary_is_found_where_the_docs_say(self):
        self.assertEqual(find_zebra(ZEBRA), ZEBRA, "--zebra first")
        old = os.environ.copy()
        try:
            os.environ["ZEBRA_BIN"] = ZEBRA
            self.assertEqual(find_zebra(), ZEBRA, "then $ZEBRA_BIN")
            del os.environ["ZEBRA_BIN"]
            os.environ["PATH"] = "/nonexistent"
            from zebra_ctl import settings

            self.assertEqual(find_zebra(), settings._BUILT, "then the repository's build")
            self.assertEqual(os.path.relpath(settings._BUILT, CONTROLLER), os.path.join("..", "..", "target", "release", "zebra"))
            built, settings._BUILT = settings._BUILT, "/nonexistent/target/release/zebra"
            try:
                with self.assertRaises(SettingsError) as cm:
                    find_zebra()
            finally:
                settings._BUILT = built
            for named in ["--zebra PATH", "ZEBRA_BIN", "PATH", "/nonexistent/target/release/zebra"]:
                self.assertIn(named, cm.exception.message)
        finally:
            os.environ.clear()
            os.environ.update(old)


if __name__ == "__main__":
    unittest.main()
