"""The LNS tables as the ZEBRA_LNS build holds them: p4/lns/gen_tables.py
with the geometry of p4/lns/lns.p4 (LNS_HI_BITS, LNS_LO_BITS)."""

import os
import sys

_LNS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lns")
if _LNS_DIR not in sys.path:
    sys.path.insert(0, _LNS_DIR)

from gen_tables import LnsTables, f32_bits  # noqa: E402

HI_BITS = 7
LO_BITS = 4


def lns_tables(frac_bits):
    return LnsTables(frac_bits, HI_BITS, LO_BITS)


def sum_to_f32_bits(raw, frac_bits):
    """A summed register (u32 pattern of an i32) as the f32 bits the CPU sends."""
    v = raw - (1 << 32) if raw & 0x80000000 else raw
    return f32_bits(v / float(1 << frac_bits))


__all__ = ["LnsTables", "lns_tables", "sum_to_f32_bits", "HI_BITS", "LO_BITS"]
