"""The Python settings parser against the Rust one, through the `zebra switch`
CLI (target/release/zebra or target/debug/zebra, or $ZEBRA_BIN): on files it
refuses, both must list the same problems, word for word. Every case carries
a `switch = nowhere` line so the CLI never starts a switch. Skipped when the
binary has not been built."""

import os
import subprocess
import tempfile
import unittest

from tests.common import REPO, data
from zebra_ctl.settings import Settings, SettingsError


def zebra_bin():
    for p in (os.environ.get("ZEBRA_BIN"), os.path.join(REPO, "target", "release", "zebra"),
              os.path.join(REPO, "target", "debug", "zebra")):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def rust_problems(path, flags=()):
    out = subprocess.run([zebra_bin(), "switch", "--config", path, *flags], capture_output=True, text=True, timeout=30)
    if out.returncode != 2:
        raise AssertionError(f"zebra switch exited {out.returncode}: {out.stdout}{out.stderr}")
    return [line[4:] for line in out.stderr.splitlines() if line.startswith("  - ")]


def python_problems(path, flags=()):
    try:
        s = Settings.load(path)
        for f in flags:
            key, value = f[2:].split("=", 1)
            s.set(key.replace("-", "_"), value)
        s.build()
    except SettingsError as e:
        return e.problems
    raise AssertionError("the Python parser accepted it")


CASES = [
    "workers = +5\nhot_key_count = 3\n",
    "workers = 5_0\nhot_key_count = 3\n",
    "workers = 2\nhot_key_count = 3\nround_timeout_ms = .5\naggregate_rto_ms = 1e3\nworker_rto_ms = 0.0004\n",
    'workers = "4"\nhot_key_count = "0"\nnumber = fixed:+7\nlayout = random:18446744073709551616\n',
    "workers = 2\nhot_key_count = 40000\n",
    "workers = 2\nhot_keys = missing.keys\n",
    "workers = 2\nhot_key_count = 3\nservers = 2\nserver_addr = 2=1.2.3.4:5\nserver_addr = 0 = 1.2.3.4:99999\n",
    "workers = 2\nhot_key_count = 3\nloss = drop=0.1,dup=2\ndense_ranks = 4\n",
    "workers = 2\nhot_key_count = 3\nmax_seqs = 65536\nworker_max_in_flight = 1048577\npacking = Strict\n",
    "workers = 2\nhot_key_count = 3\nslots = 40000\n",
    "workers = 2\nworkers = 3\n\"quoted key\" = 1\nhot_key_count\n",
    "workers = 2\nonline_tau = 1.5\nonline_rounds = 0\nonline_wait_ms = 0\nonline_out =\nonline_capacity = 0\n",
    "workers = 2\nonline_tau = NaN\nonline_capacity = 3000000000\n",
    "workers = 2\nonline_tau = 1_0\n",
]


@unittest.skipIf(zebra_bin() is None, "the zebra binary is not built (cargo build -p zebra-cli)")
class SameProblemsAsZebraSwitch(unittest.TestCase):
    def test_example_files(self):
        for name, flags in [("bad.conf", ["--slots=-1"]), ("syntax.conf", [])]:
            path = data(name)
            self.assertEqual(python_problems(path, flags), rust_problems(path, flags), name)

    def test_tricky_values(self):
        tmp = tempfile.mkdtemp()
        try:
            for i, body in enumerate(CASES):
                path = os.path.join(tmp, f"case{i}.conf")
                with open(path, "w", encoding="utf-8") as f:
                    f.write("switch = nowhere\n" + body)
                self.assertEqual(python_problems(path), rust_problems(path), body)
        finally:
            for f in os.listdir(tmp):
                os.remove(os.path.join(tmp, f))
            os.rmdir(tmp)


if __name__ == "__main__":
    unittest.main()
