"""The switch CPU's part: aggregates kept until acknowledged and resent as
zebra-proto's Switch::poll does, parts built as Switch::close builds them,
rounds flushed and read out, registrations; then the whole loop through the
controller and a FakeBackend standing in for the pipeline."""

import shutil
import struct
import tempfile
import unittest


from tests.common import data, hotpath, two_server_jobs
from zebra_ctl import consts
from zebra_ctl import program as P
from zebra_ctl.backend import FakeBackend
from zebra_ctl.controller import Controller
from zebra_ctl.cpu import (
    AggregateStore,
    ClosedRound,
    ReadoutAssembler,
    RoundTimer,
    ServerDirectory,
    build_parts,
    coverage_parts,
)
from zebra_ctl.plan import PlanError, plan_job
from zebra_ctl.ports import PortsConfig
from zebra_ctl.wire import Ctl, ReadoutRow, encode_aggregate, encode_coverage, parse_udp_frame, udp_frame

SWITCH_IP = 0x0A0000FA
SERVER0 = (0x0A000001, 9960, 0x0CC47A000001)
SERVER1_MAC = 0x0CC47A000002


def plan(**overrides):
    return plan_job(hotpath(data("tofino.conf"), **overrides), PortsConfig.load(data("ports.conf")))


class Store(unittest.TestCase):
    def test_resend_doubling_capped_then_abandon(self):
        s = AggregateStore(rto_us=2000, max_retries=6)
        s.add(0, 7, 1, 0, 0, b"p")
        self.assertEqual(len(s.drain(0)), 1)
        due = []
        t = 0
        for _ in range(10):
            t = s.poll_at()
            if t is None:
                break
            out = s.poll(t - 1)
            self.assertEqual(out, [], "nothing before it is due")
            out = s.poll(t)
            due.append((t, len(out)))
        # The first timeout (2 ms) doubles the server's timeout to 4 ms; then
        # resend n waits 4 * 2^min(n, 4) ms: 8, 16, 32, 64, 64, 64; the 7th time it is given up.
        self.assertEqual([d for d, _ in due], [2000, 10000, 26000, 58000, 122000, 186000, 250000])
        self.assertEqual([n for _, n in due], [1, 1, 1, 1, 1, 1, 0])
        self.assertEqual((s.retransmits, s.abandoned, len(s.pending)), (6, 1, 0))

    def test_ack_stops_resends(self):
        s = AggregateStore(2000, 50)
        s.add(0, 7, 1, 0, 0, b"a")
        s.add(0, 7, 1, 0, 1, b"b")
        self.assertEqual([a.payload for a in s.drain(0)], [b"a", b"b"])
        self.assertTrue(s.ack(10, 7, 0, 1, 1))
        self.assertFalse(s.ack(10, 7, 0, 1, 1), "a duplicate ACK changes nothing")
        self.assertFalse(s.ack(10, 7, 0, 2, 0), "an ACK for a part never sent")
        out = s.poll(2000)
        self.assertEqual([a.payload for a in out], [b"a"])
        self.assertTrue(out[0].retransmit)
        self.assertEqual((s.parts, s.acked), (2, 1))


    def test_timeout_learns_a_slow_server(self):
        """As aggregate_timeout_learns_a_slow_server in zebra-proto: a server
        10 ms away, a 1 ms first timeout; the first answer, although to a part sent
        several times, is the first measurement; later rounds are sent once."""
        s = AggregateStore(1000, 50)
        t, resent = 0, []
        for round_ in range(1, 11):
            before = s.retransmits
            s.add(t, 1, round_, 0, 0, b"p")
            in_net = [t + 10_000 for _ in s.drain(t)]
            while s.pending:
                nxt = min(in_net + [s.poll_at()])
                t = nxt
                if nxt in in_net:
                    in_net.remove(nxt)
                    s.ack(t, 1, 0, round_, 0)
                    in_net += [t + 10_000 for _ in s.drain(t)]
                else:
                    in_net += [t + 10_000 for _ in s.poll(t)]
            resent.append(s.retransmits - before)
        self.assertGreater(resent[0], 0, resent)
        self.assertEqual(resent[1:], [0] * 9, resent)
        self.assertGreaterEqual(s.flow(1, 0).rtt.srtt_us, 10_000)

    def test_a_late_window_is_resent_one_part_at_a_time(self):
        """As a_late_window_is_resent_one_part_at_a_time in zebra-proto."""
        s = AggregateStore(1000, 3)
        for part in range(8):
            s.add(0, 1, 1, 0, part, b"p")
        self.assertEqual(len(s.drain(0)), 8)
        self.assertEqual(len(s.poll(1500)), 1, "one resend, not eight")
        self.assertEqual((s.retransmits, s.deferred), (1, 7))
        for part in range(8):
            self.assertTrue(s.ack(2000, 1, 0, 1, part))
        self.assertEqual(s.flow(1, 0).rtt.srtt_us, 2000)
        dead = AggregateStore(1000, 3)
        for part in range(8):
            dead.add(0, 1, 1, 0, part, b"p")
        dead.drain(0)
        while dead.pending:
            dead.poll(dead.poll_at())
        self.assertEqual(dead.abandoned, 8)
        self.assertLess(dead.retransmits, 8 * 3)

    def test_a_burst_of_lost_parts_costs_a_round_trip(self):
        """As a_burst_of_lost_parts_costs_a_round_trip in zebra-proto."""
        s = AggregateStore(1000, 8)
        for part in range(12):
            s.add(0, 1, 1, 0, part, bytes([part]))
        self.assertEqual([a.payload[0] for a in s.drain(0)], list(range(8)))
        for part in range(4, 8):
            s.ack(100, 1, 0, 1, part)
        self.assertEqual([a.payload[0] for a in s.drain(100)], [8, 9, 10, 11])
        self.assertEqual(s.poll_at(), 1000, "sent together: no evidence")
        for part in range(8, 12):
            s.ack(200, 1, 0, 1, part)
        due = s.poll_at()
        self.assertLess(due, 1000, "lost before their timeout")
        self.assertEqual([a.payload[0] for a in s.poll(due)], [0, 1, 2, 3], "the whole burst at once")
        for part in range(4):
            s.ack(due + 100, 1, 0, 1, part)
        self.assertEqual((len(s.pending), s.retransmits, s.lost), (0, 4, 4))
        queued = AggregateStore(1000, 8)
        for part in range(12):
            queued.add(0, 1, 1, 0, part, b"p")
        queued.drain(0)
        self.assertEqual(len(queued.poll(1000)), 1, "the timeout's resend")
        t = 1500
        for part in range(12):
            queued.ack(t, 1, 0, 1, part)
            t += 10
            self.assertFalse([a for a in queued.poll(t) if a.retransmit])
        self.assertEqual((len(queued.pending), queued.retransmits, queued.lost), (0, 1, 0), "a late window in a queue")

    def test_parts_leave_as_the_window_allows(self):
        """As aggregate_parts_leave_as_the_window_allows in zebra-proto."""
        s = AggregateStore(2000, 50)
        for part in range(10):
            s.add(0, 1, 1, 0, part, bytes([part]))
        self.assertEqual([a.payload[0] for a in s.drain(0)], list(range(8)))
        self.assertEqual(s.drain(0), [], "the window is full")
        self.assertFalse(s.ack(40, 1, 0, 1, 9), "a part not sent yet cannot be acknowledged")
        s.ack(50, 1, 0, 1, 0)
        self.assertEqual([a.payload[0] for a in s.drain(50)], [8])
        s.ack(60, 1, 0, 1, 1)
        self.assertEqual([a.payload[0] for a in s.drain(60)], [9])


class Parts(unittest.TestCase):
    def test_coverage_parts_as_the_model(self):
        self.assertEqual(coverage_parts(3, [0b111, 0], 1344), [(3, 0, 3, None)])
        self.assertEqual(coverage_parts(3, [0, 0], 1344), [])
        self.assertEqual(coverage_parts(1, [0b101], 1344), [(1, 0, 3, bytes([0b101]))])
        parts = coverage_parts(2, [0xFFFFFFFF, 0b10], 16)
        self.assertEqual([(f, n) for _, f, n, _ in parts], [(0, 16), (16, 16), (32, 2)])
        self.assertEqual(parts[2][3], bytes([0b10]))

    def test_a_flushed_round(self):
        p = plan()
        closed = ClosedRound(
            job=7, round=9, copy=1, flushed=True,
            values={0: 5, 499: 3, 500: 0xFFFFFFFE, 999: consts.SLOT_UNTOUCHED + 1},
            progress={0: (3, 3), 1: (0, 2), 3: (1, 1)},
        )
        asked = []

        def read_coverage(w, c, r):
            asked.append((w, c, r))
            return [0b101] + [0] * 127

        parts = build_parts(p, closed, read_coverage)
        self.assertEqual(asked, [(1, 1, 9)], "only the incomplete worker's words are read")
        # Workers 0 and 3 are complete: their bits say so, no coverage part.
        cov = [(1, 0, 3, bytes([0b101]))]
        for server, pairs in [(0, [(0, 5), (499, 3)]), (1, [(500, 0xFFFFFFFE), (999, 0x80000000)])]:
            want = [encode_aggregate(7, server, 9, 0, 2, 0b1011, 0b1001, True, True, 2, pairs)]
            want += [encode_coverage(7, server, 9, 1 + i, 2, w, f, n, b) for i, (w, f, n, b) in enumerate(cov)]
            self.assertEqual(parts[server], want, f"server {server}")

    def test_parts_split_at_the_aggregate_size(self):
        p = plan()
        self.assertEqual(p.proto.aggregate_size, consts.MAX_PACKET_SIZE, "parts fill the MTU by default")
        # Not a setting (zebra_proto's tests make it small too): the size and what it derives.
        p.proto.aggregate_size = 192
        p.proto.aggregate_run_bytes_per_packet = 192 - consts.AGGREGATE_HEADER_LEN
        closed = ClosedRound(7, 2, 0, False, {r: r for r in range(0, 90, 2)}, {0: (1, 1)})
        parts = build_parts(p, closed, None)
        self.assertEqual(len(parts[0]), 3, "45 lone values in 15-value parts (worker 0 complete: no coverage)")
        counts = [struct.unpack_from(">H", x, 34)[0] for x in parts[0][:3]]
        totals = {struct.unpack_from(">I", x, 36)[0] for x in parts[0][:3]}
        self.assertEqual((counts, totals), ([15, 15, 15], {45}))
        closed = ClosedRound(7, 2, 0, False, {r: r for r in range(45)}, {0: (1, 1)})
        parts = build_parts(p, closed, None)
        self.assertEqual(len(parts[0]), 2, "45 consecutive values: one run of 36, then 9")
        counts = [struct.unpack_from(">H", x, 34)[0] for x in parts[0][:2]]
        self.assertEqual(counts, [36, 9])
        self.assertEqual(len(parts[1]), 1, "an empty data part")

    def test_lns_sums_go_back_to_f32(self):
        p = plan_job(hotpath(data("tofino.conf"), number="f32"), PortsConfig.load(data("ports.conf")), "lns", 24)
        closed = ClosedRound(7, 2, 0, False, {0: (3 << 23) & 0xFFFFFFFF, 1: (-(1 << 24)) & 0xFFFFFFFF}, {0: (1, 1)})
        agg = build_parts(p, closed, None)[0][0]
        self.assertEqual(agg[32] & consts.AGGREGATE_FLAG_FIXED, 0)
        self.assertEqual(struct.unpack_from(">IH", agg, 40), (0, 2), "one run of the two ranks")
        v0, v1 = struct.unpack_from(">ff", agg, 46)
        self.assertEqual((v0, v1), (1.5, -1.0))


class Timers(unittest.TestCase):
    def test_flush_after_the_timeout_then_readout_after_the_grace(self):
        p = plan()
        t = RoundTimer(p, round_timeout_us=20_000, grace_us=1_000, retry_us=2_000)
        self.assertEqual(t.observe(0, 0, 4), [])
        self.assertEqual(t.observe(19_999, 0, 4), [])
        (flush,) = t.observe(20_000, 0, 4)
        c = Ctl.unpack(flush.payload)
        self.assertEqual((flush.what, c.kind, c.job, c.round), ("FLUSH", consts.CtlKind.FLUSH, 7, 4))
        self.assertEqual(t.observe(21_000, 0, 4), [], "not again before retry_us")
        self.assertEqual(len(t.observe(22_000, 0, 4)), 1, "again if no answer")
        t.on_flush_reply(22_100, Ctl(consts.CtlKind.FLUSH, consts.CTL_FLAG_CLOSED, 7, 4))
        draining = 4 | consts.ROUND_DRAINING
        self.assertEqual(t.observe(22_500, 0, draining), [])
        (readout,) = t.observe(23_100, 0, draining)
        c = Ctl.unpack(readout.payload)
        self.assertEqual((c.kind, c.flags, c.round, c.row, c.rows), (consts.CtlKind.READOUT, consts.CTL_FLAG_FLUSHED, 4, 0, 125))
        self.assertEqual(t.observe(30_000, 0, draining), [], "once")
        self.assertEqual(t.observe(30_001, 0, 4 | consts.ROUND_FREE), [])

    def test_the_round_timeout_is_learned_from_round_lengths(self):
        t = RoundTimer(plan(), round_timeout_us=20_000, grace_us=1_000, retry_us=2_000,
                       cap_us=plan().proto.round_timeout_cap_us)
        self.assertEqual(t.timeout_us(), 20_000, "configured")
        t.observe(0, 0, 4)
        self.assertEqual(len(t.observe(20_000, 0, 4)), 1)
        self.assertEqual(t.timeout_us(), 40_000, "doubled by the flush")
        t.observe(40_000, 1, 5)
        self.assertEqual(t.observe(75_000, 1, 5), [], "not flushed at 20 ms any more")
        t.observe(90_000, 1, 5 | consts.ROUND_DRAINING)
        self.assertEqual(t.timeout_us(), 50_000 + 4 * 25_000, "round 5 completed in 50 ms")
        for r in range(6, 60):
            t.observe(100_000 * r, 0, r)
            t.observe(100_000 * r + 1_000, 0, r | consts.ROUND_DRAINING)
        self.assertEqual(t.timeout_us(), 20_000, "quick rounds: never below the configured one")

    def test_a_new_round_restarts_the_clock_and_a_lost_close_is_read_out(self):
        t = RoundTimer(plan(), 20_000, 1_000, 2_000)
        t.observe(0, 1, 3)
        self.assertEqual(t.observe(15_000, 1, 5), [], "round 5 first seen now")
        self.assertEqual(t.observe(34_999, 1, 5), [])
        self.assertEqual(len(t.observe(35_000, 1, 5)), 1)
        t2 = RoundTimer(plan(), 20_000, 1_000, 2_000)
        self.assertEqual(t2.observe(0, 0, 8 | consts.ROUND_DRAINING), [])
        (r,) = t2.observe(2_000, 0, 8 | consts.ROUND_DRAINING)
        self.assertEqual(Ctl.unpack(r.payload).flags, 0, "closed by completion, its readout never came")

    def test_missing_rows_are_asked_for(self):
        p = plan()
        a = ReadoutAssembler(p, row_timeout_us=10_000)
        rows, r = p.readout_rows, P.R
        for row in range(rows):
            if row != 17:
                self.assertIsNone(a.on_row(row, ReadoutRow(Ctl(4, 0, 7, 6, row + 1, rows), row, row, 0, [consts.SLOT_UNTOUCHED] * r)))
        self.assertEqual(a.missing(5_000), [])
        self.assertEqual(a.missing(40_000), [(6, 17)])
        closed = a.on_row(40_001, ReadoutRow(Ctl(4, 0, 7, 6, 18, rows), 17, 17, 0, [1] * r))
        self.assertEqual(sorted(closed.values), [17 * r + k for k in range(r)])


class Servers(unittest.TestCase):
    def test_registrations(self):
        d = ServerDirectory(7, 2, pinned={1: (0x0A000002, 9951)}, neighbors={0x0A000002: SERVER1_MAC}, epoch=5, token=9)
        self.assertIsNotNone(d.address(1), "pinned with a known MAC")
        self.assertIsNone(d.address(0))
        self.assertIsNone(d.on_register(8, 0, *SERVER0), "unknown job")
        self.assertIsNone(d.on_register(7, 2, *SERVER0), "unknown server")
        self.assertIsNone(d.on_register(7, 1, *SERVER0), "pinned elsewhere")
        self.assertEqual(d.on_register(7, 0, *SERVER0), bytes([0x5A, 0x42, 2, 9, 0, 7, 0, 0, 0, 0, 0, 9, 0, 0, 0, 5]))
        self.assertNotEqual(ServerDirectory(7, 2).epoch, 0, "an epoch is drawn, never 0")
        self.assertNotEqual(ServerDirectory(7, 2).token, 0, "a token is drawn, never 0")
        self.assertEqual((d.address(0).ip, d.address(0).port), SERVER0[:2])
        self.assertEqual((d.registrations, d.refused), (1, 3))
        # Only the members take part (docs/SECURITY.md): server 0 is pinned
        # to its first REGISTER's address, and must show the token once it has.
        stranger = (0x0A0000EE, 4444, SERVER0[2])
        self.assertIsNone(d.on_register(7, 0, *stranger, token=9), "another address, even with the token")
        self.assertIsNotNone(d.on_register(7, 0, *SERVER0, token=9))
        self.assertIsNone(d.on_register(7, 0, *SERVER0, token=0), "the token is required once shown")
        self.assertFalse(d.check(0, stranger[0], stranger[1], 9), "an acknowledgement from a stranger")
        self.assertTrue(d.check(0, SERVER0[0], SERVER0[1], 9))
        self.assertEqual((d.address(0).ip, d.address(0).port), SERVER0[:2], "server 0 did not move")
        self.assertEqual((d.refused_address, d.refused_token), (3, 1), "server 1's pinned elsewhere above too")


def readout_frames(round_, flushed, values, progress):
    """What the pipeline mirrors to the CPU for one closed round of the sample job."""
    frames = []
    rows = -(-1000 // P.R)
    for row in range(rows):
        ctl = Ctl(consts.CtlKind.READOUT, consts.CTL_FLAG_FLUSHED if flushed else 0, 7, round_, row, rows)
        vals = [values.get(row * P.R + k, consts.SLOT_UNTOUCHED) for k in range(P.R)]
        frames.append(ReadoutRow(ctl, row, row, progress.get(row, 0), vals).pack())
    return frames


def to_cpu(payload, src):
    ip, port, mac = src
    frame = udp_frame(mac, 0x0200000000FA, ip, SWITCH_IP, port, 9950, payload)
    return Ctl(consts.CtlKind.TO_CPU, 0, 7).pack() + frame


def sent_datagrams(backend):
    out = []
    for f in backend.sent:
        c = Ctl.unpack(f)
        if c.kind == consts.CtlKind.FORWARD:
            u = parse_udp_frame(f[16:])
            out.append((u.dst_ip, u.dst_port, u.payload))
        else:
            out.append((c.kind, c.round, None))
    backend.sent.clear()
    return out


class ControllerLoop(unittest.TestCase):
    def setUp(self):
        self.b = FakeBackend(P.REGISTER_SIZES)
        self.c = Controller(self.b, grace_us=1_000)
        self.c.load(hotpath(data("tofino.conf")), PortsConfig.load(data("ports.conf")))

    def test_completed_round_to_servers_release_ack_resend(self):
        self.b.inbox = readout_frames(1, False, {0: 10, 600: 20}, {w: (2 << 16) | 2 for w in range(4)})
        self.c.step(100)
        sent = sent_datagrams(self.b)
        to_server1 = [x for x in sent if x[:2] == (0x0A000002, 9951)]
        self.assertEqual(len(to_server1), 1, "one data part (every worker complete: no coverage), to the pinned server")
        agg = to_server1[0][2]
        self.assertEqual(struct.unpack_from(">IHI", agg, 40), (600, 1, 20))
        self.assertEqual(agg[16:32], (0b1111).to_bytes(8, "big") * 2, "contributed and complete")
        self.assertIn((consts.CtlKind.RELEASE, 1, None), sent)
        self.assertEqual(self.c.unroutable, 1, "server 0 has not registered: its part waits")

        self.b.inbox = [to_cpu(bytes([0x5A, 0x42, 2, 8, 0, 7, 0, 0, 0, 0, 0, 0]), SERVER0)]
        self.c.step(200)
        self.assertEqual(sent_datagrams(self.b), [(SERVER0[0], SERVER0[1], bytes([0x5A, 0x42, 2, 9, 0, 7, 0, 0]) + struct.pack(">II", self.c.servers[7].token, self.c.servers[7].epoch))])

        acks = [to_cpu(struct.pack(">HBBHHIHHI", 0x5A42, 2, 7, 7, 1, 1, part, 0, 0), (0x0A000002, 9951, SERVER1_MAC))
                for part in range(1)]
        self.b.inbox = acks
        self.c.step(2_100)
        resent = sent_datagrams(self.b)
        self.assertEqual({(ip, port) for ip, port, _ in resent}, {SERVER0[:2]}, "acked parts are not resent")
        self.assertEqual(len(resent), 1)
        self.assertEqual(self.c.store.acked, 1)

    def test_flushed_round_reads_coverage_of_incomplete_workers(self):
        self.b.register_write(P.ROUNDS, P.round_state_index(0, 0), {"lo": consts.ROUND_BUSY, "hi": 2})
        self.c.step(0)
        self.c.step(20_000)
        self.assertEqual(sent_datagrams(self.b), [(consts.CtlKind.FLUSH, 2, None)])
        self.b.register_write(P.ROUNDS, P.round_state_index(0, 0), {"lo": consts.ROUND_BUSY, "hi": 2 | consts.ROUND_DRAINING})
        self.b.inbox = [Ctl(consts.CtlKind.FLUSH, consts.CTL_FLAG_CLOSED, 7, 2).pack()]
        self.c.step(20_100)
        self.assertEqual(sent_datagrams(self.b), [])
        self.c.step(21_100)
        self.assertEqual(sent_datagrams(self.b), [(consts.CtlKind.READOUT, 2, None)])
        base = self.c.plan.cover_base_of(1, 0)
        self.b.register_write(P.COVER, base, {"round": 2, "bits": 0b1011})
        self.b.register_write(P.COVER, base + 1, {"round": 1, "bits": 0xFFFF})
        self.b.inbox = readout_frames(2, True, {5: 1}, {0: (1 << 16) | 1, 1: 3})
        self.c.step(21_500)
        sent = sent_datagrams(self.b)
        cov = [p for ip, port, p in sent if ip == 0x0A000002 and p[3] == consts.PacketType.COVERAGE]
        self.assertEqual([(c[17], c[22]) for c in cov], [(1, 0)], "worker 0 complete (no part), worker 1 a bitmap")
        self.assertEqual(cov[0][24:], bytes([0b1011]), "only the words of round 2")
        agg = next(p for ip, port, p in sent if ip == 0x0A000002 and p[3] == consts.PacketType.AGGREGATE)
        self.assertEqual(agg[32], consts.AGGREGATE_FLAG_FIXED | consts.AGGREGATE_FLAG_FLUSHED)
        self.assertIn((consts.CtlKind.RELEASE, 2, None), sent)

    def test_garbage_on_the_cpu_port_is_counted(self):
        self.b.inbox = [b"", b"\x07" * 10, Ctl(consts.CtlKind.CONT).pack(), to_cpu(b"\x5A\x42\x01\x03" + bytes(12), SERVER0)]
        self.c.step(0)
        self.assertEqual(self.c.bad_frames, 4)
        self.assertEqual(self.b.sent, [])


class TwoServerJobs(unittest.TestCase):
    """A hot-keys file whose keys two PS-lite servers own: one job per server
    (7 and 8, as the shim makes them), regions, records and coverage placed one
    after the other, each job's rounds read out and sent to its own server."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.b = FakeBackend(P.REGISTER_SIZES)
        self.c = Controller(self.b, grace_us=1_000)
        self.c.load(two_server_jobs(self.tmp), PortsConfig.load(data("ports.conf")))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_one_job_per_server_placed_one_after_the_other(self):
        plans = self.c.plans
        self.assertEqual([(j, p.job.hot_keys, p.job.servers, p.job_index) for j, p in plans.items()],
                         [(7, 40, 1, 0), (8, 16, 1, 1)])
        self.assertEqual([(p.region_base, p.region_slots) for p in plans.values()], [(0, 5), (5, 2)])
        self.assertEqual(plans[8].record_base, 4 * 2 * plans[7].proto.max_seqs)
        jobs = sorted((k["job_id"], d["index"], d["region_base"]) for k, _, d in self.b.entries(P.JOBS))
        self.assertEqual(jobs, [(7, 0, 0), (8, 1, 5)])
        self.assertEqual(len(self.b.entries(P.WORKERS)), 2 * 4 * 2)
        self.assertEqual(len(self.b.entries(P.COPY_OFFSETS)), 2, "switch-wide entries once")
        self.assertEqual(len(self.b.entries(P.ADDRESSES)), 1)

    def test_the_jobs_must_fit_together(self):
        hotpath = two_server_jobs(self.tmp, "max_seqs = 10000\n")
        with self.assertRaises(PlanError) as cm:
            self.c.load(hotpath, PortsConfig.load(data("ports.conf")))
        self.assertEqual(cm.exception.problems, [
            "the 2 jobs' workers x copies x max_seqs = 160000: the P4 program keeps 131072 records "
            "(RECORD_ENTRIES); lower max_seqs"
        ], "each job alone fits")

    def test_each_jobs_round_goes_to_its_own_server(self):
        frames = []
        for row in range(1):
            ctl = Ctl(consts.CtlKind.READOUT, 0, 8, 1, row, 4)
            vals = [20 if k == 3 else consts.SLOT_UNTOUCHED for k in range(P.R)]
            frames.append(ReadoutRow(ctl, row, row, (1 << 16) | 1, vals).pack())
        for row in range(1, 4):
            ctl = Ctl(consts.CtlKind.READOUT, 0, 8, 1, row, 4)
            frames.append(ReadoutRow(ctl, row, row, (1 << 16) | 1, [consts.SLOT_UNTOUCHED] * P.R).pack())
        self.b.inbox = frames
        self.c.step(100)
        sent = sent_datagrams(self.b)
        to_server1 = [x for x in sent if x[:2] == (0x0A000002, 9951)]
        self.assertEqual(len(to_server1), 1, "job 8 is PS-lite server 1's, pinned by server_addr 1")
        agg = to_server1[0][2]
        self.assertEqual(struct.unpack_from(">H", agg, 4), (8,), "job 8")
        self.assertEqual(struct.unpack_from(">IHI", agg, 40), (3, 1, 20), "hot index 3 of the job: key 2^63's")
        self.assertIn((consts.CtlKind.RELEASE, 1, None), sent)
        self.b.inbox = [to_cpu(bytes([0x5A, 0x42, 2, 8, 0, 8, 0, 0, 0, 0, 0, 0]), SERVER0)]
        self.c.step(200)
        self.assertEqual(sent_datagrams(self.b), [], "server 0 of job 8 is PS-lite server 1, pinned elsewhere: refused")
        self.b.inbox = [to_cpu(bytes([0x5A, 0x42, 2, 8, 0, 7, 0, 0, 0, 0, 0, 0]), SERVER0)]
        self.c.step(300)
        self.assertEqual(sent_datagrams(self.b), [(SERVER0[0], SERVER0[1], bytes([0x5A, 0x42, 2, 9, 0, 7, 0, 0]) + struct.pack(">II", self.c.servers[7].token, self.c.servers[7].epoch))],
                         "PS-lite server 0 registers as server 0 of job 7")
        self.b.inbox = [to_cpu(bytes([0x5A, 0x42, 2, 8, 0, 9, 0, 0, 0, 0, 0, 0]), SERVER0)]
        self.c.step(400)
        self.assertEqual(sent_datagrams(self.b), [], "job 9 is not loaded")


if __name__ == "__main__":
    unittest.main()
