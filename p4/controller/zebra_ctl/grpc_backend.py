"""BfrtBackend over the BfRt gRPC client of the Intel (Barefoot) SDE.

Written against the `bfrt_grpc.client` module of SDE 9.x (the same calls
SwitchML's controller makes) and a CPU port reachable as a Linux network
interface (the CPU Ethernet port, or the kernel netdev of the PCIe CPU port).
It has not been run: no SDE, switch or model was available where it was
written. Everything else in the controller reaches the hardware only
through these methods.
"""

import socket

from .backend import BackendError, BfrtBackend

ETH_P_ALL = 0x0003
# How long receive_digests waits for the next digest message.
DIGEST_WAIT_S = 0.001


class GrpcBackend(BfrtBackend):
    def __init__(self, grpc_addr="localhost:50052", program="zebra", cpu_iface=None, client_id=0, device_id=0):
        try:
            import bfrt_grpc.client as gc
        except ImportError as e:
            raise BackendError(
                "bfrt_grpc is not importable: run the controller with the SDE's Python "
                "(source $SDE/set_sde.bash) or use --backend fake"
            ) from e
        self.gc = gc
        self.interface = gc.ClientInterface(grpc_addr, client_id=client_id, device_id=device_id)
        self.bfrt_info = self.interface.bfrt_info_get(program)
        self.interface.bind_pipeline_config(program)
        self.target = gc.Target(device_id=device_id, pipe_id=0xFFFF)
        self.sock = None
        if cpu_iface is not None:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            self.sock.bind((cpu_iface, 0))
            self.sock.setblocking(False)

    def _table(self, name):
        return self.bfrt_info.table_get(name)

    @staticmethod
    def _short(name):
        return name[len("pipe."):] if name.startswith("pipe.") else name

    def _key(self, table, key):
        tuples = []
        for field, value in key.items():
            if isinstance(value, tuple):
                tuples.append(self.gc.KeyTuple(field, value[0], value[1]))
            else:
                tuples.append(self.gc.KeyTuple(field, value))
        return table.make_key(tuples)

    def _data(self, table, data, action):
        return table.make_data([self.gc.DataTuple(k, v) for k, v in data.items()], action)

    def table_clear(self, name):
        t = self._table(name)
        t.entry_del(self.target)
        try:
            t.default_entry_reset(self.target)
        except Exception:
            pass

    def table_add(self, name, key, action, data):
        t = self._table(name)
        t.entry_add(self.target, [self._key(t, key)], [self._data(t, data, action)])

    def table_modify(self, name, key, action, data):
        t = self._table(name)
        t.entry_mod(self.target, [self._key(t, key)], [self._data(t, data, action)])

    def table_delete(self, name, key):
        t = self._table(name)
        t.entry_del(self.target, [self._key(t, key)])

    def table_set_default(self, name, action, data):
        t = self._table(name)
        t.default_entry_set(self.target, self._data(t, data, action))

    def register_write(self, name, index, value):
        t = self._table(name)
        short = self._short(name)
        key = t.make_key([self.gc.KeyTuple("$REGISTER_INDEX", index)])
        data = t.make_data([self.gc.DataTuple(f"{short}.{k}", v) for k, v in value.items()])
        t.entry_mod(self.target, [key], [data])

    def register_read(self, name, index):
        t = self._table(name)
        short = self._short(name)
        key = t.make_key([self.gc.KeyTuple("$REGISTER_INDEX", index)])
        for data, _ in t.entry_get(self.target, [key], {"from_hw": True}):
            out = {}
            for k, v in data.to_dict().items():
                if k.startswith(short + "."):
                    out[k[len(short) + 1:]] = v[0] if isinstance(v, list) else v
            return out
        return {}

    def register_clear(self, name):
        self._table(name).entry_del(self.target)

    def counter_read(self, name, index):
        t = self._table(name)
        key = t.make_key([self.gc.KeyTuple("$COUNTER_INDEX", index)])
        for data, _ in t.entry_get(self.target, [key], {"from_hw": True}):
            return data.to_dict().get("$COUNTER_SPEC_PKTS", 0)
        return 0

    def register_reset(self, name, index):
        # Every field of the entry, as the hardware names them, written as 0.
        fields = self.register_read(name, index)
        if fields:
            self.register_write(name, index, {k: 0 for k in fields})

    def counter_reset(self, name, index):
        t = self._table(name)
        key = t.make_key([self.gc.KeyTuple("$COUNTER_INDEX", index)])
        data = t.make_data([self.gc.DataTuple("$COUNTER_SPEC_PKTS", 0), self.gc.DataTuple("$COUNTER_SPEC_BYTES", 0)])
        t.entry_mod(self.target, [key], [data])

    def counter_clear(self, name):
        self._table(name).entry_del(self.target)

    def mirror_session(self, session, egress_port, max_len):
        t = self._table("$mirror.cfg")
        key = t.make_key([self.gc.KeyTuple("$sid", session)])
        fields = [
            self.gc.DataTuple("$direction", str_val="EGRESS"),
            self.gc.DataTuple("$session_enable", bool_val=True),
            self.gc.DataTuple("$ucast_egress_port", egress_port),
            self.gc.DataTuple("$ucast_egress_port_valid", bool_val=True),
        ]
        if max_len:
            fields.append(self.gc.DataTuple("$max_pkt_len", max_len))
        data = t.make_data(fields, "$normal")
        try:
            t.entry_del(self.target, [key])
        except Exception:
            pass
        t.entry_add(self.target, [key], [data])

    # The packet replication engine's tables, as SwitchML's controller
    # (pre.py) writes them.

    def _set(self, t, key, data):
        try:
            t.entry_add(self.target, [key], [data])
        except self.gc.BfruntimeRpcException:
            t.entry_mod(self.target, [key], [data])

    def mcast_node_set(self, node, rid, ports):
        t = self._table("$pre.node")
        key = t.make_key([self.gc.KeyTuple("$MULTICAST_NODE_ID", node)])
        data = t.make_data([
            self.gc.DataTuple("$MULTICAST_RID", rid),
            self.gc.DataTuple("$MULTICAST_LAG_ID", int_arr_val=[]),
            self.gc.DataTuple("$DEV_PORT", int_arr_val=list(ports)),
        ])
        self._set(t, key, data)

    def mcast_node_delete(self, node):
        t = self._table("$pre.node")
        t.entry_del(self.target, [t.make_key([self.gc.KeyTuple("$MULTICAST_NODE_ID", node)])])

    def mcast_group_set(self, group, nodes):
        t = self._table("$pre.mgid")
        key = t.make_key([self.gc.KeyTuple("$MGID", group)])
        data = t.make_data([
            self.gc.DataTuple("$MULTICAST_NODE_ID", int_arr_val=list(nodes)),
            self.gc.DataTuple("$MULTICAST_NODE_L1_XID_VALID", bool_arr_val=[False] * len(nodes)),
            self.gc.DataTuple("$MULTICAST_NODE_L1_XID", int_arr_val=[0] * len(nodes)),
        ])
        self._set(t, key, data)

    def mcast_group_delete(self, group):
        t = self._table("$pre.mgid")
        t.entry_del(self.target, [t.make_key([self.gc.KeyTuple("$MGID", group)])])

    def mcast_clear(self):
        for name in ("$pre.mgid", "$pre.node"):
            t = self._table(name)
            for _, key in t.entry_get(self.target, flags={"from_hw": False}):
                t.entry_del(self.target, [key])

    def receive_digests(self, name):
        learn = self.bfrt_info.learn_get(name)
        out = []
        for msg in self.interface.digest_get_iterator(timeout=DIGEST_WAIT_S):
            for data in learn.make_data_list(msg):
                out.append({k: v[0] if isinstance(v, list) else v for k, v in data.to_dict().items()})
        return out

    def send_packet(self, frame):
        if self.sock is None:
            raise BackendError("no CPU interface given (--cpu-iface)")
        self.sock.send(frame)

    def receive_packets(self):
        if self.sock is None:
            return []
        out = []
        while True:
            try:
                out.append(self.sock.recv(65535))
            except BlockingIOError:
                return out
