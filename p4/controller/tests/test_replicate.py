"""The pull half's control plane (replicate.p4): workers learned from the
pipeline's digests into the (job, worker) tables, PRE nodes and the jobs'
multicast groups; servers from their REGISTERs and the settings; a worker
seen on another port or MAC moved, a worker seen at another address than
its pinned one refused, a job removed, the switch reset. Two jobs (7 and 8,
one per PS-lite server that owns a hot key) on a FakeBackend."""

import shutil
import tempfile
import unittest

from tests.common import data, hotpath, two_server_jobs
from zebra_ctl import consts
from zebra_ctl import program as P
from zebra_ctl.backend import FakeBackend
from zebra_ctl.controller import Controller
from zebra_ctl.controls import Peer
from zebra_ctl.ports import PortsConfig
from zebra_ctl.wire import Ctl, udp_frame

SWITCH_IP = 0x0A0000FA
MAC1, MAC2 = 0x0CC47A000001, 0x0CC47A000002      # routed to ports 1 and 2 (ports.conf)
W0 = Peer(1, MAC1, 0x0A000011, 40000)
W1 = Peer(2, MAC2, 0x0A000012, 40001)
W1_MOVED = Peer(1, MAC1, 0x0A000013, 40002)
W1_RELINKED = Peer(1, MAC1, W1.ip, W1.udp_port)


def register(job, server, ip, port, mac):
    payload = bytes([0x5A, 0x42, consts.VERSION, consts.PacketType.REGISTER, 0, job, 0, server, 0, 0, 0, 0])
    return Ctl(consts.CtlKind.TO_CPU, 0, job).pack() + udp_frame(mac, 0x0200000000FA, ip, SWITCH_IP, port, 9950, payload)


def destinations(b, job, target=None):
    """Where the pipeline would send an UPDATE of `job` with the tables and
    groups as written: {(port, mac, ip, udp_port)}. Every copy of the group
    must find its destination in egress, and it must be the worker's."""
    def worker(rank):
        entry = b.lookup(P.UPDATE_WORKERS, {"hdr.zebra.job": job, "ig_md.peer_worker": rank})
        return None if entry is None else entry[1]

    if target is not None:
        d = worker(target)
        return set() if d is None else {(d["port"], d["mac"], d["ip"], d["udp_port"])}
    group = b.lookup(P.UPDATE_GROUPS, {"hdr.zebra.job": job})
    if group is None:
        return set()
    out = set()
    for rid, port in b.replicas(group[1]["group"]):
        action, copy = b.lookup(P.UPDATE_COPIES, {"hdr.replica.job": job, "eg_intr_md.egress_rid": rid})
        assert action == "copy_to"
        assert worker(rid) == dict(copy, port=port), f"job {job} rank {rid}: egress and ingress disagree"
        out.add((port, copy["mac"], copy["ip"], copy["udp_port"]))
    return out


def at(peer):
    return (peer.port, peer.mac, peer.ip, peer.udp_port)


class TwoJobs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.b = FakeBackend(P.REGISTER_SIZES)
        self.c = Controller(self.b)
        self.c.load(two_server_jobs(self.tmp), PortsConfig.load(data("ports.conf")))
        self.r = self.c.replicate

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def learn(self, job, worker, peer, now=0):
        self.b.digest(P.WORKER_DIGEST, job=job, worker=worker, **{f: getattr(peer, f) for f in ("port", "mac", "ip", "udp_port")})
        self.c.step(now)

    def test_nothing_before_a_worker_is_seen(self):
        self.assertEqual(self.b.entries(P.UPDATE_GROUPS), [], "an UPDATE to all is unroutable, counted")
        self.assertEqual(self.b.groups, {})
        self.assertEqual(destinations(self.b, 7), set())

    def test_workers_of_two_jobs(self):
        self.learn(7, 0, W0)
        self.learn(7, 1, W1)
        self.learn(8, 0, W0)
        self.assertEqual(sorted((k["hdr.zebra.job"], d["group"]) for k, _, d in self.b.entries(P.UPDATE_GROUPS)),
                         [(7, 1), (8, 2)], "one group per job, from its index; 0 is not a group")
        self.assertEqual(self.b.replicas(1), [(0, 1), (1, 2)], "one node per worker, rid = rank")
        self.assertEqual(self.b.replicas(2), [(0, 1)])
        self.assertEqual(self.b.nodes, {P.mcast_node(0, 0): (0, [1]), P.mcast_node(0, 1): (1, [2]),
                                        P.mcast_node(1, 0): (0, [1])})
        self.assertEqual(destinations(self.b, 7), {at(W0), at(W1)})
        self.assertEqual(destinations(self.b, 8), {at(W0)})
        self.assertEqual(destinations(self.b, 7, target=1), {at(W1)})
        self.assertEqual(destinations(self.b, 8, target=1), set(), "not seen in job 8: unroutable")
        self.assertEqual((self.r.learned, self.r.moved), (3, 0))

    def test_a_repeated_digest_writes_nothing(self):
        self.learn(7, 0, W0)
        calls = len(self.b.calls)
        self.learn(7, 0, W0)
        self.assertEqual(len(self.b.calls), calls, "until the entry is in, every packet of the worker digests")
        self.assertEqual(self.r.repeated, 1)

    def test_a_worker_on_another_port_replaces_its_entries(self):
        self.learn(7, 0, W0)
        self.learn(7, 1, W1)
        self.learn(7, 1, W1_RELINKED)
        workers = [(k, d) for k, _, d in self.b.entries(P.UPDATE_WORKERS) if k["hdr.zebra.job"] == 7]
        self.assertEqual(len(workers), 2, "replaced, not added")
        self.assertEqual(destinations(self.b, 7), {at(W0), at(W1_RELINKED)})
        self.assertEqual(destinations(self.b, 7, target=1), {at(W1_RELINKED)})
        self.assertEqual(self.b.replicas(1), [(0, 1), (1, 1)], "the node follows the worker to port 1")
        self.assertEqual(len(self.b.groups[1]), 2)
        self.assertEqual((self.r.learned, self.r.moved), (2, 1))

    def test_a_worker_seen_at_another_address_keeps_its_pinned_one(self):
        self.learn(7, 0, W0)
        self.learn(7, 1, W1)
        calls = len(self.b.calls)
        self.learn(7, 1, W1_MOVED)
        self.assertEqual(len(self.b.calls), calls, "nothing written")
        self.assertEqual(destinations(self.b, 7), {at(W0), at(W1)})
        self.assertEqual((self.r.learned, self.r.moved), (2, 0))
        self.assertEqual(self.c.worker_check.pin_refused, 1)

    def test_digests_of_strangers(self):
        self.learn(7, 4, W0)
        self.learn(9, 0, W0)
        self.assertEqual((self.c.worker_check.refused_rank, self.c.bad_digests), (1, 1))
        self.assertEqual(self.b.entries(P.UPDATE_WORKERS), [])
        self.assertEqual(self.b.nodes, {})

    def test_servers_from_registrations_and_settings(self):
        servers = lambda: {(k["hdr.zebra.job"], k["hdr.update_ack.server"]): d for k, _, d in self.b.entries(P.UPDATE_SERVERS)}
        self.assertEqual(servers(), {(8, 0): {"port": 2, "mac": MAC2, "ip": 0x0A000002, "udp_port": 9951}},
                         "job 8 is PS-lite server 1's, pinned by server_addr; its MAC from the neighbours, its port from the routes")
        self.b.inbox = [register(7, 0, 0x0A000001, 9960, MAC1)]
        self.c.step(0)
        self.assertEqual(servers()[(7, 0)], {"port": 1, "mac": MAC1, "ip": 0x0A000001, "udp_port": 9960})
        self.b.inbox = [register(7, 0, 0x0A000003, 9961, MAC2)]
        with self.assertLogs("zebra_ctl", "WARNING"):
            self.c.step(1)
        self.assertEqual(servers()[(7, 0)], {"port": 1, "mac": MAC1, "ip": 0x0A000001, "udp_port": 9960},
                         "registered again from elsewhere: refused, the server is pinned (docs/SECURITY.md)")
        self.assertEqual(len(servers()), 2)

    def test_a_removed_job_leaves_nothing_and_the_other_stays(self):
        self.learn(7, 0, W0)
        self.learn(7, 1, W1)
        self.learn(8, 0, W0)
        self.b.inbox = [register(7, 0, 0x0A000001, 9960, MAC1)]
        self.c.step(0)
        self.r.remove_job(self.c.plans[7])
        for table in P.UPDATE_TABLES:
            jobs = {k.get("hdr.zebra.job", k.get("hdr.replica.job")) for k, _, _ in self.b.entries(table)}
            self.assertNotIn(7, jobs, table)
        self.assertNotIn(1, self.b.groups)
        self.assertEqual(self.b.nodes, {P.mcast_node(1, 0): (0, [1])})
        self.assertEqual(destinations(self.b, 8), {at(W0)})
        self.learn(7, 1, W1)
        self.assertEqual(destinations(self.b, 7), {at(W1)}, "learned afresh")

    def test_reset_clears_every_group_and_node(self):
        self.learn(7, 0, W0)
        self.learn(8, 0, W1)
        self.b.mcast_node_set(999, 3, [5])
        self.c.reset()
        self.assertEqual((self.b.groups, self.b.nodes), ({}, {}), "also what an earlier controller left")
        for table in P.UPDATE_TABLES:
            self.assertEqual(self.b.entries(table), [], table)
        self.c.load(hotpath(data("tofino.conf")), PortsConfig.load(data("ports.conf")))
        self.learn(7, 2, W0)
        self.assertEqual(destinations(self.b, 7), {at(W0)})


if __name__ == "__main__":
    unittest.main()
