"""Capture the bytes the system libzmq puts on the wire, for tests/libzmq_capture.rs.

Plays a raw ZMTP 3.1 peer over plain TCP against libzmq sockets driven through
ctypes, and prints what libzmq sent, as hex. Run:

    python3 tests/data/capture_libzmq.py [peer-minor-version]

Captured on Debian with libzmq 4.3.4 (libzmq3-dev), Python 3.11.
"""

import ctypes
import socket
import sys
import time

ZMQ_PAIR, ZMQ_DEALER, ZMQ_ROUTER = 0, 5, 6
ZMQ_ROUTING_ID, ZMQ_LINGER, ZMQ_LAST_ENDPOINT = 5, 17, 32
ZMQ_HEARTBEAT_IVL, ZMQ_HEARTBEAT_TTL, ZMQ_HEARTBEAT_TIMEOUT = 75, 76, 77
ZMQ_SNDMORE = 2

z = ctypes.CDLL("libzmq.so.5")
z.zmq_ctx_new.restype = ctypes.c_void_p
z.zmq_socket.restype = ctypes.c_void_p
z.zmq_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
z.zmq_setsockopt.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
z.zmq_getsockopt.argtypes = [
    ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
z.zmq_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
z.zmq_bind.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
z.zmq_send.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
z.zmq_close.argtypes = [ctypes.c_void_p]


def version():
    v = [ctypes.c_int() for _ in range(3)]
    z.zmq_version(*[ctypes.byref(x) for x in v])
    return ".".join(str(x.value) for x in v)


def setopt_int(s, opt, value):
    x = ctypes.c_int(value)
    assert z.zmq_setsockopt(s, opt, ctypes.byref(x), 4) == 0


def setopt_bytes(s, opt, value):
    assert z.zmq_setsockopt(s, opt, value, len(value)) == 0


def bound_port(s):
    buf = ctypes.create_string_buffer(256)
    n = ctypes.c_size_t(256)
    assert z.zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, buf, ctypes.byref(n)) == 0
    return int(buf.value.decode().rsplit(":", 1)[1])


def recv_for(conn, seconds):
    conn.settimeout(0.1)
    out = b""
    end = time.time() + seconds
    while time.time() < end:
        try:
            data = conn.recv(65536)
        except socket.timeout:
            continue
        if not data:
            break
        out += data
    return out


def greeting(minor):
    return (b"\xff" + b"\0" * 7 + b"\x01\x7f" + bytes([3, minor])
            + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31)


def ready(socket_type, identity=None):
    body = b"\x05READY\x0bSocket-Type" + len(socket_type).to_bytes(4, "big") + socket_type
    if identity is not None:
        body += b"\x08Identity" + len(identity).to_bytes(4, "big") + identity
    return b"\x04" + bytes([len(body)]) + body


def show(name, data):
    print(name, len(data))
    print(data.hex())


def main():
    minor = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    print("libzmq", version())
    ctx = z.zmq_ctx_new()

    # A DEALER with identity "ps9" and heartbeats connects to us and sends a
    # two-part message; then we PING it with a context.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    dealer = z.zmq_socket(ctx, ZMQ_DEALER)
    setopt_int(dealer, ZMQ_LINGER, 0)
    setopt_bytes(dealer, ZMQ_ROUTING_ID, b"ps9")
    setopt_int(dealer, ZMQ_HEARTBEAT_IVL, 100)
    setopt_int(dealer, ZMQ_HEARTBEAT_TTL, 1000)
    setopt_int(dealer, ZMQ_HEARTBEAT_TIMEOUT, 3000)
    assert z.zmq_connect(dealer, f"tcp://127.0.0.1:{srv.getsockname()[1]}".encode()) == 0
    conn, _ = srv.accept()
    conn.sendall(greeting(minor) + ready(b"ROUTER", b""))
    z.zmq_send(dealer, b"hello", 5, ZMQ_SNDMORE)
    z.zmq_send(dealer, b"\0" * 300, 300, 0)
    show("dealer_out", recv_for(conn, 0.5))
    conn.sendall(b"\x04\x0d\x04PING\x00\x0actx-42")
    show("dealer_after_ping", recv_for(conn, 0.3))
    conn.close()
    z.zmq_close(dealer)

    # A bound ROUTER without identity; we connect as a DEALER.
    router = z.zmq_socket(ctx, ZMQ_ROUTER)
    setopt_int(router, ZMQ_LINGER, 0)
    assert z.zmq_bind(router, b"tcp://127.0.0.1:0") == 0
    conn = socket.create_connection(("127.0.0.1", bound_port(router)))
    conn.sendall(greeting(minor) + ready(b"DEALER", b"w1"))
    show("router_out", recv_for(conn, 0.5))
    conn.close()
    z.zmq_close(router)

    # A bound PAIR sends one 256-byte frame (the first long-form size).
    pair = z.zmq_socket(ctx, ZMQ_PAIR)
    setopt_int(pair, ZMQ_LINGER, 0)
    assert z.zmq_bind(pair, b"tcp://127.0.0.1:0") == 0
    conn = socket.create_connection(("127.0.0.1", bound_port(pair)))
    conn.sendall(greeting(minor) + ready(b"PAIR"))
    time.sleep(0.1)
    z.zmq_send(pair, b"x" * 256, 256, 0)
    show("pair_out", recv_for(conn, 0.5))
    conn.close()
    z.zmq_close(pair)


if __name__ == "__main__":
    main()
