/*
 * Sizing constants of the Zebra aggregation program (TNA, Tofino 1).
 *
 * These are fixed when the program is compiled. Nothing that belongs to a job
 * or a network is here: job ids, workers, hot-key counts, the fixed-point
 * scale, the switch's address and UDP port, server addresses, CPU and
 * recirculation ports are written at run time by the control plane
 * (p4/controller/) into tables, parser value sets and registers.
 *
 * rust/zebra-proto/tests/p4_conformance.rs holds these numbers to
 * zebra-proto's src/consts.rs, so the two cannot drift apart.
 */

#ifndef _ZEBRA_CONFIGURATION_
#define _ZEBRA_CONFIGURATION_

/* Register arrays (R). Hot rank r lives in register r mod R, slot r div R
 * (the paper's heat layout), so a power of two: the register is the rank's
 * low REGISTER_BITS and the slot the next SLOT_BITS. R is also a setting
 * (`registers`) every party reads, 32 by default (consts::DEFAULT_REGISTERS);
 * the controller requires `registers = REGISTERS` of a job it loads. 8, not
 * 32: every register's routed pair costs PHV in both gresses (its entry and
 * value reach the accumulators in egress), and with 8 the program fits one
 * Tofino 1 pipe by the resource model (docs/P4.md, "Resources"); at most
 * consts::MAX_REGISTERS. */
const int REGISTERS = 8;
const int REGISTER_BITS = 3;

/* Entries of one register array: copies x slots. Each entry is a 64-bit
 * (round tag, i32 sum) pair, so 16384 entries take 128 KiB, 8 SRAM blocks.
 * Must not exceed consts::MAX_REGISTER_ENTRIES. The controller refuses a job
 * whose copies x slots does not fit. */
const int REGISTER_ENTRIES = 16384;

/* Width of a slot number: ranks below 2^(SLOT_BITS + REGISTER_BITS) = 2^15
 * can be in a region; the parser sends larger ones to the out-of-range path,
 * and the controller refuses a job of more hot keys. A rank then fits the low
 * 16 bits of its index with one bit to spare, so the range check and the
 * register entry are 16-bit (the routed index is half the PHV of a 32-bit one;
 * docs/P4.md, "Resources"). */
const int SLOT_BITS = 12;

/* Sparse pairs one pipeline pass handles, and the most a resubmitted packet
 * is parsed by position (recirculate.p4): R, what strict packing (the
 * default) puts in a packet of any size. The controller refuses a packet_size
 * that would put more pairs in a packet unless the packing is strict. */
const int PAIRS_PER_PASS = 8;

/* Most pairs a HOT packet may announce (consts::MAX_PAIRS_PER_PACKET): a
 * count above is a malformed datagram, dropped; a count between
 * PAIRS_PER_PASS and this one is a packet too long for the job (BadFormat). */
const int MAX_PAIRS_PER_PACKET = 64;

/* Dense values one pass handles: one per register (the block is aligned to
 * R, so value i lives in register i). */
const int DENSE_PER_PASS = REGISTERS;

/* Width of the contributed/complete worker bitmaps (consts::MAX_WORKERS). */
const int MAX_WORKERS = 64;
const int WORKER_BITS = 6;

/* Copies of the slot memory (rounds of one job open at once,
 * consts::MAX_COPIES). The copy of a round is round & (copies - 1), so the
 * controller accepts 1, 2 or 4 copies. */
const int MAX_COPIES = 4;
const int COPY_BITS = 2;

/* Jobs the switch serves at once. */
const int MAX_JOBS = 16;
const int JOB_BITS = 4;

/* Round state and completion counters: one per (job, copy). */
const int ROUND_STATE_ENTRIES = MAX_JOBS * MAX_COPIES;

/* Per-(worker, copy) progress counters: one per (job, copy, worker). */
const int WORKER_STATE_ENTRIES = MAX_JOBS * MAX_COPIES * MAX_WORKERS;

/* The exactly-once records, one per (job, worker, copy, seq): workers x copies
 * x max_seqs over all jobs must fit (8 workers x 2 copies x 4096 = 65536 with
 * the defaults). 32-bit entries: 512 KiB. */
const int RECORD_ENTRIES = 131072;

/* Coverage words (32 sequence numbers each, consts::COVER_WORD_BITS): workers
 * x copies x ceil(max_seqs / 32) over all jobs. */
const int COVER_WORD_BITS = 32;
const int COVER_ENTRIES = 8192;

/* Rounds at or above 2^ROUND_BITS are refused (BadFormat): a record keeps the
 * round in its top ROUND_BITS bits and the outcome in the low 4. */
const int ROUND_BITS = 28;

/* The UDP port the controller programs into the parser's value set when a
 * settings file names none (consts::DEFAULT_UDP_PORT). Not matched as a
 * literal anywhere. */
const bit<16> DEFAULT_UDP_PORT = 9950;

/* The pull half (replicate.p4). A job's UPDATE_ACKs are routed to servers
 * 0 .. MAX_SERVERS-1 (the controller refuses a job with more); the
 * (job, server) table holds MAX_JOBS x MAX_SERVERS addresses, the (job,
 * worker) tables (ingress: targeted updates and the learning check; egress:
 * each multicast copy) MAX_JOBS x MAX_WORKERS. One multicast group per job,
 * one PRE node per worker: at most MAX_JOBS groups, UPDATE_WORKER_ENTRIES
 * nodes. */
const int MAX_SERVERS = 64;
const int UPDATE_SERVER_ENTRIES = MAX_JOBS * MAX_SERVERS;
const int UPDATE_WORKER_ENTRIES = MAX_JOBS * MAX_WORKERS;

/* The member check (worker_check.p4, MemberCheck): one pinned address and one
 * "has shown the token" bit per (job, worker). */
const int MEMBER_ENTRIES = MAX_JOBS * MAX_WORKERS;

/* Statistics counters (stat_t). */
const int STATS = 33;

#endif /* _ZEBRA_CONFIGURATION_ */
