/*
 * Types and codes. The wire codes are exactly those of
 * rust/zebra-proto/WIRE.md (held to it by p4_conformance.rs); the internal
 * ones (ctl_kind_t, acc_op_t, stat_t) never leave the switch and its CPU.
 */

#ifndef _ZEBRA_TYPES_
#define _ZEBRA_TYPES_

#include "configuration.p4"

/* ---- Ethernet, IPv4, UDP ---- */

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<16> udp_port_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8> IP_PROTOCOL_UDP = 17;

/* ---- Zebra wire format (WIRE.md) ---- */

/* Bytes 0-1 of every datagram ("ZB") and byte 2. */
const bit<16> ZEBRA_MAGIC = 0x5A42;
const bit<8> ZEBRA_VERSION = 2;

/* Byte 3. UPDATE and UPDATE_ACK are the pull half (docs/PULL.md), passed on
 * unchanged by replicate.p4. */
enum bit<8> zebra_type_t {
    HOT           = 1,
    HOT_DENSE     = 2,
    ACK           = 3,
    FALLBACK      = 4,
    AGGREGATE     = 5,
    COVERAGE      = 6,
    AGGREGATE_ACK = 7,
    REGISTER      = 8,
    REGISTER_ACK  = 9,
    UPDATE        = 10,
    UPDATE_ACK    = 11
}

/* HOT and HOT_DENSE flags (byte 14). */
const bit<8> HOT_FLAG_RETX = 0x01;
const bit<8> HOT_FLAG_DONE = 0x02;
const bit<8> HOT_FLAG_FIXED = 0x04;
const bit<8> HOT_FLAGS_RESERVED = 0xF8;

/* ACK and FALLBACK flags (byte 14). */
const bit<8> RESPONSE_FLAG_DUP = 0x01;
const bit<8> RESPONSE_FLAGS_RESERVED = 0xFE;

/* AGGREGATE flags (byte 32). */
const bit<8> AGGREGATE_FLAG_FIXED = 0x01;
const bit<8> AGGREGATE_FLAG_FLUSHED = 0x02;
const bit<8> AGGREGATE_FLAGS_RESERVED = 0xFC;

/* COVERAGE flags (byte 22). */
const bit<8> COVERAGE_FLAG_ALL = 0x01;
const bit<8> COVERAGE_FLAGS_RESERVED = 0xFE;

/* UPDATE: a target of every worker of the job (consts::UPDATE_TARGET_ALL),
 * the shortest UPDATE (its fixed header, consts::UPDATE_HEADER_LEN) and the
 * length of an UPDATE_ACK (consts::UPDATE_ACK_LEN). */
const bit<16> UPDATE_TARGET_ALL = 0xFFFF;

/* Fixed lengths of the packets the pipeline checks or builds
 * (consts::HOT_HEADER_LEN, HOT_DENSE_HEADER_LEN, RESPONSE_LEN). */
const bit<16> HOT_HEADER_LEN = 20;
const bit<16> HOT_DENSE_HEADER_LEN = 24;
const bit<16> RESPONSE_LEN = 20;
const bit<16> UPDATE_HEADER_LEN = 28;
const bit<16> UPDATE_ACK_LEN = 20;

/* Why a packet was not added (FALLBACK byte 15); ADDED is the ACK's 0. A
 * packet's outcome is also what its record keeps. */
enum bit<8> fallback_reason_t {
    ADDED        = 0,
    LATE         = 1,
    WINDOW_FULL  = 2,
    OUT_OF_RANGE = 3,
    SEQ_OVERFLOW = 4,
    BAD_FORMAT   = 5,
    UNKNOWN_JOB  = 6,
    BAD_WORKER   = 7,
    FAR_AHEAD    = 8,
    UNOPENED     = 9
}

/* ---- Values and indices ---- */

typedef bit<32> value_t;                      /* raw register value: i32 fixed point */
typedef bit<16> acc_index_t;                  /* entry of an accumulator register */
typedef bit<(SLOT_BITS)> slot_t;
typedef bit<(JOB_BITS)> job_index_t;
typedef bit<(COPY_BITS)> copy_t;
typedef bit<16> state_index_t;                /* round state, worker state */
typedef bit<(JOB_BITS + WORKER_BITS)> member_index_t;  /* (job, worker): pinned address, token shown */
typedef bit<32> record_index_t;
typedef bit<16> cover_index_t;
typedef bit<64> worker_bitmap_t;
typedef bit<32> token_t;                      /* a job's membership token (consts::TOKEN_LEN) */

/* An untouched slot reads out as I32_MIN; a touched slot holding exactly
 * I32_MIN (a sum saturated downwards) reads out as I32_MIN + 1. */
const value_t SLOT_UNTOUCHED = 0x80000000;

/* Accumulator entry: the round it holds and its sum. The tag makes clearing
 * free: an add to an entry tagged with another round overwrites it. */
struct acc_entry_t {
    bit<32> round;
    int<32> sum;
}

/* ---- Round state (round_state.p4) ----
 *
 * One 64-bit entry per (job, copy). hi describes the copy, lo is what an
 * incoming round is compared with:
 *
 *   free, last held round r      hi = r | ROUND_FREE       lo = r
 *   open round r                 hi = r                    lo = ROUND_BUSY
 *   draining round r             hi = r | ROUND_DRAINING   lo = ROUND_BUSY
 *
 * so one comparison (lo < round) decides whether a packet may open its round,
 * and hi tells the rest.
 */
const bit<32> ROUND_FREE = 0x40000000;
const bit<32> ROUND_DRAINING = 0x80000000;
const bit<32> ROUND_FLAGS = 0xC0000000;
const bit<32> ROUND_BUSY = 0xFFFFFFFF;

struct round_state_t {
    bit<32> lo;
    bit<32> hi;
}

/* Worker progress in a round: total packets (seq + 1 of the DONE packet) in
 * the high half, packets added in the low half; complete when equal. */
struct progress_t {
    bit<32> round;
    bit<32> progress;
}

/* Completion counter: workers complete in the round. */
struct done_count_t {
    bit<32> round;
    bit<32> count;
}

/* Coverage word: bit i set when packet 32 * word + i of the worker was added. */
struct cover_word_t {
    bit<32> round;
    bit<32> bits;
}

/* ---- Internal ---- */

/* The zebra_ctl_h header of packets between the pipeline, its recirculation
 * port and the switch CPU. BRIDGED and REPLICA mark the ingress-to-egress
 * bridge headers (never on a wire). */
enum bit<8> ctl_kind_t {
    FORWARD     = 1,    /* CPU -> pipeline: forward the Ethernet frame that follows */
    FLUSH       = 2,    /* CPU -> pipeline: close an open round (timeout); answered as FLUSH to the CPU */
    CLOSE       = 3,    /* egress mirror -> recirculation: every worker is complete, close and read out */
    READOUT     = 4,    /* one row of a closed round; mirrored to the CPU, recirculated for the next */
    RELEASE     = 5,    /* CPU -> pipeline: the round is read out, the copy is free */
    CONT        = 6,    /* recirculation: a packet with a register conflict, one pair per pass */
    TO_CPU      = 7,    /* pipeline -> CPU: a datagram for the CPU (REGISTER, AGGREGATE_ACK) follows */
    BRIDGED     = 0x80,
    REPLICA     = 0x81     /* zebra_replica_h: an UPDATE or UPDATE_ACK on its way out (replicate.p4) */
}

/* ctl flags. */
const bit<8> CTL_FLAG_FLUSHED = 0x01;         /* READOUT: the round was closed by FLUSH */
const bit<8> CTL_FLAG_CLOSED = 0x02;          /* FLUSH reply: this FLUSH closed the round */

/* Resubmission of a HOT packet whose pairs share a register. */
const bit<8> RESUBMIT_NONE = 0;
const bit<8> RESUBMIT_CHECK = 1;

/* What one pass does to an accumulator register: exactly one RegisterAction. */
enum bit<2> acc_op_t {
    NONE = 0,
    ADD  = 1,
    READ = 2
}

/* What an ingress pass is, decided first (each control is applied once). */
enum bit<4> pass_t {
    OTHER    = 0,    /* not for the switch: forwarded */
    FAST     = 1,    /* a HOT or HOT_DENSE packet, pairs routed by register */
    CHECK    = 2,    /* a resubmitted HOT packet with a register conflict, pairs by position */
    CONT     = 3,    /* a recirculated conflicting packet, one pair */
    READOUT  = 4,
    CLOSE    = 5,
    FLUSH    = 6,
    RELEASE  = 7,
    FROM_CPU = 8,    /* FORWARD: a frame the CPU sends out */
    TO_CPU   = 9,    /* REGISTER, AGGREGATE_ACK */
    BAD      = 10,   /* dropped, counted */
    UPDATE     = 11, /* a server's UPDATE: to the job's workers, or the one it targets */
    UPDATE_ACK = 12  /* a worker's UPDATE_ACK: to the server */
}

/* What happens to a HOT packet after admission. */
enum bit<3> verdict_t {
    DROP     = 0,    /* malformed, or a stale copy */
    ANSWER   = 1,    /* ACK or FALLBACK to the worker, no state changed */
    ADD      = 2,    /* add its pairs, then ACK (FAST pass) */
    CONTINUE = 3,    /* admitted with a register conflict: recirculate, one pair per pass */
    RESUBMIT = 4     /* register conflict found: resubmit for the CHECK pass */
}

/* Mirror types (deparser). */
const bit<3> MIRROR_TYPE_E2E = 2;

/* Digest types (ingress deparser): worker_digest_t, a worker's address
 * differs from the one the (job, worker) table holds (replicate.p4). */
const bit<3> DIGEST_WORKER = 1;

/* Statistics (one packet counter each). */
enum bit<8> stat_t {
    PACKETS         = 0,
    BAD             = 1,
    ADDED           = 2,
    ACKS            = 3,
    DUPLICATES      = 4,
    STALE           = 5,
    RECIRCULATIONS  = 6,
    RESUBMITS       = 7,
    READOUT_PASSES  = 8,
    ROUNDS_COMPLETE = 9,
    ROUNDS_FLUSHED  = 10,
    RELEASES        = 11,
    TO_CPU          = 12,
    FROM_CPU        = 13,
    FORWARDED       = 14,
    NO_ROUTE        = 15,
    UPDATES         = 16,   /* UPDATEs passed on (egress: copies sent) */
    UPDATE_ACKS     = 17,   /* UPDATE_ACKs passed on */
    UPDATE_REFUSED  = 18,   /* naming a job, server or worker the switch does not have, or too long */
    UPDATE_UNROUTABLE = 19, /* no address yet: no worker learned, the target's or the server's unknown */
    FALLBACK_BASE   = 20,   /* + reason code: 21 LATE .. 29 UNOPENED */
    REFUSED_ADDRESS = 30,   /* a worker's HOT packet from another address than its pinned one */
    REFUSED_TOKEN   = 31,   /* ... showing another token than the job's, once it has shown the right one */
    UNPINNED        = 32    /* a worker's packet before its address is pinned: digest, dropped */
}

/* What the member check (worker_check.p4, MemberCheck) says of a HOT
 * packet from a worker of the job, in zebra-proto's Members::check terms. */
enum bit<2> member_t {
    OK       = 0,    /* from its pinned address, with a token it may show */
    UNPINNED = 1,    /* no address pinned yet: the controller pins this one */
    ADDRESS  = 2,    /* refused: another address than the pinned one */
    TOKEN    = 3     /* refused: a wrong token after the right one (or in a job with a key) */
}

#endif /* _ZEBRA_TYPES_ */
