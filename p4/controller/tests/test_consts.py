"""zebra_ctl.consts against its two sources: rust/zebra-proto/src/consts.rs
(and number.rs, the wire flag modules) and the P4 program."""

import os
import re
import unittest

from tests.common import REPO, p4_consts, p4_enum
from zebra_ctl import consts


def rust_consts(*files):
    out = {}
    for f in files:
        with open(os.path.join(REPO, "rust", "zebra-proto", "src", f), encoding="utf-8") as fh:
            text = fh.read()
        for m in re.finditer(r"pub const (\w+): \w+ = ([^;]+);", text):
            expr = m.group(2).replace("_", "") if re.fullmatch(r"[0-9_xA-Fa-f]+", m.group(2).strip()) else m.group(2)
            try:
                out[m.group(1)] = int(eval(expr, {"__builtins__": {}}, dict(out)))
            except Exception:
                pass
    return out


class AgainstRust(unittest.TestCase):
    def test_consts_rs(self):
        rs = rust_consts("consts.rs")
        for name in [
            "MAGIC", "VERSION", "DEFAULT_UDP_PORT", "HOT_HEADER_LEN", "HOT_DENSE_HEADER_LEN", "RESPONSE_LEN",
            "AGGREGATE_HEADER_LEN", "COVERAGE_HEADER_LEN", "AGGREGATE_ACK_LEN", "REGISTER_LEN", "EPOCH_LEN", "PAIR_LEN",
            "UPDATE_HEADER_LEN", "UPDATE_ACK_LEN", "UPDATE_TARGET_ALL",
            "VALUE_LEN", "RUN_HEADER_LEN", "DEFAULT_PACKET_SIZE", "MIN_PACKET_SIZE", "MAX_PACKET_SIZE", "MAX_PAIRS_PER_PACKET",
            "MAX_WORKERS", "MAX_REGISTERS", "MAX_REGISTER_ENTRIES", "MAX_COPIES", "MAX_SEQS", "COVER_WORD_BITS",
            "DEFAULT_REGISTERS", "DEFAULT_SLOTS", "DEFAULT_COPIES", "DEFAULT_MAX_SEQS",
        ]:
            self.assertEqual(getattr(consts, name), rs[name], name)
        for name in ["HOT", "HOT_DENSE", "ACK", "FALLBACK", "AGGREGATE", "COVERAGE", "AGGREGATE_ACK", "REGISTER", "REGISTER_ACK", "UPDATE",
                     "UPDATE_ACK"]:
            self.assertEqual(getattr(consts.PacketType, name), rs[name], name)

    def test_cpu_timing(self):
        from zebra_ctl import flow, rto
        fl, rt = rust_consts("flow.rs"), rust_consts("rto.rs")
        self.assertEqual((flow.INITIAL_WINDOW, flow.MAX_WINDOW), (fl["INITIAL_WINDOW"], fl["MAX_WINDOW"]))
        self.assertEqual(rto.MAX_BACKOFF_SHIFT, rt["MAX_BACKOFF_SHIFT"])

    def test_number_and_flags(self):
        self.assertEqual(consts.MAX_FRAC_BITS, rust_consts("number.rs")["MAX_FRAC_BITS"])
        cfg = rust_consts("config.rs")
        self.assertEqual((consts.DEFAULT_UPDATE_WINDOW, consts.MAX_UPDATE_WINDOW),
                         (cfg["DEFAULT_UPDATE_WINDOW"], cfg["MAX_UPDATE_WINDOW"]))
        agg = rust_consts("wire/aggregate.rs")
        self.assertEqual((consts.AGGREGATE_FLAG_FIXED, consts.AGGREGATE_FLAG_FLUSHED), (agg["FIXED"], agg["FLUSHED"]))
        self.assertEqual(consts.COVERAGE_FLAG_ALL, rust_consts("wire/coverage.rs")["ALL"])
        self.assertEqual(consts.RESPONSE_FLAG_DUP, rust_consts("wire/response.rs")["DUP"])


class AgainstP4(unittest.TestCase):
    def test_configuration(self):
        p4 = p4_consts()
        for name in [
            "REGISTERS", "REGISTER_BITS", "REGISTER_ENTRIES", "SLOT_BITS", "PAIRS_PER_PASS",
            "MAX_WORKERS", "WORKER_BITS", "MAX_COPIES", "COPY_BITS", "MAX_JOBS", "RECORD_ENTRIES", "COVER_ENTRIES",
            "ROUND_BITS", "STATS", "MAX_SERVERS", "UPDATE_SERVER_ENTRIES", "UPDATE_WORKER_ENTRIES", "MEMBER_ENTRIES",
        ]:
            self.assertEqual(getattr(consts, "P4_" + name), p4[name], name)
        for name in ["ROUND_FREE", "ROUND_DRAINING", "ROUND_FLAGS", "ROUND_BUSY", "SLOT_UNTOUCHED", "CTL_FLAG_FLUSHED", "CTL_FLAG_CLOSED",
                     "UPDATE_HEADER_LEN", "UPDATE_ACK_LEN", "UPDATE_TARGET_ALL"]:
            self.assertEqual(getattr(consts, name), p4[name], name)
        self.assertEqual(consts.MAGIC, p4["ZEBRA_MAGIC"])

    def test_enums(self):
        kinds = p4_enum("ctl_kind_t")
        for name, value in kinds.items():
            self.assertEqual(getattr(consts.CtlKind, name), value, name)
        stats = p4_enum("stat_t")
        self.assertEqual(consts.STATS + consts.MEMBER_STATS, list(stats), "stat_t in order")
        member = len(consts.MEMBER_STATS)
        self.assertEqual(list(stats.values()),
                         list(range(len(consts.STATS) - 1)) + [consts.FALLBACK_BASE]
                         + list(range(consts.MEMBER_STATS_BASE, consts.MEMBER_STATS_BASE + member)))
        reasons = p4_enum("fallback_reason_t")
        self.assertEqual(consts.FALLBACK_REASONS, [k for k in reasons if k != "ADDED"])
        self.assertEqual(consts.MEMBER_STATS_BASE + member, consts.P4_STATS, "STATS counts every stat_t")


if __name__ == "__main__":
    unittest.main()
