"""Jobs admitted, sized and removed as their servers register (issue 20,
item 5), over a FakeBackend: the decision is the binary's (`zebra switch
--admit`, the software switch's rule); the controller installs what it
grants, answers the REGISTER, and retires a job whose server falls silent."""

import os
import shutil
import struct
import tempfile
import unittest

from tests.common import data, hotpath
from zebra_ctl import consts
from zebra_ctl import program as P
from zebra_ctl.backend import FakeBackend
from zebra_ctl.controller import Controller
from zebra_ctl.plan import lowest_free
from zebra_ctl.ports import PortsConfig
from zebra_ctl.wire import Ctl, parse_udp_frame, udp_frame

SWITCH_IP = 0x0A0000FA
SERVER_A = (0x0A000001, 9960, 0x0CC47A000001)
SERVER_B = (0x0A000002, 9961, 0x0CC47A000002)
SERVER_C = (0x0A000001, 9962, 0x0CC47A000001)
STRANGER = (0x0A0000EE, 4444, 0x0CC47A000002)

# 64 slots a register, 8 registers: 512 hot values in all.
SETTINGS = 'registers = 8\nswitch = "10.0.0.250:9950"\nnumber = "fixed:16"\nslots = 64\nmax_seqs = 64\n'


def register(job, workers, capacity, token=0, server=0):
    """A REGISTER asking to be admitted (rust/zebra-proto/src/wire/register.rs)."""
    return struct.pack(">HBBHHIHHI", consts.MAGIC, consts.VERSION, consts.PacketType.REGISTER,
                       job, server, token, workers, 0, capacity)


def to_cpu(payload, src):
    ip, port, mac = src
    frame = udp_frame(mac, 0x0200000000FA, ip, SWITCH_IP, port, 9950, payload)
    return Ctl(consts.CtlKind.TO_CPU, 0, 0).pack() + frame


def acks(backend):
    """(destination ip, port, job, server, token, workers, capacity) of each
    REGISTER_ACK with admission the controller sent."""
    out = []
    for f in backend.sent:
        if Ctl.unpack(f).kind != consts.CtlKind.FORWARD:
            continue
        u = parse_udp_frame(f[16:])
        d = u.payload
        if d[3] != consts.PacketType.REGISTER_ACK:
            continue
        if len(d) != consts.REGISTER_ADMIT_LEN + 4:
            out.append((u.dst_ip, u.dst_port, "without admission"))
            continue
        job, server, token, workers, reserved, capacity, epoch = struct.unpack(">HHIHHII", d[4:])
        assert reserved == 0 and epoch != 0
        out.append((u.dst_ip, u.dst_port, job, server, token, workers, capacity))
    backend.sent.clear()
    return out


class Admission(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.b = FakeBackend(P.REGISTER_SIZES)
        self.c = Controller(self.b)
        self.ports = PortsConfig.load(data("ports.conf"))
        self.load(SETTINGS)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def load(self, text, **overrides):
        path = os.path.join(self.tmp, "admit.conf")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.b.__init__(P.REGISTER_SIZES)
        self.c.load(hotpath(path, **overrides), self.ports)

    def send(self, now, payload, src):
        self.b.inbox = [to_cpu(payload, src)]
        self.c.step(now)
        return acks(self.b)

    def job_entry(self, job):
        return self.b.lookup(P.JOBS, {"job_id": job})

    def test_jobs_admitted_disjoint_refused_retired_and_reused(self):
        # Two jobs: each admitted into its own stretch of every register.
        [a] = self.send(0, register(101, 2, 200), SERVER_A)
        self.assertEqual(a[:4], (SERVER_A[0], SERVER_A[1], 101, 0))
        self.assertEqual(a[5:], (2, 200), "the capacity asked for, granted")
        self.assertNotEqual(a[4], 0, "a token handed out at admission")
        [b] = self.send(1, register(102, 3, 240), SERVER_B)
        self.assertEqual(b[5:], (3, 240))
        self.assertNotEqual(b[4], a[4], "each job its own token")
        pa, pb = self.c.plans[101], self.c.plans[102]
        self.assertEqual((pa.region_base, pa.region_slots), (0, 25))
        self.assertEqual((pb.region_base, pb.region_slots), (25, 30))
        self.assertNotEqual(pa.job_index, pb.job_index)
        self.assertTrue(pa.record_base + 2 * pa.copies * pa.proto.max_seqs <= pb.record_base)
        for job, plan in ((101, pa), (102, pb)):
            action, d = self.job_entry(job)
            self.assertEqual((action, d["region_base"], d["workers"], d["hot_keys"], d["index"]),
                             ("set_job", plan.region_base, plan.job.workers, plan.job.hot_keys, plan.job_index))
        self.assertEqual(len(self.b.entries(P.WORKERS)), (2 + 3) * pa.copies)
        # A third that does not fit (64 - 55 = 9 slots free, 25 asked): refused,
        # counted with the reason, nothing written.
        [c] = self.send(2, register(103, 2, 200), SERVER_C)
        self.assertEqual(c[4:], (0, 2, 0), "capacity 0 and no token: refused")
        self.assertIsNone(self.job_entry(103))
        self.assertNotIn(103, self.c.plans)
        [(reason, n)] = self.c.admission_refused.items()
        self.assertEqual(n, 1)
        self.assertIn("slots", reason)
        # A job that fits in what is left is admitted after it.
        [d] = self.send(3, register(104, 1, 72), SERVER_C)
        self.assertEqual(d[6], 72)
        self.assertEqual(self.c.plans[104].region_base, 55)
        # Job 101 falls silent while 102 and 104 keep registering (their servers'
        # links send a REGISTER every second): retired after the job silence the
        # binary gives (zebra_hotpath::JOB_SILENCE), not before.
        silence = self.c.hotpath.job_silence_us
        self.assertGreater(silence, 0)
        for k in (0xA, 0xB):
            self.b.register_write(P.sums(k % P.R), pa.proto.slots + pa.region_base + 3, {"tag": 1, "sum": 5})
            self.b.count(P.hits(k % P.R), pa.region_base + 3)
        t = 0
        while t < silence + 2_000_000:
            t += 1_000_000
            self.assertEqual(self.send(t, register(102, 3, 240, b[4]), SERVER_B)[0][6], 240)
            self.assertEqual(self.send(t, register(104, 1, 72, d[4]), SERVER_C)[0][6], 72)
            self.assertEqual(101 in self.c.plans, t < silence, f"at {t} us")
        self.assertEqual((self.c.admitted, self.c.retired), (3, 1))
        self.assertIsNone(self.job_entry(101))
        self.assertEqual([e for e in self.b.entries(P.WORKERS) if e[0]["ig_md.job.index"] == pa.job_index], [])
        for k in range(P.R):
            for entry in range(pa.region_slots):
                for copy in range(pa.copies):
                    self.assertEqual(self.b.register_read(P.sums(k), copy * pa.proto.slots + entry), {})
            self.assertEqual(self.b.counter_read(P.hits(k), pa.region_base + 3), 0)
        for copy in range(consts.P4_MAX_COPIES):
            self.assertEqual(self.b.register_read(P.ROUNDS, P.round_state_index(pa.job_index, copy)),
                             P.ROUND_STATE_INITIAL)
        # Its range and job index serve a later job; the others stay.
        [e] = self.send(t, register(105, 2, 200), SERVER_A)
        self.assertEqual(e[6], 200)
        pe = self.c.plans[105]
        self.assertEqual((pe.region_base, pe.job_index, pe.record_base), (0, pa.job_index, pa.record_base))
        self.assertEqual(self.job_entry(105)[1]["region_base"], 0)
        self.assertEqual(self.job_entry(102)[1]["region_base"], 25)

    def test_a_strangers_register_changes_nothing(self):
        [a] = self.send(0, register(101, 2, 200), SERVER_A)
        token = a[4]
        self.assertEqual(self.send(1, register(101, 2, 200, token), SERVER_A)[0][6], 200)
        tables = {t: self.b.entries(t) for t in P.TABLES}
        plans = dict(self.c.plans)
        d = self.c.servers[101]
        # From another address, even with the token; from the pinned address
        # with a wrong token once the right one was shown; another size.
        for payload, src in ((register(101, 2, 200, token), STRANGER), (register(101, 2, 200, 0), STRANGER),
                             (register(101, 2, 200, token ^ 1), SERVER_A), (register(101, 5, 200, token), STRANGER),
                             (register(101, 2, 200, token, server=1), STRANGER)):
            replies = self.send(2, payload, src)
            self.assertTrue(all(r[-1] == 0 and r[4] == 0 for r in replies if len(r) > 3), replies)
            self.assertTrue(all(r[:2] != SERVER_A[:2] for r in replies), "nothing to the member")
        self.assertEqual({t: self.b.entries(t) for t in P.TABLES}, tables)
        self.assertEqual(self.c.plans, plans)
        self.assertEqual((d.addresses[0].ip, d.addresses[0].port), SERVER_A[:2], "server 0 did not move")
        self.assertEqual((d.refused_address, d.refused_token), (2, 1))
        self.assertEqual(sum(self.c.admission_refused.values()), 2, "another size, a server the job lacks")
        # The member still is.
        self.assertEqual(self.send(3, register(101, 2, 200, token), SERVER_A)[0][6], 200)
        # A stranger's REGISTERs do not keep a silent job alive.
        silence = self.c.hotpath.job_silence_us
        for t in range(4, 3 + silence, 1_000_000):
            self.send(t, register(101, 2, 200, token), STRANGER)
        self.c.step(3 + silence)
        self.assertNotIn(101, self.c.plans)

    def test_a_job_key_is_required_to_be_admitted(self):
        key = os.path.join(self.tmp, "job.key")
        with open(key, "w") as f:
            f.write("a secret only the job's members know\n")
        os.chmod(key, 0o600)
        self.load(SETTINGS + f'job_key_file = "{key}"\n')
        [r] = self.send(0, register(101, 2, 200), STRANGER)
        self.assertEqual(r[4:], (0, 2, 0), "without the key's token: refused")
        self.assertIn("token", next(iter(self.c.admission_refused)))
        self.assertEqual(self.c.plans, {})
        # The token is the binary's (zebra switch --plan of a job 101 with this key).
        with open(os.path.join(self.tmp, "one.conf"), "w") as f:
            f.write(SETTINGS + f'job_key_file = "{key}"\njob = 101\nworkers = 2\nhot_key_count = 200\n')
        token = hotpath(os.path.join(self.tmp, "one.conf")).proto.jobs[0].token
        [r] = self.send(1, register(101, 2, 200, token), SERVER_A)
        self.assertEqual((r[4], r[6]), (token, 200))

    def test_what_the_program_cannot_run_is_refused_by_it(self):
        # zebra switch would admit 64 workers; the records of the P4 program
        # (RECORD_ENTRIES) hold fewer at max_seqs = 4096.
        self.load(SETTINGS.replace("max_seqs = 64", "max_seqs = 4096"))
        [r] = self.send(0, register(101, 64, 8), SERVER_A)
        self.assertEqual(r[6], 0)
        self.assertIn("RECORD_ENTRIES", next(iter(self.c.admission_refused)))
        self.assertIsNone(self.job_entry(101))

    def test_settings_that_size_jobs_admit_none(self):
        self.load(SETTINGS + "job = 7\nworkers = 2\nhot_key_count = 16\n")
        self.assertFalse(self.c.admitting)
        # As zebra switch: a REGISTER asking for a job the settings do not
        # have is refused; one for the job, of its size, is granted its capacity.
        [r] = self.send(0, register(8, 2, 16), SERVER_A)
        self.assertEqual(r[2:], (8, 0, 0, 2, 0))
        self.assertNotIn(8, self.c.plans)
        [r] = self.send(1, register(7, 3, 16), SERVER_A)
        self.assertEqual(r[4:], (0, 3, 0), "another number of workers")
        [r] = self.send(2, register(7, 2, 16), SERVER_A)
        self.assertEqual((r[2], r[6]), (7, 16))
        self.assertEqual(r[4], self.c.servers[7].token)
        self.assertEqual(sum(self.c.admission_refused.values()), 2)
        self.c.step(10 * self.c.hotpath.job_silence_us)
        self.assertIn(7, self.c.plans, "a job of the settings is never retired")


class LowestFree(unittest.TestCase):
    def test_holes_are_used_first(self):
        self.assertEqual(lowest_free([], 4, 10), 0)
        self.assertEqual(lowest_free([(0, 3), (5, 9)], 2, 10), 3)
        self.assertEqual(lowest_free([(0, 3), (5, 9)], 3, 10), None)
        self.assertEqual(lowest_free([(5, 9), (0, 3)], 1, 10), 3)
        self.assertEqual(lowest_free([(0, 10)], 1, 10), None)


if __name__ == "__main__":
    unittest.main()
