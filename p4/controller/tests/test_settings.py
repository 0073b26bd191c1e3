"""The settings parser on the same example files and cases as
rust/zebra-hotpath/src/settings.rs and docs/HOTPATH.md."""

import os
import shutil
import tempfile
import unittest

from tests.common import REPO, data
from zebra_ctl import consts
from zebra_ctl.config import Config, JobConfig
from zebra_ctl.hotkeys import HotKeys, HotKeysError, pslite_owners, pslite_server_ranges
from zebra_ctl.settings import KNOBS, Settings, SettingsError, knob_by_key


class DocsExample(unittest.TestCase):
    def test_hot_conf_from_the_docs(self):
        c = Settings.load(data("hot.conf")).build()
        self.assertEqual((c.switch.host, c.switch.port), ("10.0.0.250", 9950))
        self.assertEqual(
            [(j.id, j.workers, j.servers, j.hot_keys) for j in c.proto.jobs],
            [(1, 8, 1, 6)],
            "small keys belong to server 0 of 2: one job, server 1 owns no hot key",
        )
        self.assertEqual(c.hot_keys.keys, [70000, 12, 100, 101, 102, 103])
        self.assertEqual(c.proto.round_timeout_us, 20_000)

    def test_docs_list_every_knob(self):
        with open(os.path.join(REPO, "docs", "HOTPATH.md"), encoding="utf-8") as f:
            doc = f.read()
        for k in KNOBS:
            self.assertIn(f"| `{k.key}` | `--{k.flag}` |", doc)

    def test_defaults_are_the_protocol_defaults(self):
        s = Settings()
        s.set("workers", "4")
        s.set("hot_key_count", "1000")
        c = s.build()
        want = Config([JobConfig(1, 4, 1000, 1)])
        self.assertEqual(c.proto, want)
        self.assertIsNone(c.switch)
        self.assertIsNone(c.loss)
        self.assertIsNone(c.hot_keys)
        for key, value in [
            ("registers", str(want.registers)), ("slots", str(want.slots)), ("copies", str(want.copies)),
            ("packet_size", str(want.packet_size)), ("max_seqs", str(want.max_seqs)),
            ("round_timeout_ms", "50"), ("aggregate_rto_ms", "2"), ("aggregate_max_retries", "50"),
            ("worker_rto_ms", "2"), ("worker_max_retries", "10"), ("worker_max_in_flight", "256"),
            ("uncertain_timeout_ms", "5000"), ("server_history", "4096"), ("job", "1"), ("servers", "1"),
            ("packing", "strict"), ("number", "f32"), ("layout", "heat"), ("dense_ranks", "0"),
        ]:
            self.assertEqual(knob_by_key(key).default, value, key)


class FullFile(unittest.TestCase):
    def test_file_then_flags(self):
        s = Settings.load(data("full.conf"))
        s.set("workers", "6")
        s.set("server_addr", "1=127.0.0.1:9003")
        c = s.build()
        p = c.proto
        self.assertEqual((c.switch.host, c.switch.port), ("127.0.0.1", 9950))
        self.assertEqual((p.registers, p.slots, p.copies, p.packet_size, p.max_seqs), (8, 64, 3, 96, 100))
        self.assertEqual(p.packing, "fill")
        self.assertEqual(p.round_timeout_us, 500)
        self.assertEqual((p.aggregate_rto_us, p.worker_rto_us, p.uncertain_timeout_us), (3000, 4000, 60000))
        self.assertEqual(
            (p.aggregate_max_retries, p.worker_max_retries, p.worker_max_in_flight, p.server_history), (7, 5, 9, 10)
        )
        self.assertEqual(
            [(j.id, j.workers, j.servers, j.hot_keys) for j in p.jobs],
            [(3, 6, 1, 1), (4, 6, 1, 1)],
            "one job per PS-lite server that owns a hot key (PS-lite key ranges), as zebra switch",
        )
        for j in p.jobs:
            self.assertEqual((j.number, j.frac_bits), ("fixed", 12))
            self.assertEqual((j.layout, j.layout_seed), ("random", 42))
            self.assertEqual(j.dense_ranks, 1)
        self.assertEqual((c.server_member(1), c.job_base), ((4, 0), 3))
        self.assertEqual(c.hot_keys.rank(7), 0)
        self.assertEqual([a.port for a in c.server_addrs.values()], [9001, 9003])
        self.assertEqual(c.loss.drop_ppm, 10_000)

    def test_a_key_takes_a_hot_index_per_value(self):
        """As the shim's hot set (zebra-agent HotSet) numbers them: a key with L
        values takes L hot indices; online_capacity pads each server's share."""
        tmp = tempfile.mkdtemp()
        try:
            with open(os.path.join(tmp, "v.keys"), "w") as f:
                f.write("7 32\n8\n9-10 4\n")
            c = Settings.parse("workers = 2\nhot_keys = v.keys\n", os.path.join(tmp, "v.conf")).build()
            self.assertEqual([(j.id, j.hot_keys, j.servers) for j in c.proto.jobs], [(1, 41, 1)])
            c = Settings.parse("workers = 2\nhot_keys = v.keys\nonline_capacity = 50\n", os.path.join(tmp, "v.conf")).build()
            self.assertEqual(c.job.hot_keys, 50)
            with open(os.path.join(tmp, "big.keys"), "w") as f:
                f.write("1 4294967295\n")
            with self.assertRaises(SettingsError) as cm:
                Settings.parse("workers = 2\nhot_keys = big.keys\n", os.path.join(tmp, "v.conf")).build()
            self.assertEqual(
                cm.exception.problems,
                ["hot keys: server 0: 4294967295 hot values, a switch holds at most 2621440"],
                "zebra switch's words, checked before a rank is made",
            )
        finally:
            shutil.rmtree(tmp)

    def test_relative_hot_keys_follow_the_file(self):
        tmp = tempfile.mkdtemp()
        try:
            shutil.copy(data("hot.conf"), tmp)
            shutil.copy(data("hot.keys"), tmp)
            c = Settings.load(os.path.join(tmp, "hot.conf")).build()
            self.assertEqual(len(c.hot_keys), 6)
        finally:
            shutil.rmtree(tmp)

    def test_quotes_comments_crlf(self):
        text = 'workers = "3"   # quoted\r\n\r\n  hot_key_count=12\r\nnumber = "fixed:8"\r\n'
        c = Settings.parse(text, "/x/hot.conf").build()
        self.assertEqual((c.job.workers, c.job.hot_keys, c.job.frac_bits), (3, 12, 8))


class Errors(unittest.TestCase):
    def test_file_syntax_errors_name_the_line(self):
        with self.assertRaises(SettingsError) as cm:
            Settings.load(data("syntax.conf"))
        err = cm.exception
        path = data("syntax.conf")
        self.assertEqual(len(err.problems), 3, str(err))
        self.assertIn(f"{path}:2: workers is already set on line 1", str(err))
        self.assertIn(f'{path}:3: unknown key "foo" (known: switch, job,', str(err))
        self.assertIn(f"{path}:4: expected `key = value`", str(err))

    def test_every_bad_value_is_reported_with_its_origin(self):
        s = Settings.load(data("bad.conf"))
        s.set("slots", "-1")
        with self.assertRaises(SettingsError) as cm:
            s.build()
        err = cm.exception
        text = str(err)
        self.assertEqual(len(err.problems), 14, text)
        for want in [
            'bad.conf:1: switch = "nowhere": expected HOST:PORT',
            'bad.conf:2: workers = "65": expected an integer in 1..=64',
            'bad.conf:3: servers = "0": expected an integer in 1..=65535',
            'bad.conf:4: registers = "41": expected an integer in 1..=40',
            'bad.conf:5: copies = "9": expected an integer in 1..=4',
            'bad.conf:6: packet_size = "20": expected an integer in 64..=1472',
            'bad.conf:7: packing = "best": expected strict, fill or sequential',
            'bad.conf:8: round_timeout_ms = "0": expected milliseconds',
            'bad.conf:9: worker_rto_ms = "abc": expected milliseconds',
            'bad.conf:10: number = "fixed:31": expected f32 or fixed:BITS',
            'bad.conf:11: layout = "random:x": expected heat or random:SEED',
            'bad.conf:12: server_addr = "0": expected INDEX=HOST:PORT',
            'bad.conf:13: loss = "drop=2": expected a drop probability',
            '--slots: slots = "-1": expected an integer in 1..=65536',
        ]:
            self.assertIn(want, text)

    def test_missing_and_conflicting_settings(self):
        with self.assertRaises(SettingsError) as cm:
            Settings().build()
        self.assertEqual(len(cm.exception.problems), 1)
        self.assertIn("does not admit jobs", cm.exception.problems[0])
        s = Settings()
        s.set("hot_key_count", "5")
        with self.assertRaises(SettingsError) as cm:
            s.build()
        self.assertEqual(cm.exception.problems, ["workers: not set (--workers N, or `workers = N` in the file)"])
        s = Settings()
        s.set("workers", "2")
        s.set("servers", "2")
        built = s.build()
        self.assertEqual([(j.id, j.hot_keys) for j in built.proto.jobs], [(1, 32 * 512), (2, 32 * 512)],
                         "nothing sizes the jobs: each server's share of the switch, as zebra switch gives")

        s = Settings()
        for k, v in [("workers", "2"), ("hot_keys", "/nonexistent.keys"), ("hot_key_count", "5"),
                     ("server_addr", "3=127.0.0.1:1")]:
            s.set(k, v)
        with self.assertRaises(SettingsError) as cm:
            s.build()
        text = str(cm.exception)
        self.assertIn("not both", text)
        self.assertIn("--server-addr: server_addr names server 3, the job has 1 servers", text)

        s = Settings()
        s.set("workers", "2")
        s.set("hot_keys", "/nonexistent.keys")
        with self.assertRaises(SettingsError) as cm:
            s.build()
        self.assertIn("hot keys: /nonexistent.keys: ", str(cm.exception))

        s = Settings()
        s.set("workers", "2")
        s.set("hot_key_count", "40000")
        with self.assertRaises(SettingsError) as cm:
            s.build()
        self.assertIn(
            "do not fit together: jobs need 1250 slots per register, the switch has 1024", str(cm.exception)
        )
        with self.assertRaises(SettingsError):
            Settings().set("nope", "1")

    def test_numbers_as_rust_reads_them(self):
        for value, ok in [("+5", True), ("5 ", True), ("0x5", False), ("5_0", False), ("", False), ("-0", False)]:
            s = Settings()
            s.set("workers", value)
            s.set("hot_key_count", "1")
            if ok:
                self.assertEqual(s.build().job.workers, 5, value)
            else:
                with self.assertRaises(SettingsError, msg=value):
                    s.build()
        for value, us in [("0.5", 500), (".5", 500), ("2", 2000), ("0.0004", None), ("1e3", 1_000_000), ("inf", None), ("nan", None), ("1_0", None)]:
            s = Settings()
            for k, v in [("workers", "1"), ("hot_key_count", "1"), ("round_timeout_ms", value)]:
                s.set(k, v)
            if us is None:
                with self.assertRaises(SettingsError, msg=value):
                    s.build()
            else:
                self.assertEqual(s.build().proto.round_timeout_us, us, value)

    def test_config_errors_have_the_rust_texts(self):
        c = Config([JobConfig(1, 4, 1000, 2)])
        c.validate()
        self.assertEqual((c.pairs_per_packet(), c.dense_values_per_packet(), c.aggregate_run_bytes_per_packet(), c.aggregate_values_per_packet_worst()), (21, 32, 1432, 143))
        self.assertEqual((c.region_slots(c.jobs[0]), c.cover_words()), (32, 128))
        cases = [
            (lambda c: setattr(c, "registers", 41), "registers = 41: expected 1..=40"),
            (lambda c: setattr(c, "copies", 0), "copies = 0: expected 1..=4"),
            (lambda c: setattr(c, "slots", 40000), "slots = 40000 with 2 copies: expected 1 ..= 65536 entries per register"),
            (lambda c: setattr(c, "packet_size", 20), "packet_size = 20: expected 64..=1472 bytes"),
            (lambda c: c.jobs.append(JobConfig(1, 2, 10, 1)), "job id 1 configured twice"),
            (lambda c: setattr(c.jobs[0], "owners", [0, 0, 0]), "job 1: owner table has 3 entries for 1000 hot keys"),
            (lambda c: setattr(c.jobs[0], "dense_ranks", 1001), "job 1: dense_ranks exceeds hot_keys"),
        ]
        for mutate, want in cases:
            c = Config([JobConfig(1, 4, 1000, 2)])
            mutate(c)
            with self.assertRaises(Exception) as cm:
                c.validate()
            self.assertEqual(str(cm.exception), want)


class HotKeysFile(unittest.TestCase):
    def test_keys_ranges_comments_in_rank_order(self):
        hk = HotKeys.parse("# header\n\n70000   # hottest\n 12\n100-103\n18446744073709551615\n5 - 6 # spaced range\n")
        self.assertEqual(hk.keys, [70000, 12, 100, 101, 102, 103, (1 << 64) - 1, 5, 6])
        self.assertEqual(hk.rank(101), 3)
        self.assertIsNone(hk.rank(7))
        self.assertEqual(HotKeys.parse("42-42").keys, [42])

    def test_every_error_names_its_line(self):
        for text, want in [
            ("1\nx\n", 'line 2: "x" is not a key'),
            ("1\n-3\n", 'line 2: "-3"'),
            ("1\n3-\n", 'line 2: "3-"'),
            ("+4\n", 'line 1: "+4"'),
            ("0x10\n", "line 1"),
            ("18446744073709551616\n", "line 1"),
            ("1-2-3\n", "line 1"),
            ("9-3\n", "line 1: range 9-3 ends before it starts"),
            ("5\n1-10\n", "line 2: key 5 is already hot rank 0 (line 1)"),
            ("0-18446744073709551615\n", "line 1: more than"),
            ("# nothing\n\n", "no hot key listed"),
        ]:
            with self.assertRaises(HotKeysError, msg=text) as cm:
                HotKeys.parse(text)
            self.assertIn(want, str(cm.exception))
        with self.assertRaises(HotKeysError) as cm:
            HotKeys.load("/nonexistent/hot.keys")
        self.assertTrue(str(cm.exception).startswith("/nonexistent/hot.keys: "))

    def test_owners_follow_pslite_key_ranges(self):
        u = (1 << 64) - 1
        r = pslite_server_ranges(3)
        self.assertEqual(r[0], (0, u // 3))
        self.assertEqual(r[2][1], u // 3 * 3)
        keys = [u // 3 * 2, 0, u // 3, u // 3 - 1]
        self.assertEqual(pslite_owners(keys, 3), [2, 0, 1, 0])
        self.assertEqual(pslite_owners(keys, 1), [0, 0, 0, 0])
        self.assertEqual(pslite_owners([u], 2), [1], "beyond the last range: last server")

    def test_limit_is_the_switch_capacity(self):
        self.assertEqual(consts.MAX_REGISTERS * consts.MAX_REGISTER_ENTRIES, 40 * 65536)


if __name__ == "__main__":
    unittest.main()
