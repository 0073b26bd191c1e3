"""Every hardware call of the controller goes through `BfrtBackend`.

`FakeBackend` keeps the tables, registers, counters, mirror sessions,
multicast groups and nodes, digests and the CPU port's packets in memory
(the tests and `--backend fake` use it);
`grpc_backend.GrpcBackend` talks to bf_switchd through the BfRt gRPC client
of the Barefoot SDE. Table keys are dicts of field name to an int, or to a
(value, mask) pair for ternary fields; register values are dicts of field
name to int ({"lo": .., "hi": ..} for pairs, {"f1": ..} for plain words).
"""

from abc import ABC, abstractmethod


class BackendError(Exception):
    pass


class BfrtBackend(ABC):
    @abstractmethod
    def table_clear(self, table):
        """Delete every entry of `table` and reset its default action."""

    @abstractmethod
    def table_add(self, table, key, action, data):
        """Add one entry; `action` None for a parser value set."""

    @abstractmethod
    def table_modify(self, table, key, action, data):
        """Replace the action data of an existing entry."""

    @abstractmethod
    def table_delete(self, table, key):
        """Delete one existing entry."""

    @abstractmethod
    def table_set_default(self, table, action, data):
        """Set the default action of a (keyless) table."""

    @abstractmethod
    def register_write(self, register, index, value):
        """Write one register entry (every pipe)."""

    @abstractmethod
    def register_read(self, register, index):
        """Read one register entry from the hardware; a dict like the one written."""

    @abstractmethod
    def register_clear(self, register):
        """Zero every entry of `register`."""

    @abstractmethod
    def register_reset(self, register, index):
        """Zero one entry of `register` (a removed job's)."""

    @abstractmethod
    def counter_read(self, counter, index):
        """Packets counted at `index` (read from the hardware)."""

    @abstractmethod
    def counter_reset(self, counter, index):
        """Zero one index of `counter` (a removed job's)."""

    @abstractmethod
    def counter_clear(self, counter):
        """Zero every index of `counter`."""

    @abstractmethod
    def mirror_session(self, session, egress_port, max_len):
        """Configure an E2E mirror session; max_len 0 for whole packets."""

    @abstractmethod
    def mcast_node_set(self, node, rid, ports):
        """Create or replace a PRE (level 1) node: one copy per port, egress_rid `rid`."""

    @abstractmethod
    def mcast_node_delete(self, node):
        """Delete a node no group holds."""

    @abstractmethod
    def mcast_group_set(self, group, nodes):
        """Create a multicast group, or replace its nodes."""

    @abstractmethod
    def mcast_group_delete(self, group):
        """Delete a multicast group (not its nodes)."""

    @abstractmethod
    def mcast_clear(self):
        """Delete every multicast group, then every node."""

    @abstractmethod
    def receive_digests(self, digest):
        """Digests of `digest` since the last call: dicts of field name to int."""

    @abstractmethod
    def send_packet(self, frame):
        """Inject a frame into the pipeline through the CPU port."""

    @abstractmethod
    def receive_packets(self):
        """Frames the pipeline sent to the CPU port since the last call."""


class FakeBackend(BfrtBackend):
    """An in-memory switch: records what the controller writes and answers
    reads from it. Registers read as zero (or their declared initial value)
    until written."""

    def __init__(self, register_sizes=None):
        self.tables = {}
        self.defaults = {}
        self.registers = {}
        self.register_sizes = dict(register_sizes or {})
        self.counters = {}
        self.sessions = {}
        self.groups = {}
        self.nodes = {}
        self.digests = {}
        self.sent = []
        self.inbox = []
        self.calls = []

    def _log(self, *call):
        self.calls.append(call)

    @staticmethod
    def _key(key):
        return tuple(sorted(key.items()))

    def table_clear(self, table):
        self._log("table_clear", table)
        self.tables[table] = {}
        self.defaults.pop(table, None)

    def table_add(self, table, key, action, data):
        self._log("table_add", table)
        entries = self.tables.setdefault(table, {})
        k = self._key(key)
        if k in entries:
            raise BackendError(f"{table}: entry {key} already exists")
        entries[k] = (action, dict(data))

    def table_modify(self, table, key, action, data):
        self._log("table_modify", table)
        entries = self.tables.get(table, {})
        k = self._key(key)
        if k not in entries:
            raise BackendError(f"{table}: no entry {key} to modify")
        entries[k] = (action, dict(data))

    def table_delete(self, table, key):
        self._log("table_delete", table)
        if self.tables.get(table, {}).pop(self._key(key), None) is None:
            raise BackendError(f"{table}: no entry {key} to delete")

    def table_set_default(self, table, action, data):
        self._log("table_set_default", table)
        self.defaults[table] = (action, dict(data))

    def entries(self, table):
        """[(key dict, action, data)] of a table, in insertion order."""
        return [(dict(k), a, d) for k, (a, d) in self.tables.get(table, {}).items()]

    def lookup(self, table, key):
        return self.tables.get(table, {}).get(self._key(key))

    def register_write(self, register, index, value):
        self._check_index(register, index)
        self.registers.setdefault(register, {})[index] = dict(value)

    def register_read(self, register, index):
        self._check_index(register, index)
        return dict(self.registers.get(register, {}).get(index, {}))

    def register_clear(self, register):
        self._log("register_clear", register)
        self.registers[register] = {}

    def _check_index(self, register, index):
        size = self.register_sizes.get(register)
        if size is not None and not 0 <= index < size:
            raise BackendError(f"{register}: index {index} outside 0..{size}")

    def counter_read(self, counter, index):
        return self.counters.get(counter, {}).get(index, 0)

    def counter_reset(self, counter, index):
        self.counters.get(counter, {}).pop(index, None)

    def register_reset(self, register, index):
        self._check_index(register, index)
        self.registers.get(register, {}).pop(index, None)

    def counter_clear(self, counter):
        self._log("counter_clear", counter)
        self.counters[counter] = {}

    def count(self, counter, index, n=1):
        """Test helper: what the data plane would count."""
        c = self.counters.setdefault(counter, {})
        c[index] = c.get(index, 0) + n

    def mirror_session(self, session, egress_port, max_len):
        self._log("mirror_session", session)
        self.sessions[session] = (egress_port, max_len)

    def mcast_node_set(self, node, rid, ports):
        self._log("mcast_node_set", node)
        self.nodes[node] = (rid, list(ports))

    def mcast_node_delete(self, node):
        self._log("mcast_node_delete", node)
        if any(node in nodes for nodes in self.groups.values()):
            raise BackendError(f"node {node} is in a multicast group")
        if self.nodes.pop(node, None) is None:
            raise BackendError(f"no node {node}")

    def mcast_group_set(self, group, nodes):
        self._log("mcast_group_set", group)
        missing = [n for n in nodes if n not in self.nodes]
        if missing:
            raise BackendError(f"group {group}: no nodes {missing}")
        self.groups[group] = list(nodes)

    def mcast_group_delete(self, group):
        self._log("mcast_group_delete", group)
        if self.groups.pop(group, None) is None:
            raise BackendError(f"no multicast group {group}")

    def mcast_clear(self):
        self._log("mcast_clear")
        self.groups = {}
        self.nodes = {}

    def replicas(self, group):
        """Test helper: (egress_rid, port) of every copy the PRE makes for `group`."""
        out = []
        for node in self.groups.get(group, []):
            rid, ports = self.nodes[node]
            out += [(rid, port) for port in ports]
        return sorted(out)

    def digest(self, digest, **fields):
        """Test helper: what the data plane would send."""
        self.digests.setdefault(digest, []).append(dict(fields))

    def receive_digests(self, digest):
        return self.digests.pop(digest, [])

    def send_packet(self, frame):
        self.sent.append(bytes(frame))

    def receive_packets(self):
        got, self.inbox = self.inbox, []
        return got
