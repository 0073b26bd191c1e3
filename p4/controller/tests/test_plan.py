"""Table entries and register values for a sample job (tests/data/tofino.conf
on tests/data/ports.conf), and the jobs the P4 program refuses."""

import unittest

from tests.common import data, hotpath
from zebra_ctl import consts
from zebra_ctl import program as P
from zebra_ctl.backend import FakeBackend
from zebra_ctl.controller import Controller
from zebra_ctl.plan import PlanError, plan_job
from zebra_ctl.ports import PortsConfig, PortsError


def sample(**overrides):
    return hotpath(data("tofino.conf"), **overrides)


def ports():
    return PortsConfig.load(data("ports.conf"))


class SampleJob(unittest.TestCase):
    def setUp(self):
        self.b = FakeBackend(P.REGISTER_SIZES)
        self.c = Controller(self.b)
        self.plan = self.c.load(sample(), ports())

    def test_geometry(self):
        p = self.plan
        self.assertEqual((p.region_slots, p.readout_rows, p.copies), (125, 125, 2), "1000 keys over 8 registers")
        self.assertEqual(p.rank_of(7, 124), 999)
        self.assertIsNone(p.rank_of(0, 125), "rank 1000 is beyond the job")

    def test_job_table(self):
        (key, action, d), = self.b.entries(P.JOBS)
        self.assertEqual(key, {"job_id": 7})
        self.assertEqual(action, "set_job")
        self.assertEqual(d, {
            "index": 0, "workers": 4, "hot_keys": 1000, "max_udp_len": 200, "max_seqs": 4096, "fixed": 1,
            "copy_mask": 1, "region_base": 0, "readout_rows": 125, "lns_profile": 0, "lns_saturate": 0,
            "servers": 2, "max_update_len": 8 + 1472, "keyed": 0, "far_bound": consts.DEFAULT_MAX_ROUND_AHEAD + 1,
        })

    def test_copies_and_workers(self):
        self.assertEqual(
            [(k["ig_md.copy"], d["offset"]) for k, _, d in self.b.entries(P.COPY_OFFSETS)], [(0, 0), (1, 1024)]
        )
        workers = self.b.entries(P.WORKERS)
        self.assertEqual(len(workers), 4 * 2)
        bases = {(k["hdr.hot.worker"], k["ig_md.copy"]): (d["rec_base"], d["cover_base"]) for k, _, d in workers}
        self.assertEqual(bases[(0, 0)], (0, 0))
        self.assertEqual(bases[(0, 1)], (4096, 128))
        self.assertEqual(bases[(3, 1)], (7 * 4096, 7 * 128))
        records = sorted(b[0] for b in bases.values())
        self.assertEqual(records, [i * 4096 for i in range(8)], "no two (worker, copy) share records")
        self.assertLessEqual(max(records) + 4096, consts.P4_RECORD_ENTRIES)

    def test_addresses_ports_sessions(self):
        (key, action, _), = self.b.entries(P.ADDRESSES)
        self.assertEqual(key, {"hdr.ipv4.dst_addr": (0x0A0000FA, 0xFFFFFFFF), "hdr.udp.dst_port": 9950})
        self.assertEqual([k["f1"] for k, _, _ in self.b.entries(P.UDP_PORTS)], [9950])
        self.assertEqual(sorted(k["f1"] for k, _, _ in self.b.entries(P.INTERNAL_PORTS)), [64, 68])
        self.assertEqual(self.b.defaults[P.PORTS], ("set_ports", {"cpu_port": 64, "recirc_port": 68}))
        self.assertEqual(self.b.defaults[P.SESSIONS], ("set_sessions", {"cpu_session": 1, "recirc_session": 2}))
        self.assertEqual(self.b.sessions, {1: (64, 0), 2: (68, 64)})
        self.assertEqual(
            [(k["hdr.ethernet.dst_addr"], d["port"]) for k, _, d in self.b.entries(P.L2)],
            [(0x0CC47A000001, 1), (0x0CC47A000002, 2)],
        )

    def test_popcounts(self):
        low, high = P.POPCOUNT
        entries = self.b.entries(low)
        self.assertEqual(len(entries), 256)
        for key, action, d in entries:
            self.assertEqual((action, d["n"]), ("count_low", bin(key["routed[7:0]"]).count("1")))
        left = {(k["routed[15:8]"], k["count"]): d["n"] for k, a, d in self.b.entries(high)}
        self.assertEqual(left[(0b1011, 5)], 2, "5 pairs, 3 routed to registers 8-15: 2 left for 0-7")
        self.assertNotIn((0xFF, 7), left, "more registers than pairs: no entry (the default, 255)")
        for (n, count), v in left.items():
            self.assertEqual(v + bin(n).count("1"), count)

    def test_round_state_starts_free(self):
        for c in range(consts.P4_MAX_COPIES):
            self.assertEqual(self.b.register_read(P.ROUNDS, c), {"lo": 0, "hi": consts.ROUND_FREE})

    def test_no_lns_entries_in_the_fixed_build(self):
        self.assertTrue(all(not self.b.entries(t) for t in P.LNS_TABLES))

    def test_reset_between_jobs(self):
        self.b.register_write(P.sums(3), 5, {"round": 9, "sum": 42})
        self.b.count(P.INGRESS_STATS, 2, 10)
        other = sample(job=9, workers=2)
        self.c.load(other, ports())
        (key, _, d), = self.b.entries(P.JOBS)
        self.assertEqual((key["job_id"], d["workers"]), (9, 2))
        self.assertEqual(len(self.b.entries(P.WORKERS)), 2 * 2)
        self.assertEqual(self.b.register_read(P.sums(3), 5), {}, "accumulators zeroed")
        self.assertEqual(self.c.counters()["ADDED"], (0, 0), "counters zeroed")
        self.c.reset()
        self.assertEqual(self.b.entries(P.JOBS), [])
        self.assertIsNone(self.c.plan)

    def test_counters_and_hits(self):
        self.b.count(P.INGRESS_STATS, 2, 5)
        self.b.count(P.INGRESS_STATS, consts.FALLBACK_BASE + 2, 3)
        self.b.count(P.EGRESS_STATS, 3, 4)
        c = self.c.counters()
        self.assertEqual(c["ADDED"], (5, 0))
        self.assertEqual(c["FALLBACK_WINDOW_FULL"], (3, 0))
        self.assertEqual(c["ACKS"], (0, 4))
        self.b.count(P.hits(5), 1, 2)            # register 5, row 1, copy 0: rank 13
        self.b.count(P.hits(5), 0, 2)            # register 5, row 0, copy 0: rank 5
        self.b.count(P.hits(5), 1024, 1)         # register 5, row 0, copy 1: rank 5
        self.b.count(P.hits(0), 125, 7)          # register 0, row 125: rank 1000, beyond the job
        hits = self.c.hot_key_hits()
        self.assertEqual(len(hits), 1000)
        self.assertEqual(hits[5], 3)
        self.assertEqual(hits[8 + 5], 2, "entry 1 of register 5 is row 1: rank 13")
        self.assertEqual(sum(hits), 5)


class LnsBuild(unittest.TestCase):
    def test_lns_job(self):
        b = FakeBackend(P.REGISTER_SIZES)
        plan = Controller(b).load(sample(number="f32"), ports(), build="lns", lns_frac_bits=24)
        (_, _, d), = b.entries(P.JOBS)
        self.assertEqual((d["fixed"], d["lns_saturate"]), (0, 158 - 24))
        hi, lo = b.entries(P.lns_hi(0)), b.entries(P.lns_lo(P.R - 1))
        self.assertEqual(len(hi), 33 * 128)
        self.assertEqual(len(lo), 32 * 16)
        self.assertEqual(plan.frac_bits(), 24)
        one = next(d["v"] for k, _, d in hi if k["exponent"] == 127 and k["value[22:16]"] == 0)
        self.assertEqual(one, 1 << 24, "1.0 is 2^24 at F = 24")


class Refusals(unittest.TestCase):
    def problems(self, hotpath, build="fixed", lns=None):
        with self.assertRaises(PlanError) as cm:
            plan_job(hotpath, ports(), build, lns)
        return "\n".join(cm.exception.problems)

    def test_each_p4_limit_is_named(self):
        cases = [
            ({"registers": 32}, "registers = 32: the P4 program has 8 register arrays"),
            ({"copies": 3}, "copies = 3: the P4 program takes 1, 2 or 4"),
            ({"copies": 4, "slots": 8192}, "the P4 registers have 16384 entries"),
            ({"packet_size": 256, "packing": "fill"}, "packet_size = 256 with packing = fill: a pass of the P4 program holds 8 pairs, so at most 91 bytes"),
            ({"layout": "random:1"}, "the P4 program places ranks by the heat layout only"),
            ({"number": "f32"}, "Tofino has no float adder"),
            ({"workers": 32, "max_seqs": 4096, "copies": 2}, "keeps 131072 records (RECORD_ENTRIES)"),
            ({"switch": "0.0.0.0:9950"}, "needs the switch's own IPv4 address"),
            ({"servers": 65}, "update acknowledgements to 64 servers a job (MAX_SERVERS)"),
            ({"hot_key_count": 32769, "slots": 8192}, "32769 hot keys in one job: the P4 program ranks at most 32768 a job"),
        ]
        for overrides, want in cases:
            self.assertIn(want, self.problems(sample(**overrides)), overrides)

    def test_all_problems_at_once(self):
        text = self.problems(sample(registers=32, copies=3, layout="random:2"))
        self.assertEqual(text.count("\n"), 2)

    def test_lns_build(self):
        self.assertIn("the ZEBRA_LNS build sums f32 values", self.problems(sample(), "lns", 20))
        self.assertIn("needs --lns-frac-bits", self.problems(sample(number="f32"), "lns", None))

    def test_ports_file_errors(self):
        with self.assertRaises(PortsError) as cm:
            PortsConfig.parse('cpu_port = 600\nroute = ["xx 1"]\nfoo = 1\ncpu_session = 1\nrecirc_session = 1\n', "p.conf")
        text = str(cm.exception)
        for want in ["p.conf:1: cpu_port", 'p.conf:2: route = "xx 1": expected "MAC PORT"', 'p.conf:3: unknown key "foo"',
                     "recirc_port is not set", "must differ"]:
            self.assertIn(want, text)
        with self.assertRaises(PortsError) as cm:
            PortsConfig.parse("cpu_port = 64\nswitch_mac = 02:00:00:00:00:fa\n", "p.conf")
        self.assertIn("p.conf: not TOML: ", str(cm.exception))
        self.assertIn("line 2", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
