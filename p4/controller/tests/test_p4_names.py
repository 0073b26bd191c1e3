"""Every BfRt name, action, action parameter and key field the controller
uses exists in the P4 sources: pipe.<control>.<instance>...<object> is
resolved through the controls' instance declarations."""

import re
import unittest

from tests.common import p4_all, p4_consts
from zebra_ctl import program as P
from zebra_ctl.backend import FakeBackend
from zebra_ctl.controller import Controller
from zebra_ctl.controls import all_controls
from zebra_ctl.plan import plan_job
from zebra_ctl.ports import PortsConfig
from tests.common import data, hotpath

DECL = re.compile(r"(?:^|(?<=;))\s*(\w+)(?:<[^;{}]*?>)?\s*\([^;{}]*\)\s+(\w+)\s*;", re.M)


def blocks():
    """{name: body} of every control and parser, with declarations preprocessor-free."""
    out = {}
    text = "\n".join(p4_all().values())
    for m in re.finditer(r"\b(control|parser)\s+(\w+)\s*\(", text):
        start = text.index("{", m.end())
        depth, i = 0, start
        while True:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out[m.group(2)] = text[start:i]
    return out


def resolve(path):
    """The body of the control that owns the last component, and that component."""
    b = blocks()
    parts = path.split(".")
    assert parts[0] == "pipe", path
    body = b[parts[1]]
    for inst in parts[2:-1]:
        types = {name: ty for ty, name in DECL.findall(body)}
        assert inst in types, f"{path}: no instance {inst}"
        body = b[types[inst]]
    return body, parts[-1]


def evaluate_slices(key, env):
    """value[22:23 - LNS_HI_BITS] -> value[22:16], as BfRt names the field."""

    def ev(m):
        lo_hi = [str(eval(part, {"__builtins__": {}}, env)) for part in m.group(1).split(":")]
        return "[" + ":".join(lo_hi) + "]"

    return re.sub(r"\[([^\]]+)\]", ev, key)


def declares(body, name):
    return bool(
        re.search(r"\btable\s+" + name + r"\b", body)
        or re.search(r"\b(Register|Counter|value_set|Digest)\s*<[^;]*>\s*\([^;]*\)\s+" + name + r"\s*;", body)
    )


class Names(unittest.TestCase):
    def plan(self, build="fixed"):
        hp = hotpath(data("tofino.conf"))
        if build == "lns":
            hp.job.number = "f32"
        return plan_job(hp, PortsConfig.load(data("ports.conf")), build, 24 if build == "lns" else None)

    def test_registers_counters_tables_value_sets(self):
        names = list(P.REGISTER_SIZES) + P.COUNTERS + P.TABLES + P.LNS_TABLES + [P.PORTS, P.SESSIONS, P.WORKER_DIGEST]
        for name in names:
            body, last = resolve(name)
            self.assertTrue(declares(body, last), f"{name}: {last} not declared there")

    def assert_entry(self, table, key, action, data_, env):
        """The table, its key fields, the action and its parameters are the P4 program's."""
        body, last = resolve(table)
        if action is None:
            self.assertTrue(re.search(r"value_set<[^>]*>\(\d+\)\s+" + last, body), table)
            return
        tm = re.search(r"\btable\s+" + last + r"\s*\{(.*?)\n    \}", body, re.S)
        self.assertIsNotNone(tm, table)
        keyblock = re.search(r"key\s*=\s*\{([^}]*)\}", tm.group(1)).group(1)
        declared = [evaluate_slices(k, env)
                    for k in re.findall(r"\s*(.+?)\s*:\s*(?:exact|ternary|lpm|range)\s*;", keyblock)]
        self.assertEqual(sorted(declared), sorted(key), f"{table} key fields")
        self.assertRegex(tm.group(1), r"actions\s*=\s*\{[^}]*\b" + action + r"\s*;", f"{table}: action {action}")
        am = re.search(r"\baction\s+" + action + r"\s*\(([^)]*)\)", body)
        self.assertIsNotNone(am, f"{table}: action {action}")
        params = [p.split()[-1] for p in am.group(1).split(",") if p.strip()]
        self.assertEqual(params, list(data_), f"{table}: {action} parameters")

    def test_actions_parameters_and_keys(self):
        b = FakeBackend(P.REGISTER_SIZES)
        env = p4_consts()
        seen = set()
        for build in ("fixed", "lns"):
            plan = self.plan(build)
            for control in all_controls(b):
                for table, key, action, data_ in control.entries(plan) + control.switch_entries(plan):
                    shape = (table, action, tuple(sorted(key)), tuple(data_))
                    if shape not in seen:
                        seen.add(shape)
                        self.assert_entry(table, key, action, data_, env)

    def test_pull_half_entries_and_digest(self):
        """What the controller writes when it learns a worker and a server
        registers, and the digest fields it reads."""
        b = FakeBackend(P.REGISTER_SIZES)
        c = Controller(b)
        c.load(hotpath(data("tofino.conf")), PortsConfig.load(data("ports.conf")))
        b.digest(P.WORKER_DIGEST, job=7, worker=1, port=1, mac=0x0CC47A000001, ip=0x0A000001, udp_port=40000)
        c.step(0)
        env = p4_consts()
        for table in P.UPDATE_TABLES:
            entries = b.entries(table)
            self.assertTrue(entries, f"{table}: nothing written")
            for key, action, data_ in entries:
                self.assert_entry(table, key, action, data_, env)
        struct = re.search(r"struct\s+worker_digest_t\s*\{([^}]*)\}", p4_all()["headers.p4"]).group(1)
        fields = tuple(decl.split()[-1] for decl in struct.split(";") if decl.strip())
        self.assertEqual(fields, P.WORKER_DIGEST_FIELDS)
        deparser = blocks()["IngressDeparser"]
        self.assertRegex(deparser, r"Digest<worker_digest_t>\(\)\s+worker_digest\s*;")
        packed = re.search(r"worker_digest\.pack\(\{([^}]*)\}\)", deparser).group(1)
        self.assertEqual(len(packed.split(",")), len(fields), "pack() fills every field")

    def test_default_actions(self):
        b = FakeBackend(P.REGISTER_SIZES)
        plan = self.plan()
        for control in all_controls(b):
            control.install_switch(plan)
            control.install(plan)
        for table, (action, data_) in b.defaults.items():
            body, _ = resolve(table)
            am = re.search(r"\baction\s+" + action + r"\s*\(([^)]*)\)", body)
            params = [p.split()[-1] for p in am.group(1).split(",") if p.strip()]
            self.assertEqual(params, list(data_), table)


if __name__ == "__main__":
    unittest.main()
