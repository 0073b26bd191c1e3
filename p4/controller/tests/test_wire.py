"""The CPU's byte formats: Zebra datagrams as WIRE.md lays them out (bytes
written out by hand here), the internal headers as p4/headers.p4 declares
them, and the frames."""

import struct
import unittest

from tests.common import p4_header
from zebra_ctl import consts
from zebra_ctl.wire import (
    AggregateAck,
    Ctl,
    ReadoutRow,
    Register,
    WireError,
    encode_aggregate,
    encode_coverage,
    encode_register_ack,
    ipv4_checksum,
    parse_datagram,
    parse_udp_frame,
    readout_request,
    udp_frame,
)


class ZebraDatagrams(unittest.TestCase):
    def test_aggregate_bytes(self):
        got = encode_aggregate(job=7, server=1, round_=0x01020304, part=2, parts=5, contributed=0b1011,
                               complete=0b0011, fixed=True, flushed=True, total=40,
                               pairs=[(3, 0xFFFFFFFE), (4, 9), (0x10000, 5)])
        want = bytes([
            0x5A, 0x42, 2, 5, 0, 7,          # magic, version, AGGREGATE, job
            0, 1,                            # server
            1, 2, 3, 4,                      # round
            0, 2, 0, 5,                      # part, parts
            0, 0, 0, 0, 0, 0, 0, 0b1011,     # contributed
            0, 0, 0, 0, 0, 0, 0, 0b0011,     # complete
            0x03, 0,                         # FIXED | FLUSHED, reserved
            0, 3, 0, 0, 0, 40,               # count, total
            0, 0, 0, 3, 0, 2,                # run: base 3, 2 values
            0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 0, 9,
            0, 1, 0, 0, 0, 1,                # run: base 0x10000, 1 value
            0, 0, 0, 5,
        ])
        self.assertEqual(got, want)
        self.assertEqual(len(got), consts.AGGREGATE_HEADER_LEN + 2 * consts.RUN_HEADER_LEN + 3 * consts.VALUE_LEN)

    def test_coverage_bytes(self):
        all_ = encode_coverage(1, 0, 5, 1, 3, worker=2, first_seq=0, nbits=4, bitmap=None)
        self.assertEqual(all_, bytes([0x5A, 0x42, 2, 6, 0, 1, 0, 0, 0, 0, 0, 5, 0, 1, 0, 3, 0, 2, 0, 0, 0, 4, 1, 0]))
        mapped = encode_coverage(1, 0, 5, 2, 3, worker=2, first_seq=8, nbits=10, bitmap=b"\x05\x02")
        self.assertEqual(len(mapped), consts.COVERAGE_HEADER_LEN + 2)
        self.assertEqual(mapped[22], 0, "no ALL flag")
        self.assertEqual(mapped[24:], b"\x05\x02")

    def test_register_ack_and_parsing(self):
        self.assertEqual(encode_register_ack(3, 1, 0xA1B2C3D4, 0x11223344),
                         bytes([0x5A, 0x42, 2, 9, 0, 3, 0, 1, 0x11, 0x22, 0x33, 0x44, 0xA1, 0xB2, 0xC3, 0xD4]),
                         "the token after the server, the epoch last")
        for bad in [0, 1 << 32]:
            with self.assertRaises(WireError):
                encode_register_ack(3, 1, bad, 1)
        self.assertEqual(parse_datagram(bytes([0x5A, 0x42, 2, 8, 0, 3, 0, 1, 0, 0, 0, 6])), Register(3, 1, 6))
        ack = bytes([0x5A, 0x42, 2, 7, 0, 3, 0, 1, 0, 0, 0, 9, 0, 4, 0, 0, 0, 0, 0, 6])
        self.assertEqual(parse_datagram(ack), AggregateAck(3, 1, 9, 4, 6))
        for bad in [ack[:19], ack[:14] + b"\x00\x01" + ack[16:], b"\x5A\x43" + ack[2:], b"\x5A\x42\x01" + ack[3:],
                    bytes([0x5A, 0x42, 2, 5]) + ack[4:], b"\x5A"]:
            with self.assertRaises(WireError):
                parse_datagram(bad)


def layout(header):
    fields, at = [], 0
    for name, w in p4_header(header):
        fields.append((name, at // 8, w // 8))
        at += w
    return fields


class InternalHeaders(unittest.TestCase):
    def test_ctl_matches_headers_p4(self):
        self.assertEqual([f[0] for f in layout("zebra_ctl_h")],
                         ["kind", "flags", "job", "round", "row", "rows", "port", "reserved"])
        self.assertEqual(sum(f[2] for f in layout("zebra_ctl_h")), 16)
        ctl = Ctl(kind=4, flags=1, job=0x0102, round=0x03040506, row=7, rows=8, port=9)
        packed = ctl.pack()
        for name, at, size in layout("zebra_ctl_h"):
            want = {"kind": 4, "flags": 1, "job": 0x0102, "round": 0x03040506, "row": 7, "rows": 8, "port": 9, "reserved": 0}[name]
            self.assertEqual(int.from_bytes(packed[at:at + size], "big"), want, name)
        self.assertEqual(Ctl.unpack(packed), ctl)

    def test_readout_matches_headers_p4(self):
        self.assertEqual(layout("zebra_readout_h"), [("row", 0, 2), ("worker", 2, 2), ("progress", 4, 4)])
        row = ReadoutRow(Ctl(4, 0, 7, 11, 3, 32), 3, 3, (5 << 16) | 5, list(range(consts.P4_REGISTERS)))
        parsed = ReadoutRow.parse(row.pack())
        self.assertEqual((parsed.row, parsed.worker, parsed.progress, parsed.values), (3, 3, (5 << 16) | 5, row.values))
        req = readout_request(7, 11, 0, 32, True)
        c = Ctl.unpack(req)
        self.assertEqual((c.kind, c.flags, c.job, c.round, c.row, c.rows), (consts.CtlKind.READOUT, 1, 7, 11, 0, 32))
        self.assertEqual(len(req), 16 + 8 + 4 * consts.P4_REGISTERS)

    def test_zebra_headers_as_the_encoders_write_them(self):
        agg = layout("zebra_aggregate_h")
        packed = encode_aggregate(1, 2, 3, 4, 5, 6, 7, True, False, 8, [])
        values = {"server": 2, "round": 3, "part": 4, "parts": 5, "contributed": 6, "complete": 7, "flags": 1,
                  "reserved": 0, "count": 0, "total": 8}
        for name, at, size in agg:
            self.assertEqual(int.from_bytes(packed[6 + at:6 + at + size], "big"), values[name], name)


class Frames(unittest.TestCase):
    def test_udp_frame_round_trip_and_checksum(self):
        f = udp_frame(0x0200000000FA, 0x0CC47A000002, 0x0A0000FA, 0x0A000002, 9950, 9951, b"hello")
        self.assertEqual(len(f), 14 + 20 + 8 + 5)
        self.assertEqual(ipv4_checksum(f[14:34]), 0, "a valid header sums to 0")
        u = parse_udp_frame(f)
        self.assertEqual((u.src_ip, u.dst_ip, u.src_port, u.dst_port, u.payload), (0x0A0000FA, 0x0A000002, 9950, 9951, b"hello"))
        self.assertEqual((u.src_mac, u.dst_mac), (0x0200000000FA, 0x0CC47A000002))
        with self.assertRaises(WireError):
            parse_udp_frame(f[:30])
        bad = bytearray(f)
        bad[12:14] = struct.pack(">H", 0x86DD)
        with self.assertRaises(WireError):
            parse_udp_frame(bytes(bad))


if __name__ == "__main__":
    unittest.main()
