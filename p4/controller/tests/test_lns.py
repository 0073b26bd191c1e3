"""p4/lns: the tables the ZEBRA_LNS build looks values up in, and the
precision script."""

import contextlib
import io
import math
import os
import random
import struct
import tempfile
import unittest

from zebra_ctl.lns import HI_BITS, LO_BITS, lns_tables
from tests.common import p4_consts

import gen_tables
import measure


class Tables(unittest.TestCase):
    def test_geometry_matches_lns_p4(self):
        p4 = p4_consts()
        self.assertEqual((HI_BITS, LO_BITS), (p4["LNS_HI_BITS"], p4["LNS_LO_BITS"]))
        t = lns_tables(24)
        self.assertEqual(t.exponents(), p4["LNS_EXPONENTS"])
        per_profile_hi = p4["LNS_HI_ENTRIES"] // p4["LNS_PROFILES"]
        per_profile_lo = p4["LNS_LO_ENTRIES"] // p4["LNS_PROFILES"]
        self.assertEqual((len(t.hi_entries()), len(t.lo_entries())), (per_profile_hi, per_profile_lo))
        self.assertEqual(t.e_saturate, 158 - 24)

    def test_midpoints_of_the_steps(self):
        t = lns_tables(24)
        half_step = 2.0 ** -(HI_BITS + LO_BITS + 1)
        for x in [1.0, -1.0, 0.5, 0.75, -3.25, 2.0 ** -10, 100.0]:
            got = t.to_fixed(gen_tables.f32_bits(x)) / 2 ** 24
            binade = 2.0 ** math.floor(math.log2(abs(x)))
            self.assertAlmostEqual(abs(got) - abs(x), binade * half_step, delta=2.0 ** -24, msg=x)

    def test_relative_error_bound(self):
        rng = random.Random(3)
        t = lns_tables(24)
        bound = 2.0 ** -(HI_BITS + LO_BITS + 1) + 2.0 ** -20
        for _ in range(20000):
            x = gen_tables.f32(rng.uniform(-100, 100))
            if abs(x) < 2 ** -4:
                continue
            got = t.to_fixed(gen_tables.f32_bits(x)) / 2 ** 24
            self.assertLessEqual(abs(got - x) / abs(x), bound, x)

    def test_zero_tiny_huge_nan(self):
        t = lns_tables(24)
        self.assertEqual(t.to_fixed(gen_tables.f32_bits(0.0)), 0)
        self.assertEqual(t.to_fixed(gen_tables.f32_bits(-0.0)), 0)
        self.assertEqual(t.to_fixed(gen_tables.f32_bits(2.0 ** -30)), 0, "below half a unit")
        self.assertEqual(t.to_fixed(gen_tables.f32_bits(1e9)), gen_tables.I32_MAX)
        self.assertEqual(t.to_fixed(gen_tables.f32_bits(-1e9)), -gen_tables.I32_MAX)
        self.assertEqual(t.to_fixed(gen_tables.f32_bits(math.inf)), gen_tables.I32_MAX)
        self.assertEqual(t.to_fixed(0x7FC00000), gen_tables.I32_MAX, "NaN saturates")

    def test_memory(self):
        t = gen_tables.LnsTables(24, 7, 4)
        self.assertEqual(t.memory_bytes(32), 32 * (33 * 128 + 32 * 16) * 4)
        self.assertEqual(round(t.memory_bytes(32) / 1024), 592)

    def test_bad_geometry(self):
        for args in [(31, 7, 0), (24, 0, 0), (24, 12, 12)]:
            with self.assertRaises(ValueError):
                gen_tables.LnsTables(*args)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(gen_tables.main(["--frac-bits", "40"]), 2)
        self.assertIn("frac_bits = 40: expected 0..=30", err.getvalue())


class Measure(unittest.TestCase):
    def test_runs_and_reports(self):
        out = io.StringIO()
        rng = random.Random(1)
        measure.evaluate("random", measure.random_rounds(rng, 4, 300), 4, out)
        text = out.getvalue()
        self.assertIn("fixed:", text)
        for hi, lo in measure.LNS_GEOMETRIES:
            self.assertIn(f"lns:{hi}x{lo}:", text)

    def test_recorded_gradients_are_summed_across_files(self):
        with tempfile.TemporaryDirectory() as d:
            a, b, bad = (os.path.join(d, n) for n in ("a", "b", "bad"))
            with open(a, "wb") as f:
                f.write(struct.pack("<3f", 1.0, -2.5, 0.25))
            with open(b, "wb") as f:
                f.write(struct.pack("<2f", 4.0, 0.5))
            with open(bad, "wb") as f:
                f.write(b"\x00" * 5)
            self.assertEqual(measure.recorded_rounds([a, b]), [[1.0, 4.0], [-2.5, 0.5]])
            with self.assertRaises(ValueError):
                measure.recorded_rounds([a, bad])
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()) as out:
                self.assertEqual(measure.main(["--grads", a, b]), 0)
                self.assertEqual(measure.main(["--grads", a, bad]), 2)
            self.assertIn("recorded gradients (2 workers' files): 2 keys", out.getvalue())

    def test_frac_bits_avoid_saturation(self):
        self.assertEqual(measure.frac_bits_for(8, 1.0), 27)
        self.assertEqual(measure.frac_bits_for(1, 0.001), 30)


if __name__ == "__main__":
    unittest.main()
