"""The resource model on small P4 snippets, and on the program itself."""

import os
import unittest

from fit import analysis, model, p4parse, tofino

P4 = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SKELETON = """
header h32_t { bit<32> a; bit<16> b; bit<4> c; bit<4> d; }
struct headers_t { h32_t h; %(extra_headers)s }
struct md_t { bit<32> x; bit<32> y; bool f; bit<3> g; }
struct emd_t { bit<8> z; }
parser IP(packet_in pkt, out headers_t hdr, out md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start { pkt.extract(ig_intr_md); pkt.advance(PORT_METADATA_SIZE); pkt.extract(hdr.h); %(parse)s transition accept; }
}
control I(inout headers_t hdr, inout md_t md, in ingress_intrinsic_metadata_t ig_intr_md,
          in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
          inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
          inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    %(locals)s
    apply { %(apply)s }
}
control ID(packet_out pkt, inout headers_t hdr, in md_t md, in ingress_intrinsic_metadata_for_deparser_t d) {
    apply { pkt.emit(hdr.h); }
}
parser EP(packet_in pkt, out headers_t hdr, out emd_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); transition accept; }
}
control E(inout headers_t hdr, inout emd_t md, in egress_intrinsic_metadata_t eg_intr_md,
          in egress_intrinsic_metadata_from_parser_t p, inout egress_intrinsic_metadata_for_deparser_t d,
          inout egress_intrinsic_metadata_for_output_port_t o) {
    apply { }
}
control ED(packet_out pkt, inout headers_t hdr, in emd_t md, in egress_intrinsic_metadata_for_deparser_t d) {
    apply { }
}
Pipeline(IP(), I(), ID(), EP(), E(), ED()) pipe;
Switch(pipe) main;
"""


def program(apply="", locals_="", extra_headers="", parse=""):
    text = SKELETON % {"apply": apply, "locals": locals_, "extra_headers": extra_headers, "parse": parse}
    return analysis.analyse(p4parse.parse_text(text))


def row(res, prefix):
    for r in res.rows:
        if r[0].startswith(prefix):
            return r
    raise KeyError(prefix)


def op(gress, name):
    return next(o for o in gress.ops if o.name.endswith(name))


class ParserTest(unittest.TestCase):
    def test_constants_types_and_enums(self):
        decls = p4parse.parse_text("""
            const int A = 3;
            const bit<32> B = (A + 1) << 4;
            typedef bit<(A * 2)> six_t;
            enum bit<8> e_t { X = 1, Y, Z = 7 }
            header h_t { six_t s; bit<2> t; e_t e; bit<32>[0:0] dummy; }
        """.replace("bit<32>[0:0] dummy;", ""))
        env = model.Env(decls)
        self.assertEqual(env.consts["B"], 64)
        self.assertEqual(env.enums["e_t"][1], {"X": 1, "Y": 2, "Z": 7})
        self.assertEqual(env.width(("name", "h_t", [])), 6 + 2 + 8)

    def test_shift_versus_nested_generics(self):
        decls = p4parse.parse_text("""
            control C(inout bit<32> x) {
                Register<bit<32>, bit<16>>(16, 0) r;
                RegisterAction<bit<32>, bit<16>, bit<32>>(r) ra = {
                    void apply(inout bit<32> v, out bit<32> o) { o = v >> 2; }
                };
                apply { x = (x >> 3) >= 4 ? 32w1 : 32w0; }
            }""")
        stmt = decls[0][4][1][0]                  # x = (x >> 3) >= 4 ? ...
        self.assertEqual(stmt[2][1][1], ">=")
        self.assertEqual(stmt[2][1][2][1], ">>")

    def test_unknown_constructs_are_errors(self):
        for text in ("control C() { apply { switch (x) { } } }",
                     "extern E { }",
                     "#define MAX(a) a\n",
                     "#include <v1model.p4>\n",
                     "control C() { apply { x = 1 } }"):
            with self.assertRaises(p4parse.P4Error, msg=text):
                p4parse.parse_text(text)

    def test_ifdef(self):
        text = "#ifdef X\nconst int A = 1;\n#else\nconst int A = 2;\n#endif\n"
        self.assertEqual(model.Env(p4parse.parse_text(text, defines={"X"})).consts["A"], 1)
        self.assertEqual(model.Env(p4parse.parse_text(text)).consts["A"], 2)


class PhvTest(unittest.TestCase):
    def test_containers_of_a_field(self):
        self.assertEqual(analysis.containers(48), {8: 0, 16: 1, 32: 1})
        self.assertEqual(analysis.containers(9), {8: 0, 16: 1, 32: 0})
        self.assertEqual(analysis.containers(64), {8: 0, 16: 0, 32: 2})

    def test_mau_fields_normal_others_tagalong(self):
        res, gs = program(apply="hdr.h.a = hdr.h.a + 1;")
        info = res.details["phv"]["info"]["ingress"]
        n, t = info["headers"]
        self.assertEqual(n, {8: 0, 16: 0, 32: 1})          # a
        self.assertEqual(t, {8: 1, 16: 1, 32: 0})          # b, c+d in one byte

    def test_parser_exclusive_headers_overlay(self):
        extra = "h32_t p; h32_t q;"
        parse = "transition select(hdr.h.c) { 1 : sp; default : sq; } } state sp { pkt.extract(hdr.p); transition accept; } state sq { pkt.extract(hdr.q);"
        res, _ = program(extra_headers=extra, parse=parse, apply="hdr.p.a = 1; hdr.q.a = 2;")
        info = res.details["phv"]["info"]["ingress"]
        n, _ = info["headers"]
        self.assertEqual(n[32], 1)                          # p.a and q.a share
        self.assertEqual(info["headers_all"][0][32], 2)

    def test_metadata_packing(self):
        res, _ = program(apply="md.f = true; md.g = 3; md.x = md.y;")
        meta = res.details["phv"]["info"]["ingress"]["meta"]
        self.assertEqual(meta, {8: 1, 16: 0, 32: 2})


class StageTest(unittest.TestCase):
    LOCALS = """
        action set_x(bit<32> v) { md.x = v; }
        action set_y(bit<32> v) { md.y = v; }
        table t1 { key = { hdr.h.a : exact; } actions = { set_x; } size = 1024; }
        table t2 { key = { md.x : exact; } actions = { set_y; } size = 1024; }
        table t3 { key = { hdr.h.b : exact; } actions = { set_y; } size = 1024; }
    """

    def test_match_dependency_costs_a_stage(self):
        _, gs = program(locals_=self.LOCALS, apply="t1.apply(); t2.apply();")
        self.assertEqual(op(gs[0], "t1").stage, 0)
        self.assertEqual(op(gs[0], "t2").stage, 1)

    def test_independent_tables_share_a_stage(self):
        _, gs = program(locals_=self.LOCALS, apply="t1.apply(); t3.apply();")
        self.assertEqual(op(gs[0], "t3").stage, 0)

    def test_two_sides_of_an_if_do_not_depend(self):
        _, gs = program(apply="if (hdr.h.c == 1) { md.x = 1; } else if (md.x == 2) { md.y = 3; }")
        self.assertEqual(op(gs[0], "md.y =").stage, 0)

    def test_expression_depth(self):
        _, gs = program(apply="md.x = ((hdr.h.a - md.y) >> 5) + 7; md.y = md.x;")
        self.assertEqual(op(gs[0], "md.x =").depth, 3)
        self.assertEqual(op(gs[0], "md.y =").stage, 3)

    def test_four_stateful_alus_a_stage(self):
        regs = "".join(f"""
            Register<bit<32>, bit<16>>(1024, 0) r{i};
            RegisterAction<bit<32>, bit<16>, bit<32>>(r{i}) a{i} = {{
                void apply(inout bit<32> v) {{ v = v + 1; }} }};""" for i in range(6))
        calls = "".join(f"a{i}.execute(hdr.h.b);" for i in range(6))
        res, gs = program(locals_=regs, apply=calls)
        stages = sorted(o.stage for o in gs[0].ops if o.registers)
        self.assertEqual(stages, [0, 0, 0, 0, 1, 1])
        self.assertTrue(res.fits, [r for r in res.rows if not r[4]])

    def test_register_memory(self):
        self.assertEqual(analysis.array_rams(16384, 64), 9)
        self.assertEqual(analysis.array_rams(131072, 32), 33)


class CanFailTest(unittest.TestCase):
    """The check is not vacuous: programs over a limit are reported so."""

    def test_too_many_phv_bits(self):
        extra = " ".join(f"h32_t w{i};" for i in range(80))
        parse = " ".join(f"pkt.extract(hdr.w{i});" for i in range(80))
        apply = " ".join(f"hdr.w{i}.a = hdr.w{i}.a + 1; hdr.w{i}.b = 1;" for i in range(80))
        res, _ = program(extra_headers=extra, parse=parse, apply=apply)
        self.assertFalse(res.fits)
        self.assertFalse(row(res, "PHV both gresses: 32-bit")[4])

    def test_too_many_stages(self):
        chain = " ".join(f"md.x = md.x + {i};" for i in range(13))
        res, _ = program(apply=chain)
        self.assertFalse(row(res, "MAU stages, ingress")[4])
        self.assertEqual(row(res, "MAU stages, ingress")[1], 13)

    def test_register_too_large_for_a_stage(self):
        regs = """Register<bit<64>, bit<32>>(1048576, 0) big;
            RegisterAction<bit<64>, bit<32>, bit<32>>(big) a = { void apply(inout bit<64> v) { v = v; } };"""
        res, _ = program(locals_=regs, apply="a.execute(hdr.h.a);")
        self.assertFalse(res.fits)


class PassesTest(unittest.TestCase):
    def test_strict_packets_carry_at_most_one_pair_per_register(self):
        decls = p4parse.parse_text("const int PAIRS_PER_PASS = 21;\nconst int REGISTERS = 16;\n")
        res = analysis.Result()
        analysis.passes(model.Env(decls), res, {"keys": 32000, "workers": 2, "packet": 192})
        p = res.details["passes"]
        self.assertEqual((p["per_packet"], p["hot_packets"], p["rows"]), (16, 4000, 2000))


class ProgramTest(unittest.TestCase):
    def test_program_parses_in_both_builds(self):
        for defines in ((), ("ZEBRA_LNS",)):
            decls = p4parse.parse_files([os.path.join(P4, "zebra.p4")], defines=set(defines))
            res, gs = analysis.analyse(decls)
            self.assertEqual([g.name for g in gs], ["ingress", "egress"])
            self.assertTrue(any(o.registers for o in gs[0].ops))

    def test_zebra_fits_tofino1(self):
        """The program fits one Tofino 1 pipe, by the model (python3 p4/resources.py), with at least
        10 % of the normal PHV bits and one MAU stage in each gress to spare."""
        res, _ = analysis.analyse(p4parse.parse_files([os.path.join(P4, "zebra.p4")]))
        over = [f"{r[0]}: {r[1]} > {r[2]}" for r in res.rows if not r[4]]
        self.assertEqual(over, [], "over the limit:\n  " + "\n  ".join(over))
        rows = {r[0]: r[1] for r in res.rows}
        bits = int(rows["PHV both gresses: normal bits"])
        self.assertLessEqual(bits, 0.9 * sum(s * n for s, n in tofino.PHV.items()), "PHV margin")
        for gress in ("ingress", "egress"):
            self.assertLess(rows[f"MAU stages, {gress}"], tofino.STAGES, f"a spare {gress} stage")

    def test_the_table_build_is_reported_separately(self):
        """-D ZEBRA_LNS (per-register float tables) is an option the model reports on its own; it
        does not fit one pipe (docs/P4.md, "Resources"): the check says so instead of hiding it."""
        res, _ = analysis.analyse(p4parse.parse_files([os.path.join(P4, "zebra.p4")], defines={"ZEBRA_LNS"}))
        self.assertFalse(res.fits)

if __name__ == "__main__":
    unittest.main()
