"""Only a job's members take part, in the pipeline (docs/SECURITY.md, "What
a Tofino does"): the member check (worker_check.p4, MemberCheck), the rounds
far ahead (round_state.p4, NewestRound) and the answer's token (ack.p4),
run from the P4 sources (tests/p4eval.py) on the tables and registers the
controller writes to a FakeBackend, with the controller pinning workers from
the digests. Each case is one of zebra-proto's (switch/members.rs,
switch/member_tests.rs): a forged source address and a wrong token after the
right one are refused and counted, a round far ahead falls back (FarAhead)
and is not remembered, and none of them changes a sum.

What a packet does is decided in the order of zebra.p4's Ingress: the job
and worker (JobCheck: a worker the job does not have is BadWorker), the
member check (UNPINNED: a digest, dropped; ADDRESS, TOKEN: refused), then the
newest round (far: FAR_AHEAD); an admitted packet adds its value to its
round's sum here (the round state, records and registers are not run)."""

import collections
import os
import shutil
import tempfile
import unittest

from tests.common import data, hotpath, p4_source
from tests.p4eval import Control, program
from zebra_ctl import consts
from zebra_ctl import program as P
from zebra_ctl.backend import FakeBackend
from zebra_ctl.controller import Controller
from zebra_ctl.ports import PortsConfig

ENV = program()
ENUM = {name: vals for name, (_, vals) in ENV.enums.items()}
MEMBER = {v: k for k, v in ENUM["member_t"].items()}
RETX = ENV.consts["HOT_FLAG_RETX"]


def widths():
    out = {}
    for root, typ in (("hdr", "header_t"), ("ig_md", "ingress_metadata_t"), ("bridge", "zebra_bridge_h")):
        out.update({root + suffix: w for suffix, w in ENV.leaves(("name", typ, []))})
    return out


WIDTHS = widths()
WORKER_A = (0x0A000011, 40000)
WORKER_B = (0x0A000012, 40001)
FORGER = (0x0A0000EE, 40000)


class Pipeline:
    """The ingress checks of one switch on the controller's tables."""

    def __init__(self, settings):
        self.b = FakeBackend(P.REGISTER_SIZES)
        self.c = Controller(self.b)
        self.plan = self.c.load(settings, PortsConfig.load(data("ports.conf")))
        self.job_check = Control(ENV, "JobCheck", self.b, "pipe.Ingress.job_check.", WIDTHS)
        self.member_check = Control(ENV, "MemberCheck", self.b, "pipe.Ingress.member_check.", WIDTHS)
        self.newest = Control(ENV, "NewestRound", self.b, "pipe.Ingress.newest_round.", {})
        self.answer = Control(ENV, "Answer", self.b, "pipe.Egress.answer.", WIDTHS)
        self.sums = collections.Counter()        # round -> sum of the values added
        self.stats = collections.Counter()       # what happened to each packet

    def hot(self, worker, round_, token, source=WORKER_A, value=1, retx=False, job=None):
        """One HOT packet: 'added', 'FALLBACK_<reason>', 'UNPINNED', 'REFUSED_ADDRESS' or 'REFUSED_TOKEN'."""
        job = self.plan.job.id if job is None else job
        state = {p: 0 for p in WIDTHS}
        state.update({
            "job_id": job, "ig_md.job_id": job, "hdr.zebra.job": job, "hdr.hot.worker": worker,
            "hdr.hot.round": round_, "ig_md.round": round_, "hdr.hot.token": token,
            "hdr.hot.flags": RETX if retx else 0, "hdr.ipv4.src_addr": source[0], "hdr.udp.src_port": source[1],
            "for_switch": 1,
        })
        self.job_check.run(state)
        outcome = self.decide(state, retx)
        self.stats[outcome] += 1
        if outcome == "added":
            self.sums[round_] += value
        if outcome == "UNPINNED":
            self.b.digest(P.WORKER_DIGEST, job=job, worker=worker, port=1, mac=0x0CC47A000001,
                          ip=source[0], udp_port=source[1])
            self.c.step(0)
        return outcome

    def decide(self, state, retx):
        if not state["ig_md.job_known"]:
            return "FALLBACK_UNKNOWN_JOB"
        if not state["ig_md.worker_known"]:
            return "FALLBACK_BAD_WORKER"
        self.member_check.run(state)
        member = MEMBER[state["ig_md.member"]]
        if member == "UNPINNED":
            return "UNPINNED"
        if member != "OK":
            return "REFUSED_" + member
        run = {"index": state["ig_md.job.index"], "round": state["ig_md.round"], "floor": state["ig_md.far_floor"],
               "resend": int(retx), "far": 0}
        self.newest.run(run)
        return "FALLBACK_FAR_AHEAD" if run["far"] else "added"

    def answer_token(self, reason, job=None):
        """The token egress writes into an answer with `reason` for `job`."""
        state = {p: 0 for p in WIDTHS}
        state.update({"hdr.zebra.job": self.plan.job.id if job is None else job,
                      "bridge.reason": ENUM["fallback_reason_t"][reason]})
        self.answer.run(state)
        return state["hdr.response.token"]


class Members(unittest.TestCase):
    def setUp(self):
        self.p = Pipeline(hotpath(data("tofino.conf")))
        self.token = self.p.plan.token

    def test_the_tables_hold_the_token_the_servers_are_given(self):
        self.assertEqual(self.token, self.p.c.servers[self.p.plan.job.id].token)
        self.assertNotEqual(self.token, 0)
        self.assertEqual(self.p.answer_token("ADDED"), self.token)
        self.assertEqual(self.p.answer_token("LATE"), self.token)
        self.assertEqual(self.p.answer_token("BAD_WORKER"), 0, "not a member: no token")
        self.assertEqual(self.p.answer_token("UNKNOWN_JOB"), 0)
        self.assertEqual(self.p.answer_token("UNOPENED", job=99), 0, "a job the switch does not have")

    def test_the_first_packet_pins_its_address_and_a_forged_one_is_refused(self):
        p = self.p
        self.assertEqual(p.hot(0, 1, 0), "UNPINNED", "dropped with a digest: the controller pins it")
        self.assertEqual(p.c.worker_check.pinned[7], {0: WORKER_A})
        self.assertEqual(p.hot(0, 1, 0), "added", "its next packet, before it has the token")
        self.assertEqual(p.hot(0, 1, self.token, source=FORGER), "REFUSED_ADDRESS", "the right token from elsewhere")
        self.assertEqual(p.hot(0, 1, 0, source=(WORKER_A[0], WORKER_A[1] + 1)), "REFUSED_ADDRESS", "another port")
        self.assertEqual(p.hot(1, 1, 0, source=WORKER_B), "UNPINNED")
        self.assertEqual(p.hot(1, 1, 0, source=WORKER_B), "added")
        self.assertEqual(p.sums, {1: 2}, "only the pinned workers' packets added")
        self.assertEqual(p.stats["REFUSED_ADDRESS"], 2)

    def test_who_speaks_first_takes_the_slot(self):
        p = self.p
        self.assertEqual(p.hot(1, 1, 0, source=FORGER), "UNPINNED", "a stranger before the worker")
        self.assertEqual(p.hot(1, 1, 0, source=WORKER_B), "REFUSED_ADDRESS", "the worker itself is refused")
        self.assertEqual(p.sums, {}, "trust on first use: without a key, as zebra switch")

    def test_two_addresses_racing_for_a_slot(self):
        p = self.p
        for source in (WORKER_B, FORGER):
            p.b.digest(P.WORKER_DIGEST, job=7, worker=1, port=1, mac=0x0CC47A000001, ip=source[0], udp_port=source[1])
        p.c.step(0)
        self.assertEqual(p.c.worker_check.pinned[7], {1: WORKER_B}, "the first digest pins")
        self.assertEqual(p.c.worker_check.pin_refused, 1)
        self.assertEqual(p.hot(1, 1, 0, source=FORGER), "REFUSED_ADDRESS")
        self.assertEqual(len(p.b.entries(P.MEMBERS)), 1)

    def test_a_wrong_token_after_the_right_one_is_refused(self):
        p = self.p
        p.hot(0, 1, 0)
        self.assertEqual(p.hot(0, 1, 5), "added", "a stale token before the right one: the address alone")
        self.assertEqual(p.hot(0, 1, self.token), "added")
        self.assertEqual(p.hot(0, 2, 0), "REFUSED_TOKEN")
        self.assertEqual(p.hot(0, 2, 5), "REFUSED_TOKEN")
        self.assertEqual(p.hot(0, 2, self.token), "added")
        p.hot(1, 2, 0, source=WORKER_B)
        self.assertEqual(p.hot(1, 2, 0, source=WORKER_B), "added", "worker 1 has not shown it")
        self.assertEqual(p.sums, {1: 2, 2: 2})
        self.assertEqual(p.stats["REFUSED_TOKEN"], 2)

    def test_a_retired_job_leaves_no_pin_and_no_shown_token(self):
        p = self.p
        p.hot(0, 1, 0)
        p.hot(0, 1, self.token)
        plan = p.plan
        p.c.retire(plan.job.id)
        self.assertEqual(p.b.entries(P.PINS), [])
        self.assertEqual(p.b.entries(P.MEMBERS), [])
        self.assertEqual(p.b.entries(P.TOKENS), [])
        self.assertEqual(p.b.register_read(P.SHOWN, P.member_index(plan.job_index, 0)), {})
        self.assertEqual(p.b.register_read(P.NEWEST, plan.job_index), {})

    def test_a_round_far_ahead_falls_back_and_is_not_remembered(self):
        p = Pipeline(hotpath(data("tofino.conf"), max_round_ahead=4))
        p.hot(0, 1, 0)
        self.assertEqual(p.hot(0, 1, 0), "added")
        self.assertEqual(p.hot(0, 6, 0), "FALLBACK_FAR_AHEAD", "1 + 4 + 1")
        self.assertEqual(p.hot(0, 1 << 27, 0, retx=True), "FALLBACK_FAR_AHEAD", "a resend too")
        self.assertEqual(p.hot(0, 5, 0), "added", "1 + 4: the far ones moved nothing")
        self.assertEqual(p.hot(0, 9, 0), "added", "5 + 4")
        self.assertEqual(p.hot(0, 14, 0), "FALLBACK_FAR_AHEAD")
        self.assertEqual(p.hot(0, 3, 0), "added", "an older round is no concern of this check")
        self.assertEqual(p.hot(0, 13, 0, retx=True), "added", "9 + 4")
        self.assertEqual(p.hot(0, 14, 0), "FALLBACK_FAR_AHEAD", "a resend opens nothing, moves nothing")
        self.assertEqual(p.sums, {1: 1, 5: 1, 9: 1, 3: 1, 13: 1})
        self.assertEqual(p.stats["FALLBACK_FAR_AHEAD"], 4)

    def test_before_its_first_round_a_job_takes_any_round(self):
        p = Pipeline(hotpath(data("tofino.conf"), max_round_ahead=4))
        p.hot(0, 1 << 20, 0)
        self.assertEqual(p.hot(0, 1 << 20, 0), "added", "a switch started again: newest round 0, no check")
        self.assertEqual(p.hot(0, (1 << 20) + 5, 0), "FALLBACK_FAR_AHEAD")


class Verdict(unittest.TestCase):
    """zebra.p4's verdict on a HOT packet, read from its source: a member
    refusal drops and counts the packet before any answer is chosen (the
    model's order: UnknownJob and BadWorker, which leave worker_known false,
    then the member check, then every fallback), FAR_AHEAD is answered after
    the stateless reasons, and a refused packet reaches no state."""

    def setUp(self):
        self.src = p4_source("zebra.p4")

    def test_each_refusal_is_dropped_and_counted_before_any_answer(self):
        chain = self.src
        first_answer = chain.index("ig_md.reason != fallback_reason_t.ADDED) {")
        for member, stat in (("UNPINNED", "UNPINNED"), ("ADDRESS", "REFUSED_ADDRESS"), ("TOKEN", "REFUSED_TOKEN")):
            at = chain.index(f"ig_md.worker_known && ig_md.member == member_t.{member})")
            branch = chain[at:chain.index("}", at)]
            self.assertIn("verdict_t.DROP", branch, member)
            self.assertIn(f"stat_t.{stat};", branch, member)
            self.assertLess(at, first_answer, f"{member} before the answers")
        far = chain.index("} else if (far) {")
        self.assertLess(first_answer, far, "FarAhead after the stateless reasons")
        self.assertLess(far, chain.index("} else if (ig_md.record_before == 0) {"), "and before the records")

    def test_a_refused_or_far_packet_touches_no_state(self):
        self.assertRegex(self.src, r"ig_md\.reason == fallback_reason_t\.ADDED\s*&& ig_md\.member == member_t\.OK\) \{\s*"
                                   r"first_opened\.apply")
        self.assertIn("round_op == round_op_t.HOT && !far,", self.src, "no record of a far packet")
        rs = p4_source("round_state.p4")
        self.assertIn("(round_op_t.HOT, _, _, true)         : do_nothing();", rs, "no round state for a far packet")


class KeyedJob(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        key = os.path.join(self.tmp, "job.key")
        with open(key, "w") as f:
            f.write("a secret of the job's members\n")
        os.chmod(key, 0o600)
        with open(data("tofino.conf"), encoding="utf-8") as f:
            text = f.read()
        path = os.path.join(self.tmp, "keyed.conf")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text + f'job_key_file = "{key}"\n')
        self.p = Pipeline(hotpath(path))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_the_token_is_required_from_the_first_packet(self):
        p = self.p
        token = p.plan.token
        self.assertEqual(token, p.plan.job.token, "the key's")
        self.assertEqual(p.hot(0, 1, 0, source=FORGER), "REFUSED_TOKEN", "no pin without the token")
        self.assertEqual(p.c.worker_check.pinned.get(7, {}), {})
        self.assertEqual(p.hot(0, 1, token), "UNPINNED")
        self.assertEqual(p.hot(0, 1, 0), "REFUSED_TOKEN", "pinned, never shown here: the key requires it")
        self.assertEqual(p.hot(0, 1, token), "added")
        self.assertEqual(p.sums, {1: 1})


if __name__ == "__main__":
    unittest.main()
