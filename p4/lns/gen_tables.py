#!/usr/bin/env python3
"""Tables of the table-lookup float sum (the ZEBRA_LNS build of p4/zebra.p4).

A worker sends its gradient as the bit pattern of an IEEE-754 f32 (the FIXED
flag clear). Read as an integer, that pattern is a piecewise-linear base-2
logarithm of |x|: the 8 exponent bits are the integer part of log2|x| and the
mantissa bits its fraction (Mitchell's approximation). The switch looks the
value up by this log code and gets the value in the job's 32-bit fixed point,
round(x * 2^F), which its registers then add as integers:

    e  = exponent bits (clamped to e_max + 1: saturation)
    mh = the top H mantissa bits           hi[e][mh] = 2^(e-127+F) * (1 + mh/2^H)
    ml = the next L mantissa bits          lo[e][ml] = 2^(e-127+F) * (ml + 1/2) / 2^(H+L)
    fixed(x) = sign(x) * (hi[e][mh] + lo[e][ml])   (each table entry rounded to an integer)

With L = 0 there is one table per register (the value is kept to H mantissa
bits, like Libra's and Zebra's float tables; hi then takes the + 1/2); with
L > 0 a second table keeps H + L bits for the price of 2^L more entries per
exponent. The entries are the midpoints of the values they stand for, so the
error is unbiased and at most half a step of 2^-(H+L) relative; a value that
sits exactly on a step (1.0, 0.5) is off by that half step too. Exponents below
e_min give 0 (the value is under half a unit of the fixed point), exponents
above e_max saturate. The CPU turns a summed register back into a float by
dividing by 2^F.

Why the sum is linear and not kept as a logarithm: a Tofino stateful ALU
reads, modifies and writes one register entry in one step; it cannot look a
table up between the read and the write, so an accumulator kept in the log
domain (log2(a + b) = log2 a + log2(1 + 2^(log2 b - log2 a)), a table on the
difference) would need two passes per value and a lock. The log code is the
table *index*; the register adds fixed point.

    gen_tables.py --frac-bits 24 --hi-bits 7 --lo-bits 8           # summary
    gen_tables.py --frac-bits 24 --hi-bits 7 --lo-bits 8 --entries # key,value lines

The controller (p4/controller/zebra_ctl/lns.py) installs the same entries in
every register's tables; p4/lns/measure.py measures the precision.
"""

import argparse
import struct
import sys

# Bits of an f32.
MANTISSA_BITS = 23
EXPONENT_BIAS = 127
I32_MAX = (1 << 31) - 1
I32_MIN = -(1 << 31)


def f32_bits(x):
    """The bit pattern of x rounded to f32."""
    return struct.unpack(">I", struct.pack(">f", x))[0]


def f32(x):
    """x rounded to f32, as a Python float."""
    return struct.unpack(">f", struct.pack(">f", x))[0]


class LnsTables:
    """The hi and lo tables for one job scale (frac_bits) and geometry."""

    def __init__(self, frac_bits, hi_bits, lo_bits=0):
        if not 0 <= frac_bits <= 30:
            raise ValueError(f"frac_bits = {frac_bits}: expected 0..=30")
        if not 1 <= hi_bits <= 12:
            raise ValueError(f"hi_bits = {hi_bits}: expected 1..=12")
        if not 0 <= lo_bits <= 12 or hi_bits + lo_bits > MANTISSA_BITS:
            raise ValueError(f"lo_bits = {lo_bits}: expected 0..=12 and hi_bits + lo_bits <= 23")
        self.frac_bits = frac_bits
        self.hi_bits = hi_bits
        self.lo_bits = lo_bits
        # Smallest exponent whose largest value still rounds to a nonzero
        # fixed-point value: 2^(e-127+F) * 2 > 1/2.
        self.e_min = max(1, EXPONENT_BIAS - frac_bits - 1)
        # Largest exponent whose values fit in an i32: 2^(e-127+F) * 2 <= 2^31.
        self.e_max = EXPONENT_BIAS + 30 - frac_bits
        self.e_saturate = self.e_max + 1
        self._hi = {}
        self._lo = {}
        for e in range(self.e_min, self.e_max + 1):
            scale = 2.0 ** (e - EXPONENT_BIAS + frac_bits)
            mid = 0.0 if lo_bits else 0.5
            for mh in range(1 << hi_bits):
                v = round(scale * (1 + (mh + mid) / (1 << hi_bits)))
                self._hi[(e, mh)] = min(v, I32_MAX)
            if lo_bits:
                for ml in range(1 << lo_bits):
                    self._lo[(e, ml)] = round(scale * (ml + 0.5) / (1 << (hi_bits + lo_bits)))
        for mh in range(1 << hi_bits):
            self._hi[(self.e_saturate, mh)] = I32_MAX

    def exponents(self):
        """Distinct exponents the hi table holds (the saturation row included)."""
        return self.e_saturate - self.e_min + 1

    def hi_entries(self):
        """(exponent, top mantissa bits) -> value, for the hi table."""
        return dict(self._hi)

    def lo_entries(self):
        """(exponent, next mantissa bits) -> value, for the lo table (empty when lo_bits is 0)."""
        return dict(self._lo)

    def entries_per_register(self):
        return len(self._hi) + len(self._lo)

    def memory_bytes(self, registers=1, bytes_per_entry=4):
        """SRAM for the tables of `registers` registers, `bytes_per_entry` each
        (4: the 32-bit action datum of a directly indexed table; about 8 for an
        exact-match table that also stores its key)."""
        return self.entries_per_register() * registers * bytes_per_entry

    def split(self, bits):
        """What the switch extracts from an f32 pattern: sign, clamped
        exponent, hi key, lo key."""
        sign = bits >> 31
        e = (bits >> MANTISSA_BITS) & 0xFF
        e = min(e, self.e_saturate)
        m = bits & ((1 << MANTISSA_BITS) - 1)
        mh = m >> (MANTISSA_BITS - self.hi_bits)
        ml = (m >> (MANTISSA_BITS - self.hi_bits - self.lo_bits)) & ((1 << self.lo_bits) - 1)
        return sign, e, mh, ml

    def to_fixed(self, bits):
        """The switch's fixed-point value of one f32 pattern (what the lookups
        and the adder in p4/lns/lns.p4 compute). NaN and infinity saturate."""
        sign, e, mh, ml = self.split(bits)
        v = self._hi.get((e, mh), 0) + self._lo.get((e, ml), 0)
        v = min(v, I32_MAX)
        return -v if sign else v

    def to_float(self, fixed):
        """A summed register back to a float (the switch CPU's readout)."""
        return fixed / float(1 << self.frac_bits)


def saturating_sum(values):
    """Sum as the register's saturating |+| does, one value at a time."""
    acc = 0
    for v in values:
        acc = max(I32_MIN, min(I32_MAX, acc + v))
    return acc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frac-bits", type=int, required=True, help="the job's fixed point: values are summed as round(x * 2^F)")
    p.add_argument("--hi-bits", type=int, default=7, help="mantissa bits of the hi table key (default 7)")
    p.add_argument("--lo-bits", type=int, default=0, help="mantissa bits of the lo table key, 0 for one table (default 0)")
    p.add_argument("--registers", type=int, default=32, help="register arrays, each with its own copy of the tables (default 32)")
    p.add_argument("--entries", action="store_true", help="print every entry: table,exponent,mantissa_bits,value")
    args = p.parse_args(argv)
    try:
        t = LnsTables(args.frac_bits, args.hi_bits, args.lo_bits)
    except ValueError as e:
        print(f"gen_tables.py: {e}", file=sys.stderr)
        return 2
    if args.entries:
        for (e, m), v in sorted(t.hi_entries().items()):
            print(f"hi,{e},{m},{v}")
        for (e, m), v in sorted(t.lo_entries().items()):
            print(f"lo,{e},{m},{v}")
        return 0
    print(f"frac_bits {t.frac_bits}, hi_bits {t.hi_bits}, lo_bits {t.lo_bits}")
    print(f"exponents {t.e_min}..={t.e_max} (+ saturation row {t.e_saturate})")
    print(f"entries per register: hi {len(t.hi_entries())}, lo {len(t.lo_entries())}")
    kib = 1024.0
    print(
        f"memory for {args.registers} registers: {t.memory_bytes(args.registers) / kib:.1f} KiB "
        f"(4-byte action data), {t.memory_bytes(args.registers, 8) / kib:.1f} KiB (exact match, 8 bytes an entry)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
