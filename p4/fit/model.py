"""The resource model: from the parsed program (p4parse) to what one Tofino 1
pipe must hold.

1. Elaboration. `Pipeline(IP(), I(), ID(), EP(), E(), ED()) pipe;` names the
   two gresses. Each control is inlined into its caller, parameters bound to
   the caller's fields, so that every table, register action, hash and
   assignment becomes one operation (Op) with the fields it reads and writes.
2. PHV. Every field a gress's parser, controls or deparser names, put in
   8/16/32-bit containers; header fields only parsed and deparsed may go to
   tagalong containers; headers never extracted on the same parser path share
   containers (the best case of the compiler's overlay).
3. Stages. Ops in program order, each at the first stage after the ops whose
   results it reads (match and action dependencies both cost a stage) with
   room for its tables, stateful ALUs, counters, hash slices and memories;
   ingress first, then egress in what is left of each stage.
4. Memories. SRAM/TCAM blocks from table sizes, key and action-data widths;
   register and counter arrays from their sizes, plus one spare block each.

Every simplification is listed in ASSUMPTIONS, which the report prints.
"""

import math

from . import tofino as T
from .p4parse import P4Error

ASSUMPTIONS = [
    "Never compiled: these are estimates from the sources, not bf-p4c output.",
    "PHV: a field of w bits takes ceil(w/32) 32-bit containers for each whole 32 bits, then one 16- or 8-bit "
    "container for the rest (9..16 bits: 16-bit); metadata fields under 8 bits are packed into 8-bit containers; "
    "consecutive sub-byte header fields share a byte. No two unrelated fields share a container otherwise.",
    "PHV: header fields read or written by a control are in normal containers; fields only parsed, emitted or "
    "used by a deparser extern go to tagalong containers while they last, then to normal ones.",
    "PHV overlay: headers extracted on different parser paths share containers (the largest path counts); "
    "headers a control makes valid (setValid) count on every path; metadata and temporaries never overlay.",
    "PHV: each gress gets whole container groups (8 x 8-bit, 8 x 16-bit, 4 x 32-bit); a 32-bit need may be met "
    "by two 16-bit containers and a 16-bit need by a 32-bit one when a size runs out.",
    "Stages: an op reading a field written by an earlier op starts in a later stage (match and action "
    "dependencies alike); writing a field another op read or wrote may share its stage.",
    "Stages: an assignment of an expression tree of depth d (each operator with a non-constant operand is one "
    "ALU instruction; casts, slices and concatenation are free) takes d stages; a condition comparing two "
    "fields with < > <= >=, or masking a field with another, costs one stage before its gateway.",
    "Stages: an in-argument bound to an expression is computed into a temporary before the call.",
    "Stages: ingress is placed first; egress uses what is left of each stage (the two share the stages).",
    "Memories: exact-match entries hold key + action data + 4 bits, packed into 128-bit words; ternary keys "
    "take ceil(bits/44) TCAMs per 512 entries; a table with no key takes no RAM.",
    "Memories: a register or counter array takes ceil(entries x width / (1024 x 128)) RAMs plus one spare; "
    "all of them on the stage's right side (48 RAMs); a Counter entry is its declared width.",
    "Not modelled: gateway and input-crossbar limits, action-data bus, PHV packing constraints of ALU "
    "operands, parser TCAM entries, and the compiler's own heuristics.",
]

# TNA built-ins: widths of the intrinsic metadata fields (tna.p4 / tofino.p4).
TNA_TYPEDEFS = {"PortId_t": 9, "MirrorId_t": 10, "MulticastGroupId_t": 16, "QueueId_t": 5,
                "MirrorType_t": 3, "ReplicationId_t": 16, "L1ExclusionId_t": 16, "L2ExclusionId_t": 9}
TNA_STRUCTS = {
    "ingress_intrinsic_metadata_t": [("resubmit_flag", 1), ("_pad1", 1), ("packet_version", 2), ("_pad2", 3),
                                     ("ingress_port", 9), ("ingress_mac_tstamp", 48)],
    "ingress_intrinsic_metadata_from_parser_t": [("global_tstamp", 48), ("global_ver", 32), ("parser_err", 16)],
    "ingress_intrinsic_metadata_for_deparser_t": [("drop_ctl", 3), ("digest_type", 3), ("resubmit_type", 3),
                                                  ("mirror_type", 3)],
    "ingress_intrinsic_metadata_for_tm_t": [("ucast_egress_port", 9), ("bypass_egress", 1), ("deflect_on_drop", 1),
                                            ("ingress_cos", 3), ("qid", 5), ("icos_for_copy", 3),
                                            ("copy_to_cpu", 1), ("packet_color", 2), ("disable_ucast_cutthru", 1),
                                            ("enable_mcast_cutthru", 1), ("mcast_grp_a", 16), ("mcast_grp_b", 16),
                                            ("level1_mcast_hash", 13), ("level2_mcast_hash", 13),
                                            ("level1_exclusion_id", 16), ("level2_exclusion_id", 9), ("rid", 16)],
    "egress_intrinsic_metadata_t": [("egress_port", 9), ("enq_qdepth", 19), ("enq_congest_stat", 2),
                                    ("enq_tstamp", 32), ("deq_qdepth", 19), ("deq_congest_stat", 2),
                                    ("app_pool_congest_stat", 8), ("deq_timedelta", 32), ("egress_rid", 16),
                                    ("egress_rid_first", 1), ("egress_qid", 5), ("egress_cos", 3),
                                    ("deflection_flag", 1), ("pkt_length", 16)],
    "egress_intrinsic_metadata_from_parser_t": [("global_tstamp", 48), ("global_ver", 32), ("parser_err", 16)],
    "egress_intrinsic_metadata_for_deparser_t": [("drop_ctl", 3), ("mirror_type", 3), ("coal_flush", 1),
                                                 ("coal_length", 7)],
    "egress_intrinsic_metadata_for_output_port_t": [("capture_tstamp_on_tx", 1), ("update_delay_on_tx", 1),
                                                    ("force_tx_error", 1)],
}
TNA_CONSTS = {"PORT_METADATA_SIZE": 64}
TNA_ENUMS = {"HashAlgorithm_t", "CounterType_t", "MeterType_t", "SelectorMode_t"}
EXTERNS = {"Register", "RegisterAction", "Hash", "Counter", "DirectCounter", "Checksum", "Mirror", "Resubmit",
           "Digest", "ParserCounter", "Meter", "Random"}


class Env:
    """Global declarations: constants, types, enums, headers, structs, parsers, controls."""

    def __init__(self, decls):
        self.consts = dict(TNA_CONSTS)
        self.typedefs = {}
        self.enums = {}
        self.headers = {}
        self.structs = {}
        self.parsers = {}
        self.controls = {}
        self.insts = []
        for d in decls:
            kind = d[0]
            if kind == "const":
                self.consts[d[1]] = self.eval(d[3])
            elif kind == "typedef":
                self.typedefs[d[1]] = d[2]
            elif kind == "enum":
                width = self.width(d[2]) if d[2] else 32
                vals, nxt = {}, 0
                for m, v in d[3]:
                    vals[m] = self.eval(v) if v is not None else nxt
                    nxt = vals[m] + 1
                self.enums[d[1]] = (width, vals)
            elif kind == "header":
                self.headers[d[1]] = d[2]
            elif kind == "struct":
                self.structs[d[1]] = d[2]
            elif kind == "parser":
                self.parsers[d[1]] = d
            elif kind == "control":
                self.controls[d[1]] = d
            elif kind == "inst":
                self.insts.append(d)
            else:
                raise P4Error(f"declaration {kind} not understood")

    def eval(self, e, scope=None):
        """A constant expression's value, or None if it is not constant."""
        k = e[0]
        if k == "int":
            return e[1]
        if k == "bool":
            return int(e[1])
        if k == "id":
            if scope is not None and e[1] in scope:
                b = scope[e[1]]
                return b[1] if b[0] == "const" else None
            return self.consts.get(e[1])
        if k == "member" and e[1][0] == "id" and e[1][1] in self.enums:
            vals = self.enums[e[1][1]][1]
            if e[2] not in vals:
                raise P4Error(f"{e[1][1]} has no member {e[2]}")
            return vals[e[2]]
        if k == "member" and e[1][0] == "id" and e[1][1] in TNA_ENUMS:
            return 0
        if k == "cast":
            v = self.eval(e[2], scope)
            if v is None:
                return None
            w = self.width(e[1]) if e[1][0] != "bool" else 1
            return v & ((1 << w) - 1) if e[1][0] == "bit" or e[1][0] == "name" else v
        if k == "un":
            v = self.eval(e[2], scope)
            if v is None:
                return None
            return {"-": -v, "~": ~v, "!": int(not v)}[e[1]]
        if k == "bin":
            a, b = self.eval(e[2], scope), self.eval(e[3], scope)
            if a is None or b is None:
                return None
            op = e[1]
            ops = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
                   "<<": a << b if b < 4096 else None, ">>": a >> b, "==": int(a == b), "!=": int(a != b),
                   "<": int(a < b), ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b),
                   "&&": int(bool(a and b)), "||": int(bool(a or b)), "|+|": a + b, "|-|": a - b}
            if op in ("/", "%"):
                return a // b if op == "/" else a % b
            return ops.get(op)
        if k == "cond":
            c = self.eval(e[1], scope)
            return None if c is None else self.eval(e[2] if c else e[3], scope)
        return None

    def const(self, e, what="value"):
        v = self.eval(e)
        if v is None:
            raise P4Error(f"{what} is not a constant: {e}")
        return v

    def resolve(self, typ):
        while typ[0] == "name" and typ[1] in self.typedefs:
            typ = self.typedefs[typ[1]]
        return typ

    def width(self, typ):
        typ = self.resolve(typ)
        k = typ[0]
        if k in ("bit", "int"):
            return self.const(typ[1], "a width")
        if k == "bool":
            return 1
        if k == "stack":
            return self.width(typ[1]) * self.const(typ[2], "a stack size")
        if k == "name":
            n = typ[1]
            if n in TNA_TYPEDEFS:
                return TNA_TYPEDEFS[n]
            if n in self.enums:
                return self.enums[n][0]
            if n in self.headers or n in self.structs:
                return sum(w for _, w in self.leaves(typ))
            if n in TNA_STRUCTS:
                return sum(w for _, w in TNA_STRUCTS[n])
        raise P4Error(f"no width for type {typ}")

    def fields_of(self, typ):
        """[(name, type)] of a header or struct type, or None."""
        typ = self.resolve(typ)
        if typ[0] != "name":
            return None
        n = typ[1]
        if n in self.headers:
            return self.headers[n]
        if n in self.structs:
            return self.structs[n]
        if n in TNA_STRUCTS:
            return [(f, ("bit", ("int", w, None))) for f, w in TNA_STRUCTS[n]]
        return None

    def is_header(self, typ):
        typ = self.resolve(typ)
        return typ[0] == "name" and typ[1] in self.headers

    def leaves(self, typ, prefix=""):
        """[(suffix, width)] of the scalar fields under a type."""
        typ = self.resolve(typ)
        if typ[0] == "stack":
            n = self.const(typ[2], "a stack size")
            out = []
            for i in range(n):
                out += self.leaves(typ[1], f"{prefix}[{i}]")
            return out
        fs = self.fields_of(typ)
        if fs is None:
            return [(prefix, self.width(typ))]
        out = []
        for f, ft in fs:
            out += self.leaves(ft, f"{prefix}.{f}")
        return out

    def type_at(self, typ, suffix):
        """The type at `suffix` (".a[3].b") under `typ`."""
        import re
        for part in re.findall(r"\.[A-Za-z_$][\w$]*|\[\d+\]", suffix):
            typ = self.resolve(typ)
            if part.startswith("["):
                if typ[0] != "stack":
                    raise P4Error(f"index into a non-stack type {typ}")
                typ = typ[1]
            elif part == ".$valid":
                return ("bool",)
            else:
                fs = self.fields_of(typ)
                if fs is None:
                    raise P4Error(f"member {part} of non-struct type {typ}")
                for f, ft in fs:
                    if f == part[1:]:
                        typ = ft
                        break
                else:
                    raise P4Error(f"type {typ[1]} has no field {part[1:]}")
        return typ


class Op:
    """One unit of work for the MAU: a table, a register action, a hash, an
    assignment, a counter update or a direct action call."""

    __slots__ = ("kind", "name", "reads", "writes", "depth", "registers", "counters", "hash_bits", "table",
                 "where", "stage", "branch")

    def __init__(self, kind, name, reads, writes, depth=1, where=None):
        self.kind, self.name = kind, name
        self.reads, self.writes = set(reads), set(writes)
        self.depth = depth
        self.registers = []     # Register instance names this op executes
        self.counters = []      # Counter instance names this op updates
        self.hash_bits = 0
        self.table = None       # (name, info) for tables
        self.where = where
        self.stage = None
        self.branch = {}        # if-statement id -> side: ops on two sides of one if never run together

    def __repr__(self):
        return f"Op({self.kind} {self.name} d={self.depth} s={self.stage})"


class Gress:
    """What elaboration found for one gress."""

    def __init__(self, name):
        self.name = name
        self.ops = []
        self.types = {}         # root path -> type (params, locals, temporaries)
        self.mau_fields = set()
        self.parde_fields = set()
        self.valid_set = set()  # header paths a control makes valid
        self.paths = []         # parser paths: [set of header paths extracted]
        self.registers = {}     # name -> (entries, width)
        self.counters = {}      # name -> (entries, width)
        self.hdr_root = None
        self.md_roots = []


def _path_overlap(a, b):
    return a == b or a.startswith(b + ".") or a.startswith(b + "[") or b.startswith(a + ".") or b.startswith(a + "[")


class Elaborator:
    def __init__(self, env):
        self.env = env
        self.tmp = 0
        self.ifs = 0
        self.branch = {}

    # ---- top level ----
    def pipeline(self):
        pipes = [d for d in self.env.insts if d[2][0] == "name" and d[2][1] == "Pipeline"]
        if len(pipes) != 1:
            raise P4Error("expected exactly one `Pipeline(...)` instance")
        args = pipes[0][3]
        names = []
        for a in args:
            if a[0] != "call" or a[1][0] != "id":
                raise P4Error("Pipeline arguments must be `Name()` instantiations")
            names.append(a[1][1])
        if len(names) != 6:
            raise P4Error("Pipeline takes six blocks")
        return [self.gress("ingress", *names[0:3]), self.gress("egress", *names[3:6])]

    def gress(self, name, pname, cname, dname):
        g = Gress(name)
        self.g = g
        parser = self.env.parsers.get(pname)
        control = self.env.controls.get(cname)
        deparser = self.env.controls.get(dname)
        if not parser or not control or not deparser:
            raise P4Error(f"{name}: unknown parser/control/deparser {pname}/{cname}/{dname}")
        # the roots: the control's parameters, named as the control names them
        cparams = control[2]
        scope = {}
        for direction, typ, pn in cparams:
            scope[pn] = ("path", pn)
            g.types[pn] = typ
        g.hdr_root = cparams[0][2]
        for direction, typ, pn in cparams[1:]:
            if typ[0] == "name" and typ[1] in self.env.structs:
                g.md_roots.append(pn)
        self.control_body(control, scope, cname, [])
        self.parser(parser, cparams)
        self.deparser(deparser, cparams)
        return g

    def rename_scope(self, params, cparams):
        """Binds a parser's or deparser's parameters to the control's names, by position of type."""
        scope = {}
        by_type = {}
        for _, typ, pn in cparams:
            by_type.setdefault(repr(self.env.resolve(typ)), pn)
        for _, typ, pn in params:
            key = repr(self.env.resolve(typ))
            if key in by_type:
                scope[pn] = ("path", by_type[key])
            else:
                scope[pn] = ("path", pn)
                self.g.types[pn] = typ
        return scope

    # ---- parser: the header sets of each path, the fields it names ----
    def parser(self, p, cparams):
        _, name, params, locals_, states, _ = p
        scope = self.rename_scope(params, cparams)
        for loc in locals_:
            if loc[0] == "value_set":
                scope[loc[1]] = ("valueset",)
            elif loc[0] == "inst":
                scope[loc[1]] = ("extern", loc[2][1])
            else:
                raise P4Error(f"parser local {loc[0]} not understood")
        st = {s[1]: s for s in states}
        if "start" not in st:
            raise P4Error(f"parser {name} has no start state")
        extracts, succ = {}, {}
        for s in states:
            ex = set()
            for stmt in s[2]:
                self.parser_stmt(stmt, scope, ex)
            extracts[s[1]] = ex
            t = s[3]
            if t[0] == "goto":
                succ[s[1]] = [t[1]]
            else:
                for k in t[1]:
                    self.parde_reads(k, scope)
                succ[s[1]] = [c[1] for c in t[2]]
            for n in succ[s[1]]:
                if n not in st and n not in ("accept", "reject"):
                    raise P4Error(f"parser {name}: state {s[1]} goes to unknown state {n}")
        self.g.paths = _parser_paths(st, extracts, succ)

    def parser_stmt(self, stmt, scope, ex):
        k = stmt[0]
        if k == "call":
            call = stmt[1]
            tgt = call[1]
            if tgt[0] == "member" and tgt[2] == "extract":
                arg = call[3][0]
                path = self.header_arg(arg, scope)
                if path is not None:
                    ex.add(path)
                    self.g.parde_fields.update(path if isinstance(path, tuple) else [path])
                return
            if tgt[0] == "member" and tgt[2] in ("advance", "set", "decrement", "increment"):
                for a in call[3]:
                    self.parde_reads(a, scope)
                return
            raise P4Error(f"parser call {tgt} not understood")
        if k == "assign":
            self.g.parde_fields.add(self.lvalue(stmt[1], scope))
            self.parde_reads(stmt[2], scope)
            return
        if k == "block":
            for s in stmt[1]:
                self.parser_stmt(s, scope, ex)
            return
        raise P4Error(f"parser statement {k} not understood")

    def header_arg(self, arg, scope):
        """The header path an extract names; `x.next` is every element of stack x."""
        if arg[0] == "member" and arg[2] == "next":
            base = self.lvalue(arg[1], scope)
            typ = self.type_of(base)
            n = self.env.const(typ[2], "stack size")
            return tuple(f"{base}[{i}]" for i in range(n))
        path = self.lvalue(arg, scope)
        root = path.split(".")[0].split("[")[0]
        if root != self.g.hdr_root:
            return None   # intrinsic or user metadata (resubmit data)
        return path

    def parde_reads(self, e, scope):
        if e[0] == "call" and e[1][0] == "member" and e[1][1][0] == "id" \
                and scope.get(e[1][1][1], ("",))[0] == "extern":
            for a in e[3]:
                self.parde_reads(a, scope)
            return
        for r in self.rv(e, scope).reads:
            self.g.parde_fields.add(r)

    # ---- deparser ----
    def deparser(self, d, cparams):
        _, name, params, locals_, body, _ = d
        scope = self.rename_scope(params, cparams)
        for loc in locals_:
            if loc[0] == "inst":
                scope[loc[1]] = ("extern", loc[2][1])
            else:
                raise P4Error(f"deparser local {loc[0]} not understood")
        self.deparser_stmt(body, scope)

    def deparser_stmt(self, s, scope):
        k = s[0]
        if k == "block":
            for x in s[1]:
                self.deparser_stmt(x, scope)
        elif k == "if":
            self.parde_reads(s[1], scope)
            self.deparser_stmt(s[2], scope)
            if s[3]:
                self.deparser_stmt(s[3], scope)
        elif k == "call":
            for a in s[1][3]:
                self.parde_reads(a, scope)
        elif k == "assign":
            self.g.parde_fields.add(self.lvalue(s[1], scope))
            self.parde_reads(s[2], scope)
        else:
            raise P4Error(f"deparser statement {k} not understood")

    # ---- names ----
    def type_of(self, path):
        return type_of(self.env, self.g.types, path)

    def lvalue(self, e, scope):
        k = e[0]
        if k == "id":
            b = scope.get(e[1])
            if b is None or b[0] != "path":
                raise P4Error(f"{e[1]} is not a field or variable here")
            return b[1]
        if k == "member":
            return f"{self.lvalue(e[1], scope)}.{e[2]}"
        if k == "index":
            i = self.env.eval(e[2], None)
            if i is None:
                raise P4Error(f"a header stack index must be constant: {e}")
            return f"{self.lvalue(e[1], scope)}[{i}]"
        if k == "slice":
            return self.lvalue(e[1], scope)
        raise P4Error(f"not an lvalue: {e}")

    class Val:
        __slots__ = ("reads", "depth", "const", "regs", "hash_bits")

        def __init__(self, reads=(), depth=0, const=None):
            self.reads, self.depth, self.const = set(reads), depth, const
            self.regs = []
            self.hash_bits = 0

    def rv(self, e, scope):
        """Fields an expression reads and the ALU depth it needs."""
        V = Elaborator.Val
        k = e[0]
        if k != "id":
            c = self.env.eval(e, scope)
            if c is not None:
                return V(const=c)
        if k == "id":
            b = scope.get(e[1])
            if b is None:
                c = self.env.eval(e)
                if c is None:
                    raise P4Error(f"unknown name {e[1]}")
                return V(const=c)
            if b[0] == "path":
                return V({b[1]})
            if b[0] in ("actiondata", "valueset"):
                return V()
            if b[0] == "const":
                return V(const=b[1])
            raise P4Error(f"{e[1]} ({b[0]}) used as a value")
        if k in ("member", "index"):
            if k == "member" and e[1][0] == "id" and (e[1][1] in self.env.enums or e[1][1] in TNA_ENUMS):
                return V(const=0)
            return V({self.lvalue(e, scope)})
        if k == "slice":
            return self.rv(e[1], scope)
        if k == "cast":
            return self.rv(e[2], scope)
        if k == "typeref":
            return V(const=0)
        if k == "un":
            v = self.rv(e[2], scope)
            return V(v.reads, v.depth + (0 if v.const is not None else 1))
        if k == "bin":
            a, b = self.rv(e[2], scope), self.rv(e[3], scope)
            free = e[1] == "++"
            d = max(a.depth, b.depth) + (0 if free else 1)
            return V(a.reads | b.reads, d)
        if k == "cond":
            cv, a, b = self.rv(e[1], scope), self.rv(e[2], scope), self.rv(e[3], scope)
            return V(cv.reads | a.reads | b.reads, max(cv.depth, a.depth, b.depth) + 1)
        if k == "list":
            v = V()
            for x in e[1]:
                y = self.rv(x, scope)
                v.reads |= y.reads
                v.depth = max(v.depth, y.depth)
            return v
        if k == "call":
            return self.call_value(e, scope)
        if k in ("mask", "range", "tuple", "default", "dontcare"):
            v = V()
            for x in e[1:]:
                if isinstance(x, tuple):
                    v.reads |= self.rv(x, scope).reads
                elif isinstance(x, list):
                    for y in x:
                        v.reads |= self.rv(y, scope).reads
            return v
        raise P4Error(f"expression {k} not understood")

    def call_value(self, e, scope):
        V = Elaborator.Val
        tgt = e[1]
        if tgt[0] != "member":
            raise P4Error(f"call of {tgt} not understood as a value")
        meth = tgt[2]
        if meth == "isValid":
            return V({self.lvalue(tgt[1], scope) + ".$valid"})
        if meth in ("lookahead", "is_zero"):
            return V()
        base = tgt[1]
        b = scope.get(base[1]) if base[0] == "id" else None
        if b and b[0] == "regaction" and meth == "execute":
            v = V()
            for a in e[3]:
                v.reads |= self.rv(a, scope).reads
            v.reads |= b[2]
            v.depth = 1
            v.regs = [b[1]]
            return v
        if b and b[0] == "hash" and meth == "get":
            v = V()
            for a in e[3]:
                v.reads |= self.rv(a, scope).reads
            v.depth = 1
            v.hash_bits = b[1]
            return v
        raise P4Error(f"call {meth} of {base} not understood as a value")

    def cond_prep(self, e, scope):
        """(reads, stages) a condition needs before a gateway can test it."""
        k = e[0]
        if k == "un" and e[1] == "!":
            return self.cond_prep(e[2], scope)
        if k == "bin" and e[1] in ("&&", "||"):
            r1, d1 = self.cond_prep(e[2], scope)
            r2, d2 = self.cond_prep(e[3], scope)
            return r1 | r2, max(d1, d2)
        if k == "bin" and e[1] in ("==", "!=", "<", ">", "<=", ">="):
            a, b = self.gate_operand(e[2], scope), self.gate_operand(e[3], scope)
            d = max(a.depth, b.depth)
            if e[1] not in ("==", "!=") and a.const is None and b.const is None:
                d += 1
            return a.reads | b.reads, d
        v = self.rv(e, scope)
        return v.reads, v.depth

    def gate_operand(self, e, scope):
        """A gateway compares a field, masked by a constant or sliced, without an ALU."""
        if e[0] in ("cast", "slice"):
            return self.gate_operand(e[2] if e[0] == "cast" else e[1], scope)
        if e[0] == "bin" and e[1] == "&":
            a, b = self.env.eval(e[2], scope), self.env.eval(e[3], scope)
            if a is not None or b is not None:
                return self.gate_operand(e[3] if a is not None else e[2], scope)
        return self.rv(e, scope)

    # ---- controls ----
    def new_tmp(self, prefix, typ):
        self.tmp += 1
        p = f"{prefix}.$t{self.tmp}"
        self.g.types[p] = typ
        return p

    def emit(self, op):
        op.branch = dict(self.branch)
        self.g.ops.append(op)
        self.g.mau_fields |= op.reads | op.writes
        return op

    def control_body(self, c, scope, prefix, guard):
        """Declares a control instance's locals in `scope` and runs its apply block."""
        _, name, params, locals_, body, where = c
        for loc in locals_:
            self.local(loc, scope, prefix)
        self.stmt(body, scope, prefix, guard)

    def local(self, loc, scope, prefix):
        k = loc[0]
        env = self.env
        if k == "var":
            path = f"{prefix}.{loc[2]}"
            scope[loc[2]] = ("path", path)
            self.g.types[path] = loc[1]
            if loc[3] is not None:
                v = self.rv(loc[3], scope)
                self.emit(Op("alu", f"{path} =", v.reads, {path}, max(1, v.depth)))
        elif k == "action":
            scope[loc[1]] = ("action", loc, scope)
        elif k == "table":
            scope[loc[1]] = ("table", loc, scope, f"{prefix}.{loc[1]}")
        elif k == "const":
            scope[loc[1]] = ("const", env.const(loc[3]))
        elif k == "inst":
            typ = loc[2]
            tname = typ[1] if typ[0] == "name" else None
            name = f"{prefix}.{loc[1]}"
            if tname in env.controls:
                scope[loc[1]] = ("control", env.controls[tname], name)
            elif tname == "Register":
                entries = env.const(loc[3][0], "register size")
                width = env.width(typ[2][0])
                self.g.registers[name] = (entries, width)
                scope[loc[1]] = ("register", name)
            elif tname == "RegisterAction":
                reg = scope.get(loc[3][0][1]) if loc[3] and loc[3][0][0] == "id" else None
                if not reg or reg[0] != "register":
                    raise P4Error(f"RegisterAction {loc[1]} must name a Register of this control")
                params, body = loc[4]
                inner = dict(scope)
                for _, _, pn in params:
                    inner[pn] = ("salu",)
                reads = self.salu_reads(body, inner)
                scope[loc[1]] = ("regaction", reg[1], reads)
            elif tname == "Hash":
                scope[loc[1]] = ("hash", env.width(typ[2][0]))
            elif tname in ("Counter", "DirectCounter"):
                entries = env.const(loc[3][0], "counter size") if tname == "Counter" else 0
                width = env.width(typ[2][0])
                self.g.counters[name] = (entries, width)
                scope[loc[1]] = ("counter", name)
            elif tname in EXTERNS:
                scope[loc[1]] = ("extern", tname)
            else:
                raise P4Error(f"instance of {tname} not understood")
        else:
            raise P4Error(f"control local {k} not understood")

    def salu_reads(self, body, scope):
        """PHV fields a RegisterAction's body reads (its free names)."""
        reads = set()

        def walk(x):
            if isinstance(x, tuple):
                if x and x[0] == "id" and len(x) == 2 and isinstance(x[1], str):
                    b = scope.get(x[1])
                    if b and b[0] == "path":
                        reads.add(b[1])
                    return
                for y in x:
                    walk(y)
            elif isinstance(x, list):
                for y in x:
                    walk(y)
        walk(body)
        return reads

    def stmt(self, s, scope, prefix, guard):
        k = s[0]
        if k == "block":
            for x in s[1]:
                self.stmt(x, scope, prefix, guard)
        elif k == "var":
            self.local(("var", s[1], s[2], s[3], s[4]), scope, prefix)
        elif k == "assign":
            lhs = self.lvalue(s[1], scope)
            v = self.rv(s[2], scope)
            if v.regs:
                op = Op("salu", f"{lhs} = {v.regs[0]}", v.reads | guard_reads(guard), {lhs}, 1, s[3])
                op.registers = v.regs
            elif v.hash_bits:
                op = Op("hash", f"{lhs} = hash", v.reads | guard_reads(guard), {lhs}, 1, s[3])
                op.hash_bits = v.hash_bits
            else:
                depth = max(1, v.depth)
                if s[2][0] in ("bin", "un") and s[2][1] in ("==", "!=", "<", ">", "<=", ">=", "&&", "||", "!"):
                    depth = self.cond_prep(s[2], scope)[1] + 1
                op = Op("alu", f"{lhs} =", v.reads | guard_reads(guard), {lhs}, depth, s[3])
            self.emit(op)
        elif k == "if":
            reads, prep = self.cond_prep(s[1], scope)
            if prep > 0:
                t = self.new_tmp(prefix, ("bool",))
                self.emit(Op("alu", "condition", reads, {t}, prep, s[4]))
                reads = {t}
            g2 = guard + [reads]
            self.ifs += 1
            me, outer = self.ifs, self.branch
            self.branch = dict(outer, **{str(me): 0})
            self.stmt(s[2], scope, prefix, g2)
            if s[3] is not None:
                self.branch = dict(outer, **{str(me): 1})
                self.stmt(s[3], scope, prefix, g2)
            self.branch = outer
        elif k == "call":
            self.call_stmt(s[1], scope, prefix, guard, s[2])
        elif k == "return":
            pass
        else:
            raise P4Error(f"statement {k} not understood in a control")

    def call_stmt(self, call, scope, prefix, guard, where):
        tgt, args = call[1], call[3]
        g = guard_reads(guard)
        if tgt[0] == "id":
            b = scope.get(tgt[1])
            if not b or b[0] != "action":
                raise P4Error(f"call of {tgt[1]}: not an action")
            op = self.action_op(b[1], b[2], args, scope, f"{prefix}.{tgt[1]}", where)
            op.reads |= g
            self.emit(op)
            return
        if tgt[0] != "member":
            raise P4Error(f"call of {tgt} not understood")
        meth, base = tgt[2], tgt[1]
        if meth in ("setValid", "setInvalid"):
            path = self.lvalue(base, scope)
            self.g.valid_set.add(path) if meth == "setValid" else None
            self.emit(Op("alu", f"{path}.{meth}", g, {path + ".$valid"}, 1, where))
            return
        b = scope.get(base[1]) if base[0] == "id" else None
        if b is None:
            raise P4Error(f"call {meth} on {base}: unknown instance")
        if b[0] == "table" and meth == "apply":
            self.emit(self.table_op(b, g, where))
        elif b[0] == "control" and meth == "apply":
            self.inline(b, args, scope, guard, where)
        elif b[0] == "regaction" and meth == "execute":
            v = self.rv(call, scope)
            op = Op("salu", f"{b[1]}.execute", v.reads | g, set(), 1, where)
            op.registers = v.regs
            self.emit(op)
        elif b[0] == "counter" and meth == "count":
            reads = set()
            for a in args:
                reads |= self.rv(a, scope).reads
            op = Op("stats", f"{b[1]}.count", reads | g, set(), 1, where)
            op.counters = [b[1]]
            self.emit(op)
        else:
            raise P4Error(f"call {meth} on {b[0]} not understood in a control")

    def inline(self, b, args, scope, guard, where):
        _, decl, name = b
        params = decl[2]
        if len(params) != len(args):
            raise P4Error(f"{name}: {len(args)} arguments for {len(params)} parameters")
        inner = {}
        for (direction, typ, pn), a in zip(params, args):
            try:
                path = self.lvalue(a, scope)
                inner[pn] = ("path", path)
                continue
            except P4Error:
                if direction in ("out", "inout"):
                    raise
            v = self.rv(a, scope)
            if v.const is not None:
                inner[pn] = ("const", v.const)
                continue
            t = f"{name}.{pn}"
            self.g.types[t] = typ
            self.emit(Op("alu", f"{t} = (argument)", v.reads | guard_reads(guard), {t}, max(1, v.depth), where))
            inner[pn] = ("path", t)
        # globals visible inside: constants are resolved by env
        self.control_body(decl, inner, name, guard)

    def action_body(self, body, scope):
        """(reads, writes, depth, registers, counters, hash_bits) of an action body,
        statements in order; a statement reading what an earlier one wrote
        starts after it."""
        reads, writes, regs, ctrs = set(), set(), [], []
        ready = {}   # path -> stage (0-based within the action) its value is ready
        depth = 0
        hbits = 0

        def start_of(rs):
            s = 0
            for r in rs:
                for w, st in ready.items():
                    if _path_overlap(r, w):
                        s = max(s, st)
            return s

        def walk(s):
            nonlocal depth, hbits
            k = s[0]
            if k == "block":
                for x in s[1]:
                    walk(x)
            elif k == "assign":
                lhs = self.lvalue(s[1], scope)
                v = self.rv(s[2], scope)
                st = start_of(v.reads) + max(1, v.depth)
                reads.update(v.reads)
                writes.add(lhs)
                regs.extend(v.regs)
                hbits += v.hash_bits
                ready[lhs] = st
                depth = max(depth, st)
            elif k == "call":
                call = s[1]
                tgt = call[1]
                if tgt[0] == "member" and tgt[2] in ("setValid", "setInvalid"):
                    p = self.lvalue(tgt[1], scope)
                    if tgt[2] == "setValid":
                        self.g.valid_set.add(p)
                    writes.add(p + ".$valid")
                    depth = max(depth, 1)
                elif tgt[0] == "member" and tgt[1][0] == "id" and scope.get(tgt[1][1], ("",))[0] == "counter":
                    ctrs.append(scope[tgt[1][1]][1])
                    for a in call[3]:
                        reads.update(self.rv(a, scope).reads)
                    depth = max(depth, 1)
                elif tgt[0] == "member" and tgt[1][0] == "id" and scope.get(tgt[1][1], ("",))[0] == "regaction":
                    v = self.rv(call, scope)
                    reads.update(v.reads)
                    regs.extend(v.regs)
                    depth = max(depth, 1)
                elif tgt[0] == "id" and scope.get(tgt[1], ("",))[0] == "action":
                    b = scope[tgt[1]]
                    inner = self.action_scope(b[1], b[2], call[3], scope)
                    r2, w2, d2, rg2, c2, h2 = self.action_body(b[1][3], inner)
                    st = start_of(r2)
                    reads.update(r2)
                    writes.update(w2)
                    regs.extend(rg2)
                    ctrs.extend(c2)
                    for w in w2:
                        ready[w] = st + d2
                    depth = max(depth, st + d2)
                else:
                    raise P4Error(f"call {tgt} not understood in an action")
            elif k == "if":
                raise P4Error("an if statement inside an action is not in the understood subset")
            else:
                raise P4Error(f"statement {k} not understood in an action")
        walk(body)
        return reads, writes, max(depth, 1), regs, ctrs, hbits

    def action_scope(self, decl, decl_scope, args, call_scope):
        inner = dict(decl_scope)
        params = decl[2]
        for i, (direction, typ, pn) in enumerate(params):
            if i < len(args):
                a = args[i]
                v = self.env.eval(a, call_scope)
                if v is not None:
                    inner[pn] = ("const", v)
                else:
                    try:
                        inner[pn] = ("path", self.lvalue(a, call_scope))
                    except P4Error:
                        vv = self.rv(a, call_scope)
                        t = self.new_tmp("action", typ)
                        self.emit(Op("alu", f"{t} = (argument)", vv.reads, {t}, max(1, vv.depth)))
                        inner[pn] = ("path", t)
            else:
                inner[pn] = ("actiondata",)
        return inner

    def action_op(self, decl, decl_scope, args, call_scope, name, where):
        inner = self.action_scope(decl, decl_scope, args, call_scope)
        r, w, d, regs, ctrs, h = self.action_body(decl[3], inner)
        op = Op("action", name, r, w, d, where)
        op.registers, op.counters, op.hash_bits = regs, ctrs, h
        return op

    def table_op(self, b, guard_r, where):
        _, decl, tscope, name = b
        info = decl[2]
        env = self.env
        reads, writes, regs, ctrs = set(guard_r), set(), [], []
        key_bits, ternary = 0, False
        for e, kind in info["keys"]:
            v = self.rv(e, tscope)
            reads |= v.reads
            key_bits += self.expr_width(e, tscope)
            if kind in ("ternary", "lpm", "range"):
                ternary = True
            elif kind != "exact":
                raise P4Error(f"{name}: match kind {kind} not understood")
        depth, ad_bits, hbits = 1, 0, 0
        for a, _ in info["actions"]:
            if a == "NoAction":
                continue
            ab = tscope.get(a)
            if not ab or ab[0] != "action":
                raise P4Error(f"{name}: unknown action {a}")
            inner = self.action_scope(ab[1], ab[2], [], tscope)
            r, w, d, rg, c, h = self.action_body(ab[1][3], inner)
            reads |= r
            writes |= w
            regs += [x for x in rg if x not in regs]
            ctrs += [x for x in c if x not in ctrs]
            hbits = max(hbits, h)
            depth = max(depth, d)
            ad = sum(env.width(t) for _, t, _ in ab[1][2])
            ad_bits = max(ad_bits, ad)
        size = env.const(info["size"], "table size") if info["size"] is not None else 512
        if info["const_entries"] and not info["size"]:
            size = len(info["entries"])
        op = Op("table", name, reads, writes, depth, where)
        op.registers, op.counters, op.hash_bits = regs, ctrs, hbits
        op.table = {"keys": len(info["keys"]), "key_bits": key_bits, "ternary": ternary, "size": size,
                    "ad_bits": ad_bits}
        return op

    def expr_width(self, e, scope):
        if e[0] == "slice":
            hi, lo = self.env.const(e[2]), self.env.const(e[3])
            return hi - lo + 1
        if e[0] == "cast":
            return self.env.width(e[1])
        if e[0] == "call":
            return 1
        path = self.lvalue(e, scope)
        if path.endswith(".$valid"):
            return 1
        return self.env.width(self.type_of(path))


def guard_reads(guard):
    out = set()
    for g in guard:
        out |= g
    return out


def _parser_paths(states, extracts, succ):
    """Header sets extracted on each path from start to accept; states on a
    cycle (a loop over a stack) count together."""
    names = list(states)
    index, low, stack, on, comp = {}, {}, [], set(), {}
    counter = [0]
    comps = []

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, []):
            if w not in states:
                continue
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp[w] = len(comps)
                c.append(w)
                if w == v:
                    break
            comps.append(c)

    import sys
    sys.setrecursionlimit(10000)
    for n in names:
        if n not in index:
            strong(n)
    cex, csucc, cexit = [], [], []
    for c in comps:
        ex = set()
        nxt = set()
        ends = False
        for s in c:
            for h in extracts[s]:
                ex.update(h if isinstance(h, tuple) else [h])
            for w in succ[s]:
                if w in ("accept", "reject"):
                    ends = True
                elif comp[w] != comp[s]:
                    nxt.add(comp[w])
        cex.append(ex)
        csucc.append(nxt)
        cexit.append(ends)
    paths = []
    memo = {}

    def walk(ci):
        if ci in memo:
            return memo[ci]
        out = []
        if cexit[ci]:
            out.append(frozenset(cex[ci]))
        for n in csucc[ci]:
            for p in walk(n):
                out.append(frozenset(cex[ci] | p))
        out = list(set(out))
        memo[ci] = out
        return out
    paths = walk(comp["start"])
    return paths


def root_of(types, path):
    """The longest prefix of `path` with a known type (a parameter, a local or a temporary)."""
    import re
    cands = [path] + [path[:m.start()] for m in re.finditer(r"[.\[]", path)][::-1]
    for c in cands:
        if c in types:
            return c
    raise P4Error(f"no type known for {path}")


def type_of(env, types, path):
    root = root_of(types, path)
    return env.type_at(types[root], path[len(root):])


def exclusive(a, b):
    """Two ops on the two sides of one if statement."""
    if len(a) > len(b):
        a, b = b, a
    return any(k in b and b[k] != v for k, v in a.items())
