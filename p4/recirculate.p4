/*
 * Register conflicts. A pass can touch each register once, so a packet with
 * two pairs in one register needs more than one pass. Algorithm 1 (strict
 * packing, the default) never builds one; fill and sequential packing can.
 *
 *   FAST pass   the parser routed the pairs by register; if fewer registers
 *               got a pair than the packet has pairs, one overwrote another
 *               (ConflictCheck). Nothing is touched; the packet is resubmitted
 *               (the original bytes come back).
 *   CHECK pass  the resubmitted copy, parsed by position: checked and admitted
 *               like any packet (round state, record), nothing added. If
 *               admitted it is sent to the recirculation port behind a CONT
 *               header carrying its ingress port.
 *   CONT passes one pair each (parsers.p4 routes the first pair left, the rest
 *               stays payload); the last one updates the worker's progress and
 *               coverage and becomes the ACK.
 *
 * A conflicting packet of n pairs thus costs 1 resubmission and n
 * recirculations (the model counts max-pairs-per-register - 1). Its pairs are
 * added after its record says ADDED; a FLUSH does not start the readout
 * before a grace period (the controller's readout_grace) that covers a
 * packet's CONT passes. Every extra pass is counted (stat_t RESUBMITS,
 * RECIRCULATIONS).
 */

#ifndef _ZEBRA_RECIRCULATE_
#define _ZEBRA_RECIRCULATE_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

/* Registers with a pair against the pairs the packet announced, a byte at a
 * time: the low byte's bit count, and the pairs left for the high byte (the
 * count less its bit count), both from tables the controller fills the same
 * for every job. A conflict is the two differing (the ingress compares them
 * where it needs to: a comparison, no sum). */
control ConflictCheck(in bit<32> routed, in bit<8> count, out bit<8> low, out bit<8> left) {
    action count_low(bit<8> n) { low = n; }
    action pairs_left(bit<8> n) { left = n; }

    table popcount0 {
        key = { routed[7:0] : exact; }
        actions = { count_low; }
        default_action = count_low(0);
        size = 256;
    }

    /* (high byte, count) -> count - its bit count; 255 if negative. */
    table popcount1 {
        key = {
            routed[15:8] : exact;
            count        : exact;
        }
        actions = { pairs_left; }
        default_action = pairs_left(255);
        size = 256 * (PAIRS_PER_PASS + 1);
    }

    apply {
        popcount0.apply();
        popcount1.apply();
    }
}

/* CHECK pass, admitted: behind a CONT header to the recirculation port. */
control StartContinuation(
    inout header_t hdr,
    in ingress_metadata_t ig_md,
    in ingress_intrinsic_metadata_t ig_intr_md,
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    apply {
        hdr.ctl.setValid();
        hdr.ctl.kind = ctl_kind_t.CONT;
        hdr.ctl.flags = 0;
        hdr.ctl.job = hdr.zebra.job;
        hdr.ctl.round = hdr.hot.round;
        hdr.ctl.row = 0;
        hdr.ctl.rows = 0;
        hdr.ctl.port = (bit<16>)ig_intr_md.ingress_port;
        hdr.ctl.reserved = 0;
        ig_tm_md.ucast_egress_port = ig_md.recirc_port;
        ig_tm_md.bypass_egress = 1;
    }
}

/* CONT pass: one pair added (by the accumulators); either go round again
 * with one pair fewer, or, after the last, answer the worker on the port the
 * packet first came in on. */
control NextContinuation(
    inout header_t hdr,
    inout ingress_metadata_t ig_md,
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    apply {
        if (hdr.hot.count == 1) {
            ig_tm_md.ucast_egress_port = (PortId_t)hdr.ctl.port;
            hdr.ctl.setInvalid();
            ig_md.verdict = verdict_t.ADD;
            ig_md.stat = (bit<8>)stat_t.ADDED;
        } else {
            hdr.hot.count = hdr.hot.count - 1;
            ig_tm_md.ucast_egress_port = ig_md.recirc_port;
            ig_md.verdict = verdict_t.CONTINUE;
            ig_md.stat = (bit<8>)stat_t.RECIRCULATIONS;
        }
    }
}

/* A CHECK pass that answers (refused, duplicate): the pairs kept by position
 * must not follow the 16-byte answer. */
control DropPositionalPairs(inout header_t hdr) {
    apply {
        hdr.pairs[0].setInvalid();
        hdr.pairs[1].setInvalid();
        hdr.pairs[2].setInvalid();
        hdr.pairs[3].setInvalid();
        hdr.pairs[4].setInvalid();
        hdr.pairs[5].setInvalid();
        hdr.pairs[6].setInvalid();
        hdr.pairs[7].setInvalid();
    }
}

#endif /* _ZEBRA_RECIRCULATE_ */
