/*
 * Parsers and deparsers.
 *
 * The ingress parser is where a HOT packet's pairs meet their registers: each
 * pair is extracted into slot_index[k] / slot_value[k], k = the rank's low
 * REGISTER_BITS (register r mod R of the heat layout), so no table has to
 * move a value from its position in the packet to its register. Algorithm 1
 * puts at most one pair per register in a packet; if two share one anyway,
 * the second overwrites the first, the ingress notices (fewer routed
 * registers than pairs, recirculate.p4) and resubmits the packet, and the
 * resubmitted copy is parsed by position (hdr.pairs) instead.
 *
 * Ports are not literals: the hot-path UDP port and the CPU and
 * recirculation ports are parser value sets the controller fills.
 */

#ifndef _ZEBRA_PARSERS_
#define _ZEBRA_PARSERS_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

/* A rank routes to register k when its bits above SLOT_BITS + REGISTER_BITS
 * are zero and its low REGISTER_BITS are k. */
const bit<32> RANK_ROUTE_MASK = 0xFFFF8007;

parser IngressParser(
    packet_in pkt,
    out header_t hdr,
    out ingress_metadata_t ig_md,
    out ingress_intrinsic_metadata_t ig_intr_md) {

    ParserCounter() pairs_left;

    /* The switch CPU's port and the recirculation port(s): their packets
     * start with zebra_ctl_h. */
    value_set<PortId_t>(4) internal_ports;

    /* The hot-path UDP port(s) the switch listens on (`switch = HOST:PORT`). */
    value_set<udp_port_t>(4) zebra_udp_ports;

    state start {
        pkt.extract(ig_intr_md);
        ig_md.internal = false;
        ig_md.zebra_bad = false;
        ig_md.dense = false;
        ig_md.rank_too_big = false;
        ig_md.too_many = false;
        ig_md.pass = pass_t.OTHER;
        ig_md.job_id = 0;
        ig_md.round = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1 : parse_resubmit;
            0 : parse_port_metadata;
        }
    }

    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            internal_ports : parse_ctl;
            default        : parse_ethernet;
        }
    }

    /* What the pass is, its job and round: decided here, so that the
     * ingress starts with its tables instead of a chain of conditions. */
    state parse_ctl {
        pkt.extract(hdr.ctl);
        ig_md.internal = true;
        ig_md.job_id = hdr.ctl.job;
        ig_md.round = hdr.ctl.round;
        transition select(hdr.ctl.kind) {
            ctl_kind_t.FORWARD : parse_forward;
            ctl_kind_t.CONT    : parse_cont;
            ctl_kind_t.READOUT : parse_readout;
            ctl_kind_t.CLOSE   : parse_close;
            ctl_kind_t.FLUSH   : parse_flush;
            ctl_kind_t.RELEASE : parse_release;
            default            : parse_bad_ctl;
        }
    }

    /* FORWARD: a frame the CPU sends out, switched by its Ethernet header. */
    state parse_forward {
        pkt.extract(hdr.ethernet);
        ig_md.pass = pass_t.FROM_CPU;
        transition accept;
    }

    state parse_close {
        ig_md.pass = pass_t.CLOSE;
        transition accept;
    }

    state parse_flush {
        ig_md.pass = pass_t.FLUSH;
        transition accept;
    }

    state parse_release {
        ig_md.pass = pass_t.RELEASE;
        transition accept;
    }

    state parse_bad_ctl {
        ig_md.pass = pass_t.BAD;
        transition accept;
    }

    /* A READOUT row: the values of the previous row are parsed into the
     * slots the registers read into, so that this pass's replace them. */
    state parse_readout {
        pkt.extract(hdr.readout);
        ig_md.pass = pass_t.READOUT;
        pairs_left.set((bit<8>)REGISTERS);
        transition readout_next;
    }

    state readout_next {
        transition select(pairs_left.is_zero()) {
            true  : accept;
            false : readout_take;
        }
    }

    state readout_take {
        pkt.extract(hdr.slot_value.next);
        pairs_left.decrement(1);
        transition readout_next;
    }

    /* A CONT pass (recirculate.p4) adds the first pair left; the rest stays
     * payload for the next pass. The packet was checked when it was
     * admitted, so its headers are known to be there. */
    state parse_cont {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.zebra);
        pkt.extract(hdr.hot);
        ig_md.pass = pass_t.CONT;
        ig_md.job_id = hdr.zebra.job;
        ig_md.round = hdr.hot.round;
        pairs_left.set(8w1);
        transition route_next;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4 : parse_ipv4;
            default        : accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTOCOL_UDP) : parse_udp;
            default                 : accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            zebra_udp_ports : parse_zebra;
            default         : accept;
        }
    }

    state parse_zebra {
        pkt.extract(hdr.zebra);
        ig_md.job_id = hdr.zebra.job;
        transition select(hdr.zebra.magic, hdr.zebra.version, hdr.zebra.type) {
            (ZEBRA_MAGIC, ZEBRA_VERSION, zebra_type_t.HOT)           : parse_hot;
            (ZEBRA_MAGIC, ZEBRA_VERSION, zebra_type_t.HOT_DENSE)     : parse_hot_dense;
            (ZEBRA_MAGIC, ZEBRA_VERSION, zebra_type_t.AGGREGATE_ACK) : parse_to_cpu;
            (ZEBRA_MAGIC, ZEBRA_VERSION, zebra_type_t.REGISTER)      : parse_to_cpu;
            (ZEBRA_MAGIC, ZEBRA_VERSION, zebra_type_t.UPDATE)        : parse_update;
            (ZEBRA_MAGIC, ZEBRA_VERSION, zebra_type_t.UPDATE_ACK)    : parse_update_ack;
            default                                                  : zebra_bad;
        }
    }

    /* REGISTER, AGGREGATE_ACK: for the switch CPU. */
    state parse_to_cpu {
        ig_md.pass = pass_t.TO_CPU;
        transition accept;
    }

    /* ---- UPDATE and UPDATE_ACK (replicate.p4): passed on unchanged ---- */

    state parse_update {
        pkt.extract(hdr.update);
        ig_md.pass = pass_t.UPDATE;
        ig_md.peer_worker = hdr.update.target;
        transition accept;
    }

    state parse_update_ack {
        pkt.extract(hdr.update_ack);
        ig_md.pass = pass_t.UPDATE_ACK;
        transition accept;
    }

    state zebra_bad {
        ig_md.zebra_bad = true;
        ig_md.pass = pass_t.BAD;
        transition accept;
    }

    /* ---- HOT: route each pair to its register ---- */

    state parse_hot {
        pkt.extract(hdr.hot);
        ig_md.pass = pass_t.FAST;
        ig_md.round = hdr.hot.round;
        ig_md.peer_worker = hdr.hot.worker;
        transition select(hdr.hot.flags, hdr.hot.count) {
            (0 &&& HOT_FLAGS_RESERVED, 0 .. PAIRS_PER_PASS)                             : route_all;
            (0 &&& HOT_FLAGS_RESERVED, (PAIRS_PER_PASS + 1) .. MAX_PAIRS_PER_PACKET)    : hot_too_many;
            default                                                                     : zebra_bad;
        }
    }

    state route_all {
        pairs_left.set(hdr.hot.count);
        transition route_next;
    }

    /* More pairs than a pass holds: the packet is longer than any packet_size
     * the controller accepts, so it falls back as BadFormat. Its pairs are
     * skipped so that the FALLBACK built from it carries none. */
    state hot_too_many {
        ig_md.too_many = true;
        pairs_left.set(hdr.hot.count);
        transition skip_next;
    }

    state skip_next {
        transition select(pairs_left.is_zero()) {
            true  : accept;
            false : skip_pair;
        }
    }

    state skip_pair {
        pkt.advance(64);
        pairs_left.decrement(1);
        transition skip_next;
    }

    state route_next {
        transition select(pairs_left.is_zero()) {
            true  : accept;
            false : route_pick;
        }
    }

    state route_pick {
        transition select(pkt.lookahead<bit<32>>()) {
            0x00000000 &&& RANK_ROUTE_MASK : route_00;
            0x00000001 &&& RANK_ROUTE_MASK : route_01;
            0x00000002 &&& RANK_ROUTE_MASK : route_02;
            0x00000003 &&& RANK_ROUTE_MASK : route_03;
            0x00000004 &&& RANK_ROUTE_MASK : route_04;
            0x00000005 &&& RANK_ROUTE_MASK : route_05;
            0x00000006 &&& RANK_ROUTE_MASK : route_06;
            0x00000007 &&& RANK_ROUTE_MASK : route_07;
            default                        : rank_too_big;
        }
    }

    /* No region reaches this far: OutOfRange, whatever the job. The rest of
     * the pairs is skipped (the answer carries none). */
    state rank_too_big {
        ig_md.rank_too_big = true;
        transition skip_next;
    }

    state route_00 { pkt.advance(16); pkt.extract(hdr.slot_index[0]);  pkt.extract(hdr.slot_value[0]);  pairs_left.decrement(1); transition route_next; }
    state route_01 { pkt.advance(16); pkt.extract(hdr.slot_index[1]);  pkt.extract(hdr.slot_value[1]);  pairs_left.decrement(1); transition route_next; }
    state route_02 { pkt.advance(16); pkt.extract(hdr.slot_index[2]);  pkt.extract(hdr.slot_value[2]);  pairs_left.decrement(1); transition route_next; }
    state route_03 { pkt.advance(16); pkt.extract(hdr.slot_index[3]);  pkt.extract(hdr.slot_value[3]);  pairs_left.decrement(1); transition route_next; }
    state route_04 { pkt.advance(16); pkt.extract(hdr.slot_index[4]);  pkt.extract(hdr.slot_value[4]);  pairs_left.decrement(1); transition route_next; }
    state route_05 { pkt.advance(16); pkt.extract(hdr.slot_index[5]);  pkt.extract(hdr.slot_value[5]);  pairs_left.decrement(1); transition route_next; }
    state route_06 { pkt.advance(16); pkt.extract(hdr.slot_index[6]);  pkt.extract(hdr.slot_value[6]);  pairs_left.decrement(1); transition route_next; }
    state route_07 { pkt.advance(16); pkt.extract(hdr.slot_index[7]);  pkt.extract(hdr.slot_value[7]);  pairs_left.decrement(1); transition route_next; }

    /* ---- HOT_DENSE: value i of a block aligned to R lives in register i ---- */

    state parse_hot_dense {
        pkt.extract(hdr.hot);
        ig_md.pass = pass_t.FAST;
        ig_md.round = hdr.hot.round;
        ig_md.peer_worker = hdr.hot.worker;
        pkt.extract(hdr.dense);
        ig_md.dense = true;
        transition select(hdr.hot.flags, hdr.hot.count) {
            (0 &&& HOT_FLAGS_RESERVED, 0 .. DENSE_PER_PASS)                             : dense_all;
            (0 &&& HOT_FLAGS_RESERVED, (DENSE_PER_PASS + 1) .. MAX_PAIRS_PER_PACKET)    : dense_too_many;
            default                                                                     : zebra_bad;
        }
    }

    /* A dense block wider than R (never sent by a worker: it sends at most R
     * values a packet): BadFormat, its values skipped. */
    state dense_too_many {
        ig_md.too_many = true;
        pairs_left.set(hdr.hot.count);
        transition skip_value_next;
    }

    state skip_value_next {
        transition select(pairs_left.is_zero()) {
            true  : accept;
            false : skip_value;
        }
    }

    state skip_value {
        pkt.advance(32);
        pairs_left.decrement(1);
        transition skip_value_next;
    }

    state dense_all {
        pairs_left.set(hdr.hot.count);
        transition dense_next;
    }

    state dense_next {
        transition select(pairs_left.is_zero()) {
            true  : accept;
            false : dense_take;
        }
    }

    state dense_take {
        pkt.extract(hdr.slot_value.next);
        pairs_left.decrement(1);
        transition dense_next;
    }

    /* ---- Resubmitted: a HOT packet whose pairs share a register ----
     * It was parsed once already, so it is a well-formed HOT datagram on
     * IPv4/UDP; this time its pairs are kept by position. The resubmit data
     * takes the place of the port metadata. */

    state parse_resubmit {
        pkt.extract(hdr.resubmit);
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.zebra);
        pkt.extract(hdr.hot);
        ig_md.pass = pass_t.CHECK;
        ig_md.job_id = hdr.zebra.job;
        ig_md.round = hdr.hot.round;
        ig_md.peer_worker = hdr.hot.worker;
        pairs_left.set(hdr.hot.count);
        transition by_position_next;
    }

    state by_position_next {
        transition select(pairs_left.is_zero()) {
            true  : accept;
            false : by_position_pick;
        }
    }

    state by_position_pick {
        transition select(pkt.lookahead<bit<32>>()) {
            0x00000000 &&& 0xFFFF8000 : by_position_take;
            default                   : rank_too_big;
        }
    }

    state by_position_take {
        pkt.extract(hdr.pairs.next);
        pairs_left.decrement(1);
        transition by_position_next;
    }
}

control IngressDeparser(
    packet_out pkt,
    inout header_t hdr,
    in ingress_metadata_t ig_md,
    in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {

    Resubmit() resubmit;
    Digest<worker_digest_t>() worker_digest;

    apply {
        if (ig_dprsr_md.resubmit_type == (bit<3>)RESUBMIT_CHECK) {
            resubmit.emit(hdr.resubmit);
        }
        if (ig_dprsr_md.digest_type == DIGEST_WORKER) {
            worker_digest.pack({hdr.zebra.job, hdr.hot.worker, ig_md.learn_port,
                                hdr.ethernet.src_addr, hdr.ipv4.src_addr, hdr.udp.src_port});
        }
        /* The routed slots travel behind the bridge to the accumulators in
         * egress, as they were parsed (no copy); valid only when bridged. */
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.slot_index[0]);
        pkt.emit(hdr.slot_value[0]);
        pkt.emit(hdr.slot_index[1]);
        pkt.emit(hdr.slot_value[1]);
        pkt.emit(hdr.slot_index[2]);
        pkt.emit(hdr.slot_value[2]);
        pkt.emit(hdr.slot_index[3]);
        pkt.emit(hdr.slot_value[3]);
        pkt.emit(hdr.slot_index[4]);
        pkt.emit(hdr.slot_value[4]);
        pkt.emit(hdr.slot_index[5]);
        pkt.emit(hdr.slot_value[5]);
        pkt.emit(hdr.slot_index[6]);
        pkt.emit(hdr.slot_value[6]);
        pkt.emit(hdr.slot_index[7]);
        pkt.emit(hdr.slot_value[7]);
        pkt.emit(hdr.replica);
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.readout);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.zebra);
        pkt.emit(hdr.update);
        pkt.emit(hdr.update_ack);
        pkt.emit(hdr.hot);
        pkt.emit(hdr.dense);
        pkt.emit(hdr.pairs);
    }
}

/* Egress sees four kinds of packet: bridged from ingress (zebra_bridge_h
 * first: an answer to build, or a READOUT row to finish), an UPDATE or
 * UPDATE_ACK on its way out (zebra_replica_h first: its addresses to finish;
 * the Zebra datagram stays payload), and mirrored copies (zebra_ctl_h first:
 * CLOSE to the recirculation port, READOUT rows to the CPU), which pass
 * through untouched. */
parser EgressParser(
    packet_in pkt,
    out header_t hdr,
    out egress_metadata_t eg_md,
    out egress_intrinsic_metadata_t eg_intr_md) {

    state start {
        pkt.extract(eg_intr_md);
        transition select(pkt.lookahead<bit<8>>()) {
            (bit<8>)ctl_kind_t.BRIDGED : parse_bridge;
            (bit<8>)ctl_kind_t.REPLICA : parse_replica;
            default                    : parse_mirrored;
        }
    }

    state parse_replica {
        pkt.extract(hdr.replica);
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        transition accept;
    }

    state parse_mirrored {
        pkt.extract(hdr.ctl);
        transition accept;
    }

    state parse_bridge {
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.slots) {
            1       : parse_slots;
            default : bridged;
        }
    }

    /* Every register's slot, in order (the bridge's masks say which hold a
     * pair or a value). */
    state parse_slots {
        pkt.extract(hdr.slot_index[0]);
        pkt.extract(hdr.slot_value[0]);
        pkt.extract(hdr.slot_index[1]);
        pkt.extract(hdr.slot_value[1]);
        pkt.extract(hdr.slot_index[2]);
        pkt.extract(hdr.slot_value[2]);
        pkt.extract(hdr.slot_index[3]);
        pkt.extract(hdr.slot_value[3]);
        pkt.extract(hdr.slot_index[4]);
        pkt.extract(hdr.slot_value[4]);
        pkt.extract(hdr.slot_index[5]);
        pkt.extract(hdr.slot_value[5]);
        pkt.extract(hdr.slot_index[6]);
        pkt.extract(hdr.slot_value[6]);
        pkt.extract(hdr.slot_index[7]);
        pkt.extract(hdr.slot_value[7]);
        transition bridged;
    }

    state bridged {
        transition select(hdr.bridge.respond, hdr.bridge.acc_op) {
            (1, _)             : parse_answer;
            (0, acc_op_t.READ) : parse_readout;
            default            : accept;
        }
    }

    state parse_answer {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.zebra);
        pkt.extract(hdr.hot);
        transition select(hdr.zebra.type) {
            zebra_type_t.HOT_DENSE : parse_answer_dense;
            default                : accept;
        }
    }

    state parse_answer_dense {
        pkt.extract(hdr.dense);
        transition accept;
    }

    /* A READOUT row: the values came as slots (every register reads). */
    state parse_readout {
        pkt.extract(hdr.ctl);
        pkt.extract(hdr.readout);
        transition accept;
    }
}

control EgressDeparser(
    packet_out pkt,
    inout header_t hdr,
    in egress_metadata_t eg_md,
    in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {

    Checksum() ipv4_checksum;
    Mirror() mirror;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version,
                hdr.ipv4.ihl,
                hdr.ipv4.diffserv,
                hdr.ipv4.total_len,
                hdr.ipv4.identification,
                hdr.ipv4.flags,
                hdr.ipv4.frag_offset,
                hdr.ipv4.ttl,
                hdr.ipv4.protocol,
                hdr.ipv4.src_addr,
                hdr.ipv4.dst_addr});
        }
        if (eg_dprsr_md.mirror_type == MIRROR_TYPE_E2E) {
            mirror.emit<zebra_ctl_h>(eg_md.session, eg_md.mirror_ctl);
        }
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.readout);
        pkt.emit(hdr.slot_value);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.zebra);
        pkt.emit(hdr.response);
    }
}

#endif /* _ZEBRA_PARSERS_ */
