/*
 * Headers and metadata.
 *
 * The zebra_* wire headers follow rust/zebra-proto/WIRE.md field for field
 * (big endian, in this order, these widths); p4_conformance.rs checks every
 * one against zebra-proto's field tables. A Zebra datagram is zebra_common_h
 * (bytes 0-5: magic, version, type, job) followed by the header of its type.
 */

#ifndef _ZEBRA_HEADERS_
#define _ZEBRA_HEADERS_

#include "configuration.p4"
#include "types.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    udp_port_t src_port;
    udp_port_t dst_port;
    bit<16>    length;
    bit<16>    checksum;
}

/* ---- Zebra wire headers (WIRE.md) ---- */

/* Bytes 0-5 of every datagram. */
header zebra_common_h {
    bit<16>      magic;
    bit<8>       version;
    zebra_type_t type;
    bit<16>      job;
}

/* HOT and HOT_DENSE bytes 6-19 (worker -> switch); token: the job's
 * membership token, matched against the job's by MemberCheck (worker_check.p4). */
header zebra_hot_h {
    bit<16>   worker;
    bit<32>   round;
    bit<16>   seq;
    bit<8>    flags;
    bit<8>    count;
    token_t   token;
}

/* HOT_DENSE bytes 20-23: hot index of the first value. */
header zebra_dense_h {
    bit<32> base;
}

/* HOT bytes 20..: one (hot index, value) pair. The index (a big-endian u32)
 * in two halves: the parser requires the high one 0, the checks read the low
 * one (configuration.p4, SLOT_BITS). */
header zebra_pair_h {
    bit<16> index_hi;
    bit<16> index;
    value_t value;
}

/* A pair split in two, so that a dense value can be parsed without an index:
 * the routed pairs of one pass (slot_index[k], slot_value[k] belong to
 * register k), and the values of a READOUT row. */
header zebra_index_h {
    bit<16> index;         /* the rank's low 16 bits (the parser skips the high 16, which are 0) */
}

header zebra_value_h {
    value_t value;
}

/* ACK and FALLBACK bytes 6-19 (switch -> worker); token: the job's token,
 * handed to the member answered (0 for UNKNOWN_JOB and BAD_WORKER). */
header zebra_response_h {
    bit<16>           worker;
    bit<32>           round;
    bit<16>           seq;
    bit<8>            flags;
    fallback_reason_t reason;
    token_t           token;
}

/* AGGREGATE bytes 6-39 (switch CPU -> server); runs of (base, len, values) follow. */
header zebra_aggregate_h {
    bit<16>         server;
    bit<32>         round;
    bit<16>         part;
    bit<16>         parts;
    worker_bitmap_t contributed;
    worker_bitmap_t complete;
    bit<8>          flags;
    bit<8>          reserved;
    bit<16>         count;
    bit<32>         total;
}

/* COVERAGE bytes 6-23 (switch CPU -> server); the bitmap follows. */
header zebra_coverage_h {
    bit<16> server;
    bit<32> round;
    bit<16> part;
    bit<16> parts;
    bit<16> worker;
    bit<16> first_seq;
    bit<16> nbits;
    bit<8>  flags;
    bit<8>  reserved;
}

/* AGGREGATE_ACK bytes 6-19 (server -> switch CPU). */
header zebra_aggregate_ack_h {
    bit<16> server;
    bit<32> round;
    bit<16> part;
    bit<16> reserved;
    token_t token;
}

/* REGISTER and REGISTER_ACK bytes 6-11 (server <-> switch CPU); the
 * admission fields and a REGISTER_ACK's epoch follow, read by the CPU. */
header zebra_register_h {
    bit<16> server;
    token_t token;
}

/* UPDATE bytes 6-21 (server -> switch -> workers): the fields up to the
 * target the switch routes by. A parser cannot skip bytes it must pass on,
 * so the ones before the target are extracted too; the rest (flags, count,
 * entries) stays payload, unchanged. */
header zebra_update_h {
    bit<16> server;
    bit<32> seq;
    bit<32> round;
    bit<16> part;
    bit<16> parts;
    bit<16> target;        /* a worker rank, or UPDATE_TARGET_ALL */
}

/* UPDATE_ACK bytes 6-15 (worker -> switch -> server); the reserved bytes
 * 16-19 stay payload. */
header zebra_update_ack_h {
    bit<16> server;
    bit<32> seq;
    bit<16> part;
    bit<16> worker;
}

/* ---- Internal headers (switch and its CPU only) ---- */

/* First header of every packet between the pipeline, the recirculation port
 * and the CPU port, and of every mirrored copy. */
header zebra_ctl_h {
    ctl_kind_t kind;
    bit<8>     flags;
    bit<16>    job;
    bit<32>    round;
    bit<16>    row;        /* READOUT: the row this pass reads */
    bit<16>    rows;       /* READOUT: rows to read (the last is rows - 1) */
    bit<16>    port;       /* CONT: the worker's ingress port, for the ACK */
    bit<16>    reserved;
}

/* What a READOUT pass read: behind zebra_ctl_h, followed by REGISTERS values
 * (slot_value[0..R-1]: the registers read into the values they add from;
 * SLOT_UNTOUCHED for a slot without an add this round). */
header zebra_readout_h {
    bit<16> row;           /* the row read (ctl.row has moved on to the next) */
    bit<16> worker;        /* the worker whose progress `progress` is, when row < workers */
    bit<32> progress;      /* (total << 16) | added, 0 if the worker sent nothing this round */
}

/* Ingress -> egress. Byte aligned, kind first, so the egress parser tells it
 * from a mirrored copy (whose zebra_ctl_h.kind is below BRIDGED). All R
 * routed slots follow it (slot_index[k] then slot_value[k]; value_mask says
 * which hold a value): every accumulator is in egress (docs/P4.md, "Stages"). */
header zebra_bridge_h {
    ctl_kind_t    kind;          /* BRIDGED */
    bit<8>        reason;        /* fallback_reason_t of the answer */
    bit<1>        respond;       /* rewrite into an ACK (ADDED) or FALLBACK */
    bit<1>        dup;           /* ... flagged DUP */
    bit<1>        finish;        /* count the packet in its worker's progress and coverage */
    bit<1>        read_worker;   /* READOUT: read the progress of worker ctl.row */
    bit<1>        last_row;      /* READOUT: drop after the copy to the CPU */
    bit<1>        to_cpu;        /* a FLUSH answer: send as is */
    acc_op_t      acc_op;        /* what the egress registers do */
    bit<1>        same;          /* every register at `entry` (a dense block, a READOUT row) */
    bit<1>        slots;         /* the R slots follow */
    bit<6>        reserved;
    bit<8>        workers;       /* workers of the job */
    bit<32>       round;
    state_index_t done_index;    /* completion counter (job, copy) */
    state_index_t ws_index;      /* progress of (job, copy, worker) */
    cover_index_t cover_index;   /* the coverage word of the packet's seq (egress finds its bit) */
    acc_index_t   entry;
    bit<16>       value_mask;    /* bit k: slot_value[k] holds a value (and slot_index[k], if routed, its entry) */
}

/* Ingress -> egress for an UPDATE or UPDATE_ACK (replicate.p4). Kind first,
 * as zebra_bridge_h, so that the egress parser tells the three apart. */
header zebra_replica_h {
    ctl_kind_t kind;             /* REPLICA */
    bit<8>     stat;             /* stat_t egress counts for this copy */
    bit<16>    job;              /* with egress_rid, the key of a multicast copy's destination */
    bit<7>     reserved;
    bit<1>     per_copy;         /* a multicast copy: egress writes its destination */
}

/* Resubmitted with a HOT packet whose pairs share a register. */
header zebra_resubmit_h {
    bit<8>  mode;                /* RESUBMIT_CHECK */
    bit<56> reserved;
}

struct header_t {
    zebra_resubmit_h                       resubmit;     /* resubmit data: never in the packet */
    zebra_bridge_h                         bridge;
    zebra_replica_h                        replica;
    zebra_ctl_h                            ctl;
    zebra_readout_h                        readout;
    ethernet_h                             ethernet;
    ipv4_h                                 ipv4;
    udp_h                                  udp;
    zebra_common_h                         zebra;
    zebra_update_h                         update;
    zebra_update_ack_h                     update_ack;
    zebra_hot_h                            hot;
    zebra_response_h                       response;
    zebra_dense_h                          dense;
    zebra_pair_h[PAIRS_PER_PASS]           pairs;
    zebra_index_h[REGISTERS]               slot_index;
    zebra_value_h[REGISTERS]               slot_value;
}

/* Per job, from the job table (worker_check.p4). */
struct job_md_t {
    job_index_t   index;
    bit<8>        workers;
    bit<16>       rank_bias;     /* 2^15 - hot_keys: rank + rank_bias has bit 15 set iff rank >= hot_keys */
    bit<16>       dense_bias;    /* rank_bias - 1: a block's end + dense_bias has bit 15 set iff end > hot_keys */
    bit<16>       max_udp_len;   /* 8 + packet_size */
    bit<16>       max_seqs;
    bit<1>        fixed;         /* FIXED flag the job's packets carry */
    copy_t        copy_mask;     /* copies - 1 */
    acc_index_t   region_base;   /* first slot of the job's region in each copy */
    bit<16>       readout_rows;  /* max(region slots, workers) */
    bit<8>        lns_profile;   /* ZEBRA_LNS: which scale's tables */
    bit<8>        lns_saturate;  /* ZEBRA_LNS: the profile's saturation exponent (158 - F) */
    bit<8>        servers;       /* servers of the job (UPDATE, UPDATE_ACK): at most MAX_SERVERS */
    bit<16>       max_update_len; /* 8 + aggregate_size: the longest UPDATE, as a UDP length */
    bit<1>        keyed;         /* the token comes from the job's key: required from the first packet */
}

/* Where a worker or a server is: its port, MAC, IPv4 address and UDP port
 * (the source of its HOT packets, or of its REGISTER). */
struct peer_t {
    PortId_t    port;
    mac_addr_t  mac;
    ipv4_addr_t ip;
    udp_port_t  udp_port;
}

/* DIGEST_WORKER: a worker seen at an address the (job, worker) table does not
 * hold; the controller adds or moves it (replicate.p4). */
struct worker_digest_t {
    bit<16>     job;
    bit<16>     worker;
    PortId_t    port;
    mac_addr_t  mac;
    ipv4_addr_t ip;
    udp_port_t  udp_port;
}

struct ingress_metadata_t {
    pass_t            pass;              /* what this pass is: set by the parser */
    bit<16>           job_id;            /* the job a packet names (parser) */
    job_md_t          job;
    bool              job_known;
    bool              worker_known;
    bool              internal;          /* arrived on the CPU or recirculation port */
    bool              zebra_bad;         /* a Zebra datagram the parser refused: dropped, counted */
    bool              malformed;         /* length other than its header implies, or round 0 */
    bool              dense;
    bool              dense_misaligned;
    bool              rank_too_big;      /* the parser saw a rank >= 2^(SLOT_BITS + REGISTER_BITS) */
    bool              too_many;          /* more pairs than one pass holds: BadFormat */
    bool              for_switch;        /* addressed to the switch's hot-path address */
    bit<32>           round;
    copy_t            copy;
    acc_index_t       row_base;          /* copy * slots + region base */
    state_index_t     rs_index;          /* round state and completion counter of (job, copy) */
    record_index_t    rec_index;         /* records of (job, worker, copy), then + seq: this packet's */
    state_index_t     ws_index;          /* progress of (job, copy, worker) */
    cover_index_t     cover_index;       /* coverage words of (job, worker, copy), then + seq / 32: this packet's */
    bit<32>           routed_mask;       /* bit k: register k (or position k) has a pair this pass */
    bit<8>            out_flags;         /* bit k: the biased rank of register (or position) k has bit 15 set */
    bit<16>           value_mask;        /* bit k: slot_value[k] is valid */
    bit<16>           dense_end;         /* a dense block's end + dense_bias: bit 15 set iff it ends past the job's hot keys */
    bool              too_long;          /* UDP length above the job's packet size */
    bool              seq_over;          /* seq >= the job's max_seqs */
    bit<8>            pairs_low;         /* routed registers 0-7 with a pair (ConflictCheck) */
    bit<8>            pairs_left;        /* the count less routed registers 8-15: a conflict if not pairs_low */
    bit<32>           seen;              /* round state hi before this packet */
    bit<32>           record_key;        /* round << 4: a record of this round is record_key | outcome */
    bit<32>           record_before;
    fallback_reason_t reason;
    verdict_t         verdict;
    bit<1>            dup;
    acc_op_t          acc_op;
    bit<8>            stat;
    PortId_t          cpu_port;
    PortId_t          recirc_port;
    bit<16>           peer_worker;       /* the (job, worker) table's rank: a HOT packet's worker, an UPDATE's target */
    bool              moved;             /* a HOT packet's source differs from its worker's entry */
    PortId_t          learn_port;        /* its ingress port, for the digest */
    member_t          member;            /* the member check's answer (MemberCheck) */
    bit<32>           far_floor;         /* round |-| (max_round_ahead + 1), from the job table (NewestRound) */
}

struct egress_metadata_t {
    bit<32>     progress_inc;       /* what this packet adds to its worker's progress */
    bit<32>     progress;           /* worker progress after this packet: (total << 16) | added */
    bit<32>     done;               /* workers complete after this packet */
    MirrorId_t  cpu_session;
    MirrorId_t  recirc_session;
    MirrorId_t  session;
    zebra_ctl_h mirror_ctl;         /* what a mirrored copy starts with */
}

#endif /* _ZEBRA_HEADERS_ */
