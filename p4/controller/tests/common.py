"""Helpers shared by the tests."""

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
P4 = os.path.normpath(os.path.join(HERE, "..", ".."))
REPO = os.path.normpath(os.path.join(P4, ".."))

# The settings are read by the zebra binary (`zebra switch --plan`, zebra_ctl/settings.py):
# these tests use the repository's build unless ZEBRA_BIN names another. scripts/test.sh
# builds it (scripts/setup.sh: cargo build --release -p zebra-cli) before its
# p4-control-plane part runs p4/run_tests.sh.
ZEBRA = os.environ.setdefault("ZEBRA_BIN", os.path.join(REPO, "target", "release", "zebra"))


def data(name):
    return os.path.join(DATA, name)


def hotpath(path, **overrides):
    """The settings of file `path`, each override given as `--set KEY=VALUE`."""
    from zebra_ctl.settings import load

    return load(path, [f"{k}={v}" for k, v in overrides.items()])


def two_server_jobs(tmp, extra=""):
    """tests/data/tofino.conf with a hot-keys file (in `tmp`) whose keys two
    PS-lite servers own: switch jobs 7 and 8, as the shim makes them."""
    with open(os.path.join(tmp, "two.keys"), "w") as f:
        f.write("1 32\n9223372036854775808 16\n2 8\n")
    with open(data("tofino.conf"), encoding="utf-8") as f:
        text = f.read().replace("hot_key_count = 1000\n", 'hot_keys = "two.keys"\n' + extra)
    path = os.path.join(tmp, "two.conf")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return hotpath(path)


def p4_source(name):
    with open(os.path.join(P4, name), encoding="utf-8") as f:
        return strip_comments(f.read())


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def p4_all():
    names = [
        "configuration.p4", "types.p4", "headers.p4", "parsers.p4", "forward.p4", "worker_check.p4",
        "round_state.p4", "accumulate.p4", "recirculate.p4", "ack.p4", "mirror_cpu.p4", "replicate.p4", "zebra.p4", "lns/lns.p4",
    ]
    return {n: p4_source(n) for n in names}


def p4_consts():
    """const NAME = literal-or-simple-expression, evaluated."""
    env = {}
    for text in p4_all().values():
        for m in re.finditer(r"const\s+\w+(?:<\d+>)?\s+(\w+)\s*=\s*([^;]+);", text):
            expr = re.sub(r"\b(\d+)w(0x[0-9A-Fa-f]+|\d+)", r"\2", m.group(2))
            expr = re.sub(r"\(\s*(?:bit|int)<[^>]*>\s*\)", "", expr)
            try:
                env[m.group(1)] = int(eval(expr, {"__builtins__": {}}, dict(env)))
            except Exception:
                pass
    return env


def p4_enum(name):
    text = "\n".join(p4_all().values())
    m = re.search(r"enum\s+bit<\d+>\s+" + name + r"\s*\{([^}]*)\}", text)
    assert m, f"no enum {name}"
    out = {}
    for item in m.group(1).split(","):
        if "=" in item:
            k, v = item.split("=")
            out[k.strip()] = int(v.strip(), 0)
    return out


def p4_header(name):
    """[(field, width)] of a header in headers.p4, widths resolved."""
    consts = p4_consts()
    text = p4_source("headers.p4") + p4_source("types.p4")
    typedefs = {m.group(2): m.group(1) for m in re.finditer(r"typedef\s+bit<\(?(\w+)\)?>\s+(\w+)\s*;", text)}
    enums = {m.group(2): m.group(1) for m in re.finditer(r"enum\s+bit<(\d+)>\s+(\w+)", text)}
    m = re.search(r"header\s+" + name + r"\s*\{([^}]*)\}", text)
    assert m, f"no header {name}"
    out = []
    for decl in m.group(1).split(";"):
        decl = decl.strip()
        if not decl:
            continue
        ty, field = decl.rsplit(None, 1)
        w = re.match(r"bit<\(?(\w+)\)?>", ty)
        if w:
            width = w.group(1)
        elif ty in typedefs:
            width = typedefs[ty]
        elif ty in enums:
            width = enums[ty]
        else:
            raise AssertionError(f"{name}.{field}: unknown type {ty}")
        out.append((field, int(width) if width.isdigit() else consts[width]))
    return out
