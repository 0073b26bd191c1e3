"""Names of the P4 program's tables, registers, counters and value sets, as
BfRt knows them (pipe.<control>.<instance>...<object>), and the sizes of its
register arrays. tests/test_p4_names.py resolves every name against the P4
sources."""

from . import consts

R = consts.P4_REGISTERS


def gress(register):
    """Which half of the pipeline holds accumulator `register`: egress, all of them."""
    return "Egress"


# Tables.
JOBS = "pipe.Ingress.job_check.jobs"
COPY_OFFSETS = "pipe.Ingress.job_check.copy_offsets"
WORKERS = "pipe.Ingress.job_check.workers"
ADDRESSES = "pipe.Ingress.switch_address.addresses"
PINS = "pipe.Ingress.member_check.pins"
MEMBERS = "pipe.Ingress.member_check.members"
TOKENS = "pipe.Ingress.member_check.tokens"
ANSWER_TOKENS = "pipe.Egress.answer.tokens"
PORTS = "pipe.Ingress.switch_ports.ports"
SESSIONS = "pipe.Egress.mirror_sessions.sessions"
POPCOUNT = [f"pipe.Ingress.conflict_check.popcount{i}" for i in range(2)]
L2 = "pipe.Ingress.forward.l2"
UPDATE_WORKERS = "pipe.Ingress.update_route.workers"
UPDATE_SERVERS = "pipe.Ingress.update_route.servers"
UPDATE_GROUPS = "pipe.Ingress.update_route.groups"
UPDATE_COPIES = "pipe.Egress.update_copy.copies"

# Parser value sets.
UDP_PORTS = "pipe.IngressParser.zebra_udp_ports"
INTERNAL_PORTS = "pipe.IngressParser.internal_ports"

# Registers.
ROUNDS = "pipe.Ingress.round_state.rounds"
RECORDS = "pipe.Ingress.seen_records.records"
PROGRESS = "pipe.Egress.worker_progress.progress_reg"
DONE = "pipe.Egress.completion.done_reg"
COVER = "pipe.Egress.coverage.words"
FIRSTS = "pipe.Ingress.first_opened.firsts"
NEWEST = "pipe.Ingress.newest_round.newest"
SHOWN = "pipe.Ingress.member_check.shown"


def sums(register):
    return f"pipe.{gress(register)}.accumulators.acc{register:02d}.sums"


def hits(register):
    return f"pipe.{gress(register)}.accumulators.acc{register:02d}.hits"


def lns_hi(register):
    return f"pipe.Ingress.lns_values.lns{register:02d}.to_fixed_hi"


def lns_lo(register):
    return f"pipe.Ingress.lns_values.lns{register:02d}.to_fixed_lo"


# Digests, and the fields of each (worker_digest_t).
WORKER_DIGEST = "pipe.IngressDeparser.worker_digest"
WORKER_DIGEST_FIELDS = ("job", "worker", "port", "mac", "ip", "udp_port")

# Counters.
INGRESS_STATS = "pipe.Ingress.stats"
EGRESS_STATS = "pipe.Egress.stats"

# Register arrays and their entries (for resets).
REGISTER_SIZES = {
    ROUNDS: consts.P4_MAX_JOBS * consts.P4_MAX_COPIES,
    RECORDS: consts.P4_RECORD_ENTRIES,
    PROGRESS: consts.P4_MAX_JOBS * consts.P4_MAX_COPIES * consts.P4_MAX_WORKERS,
    DONE: consts.P4_MAX_JOBS * consts.P4_MAX_COPIES,
    COVER: consts.P4_COVER_ENTRIES,
    FIRSTS: consts.P4_MAX_JOBS,
    NEWEST: consts.P4_MAX_JOBS,
    SHOWN: consts.P4_MEMBER_ENTRIES,
}
for _k in range(R):
    REGISTER_SIZES[sums(_k)] = consts.P4_REGISTER_ENTRIES

# The round state of a free copy that never held a round.
ROUND_STATE_INITIAL = {"lo": 0, "hi": consts.ROUND_FREE}

UPDATE_TABLES = [UPDATE_WORKERS, UPDATE_SERVERS, UPDATE_GROUPS, UPDATE_COPIES]
MEMBER_TABLES = [PINS, MEMBERS, TOKENS, ANSWER_TOKENS]
TABLES = [JOBS, COPY_OFFSETS, WORKERS, ADDRESSES] + MEMBER_TABLES + [L2, UDP_PORTS, INTERNAL_PORTS] + POPCOUNT + UPDATE_TABLES
LNS_TABLES = [t for k in range(R) for t in (lns_hi(k), lns_lo(k))]
COUNTERS = [INGRESS_STATS, EGRESS_STATS] + [hits(k) for k in range(R)]


def round_state_index(job_index, copy):
    return (job_index << consts.P4_COPY_BITS) | copy


def progress_index(job_index, copy, worker):
    return (round_state_index(job_index, copy) << consts.P4_WORKER_BITS) | worker


def member_index(job_index, worker):
    """A worker's "has shown the token" bit (MemberCheck's member_index_t)."""
    return (job_index << consts.P4_WORKER_BITS) | worker


def mcast_group(job_index):
    """The job's multicast group (0 means no multicast to the traffic manager)."""
    return 1 + job_index


def mcast_node(job_index, worker):
    """The PRE node of a worker of the job; its replication id is the rank."""
    return (job_index << consts.P4_WORKER_BITS) | worker
