"""Runs one control of the P4 program on one packet, from the sources, for
tests of what the pipeline decides (no P4 compiler or software target here).

The sources are parsed by the resource model's parser (p4/fit/p4parse.py);
`Control` executes a control's apply block: its tables (const entries, or
the entries a FakeBackend holds under the table's BfRt name, first match
wins, else the default action), its actions, and its RegisterActions on the
FakeBackend's registers (plain words, {"f1": value}), where the controller's
writes and resets are. Every value is held at its declared width
(wrap-around, saturating |-| and |+|, ++, slices), so that what the test sees
is what the P4 text says. It understands the statements and expressions the
controls it runs use, and raises on anything else.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
P4 = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, P4)

from fit import p4parse  # noqa: E402
from fit.model import Env  # noqa: E402


class EvalError(Exception):
    pass


def program():
    """The parsed default build: (Env, declarations)."""
    decls = p4parse.parse_files([os.path.join(P4, "zebra.p4")])
    return Env(decls)


def path_of(e):
    """"a.b.c" of a member chain, or None."""
    if e[0] == "id":
        return e[1]
    if e[0] == "member":
        base = path_of(e[1])
        return None if base is None else f"{base}.{e[2]}"
    return None


def mask(v, w):
    return v & ((1 << w) - 1) if w else v


class Control:
    """Control `name`, its tables' entries read from `backend` under
    `prefix` (e.g. "pipe.Ingress.member_check."). `widths` gives the width of
    each field path its parameters reach ("hdr.hot.token": 32)."""

    def __init__(self, env, name, backend, prefix, widths):
        self.env = env
        _, _, self.params, locals_, self.body, _ = env.controls[name]
        self.backend = backend
        self.prefix = prefix
        self.widths = dict(widths)
        self.tables, self.actions, self.reg_actions = {}, {}, {}
        self.local_vars = []
        for d in locals_:
            if d[0] == "table":
                self.tables[d[1]] = d[2]
            elif d[0] == "action":
                self.actions[d[1]] = d
            elif d[0] == "var":
                self.local_vars.append((d[2], self.width(d[1]), d[3]))
            elif d[0] == "inst" and d[2][1] == "RegisterAction":
                self.reg_actions[d[1]] = (d[3][0][1], d[4])
        for _, typ, n in self.params:
            if env.fields_of(typ) is None:
                self.widths.setdefault(n, self.width(typ))

    def width(self, typ):
        return 1 if self.env.resolve(typ)[0] == "bool" else self.env.width(typ)

    def run(self, state):
        """Runs the apply block on `state` ({path: value}, updated in place)."""
        for n, w, init in self.local_vars:
            self.widths[n] = w
            state[n] = 0 if init is None else self.value(init, state, {})[0]
        self.execute(self.body, state, {})
        return state

    # -- statements --
    def execute(self, s, state, scope):
        k = s[0]
        if k == "block":
            for t in s[1]:
                self.execute(t, state, scope)
        elif k == "if":
            if self.value(s[1], state, scope)[0]:
                self.execute(s[2], state, scope)
            elif s[3] is not None:
                self.execute(s[3], state, scope)
        elif k == "assign":
            self.assign(s[1], self.value(s[2], state, scope), state, scope)
        elif k == "call":
            self.value(s[1], state, scope)
        else:
            raise EvalError(f"statement {k} is not understood here")

    def assign(self, lhs, val, state, scope):
        p = path_of(lhs)
        if p is None:
            raise EvalError(f"cannot assign to {lhs}")
        if p in scope:
            w = scope[p][1]
            scope[p] = (mask(val[0], w), w)
            return
        state[p] = mask(val[0], self.field_width(p))

    def field_width(self, p):
        if p not in self.widths:
            raise EvalError(f"no width known for {p}")
        return self.widths[p]

    # -- expressions: (value, width or None for an unsized constant) --
    def value(self, e, state, scope):
        k = e[0]
        if k == "int":
            return mask(e[1], e[2]), e[2]
        if k == "bool":
            return int(e[1]), 1
        if k in ("id", "member"):
            p = path_of(e)
            if p in scope:
                return scope[p]
            if p in state:
                return state[p], self.field_width(p)
            c = self.env.eval(e)
            if c is not None:
                return c, None
            raise EvalError(f"{p} has no value")
        if k == "cast":
            v, _ = self.value(e[2], state, scope)
            w = self.width(e[1])
            return (int(bool(v)) if w == 1 and self.env.resolve(e[1])[0] == "bool" else mask(v, w)), w
        if k == "slice":
            v, _ = self.value(e[1], state, scope)
            hi, lo = self.env.const(e[2]), self.env.const(e[3])
            return mask(v >> lo, hi - lo + 1), hi - lo + 1
        if k == "un":
            v, w = self.value(e[2], state, scope)
            if e[1] == "!":
                return int(not v), 1
            if e[1] == "~":
                return mask(~v, w), w
            return mask(-v, w), w
        if k == "bin":
            return self.binary(e, state, scope)
        if k == "call":
            return self.call(e, state, scope)
        raise EvalError(f"expression {k} is not understood here")

    def binary(self, e, state, scope):
        op = e[1]
        if op in ("&&", "||"):
            a = self.value(e[2], state, scope)[0]
            if (op == "&&") != bool(a):
                return int(bool(a)), 1
            return int(bool(self.value(e[3], state, scope)[0])), 1
        (a, wa), (b, wb) = self.value(e[2], state, scope), self.value(e[3], state, scope)
        if op == "++":
            return (a << wb) | b, wa + wb
        w = wa or wb
        cmp = {"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}
        if op in cmp:
            return int(cmp[op]), 1
        if op == "|-|":
            return max(a - b, 0), w
        if op == "|+|":
            return min(a + b, (1 << w) - 1), w
        out = {"+": a + b, "-": a - b, "&": a & b, "|": a | b, "^": a ^ b, "<<": a << b, ">>": a >> b}
        if op not in out:
            raise EvalError(f"operator {op} is not understood here")
        return mask(out[op], w), w

    def call(self, e, state, scope):
        target, args = e[1], e[3]
        if target[0] == "member" and target[2] == "apply" and path_of(target[1]) in self.tables:
            self.apply_table(path_of(target[1]), state)
            return 0, None
        if target[0] == "id" and target[1] in self.actions:
            self.run_action(target[1], {}, state)
            return 0, None
        if target[0] == "member" and target[2] in ("setValid", "setInvalid"):
            state[path_of(target[1]) + ".$valid"] = int(target[2] == "setValid")
            return 0, None
        if target[0] == "member" and target[2] == "execute":
            return self.execute_register(path_of(target[1]), self.value(args[0], state, scope)[0], state, scope)
        raise EvalError(f"call of {target} is not understood here")

    # -- tables, actions, registers --
    def apply_table(self, name, state):
        tbl = self.tables[name]
        keys = [(path_of(k), self.value(k, state, {})[0]) for k, _ in tbl["keys"]]
        if tbl["entries"]:
            for ks, act in tbl["entries"]:
                items = ks[1] if ks[0] == "tuple" else [ks]
                if all(self.matches(item, v) for item, (_, v) in zip(items, keys)):
                    return self.call_action(act, state)
        else:
            for key, action, data in self.backend.entries(self.prefix + name):
                if all(self.backend_matches(key[p], v) for p, v in keys):
                    return self.run_action(action, data, state)
        return self.call_action(tbl["default"], state)

    def matches(self, item, v):
        if item[0] in ("dontcare", "default"):
            return True
        if item[0] == "mask":
            val, m = self.env.const(item[1]), self.env.const(item[2])
            return v & m == val & m
        return v == self.env.const(item)

    @staticmethod
    def backend_matches(k, v):
        if isinstance(k, tuple):
            return v & k[1] == k[0] & k[1]
        return v == k

    def call_action(self, act, state):
        if act[0] == "id":
            return self.run_action(act[1], {}, state)
        name = path_of(act[1])
        params = self.actions[name][2]
        data = {p[2]: self.env.const(a) for p, a in zip(params, act[3])}
        return self.run_action(name, data, state)

    def run_action(self, name, data, state):
        _, _, params, body, _ = self.actions[name]
        scope = {}
        for _, typ, n in params:
            w = self.width(typ)
            scope[n] = (mask(data[n], w), w)
        self.execute(body, state, scope)

    def execute_register(self, name, index, state, scope):
        register, (params, body) = self.reg_actions[name]
        where = self.prefix + register
        (_, t_cell, cell), (_, t_out, out) = params
        local = dict(scope)
        local[cell] = (self.backend.register_read(where, index).get("f1", 0), self.width(t_cell))
        local[out] = (0, self.width(t_out))
        self.execute(body, state, local)
        self.backend.register_write(where, index, {"f1": local[cell][0]})
        return local[out]
