"""The switch's own facts, which no job's settings hold: its CPU and
recirculation ports, the mirror sessions, its MAC address and the L2 routes.
TOML, read with `tomllib`, in the settings file's style (text in double
quotes, numbers bare, a repeatable key an array):

    # ports.conf
    cpu_port = 64                     # the port the switch CPU sends and receives on
    recirc_port = 68                  # a recirculation port of the pipe the workers are on
    cpu_session = 1                   # mirror session to the CPU port (readout rows)
    recirc_session = 2                # mirror session to the recirculation port (CLOSE)
    switch_mac = "02:00:00:00:00:fa"  # source MAC of the aggregates the CPU sends
    route = ["0c:c4:7a:00:00:01 1"]   # destination MAC -> port, "MAC PORT" each
    neighbor = ["10.0.0.1 0c:c4:7a:00:00:01"]   # MAC of an IP the CPU sends to (a pinned server_addr), "IPV4 MAC" each
"""

import ipaddress
import json
import re
import tomllib

from dataclasses import dataclass, field

MAX_PORT = (1 << 9) - 1
MAX_SESSION = (1 << 10) - 1


def quoted(text):
    """`text` in double quotes, as a JSON string: what the user typed, with
    its spaces and control characters visible."""
    return json.dumps(text, ensure_ascii=False)


class PortsError(Exception):
    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("invalid ports file:" + "".join(f"\n  - {p}" for p in self.problems))


def parse_mac(text):
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 and all(c in "0123456789abcdefABCDEF" for c in p) for p in parts):
        return None
    return int("".join(parts), 16)


def format_mac(mac):
    return ":".join(f"{(mac >> (8 * (5 - i))) & 0xFF:02x}" for i in range(6))


@dataclass
class PortsConfig:
    cpu_port: int = None
    recirc_port: int = None
    cpu_session: int = 1
    recirc_session: int = 2
    switch_mac: int = 0x0200000000FA
    routes: dict = field(default_factory=dict)
    neighbors: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise PortsError([f"{path}: {e.strerror} (os error {e.errno})"])
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text, path):
        p = cls()
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise PortsError([f"{path}: not TOML: {e}"])
        problems = []
        for key, value in doc.items():
            # A top-level key is on one line only (TOML refuses a key set twice).
            m = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*=", text, re.M)
            at = f"{path}:{text.count(chr(10), 0, m.start()) + 1}" if m else path
            repeatable = key in ("route", "neighbor")
            if repeatable and isinstance(value, list):
                values = value
            elif isinstance(value, (int, str)) and not isinstance(value, bool):
                values = [value]
            else:
                problems.append(f"{at}: {key}: expected a number or a string{', or an array of strings' if repeatable else ''}")
                continue
            for v in values:
                bad = f"{at}: {key} = {quoted(str(v))}: "
                if key in ("cpu_port", "recirc_port"):
                    if not isinstance(v, int) or not 0 <= v <= MAX_PORT:
                        problems.append(bad + f"expected a port number in 0..={MAX_PORT}")
                    else:
                        setattr(p, key, v)
                elif key in ("cpu_session", "recirc_session"):
                    if not isinstance(v, int) or not 1 <= v <= MAX_SESSION:
                        problems.append(bad + f"expected a mirror session in 1..={MAX_SESSION}")
                    else:
                        setattr(p, key, v)
                elif key == "switch_mac":
                    mac = parse_mac(v) if isinstance(v, str) else None
                    if mac is None:
                        problems.append(bad + "expected a MAC address \"aa:bb:cc:dd:ee:ff\"")
                    else:
                        p.switch_mac = mac
                elif key == "route":
                    words = str(v).split()
                    mac = parse_mac(words[0]) if len(words) == 2 else None
                    if mac is None or not words[1].isdigit() or int(words[1]) > MAX_PORT:
                        problems.append(bad + "expected \"MAC PORT\"")
                    else:
                        p.routes[mac] = int(words[1])
                elif key == "neighbor":
                    words = str(v).split()
                    mac = parse_mac(words[1]) if len(words) == 2 else None
                    try:
                        ip = int(ipaddress.IPv4Address(words[0])) if words else None
                    except ValueError:
                        ip = None
                    if mac is None or ip is None:
                        problems.append(bad + "expected \"IPV4 MAC\"")
                    else:
                        p.neighbors[ip] = mac
                else:
                    problems.append(
                        f"{at}: unknown key {quoted(key)} "
                        "(known: cpu_port, recirc_port, cpu_session, recirc_session, switch_mac, route, neighbor)"
                    )
                    break
        for key in ("cpu_port", "recirc_port"):
            if getattr(p, key) is None:
                problems.append(f"{path}: {key} is not set")
        if p.cpu_session == p.recirc_session:
            problems.append(f"{path}: cpu_session and recirc_session must differ")
        if problems:
            raise PortsError(problems)
        return p
