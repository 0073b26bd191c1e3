"""A parser for the subset of P4_16 (TNA) that p4/*.p4 uses.

Preprocessor (#include, #define NAME, #ifdef/#ifndef/#else/#endif), tokenizer
and a recursive-descent parser to a small AST of tuples. Anything outside the
subset is an error naming file and line, never a silent guess: the resource
model built on it (model.py) is only as good as what it understood.

    prog = parse_files(["p4/zebra.p4"], defines={"ZEBRA_LNS"})
    prog = parse_text(source)                       # one snippet, no includes
"""

import os
import re


class P4Error(Exception):
    """Something the subset does not cover, or malformed source."""


# ---- preprocessor ----------------------------------------------------------------

def preprocess(path, defines=(), seen=None, builtin_includes=("core.p4", "tna.p4")):
    """Returns a list of (text_line, file, line_no) with includes expanded and
    conditionals resolved. <core.p4> and <tna.p4> are provided by model.py's
    built-in TNA declarations, so they expand to nothing."""
    defined = set(defines)
    out = []
    _pp_file(os.path.abspath(path), defined, out, seen if seen is not None else set(), builtin_includes)
    return out


def _pp_file(path, defined, out, seen, builtins):
    if path in seen:
        return
    seen.add(path)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise P4Error(f"cannot read {path}: {e}") from e
    _pp_lines(lines, path, defined, out, seen, builtins)


def _pp_lines(lines, path, defined, out, seen, builtins):
    stack = []  # (active, taken_branch)
    active = True
    for no, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#\s*(\w+)\s*(.*)$", s)
            if not m:
                raise P4Error(f"{path}:{no}: bad preprocessor line: {s}")
            word, rest = m.group(1), m.group(2).strip()
            rest = re.sub(r"/\*.*?\*/|//.*$", "", rest).strip()
            if word in ("ifdef", "ifndef"):
                cond = (rest in defined) == (word == "ifdef")
                stack.append((active, active and cond))
                active = active and cond
            elif word == "else":
                if not stack:
                    raise P4Error(f"{path}:{no}: #else without #if")
                outer, taken = stack[-1]
                stack[-1] = (outer, True)
                active = outer and not taken
            elif word == "endif":
                if not stack:
                    raise P4Error(f"{path}:{no}: #endif without #if")
                active = stack.pop()[0]
            elif not active:
                continue
            elif word == "define":
                parts = rest.split(None, 1)
                if len(parts) != 1:
                    raise P4Error(f"{path}:{no}: only '#define NAME' is understood, not macros: {s}")
                defined.add(parts[0])
            elif word == "include":
                m2 = re.match(r'"([^"]+)"|<([^>]+)>', rest)
                if not m2:
                    raise P4Error(f"{path}:{no}: bad #include: {s}")
                if m2.group(2):
                    if m2.group(2) not in builtins:
                        raise P4Error(f"{path}:{no}: unknown system include <{m2.group(2)}>")
                    continue
                inc = os.path.join(os.path.dirname(path), m2.group(1))
                _pp_file(os.path.abspath(inc), defined, out, seen, builtins)
            else:
                raise P4Error(f"{path}:{no}: preprocessor directive #{word} is not understood")
            out.append(("", path, no))
            continue
        out.append((line if active else "", path, no))
    if stack:
        raise P4Error(f"{path}: unterminated #if")


# ---- tokenizer -------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+)
  | (?P<comment>//[^\n]*)
  | (?P<num>\d+[ws](?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*)|0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"[^"\n]*")
  | (?P<op>&&&|\|\+\||\|-\||\+\+|\.\.|<<|<=|>=|==|!=|&&|\|\||[{}()\[\];:,.<>=+\-*/%&|^!~?@])
""", re.X)


class Tok:
    __slots__ = ("kind", "text", "file", "line", "glued")

    def __init__(self, kind, text, file, line, glued):
        self.kind, self.text, self.file, self.line, self.glued = kind, text, file, line, glued

    def __repr__(self):
        return f"{self.text!r}@{os.path.basename(self.file)}:{self.line}"


def tokenize(lines):
    """lines: [(text, file, line_no)]. Block comments may span lines. `glued`
    says the token follows the previous one without space (to tell `>>` from
    two closing angle brackets)."""
    toks = []
    in_comment = False
    for text, path, no in lines:
        i = 0
        glued = False
        while i < len(text):
            if in_comment:
                j = text.find("*/", i)
                if j < 0:
                    i = len(text)
                    break
                i = j + 2
                in_comment = False
                glued = False
                continue
            if text.startswith("/*", i):
                in_comment = True
                i += 2
                continue
            m = _TOKEN.match(text, i)
            if not m:
                raise P4Error(f"{path}:{no}: unexpected character {text[i]!r}")
            kind = m.lastgroup
            if kind in ("ws", "comment"):
                glued = False
            else:
                toks.append(Tok(kind, m.group(), path, no, glued))
                glued = True
            i = m.end()
    if in_comment:
        raise P4Error("unterminated /* comment")
    toks.append(Tok("eof", "", lines[-1][1] if lines else "?", lines[-1][2] if lines else 0, False))
    return toks


def parse_int(text):
    """A P4 integer literal: value and width (None if unsized)."""
    m = re.match(r"(\d+)([ws])(.*)$", text)
    width = None
    if m:
        width, text = int(m.group(1)), m.group(3)
    text = text.replace("_", "")
    if text[:2].lower() == "0x":
        v = int(text, 16)
    elif text[:2].lower() == "0b":
        v = int(text, 2)
    else:
        v = int(text)
    return v, width


# ---- AST -------------------------------------------------------------------------
#
# Types:        ("bit", width_expr) ("int", width_expr) ("bool",) ("name", n, [type_args]) ("stack", T, size_expr)
# Expressions:  ("int", v, width) ("bool", v) ("id", n) ("member", e, n) ("index", e, i) ("slice", e, hi, lo)
#               ("call", target, [type_args], [args]) ("cast", T, e) ("un", op, e) ("bin", op, a, b)
#               ("cond", c, a, b) ("list", [e]) ("mask", v, m) ("range", lo, hi) ("dontcare",) ("default",)
#               ("typeref", T)  -- a type used as an expression (e.g. bit<8>)
# Statements:   ("assign", lhs, rhs) ("call", e) ("if", c, then, else) ("block", [s]) ("var", T, n, init)
#               ("return",) ("transition", target_or_select)
# Declarations: see Parser.declaration.


class Parser:
    def __init__(self, toks):
        self.toks = toks
        self.i = 0

    # -- helpers --
    def peek(self, k=0):
        return self.toks[self.i + k]

    def at(self, text, k=0):
        return self.toks[self.i + k].text == text and self.toks[self.i + k].kind != "str"

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text):
        t = self.next()
        if t.text != text:
            self.error(t, f"expected {text!r}, found {t.text!r}")
        return t

    def ident(self):
        t = self.next()
        if t.kind != "id":
            self.error(t, f"expected a name, found {t.text!r}")
        return t.text

    def error(self, tok, msg):
        raise P4Error(f"{tok.file}:{tok.line}: {msg}")

    def where(self):
        t = self.peek()
        return (t.file, t.line)

    # -- program --
    def program(self):
        decls = []
        while self.peek().kind != "eof":
            if self.at(";"):
                self.next()
                continue
            decls.append(self.declaration(top=True))
        return decls

    def annotations(self):
        anns = []
        while self.at("@"):
            self.next()
            anns.append(self.ident())
            if self.at("("):
                depth = 0
                while True:
                    t = self.next()
                    depth += t.text == "("
                    depth -= t.text == ")"
                    if depth == 0:
                        break
        return anns

    def declaration(self, top=False):
        anns = self.annotations()
        where = self.where()
        t = self.peek()
        if t.text == "const" and self.peek(1).text != "default_action" and self.peek(1).text != "entries":
            self.next()
            typ = self.type_()
            name = self.ident()
            self.expect("=")
            val = self.expr()
            self.expect(";")
            return ("const", name, typ, val, where)
        if t.text == "typedef":
            self.next()
            typ = self.type_()
            name = self.ident()
            self.expect(";")
            return ("typedef", name, typ, where)
        if t.text == "enum":
            self.next()
            typ = None
            if self.at("bit"):
                typ = self.type_()
            name = self.ident()
            self.expect("{")
            members = []
            while not self.at("}"):
                m = self.ident()
                val = None
                if self.at("="):
                    self.next()
                    val = self.expr()
                members.append((m, val))
                if self.at(","):
                    self.next()
            self.expect("}")
            return ("enum", name, typ, members, where)
        if t.text in ("header", "struct"):
            self.next()
            name = self.ident()
            self.expect("{")
            fields = []
            while not self.at("}"):
                self.annotations()
                ft = self.type_()
                fn = self.ident()
                self.expect(";")
                fields.append((fn, ft))
            self.expect("}")
            return (t.text, name, fields, where)
        if t.text == "parser":
            self.next()
            name = self.ident()
            params = self.params()
            states, locals_ = self.braced("state", self.state, self.local_declaration)
            return ("parser", name, params, locals_, states, where)
        if t.text == "control":
            self.next()
            name = self.ident()
            params = self.params()
            bodies, locals_ = self.braced("apply", self.after_keyword(self.block), self.local_declaration)
            body = bodies[-1] if bodies else None
            if body is None:
                self.error(t, f"control {name} has no apply block")
            return ("control", name, params, locals_, body, where)
        if t.text in ("extern", "package", "error", "match_kind", "header_union"):
            self.error(t, f"'{t.text}' declarations are not in the understood subset")
        if top and t.kind == "id":
            return self.instantiation(anns)
        self.error(t, f"unexpected {t.text!r} at top level")

    def params(self):
        self.expect("(")
        ps = []
        while not self.at(")"):
            self.annotations()
            direction = "none"
            if self.peek().text in ("in", "out", "inout"):
                direction = self.next().text
            typ = self.type_()
            name = self.ident()
            ps.append((direction, typ, name))
            if self.at(","):
                self.next()
        self.expect(")")
        return ps

    def instantiation(self, anns=()):
        where = self.where()
        typ = self.type_()
        self.expect("(")
        args = self.args_until(")")
        name = self.ident()
        init = None
        if self.at("="):
            self.next()
            init = self.register_action_body()
        self.expect(";")
        return ("inst", name, typ, args, init, where)

    def register_action_body(self):
        """`{ void apply(inout T v, out T r) { ... } }` of a RegisterAction."""
        self.expect("{")
        self.expect("void")
        if self.ident() != "apply":
            self.error(self.peek(), "only an `apply` method is understood in a RegisterAction")
        params = self.params()
        body = self.block()
        self.expect("}")
        return (params, body)

    def local_declaration(self):
        anns = self.annotations()
        where = self.where()
        t = self.peek()
        if t.text == "action":
            self.next()
            name = self.ident()
            params = self.params()
            body = self.block()
            return ("action", name, params, body, where)
        if t.text == "table":
            self.next()
            return self.table(where)
        if t.text == "const" and self.peek(1).kind != "id" or t.text in ("typedef", "enum", "header", "struct"):
            return self.declaration()
        if t.text == "const":
            return self.declaration()
        if t.text == "value_set":
            self.next()
            self.expect("<")
            typ = self.type_()
            self.expect(">")
            self.expect("(")
            size = self.expr()
            self.expect(")")
            name = self.ident()
            self.expect(";")
            return ("value_set", name, typ, size, where)
        # an instantiation `Type(args) name;` or a variable `Type name [= e];`
        save = self.i
        typ = self.type_()
        if self.at("("):
            self.i = save
            return self.instantiation(anns)
        name = self.ident()
        init = None
        if self.at("="):
            self.next()
            init = self.expr()
        self.expect(";")
        return ("var", typ, name, init, where)

    def table(self, where):
        name = self.ident()
        self.expect("{")
        tbl = {"keys": [], "actions": [], "default": None, "entries": [], "size": None, "const_entries": False}
        while not self.at("}"):
            is_const = False
            if self.at("const"):
                self.next()
                is_const = True
            prop = self.ident()
            self.expect("=")
            if prop == "key":
                self.expect("{")
                while not self.at("}"):
                    e = self.expr()
                    self.expect(":")
                    kind = self.ident()
                    self.annotations()
                    self.expect(";")
                    tbl["keys"].append((e, kind))
                self.expect("}")
            elif prop == "actions":
                self.expect("{")
                while not self.at("}"):
                    anns = self.annotations()
                    a = self.ident()
                    if self.at("("):
                        self.next()
                        self.args_until(")")
                    self.expect(";")
                    tbl["actions"].append((a, "defaultonly" in anns))
                self.expect("}")
            elif prop == "default_action":
                tbl["default"] = self.expr()
                self.expect(";")
            elif prop == "entries":
                tbl["const_entries"] = is_const
                self.expect("{")
                while not self.at("}"):
                    ks = self.keyset()
                    self.expect(":")
                    act = self.expr()
                    self.expect(";")
                    tbl["entries"].append((ks, act))
                self.expect("}")
            elif prop == "size":
                tbl["size"] = self.expr()
                self.expect(";")
            else:
                self.error(self.peek(), f"table property {prop!r} is not understood")
        self.expect("}")
        return ("table", name, tbl, where)

    def braced(self, keyword, special, other):
        """`{ ... }`: the items starting at `keyword` parsed by `special()`, the others by
        `other()`; both lists, in order."""
        self.expect("{")
        specials, others = [], []
        while not self.at("}"):
            if self.at(keyword):
                specials.append(special())
            else:
                others.append(other())
        self.expect("}")
        return specials, others

    def after_keyword(self, parse):
        """A parser of what follows the current keyword."""
        def take():
            self.next()
            return parse()
        return take

    def state(self):
        where = self.where()
        self.expect("state")
        name = self.ident()
        transitions, stmts = self.braced("transition", self.after_keyword(self.transition), self.statement)
        trans = transitions[-1] if transitions else None
        if trans is None:
            self.error(self.peek(), f"state {name} has no transition")
        return ("state", name, stmts, trans, where)

    def transition(self):
        if self.at("select"):
            self.next()
            self.expect("(")
            keys = self.args_until(")")
            self.expect("{")
            cases = []
            while not self.at("}"):
                ks = self.keyset()
                self.expect(":")
                target = self.ident()
                self.expect(";")
                cases.append((ks, target))
            self.expect("}")
            return ("select", keys, cases)
        target = self.ident()
        self.expect(";")
        return ("goto", target)

    def keyset(self):
        if self.at("("):
            # a tuple of keysets, or a parenthesised expression
            save = self.i
            self.next()
            items = [self.keyset_item()]
            while self.at(","):
                self.next()
                items.append(self.keyset_item())
            if self.at(")"):
                self.next()
                if len(items) > 1 or self.at(":"):
                    return ("tuple", items)
            self.i = save
        return self.keyset_item()

    def keyset_item(self):
        if self.at("default"):
            self.next()
            return ("default",)
        if self.at("_"):
            self.next()
            return ("dontcare",)
        e = self.expr()
        if self.at("&&&"):
            self.next()
            return ("mask", e, self.expr())
        if self.at(".."):
            self.next()
            return ("range", e, self.expr())
        return e

    # -- statements --
    def block(self):
        self.expect("{")
        stmts = []
        while not self.at("}"):
            stmts.append(self.statement())
        self.expect("}")
        return ("block", stmts)

    def statement(self):
        t = self.peek()
        if t.text == "{":
            return self.block()
        if t.text == "if":
            self.next()
            self.expect("(")
            c = self.expr()
            self.expect(")")
            then = self.statement()
            els = None
            if self.at("else"):
                self.next()
                els = self.statement()
            return ("if", c, then, els, (t.file, t.line))
        if t.text == "return":
            self.next()
            self.expect(";")
            return ("return",)
        if t.text in ("switch", "exit", "for", "while"):
            self.error(t, f"'{t.text}' statements are not in the understood subset")
        if t.text == ";":
            self.next()
            return ("block", [])
        if self.looks_like_declaration():
            typ = self.type_()
            name = self.ident()
            init = None
            if self.at("="):
                self.next()
                init = self.expr()
            self.expect(";")
            return ("var", typ, name, init, (t.file, t.line))
        lhs = self.expr()
        if self.at("="):
            self.next()
            rhs = self.expr()
            self.expect(";")
            return ("assign", lhs, rhs, (t.file, t.line))
        self.expect(";")
        if lhs[0] != "call":
            self.error(t, "an expression statement must be a call")
        return ("call", lhs, (t.file, t.line))

    def looks_like_declaration(self):
        t0, t1 = self.peek(), self.peek(1)
        if t0.text in ("bit", "int", "bool", "varbit"):
            return True
        return t0.kind == "id" and t1.kind == "id"

    # -- types --
    def type_(self):
        t = self.next()
        if t.text in ("bit", "int"):
            width = ("int", 1, None)
            if self.at("<"):
                self.next()
                if self.at("("):
                    self.next()
                    width = self.expr()
                    self.expect(")")
                else:
                    w = self.next()
                    if w.kind == "num":
                        width = ("int", parse_int(w.text)[0], None)
                    elif w.kind == "id":
                        width = ("id", w.text)
                    else:
                        self.error(w, "bad width")
                self.expect(">")
            typ = (t.text, width)
        elif t.text == "bool":
            typ = ("bool",)
        elif t.text == "void":
            typ = ("void",)
        elif t.kind == "id":
            args = []
            if self.at("<") and not self.peek().glued is None:
                self.next()
                while not self.at(">"):
                    args.append(self.type_())
                    if self.at(","):
                        self.next()
                self.expect(">")
            typ = ("name", t.text, args)
        else:
            self.error(t, f"expected a type, found {t.text!r}")
        if self.at("[") and self.peek(1).kind in ("num", "id") and self.peek(2).text == "]" \
                and self.peek(3).kind == "id":
            self.next()
            size = self.expr()
            self.expect("]")
            typ = ("stack", typ, size)
        return typ

    # -- expressions (precedence as p4c's grammar: comparisons bind looser than & | ^) --
    _BIN = [
        ("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("|",), ("^",), ("&",),
        ("<<", ">>"), ("++", "+", "-", "|+|", "|-|"), ("*", "/", "%"),
    ]

    def args_until(self, close):
        args = []
        while not self.at(close):
            args.append(self.expr())
            if self.at(","):
                self.next()
        self.expect(close)
        return args

    def expr(self):
        c = self.binary(0)
        if self.at("?"):
            self.next()
            a = self.expr()
            self.expect(":")
            b = self.expr()
            return ("cond", c, a, b)
        return c

    def binop_here(self, ops):
        t = self.peek()
        if t.text == ">" and ">>" in ops and self.peek(1).text == ">" and self.peek(1).glued:
            return ">>"
        if t.kind == "op" and t.text in ops:
            # `>` closing a generic is never reached here: generics are parsed in type_/postfix
            return t.text
        return None

    def binary(self, level):
        if level == len(self._BIN):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            op = self.binop_here(self._BIN[level])
            if op is None:
                return left
            self.next()
            if op == ">>":
                self.next()
            right = self.binary(level + 1)
            left = ("bin", op, left, right)

    def unary(self):
        t = self.peek()
        if t.text in ("!", "~", "-"):
            self.next()
            return ("un", t.text, self.unary())
        if t.text == "(" and self.is_cast():
            self.next()
            typ = self.type_()
            self.expect(")")
            return ("cast", typ, self.unary())
        return self.postfix(self.primary())

    def is_cast(self):
        t1 = self.peek(1)
        if t1.text in ("bit", "int", "bool"):
            return True
        if t1.kind == "id" and self.peek(2).text == ")":
            nxt = self.peek(3)
            return nxt.kind in ("id", "num") or nxt.text in ("(", "~", "!", "{")
        return False

    def primary(self):
        t = self.next()
        if t.kind == "num":
            v, w = parse_int(t.text)
            return ("int", v, w)
        if t.text in ("true", "false"):
            return ("bool", t.text == "true")
        if t.text == "(":
            e = self.expr()
            self.expect(")")
            return e
        if t.text == "{":
            return ("list", self.args_until("}"))
        if t.text in ("bit", "int"):
            self.i -= 1
            return ("typeref", self.type_())
        if t.kind == "id":
            return ("id", t.text)
        self.error(t, f"unexpected {t.text!r} in an expression")

    def postfix(self, e):
        while True:
            if self.at("."):
                self.next()
                e = ("member", e, self.ident())
            elif self.at("["):
                self.next()
                a = self.expr()
                if self.at(":"):
                    self.next()
                    b = self.expr()
                    self.expect("]")
                    e = ("slice", e, a, b)
                else:
                    self.expect("]")
                    e = ("index", e, a)
            elif self.at("(") :
                self.next()
                e = ("call", e, [], self.args_until(")"))
            elif self.at("<") and e[0] == "member" and self.generic_call_ahead():
                self.next()
                targs = []
                while not self.at(">"):
                    targs.append(self.type_())
                    if self.at(","):
                        self.next()
                self.expect(">")
                self.expect("(")
                e = ("call", e, targs, self.args_until(")"))
            else:
                return e

    def generic_call_ahead(self):
        """`x.f<T>(...)`: a `<` after a member, closed by `>` followed by `(`."""
        depth = 0
        k = 0
        while True:
            t = self.peek(k)
            if t.kind == "eof" or t.text in (";", "{", "}"):
                return False
            if t.text == "<":
                depth += 1
            elif t.text == ">":
                depth -= 1
                if depth == 0:
                    return self.peek(k + 1).text == "("
            k += 1


def parse_files(paths, defines=()):
    lines = []
    seen = set()
    for p in paths:
        lines.extend(preprocess(p, defines, seen))
    return Parser(tokenize(lines)).program()


def parse_text(text, name="<snippet>", defines=()):
    lines = []
    _pp_lines(text.split("\n"), name, set(defines), lines, set(), ("core.p4", "tna.p4"))
    return Parser(tokenize(lines)).program()
