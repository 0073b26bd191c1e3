"""Byte formats the switch CPU reads and writes.

Zebra datagrams (rust/zebra-proto/WIRE.md): AGGREGATE, COVERAGE and
REGISTER_ACK built, AGGREGATE_ACK and REGISTER parsed, with the same checks as
zebra-proto's parsers. Internal headers (p4/headers.p4): zebra_ctl_h (16
bytes) and zebra_readout_h (8 bytes) + REGISTERS values. Frames: Ethernet,
IPv4 (no options), UDP (checksum 0).
"""

import struct
from dataclasses import dataclass

from . import consts

CTL_LEN = 16
READOUT_LEN = 8


class WireError(Exception):
    pass


def _common(ptype, job):
    return struct.pack(">HBBH", consts.MAGIC, consts.VERSION, ptype, job)


def _runs(pairs):
    """(index, value) pairs, ascending by index, cut into runs of consecutive indices."""
    runs = []
    for index, value in pairs:
        if runs and runs[-1][0] + len(runs[-1][1]) == index:
            runs[-1][1].append(value)
        else:
            runs.append((index, [value]))
    return runs


def runs_len(pairs):
    """Bytes the runs of pairs take in an AGGREGATE part (aggregate::runs_len)."""
    return sum(consts.RUN_HEADER_LEN + consts.VALUE_LEN * len(values) for _, values in _runs(pairs))


def split_parts(pairs, budget):
    """pairs (ascending) cut greedily into parts of at most budget bytes of runs
    (aggregate::split_parts): at least one part, a run that does not fit is split."""
    parts, start, used = [], 0, 0
    for i, (index, _) in enumerate(pairs):
        continues = i > start and pairs[i - 1][0] + 1 == index
        cost = consts.VALUE_LEN + (0 if continues else consts.RUN_HEADER_LEN)
        if used + cost > budget:
            parts.append(pairs[start:i])
            start, used = i, consts.RUN_HEADER_LEN + consts.VALUE_LEN
        else:
            used += cost
    parts.append(pairs[start:])
    return parts


def encode_aggregate(job, server, round_, part, parts, contributed, complete, fixed, flushed, total, pairs):
    """pairs: (hot index, raw value), ascending by index; sent as runs."""
    flags = (consts.AGGREGATE_FLAG_FIXED if fixed else 0) | (consts.AGGREGATE_FLAG_FLUSHED if flushed else 0)
    out = bytearray(_common(consts.PacketType.AGGREGATE, job))
    out += struct.pack(">HIHHQQBBHI", server, round_, part, parts, contributed, complete, flags, 0, len(pairs), total)
    for base, values in _runs(pairs):
        out += struct.pack(">IH", base, len(values))
        for value in values:
            out += struct.pack(">I", value & 0xFFFFFFFF)
    return bytes(out)


def encode_coverage(job, server, round_, part, parts, worker, first_seq, nbits, bitmap):
    """bitmap None: ALL (every seq in first_seq..first_seq+nbits), else the bytes."""
    flags = consts.COVERAGE_FLAG_ALL if bitmap is None else 0
    out = bytearray(_common(consts.PacketType.COVERAGE, job))
    out += struct.pack(">HIHHHHHBB", server, round_, part, parts, worker, first_seq, nbits, flags, 0)
    if bitmap is not None:
        out += bytes(bitmap)
    return bytes(out)


def encode_register_ack(job, server, epoch, token, admit=None):
    """epoch: the controller's incarnation (nonzero, drawn at start), last in every
    REGISTER_ACK, so that servers see a switch that was started again. token:
    the job's membership token, handed to the server (docs/SECURITY.md). admit:
    (workers, capacity granted, 0: refused) answering a REGISTER with admission."""
    if not 0 < epoch < 1 << 32:
        raise WireError(f"epoch {epoch} is not a nonzero u32")
    if not 0 <= token < 1 << 32:
        raise WireError(f"token {token} is not a u32")
    out = _common(consts.PacketType.REGISTER_ACK, job) + struct.pack(">HI", server, token)
    if admit is not None:
        workers, capacity = admit
        out += struct.pack(">HHI", workers, 0, capacity)
    return out + struct.pack(">I", epoch)


@dataclass(frozen=True)
class AggregateAck:
    job: int
    server: int
    round: int
    part: int
    token: int = 0


@dataclass(frozen=True)
class Register:
    job: int
    server: int
    token: int = 0
    admit: tuple = None       # (workers, capacity asked for): the 20-byte form


def parse_datagram(data):
    """AggregateAck or Register; WireError for anything else or malformed."""
    if len(data) < 6:
        raise WireError(f"truncated: {len(data)} bytes")
    magic, version, ptype, job = struct.unpack_from(">HBBH", data)
    if magic != consts.MAGIC:
        raise WireError(f"bad magic {magic:#06x}")
    if version != consts.VERSION:
        raise WireError(f"unsupported version {version}")
    if ptype == consts.PacketType.AGGREGATE_ACK:
        if len(data) != consts.AGGREGATE_ACK_LEN:
            raise WireError(f"AGGREGATE_ACK of {len(data)} bytes")
        server, round_, part, reserved, token = struct.unpack_from(">HIHHI", data, 6)
        if reserved != 0:
            raise WireError("reserved bytes set")
        return AggregateAck(job, server, round_, part, token)
    if ptype == consts.PacketType.REGISTER:
        if len(data) not in (consts.REGISTER_LEN, consts.REGISTER_ADMIT_LEN):
            raise WireError(f"REGISTER of {len(data)} bytes")
        server, token = struct.unpack_from(">HI", data, 6)
        if len(data) == consts.REGISTER_LEN:
            return Register(job, server, token)
        workers, reserved, capacity = struct.unpack_from(">HHI", data, consts.REGISTER_LEN)
        if reserved != 0:
            raise WireError("REGISTER reserved bytes set")
        return Register(job, server, token, (workers, capacity))
    raise WireError(f"packet type {ptype} is not for the switch CPU")


@dataclass
class Ctl:
    """zebra_ctl_h."""

    kind: int
    flags: int = 0
    job: int = 0
    round: int = 0
    row: int = 0
    rows: int = 0
    port: int = 0

    def pack(self):
        return struct.pack(">BBHIHHHH", self.kind, self.flags, self.job, self.round, self.row, self.rows, self.port, 0)

    @classmethod
    def unpack(cls, data, at=0):
        if len(data) < at + CTL_LEN:
            raise WireError("truncated zebra_ctl_h")
        kind, flags, job, round_, row, rows, port, _ = struct.unpack_from(">BBHIHHHH", data, at)
        return cls(kind, flags, job, round_, row, rows, port)


@dataclass
class ReadoutRow:
    """A READOUT pass as mirrored to the CPU: zebra_ctl_h (the mirror's),
    zebra_ctl_h (the packet's), zebra_readout_h, REGISTERS values."""

    ctl: Ctl
    row: int
    worker: int
    progress: int
    values: list

    @classmethod
    def parse(cls, data):
        mirror = Ctl.unpack(data, 0)
        need = 2 * CTL_LEN + READOUT_LEN + 4 * consts.P4_REGISTERS
        if len(data) < need:
            raise WireError(f"readout row of {len(data)} bytes, need {need}")
        row, worker, progress = struct.unpack_from(">HHI", data, 2 * CTL_LEN)
        values = list(struct.unpack_from(f">{consts.P4_REGISTERS}I", data, 2 * CTL_LEN + READOUT_LEN))
        return cls(mirror, row, worker, progress, values)

    def pack(self, packet_ctl=None):
        packet_ctl = packet_ctl or self.ctl
        return (
            self.ctl.pack()
            + packet_ctl.pack()
            + struct.pack(">HHI", self.row, self.worker, self.progress)
            + struct.pack(f">{consts.P4_REGISTERS}I", *self.values)
        )


def readout_request(job, round_, row, rows, flushed):
    """A READOUT the CPU injects: zebra_ctl_h, zebra_readout_h, zeroed values."""
    ctl = Ctl(consts.CtlKind.READOUT, consts.CTL_FLAG_FLUSHED if flushed else 0, job, round_, row, rows)
    return ctl.pack() + bytes(READOUT_LEN + 4 * consts.P4_REGISTERS)


# ---- Ethernet / IPv4 / UDP ----

ETHERTYPE_IPV4 = 0x0800
IP_PROTOCOL_UDP = 17


def ipv4_checksum(header):
    total = 0
    for i in range(0, len(header), 2):
        total += (header[i] << 8) | header[i + 1]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def udp_frame(src_mac, dst_mac, src_ip, dst_ip, src_port, dst_port, payload):
    eth = dst_mac.to_bytes(6, "big") + src_mac.to_bytes(6, "big") + struct.pack(">H", ETHERTYPE_IPV4)
    total = 20 + 8 + len(payload)
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, 0, total, 0, 0x4000, 64, IP_PROTOCOL_UDP, 0, src_ip, dst_ip))
    ip[10:12] = struct.pack(">H", ipv4_checksum(ip))
    udp = struct.pack(">HHHH", src_port, dst_port, 8 + len(payload), 0)
    return eth + bytes(ip) + udp + payload


@dataclass(frozen=True)
class UdpFrame:
    src_mac: int
    dst_mac: int
    src_ip: int
    dst_ip: int
    src_port: int
    dst_port: int
    payload: bytes


def parse_udp_frame(frame):
    """The UDP payload and addresses of an Ethernet/IPv4/UDP frame."""
    if len(frame) < 14 + 20 + 8:
        raise WireError("frame too short for Ethernet/IPv4/UDP")
    dst_mac = int.from_bytes(frame[0:6], "big")
    src_mac = int.from_bytes(frame[6:12], "big")
    (ethertype,) = struct.unpack_from(">H", frame, 12)
    if ethertype != ETHERTYPE_IPV4:
        raise WireError(f"ethertype {ethertype:#06x}")
    vihl, _, total, _, frag, _, proto, _, src_ip, dst_ip = struct.unpack_from(">BBHHHBBHII", frame, 14)
    ihl = (vihl & 0x0F) * 4
    if vihl >> 4 != 4 or ihl < 20 or proto != IP_PROTOCOL_UDP or frag & 0x1FFF:
        raise WireError("not an unfragmented IPv4/UDP packet")
    at = 14 + ihl
    src_port, dst_port, length, _ = struct.unpack_from(">HHHH", frame, at)
    if length < 8 or at + length > len(frame):
        raise WireError("bad UDP length")
    return UdpFrame(src_mac, dst_mac, src_ip, dst_ip, src_port, dst_port, bytes(frame[at + 8:at + length]))
