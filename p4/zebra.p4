/*
 * Zebra: in-network aggregation of hot PS-lite gradient keys, for Tofino (TNA).
 *
 * The behaviour is zebra-proto's switch model (rust/zebra-proto/src/switch.rs)
 * and the wire format its WIRE.md; docs/P4.md describes the passes, the
 * resources and where this program differs from the model. Build:
 *
 *   bf-p4c --target tofino --arch tna -o zebra.tofino p4/zebra.p4
 *   bf-p4c --target tofino --arch tna -DZEBRA_LNS -o zebra_lns.tofino p4/zebra.p4
 *
 * This program has not been compiled: no P4 compiler was available where it
 * was written (docs/P4.md says what is needed).
 */

#include <core.p4>
#include <tna.p4>

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"
#include "parsers.p4"
#include "forward.p4"
#include "worker_check.p4"
#include "round_state.p4"
#include "accumulate.p4"
#include "recirculate.p4"
#include "ack.p4"
#include "mirror_cpu.p4"
#include "replicate.p4"
#ifdef ZEBRA_LNS
#include "lns/lns.p4"
#endif

control Ingress(
    inout header_t hdr,
    inout ingress_metadata_t ig_md,
    in ingress_intrinsic_metadata_t ig_intr_md,
    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    SwitchPorts() switch_ports;
    SwitchAddress() switch_address;
    Forward() forward;
    ToCpu() to_cpu;
    JobCheck() job_check;
    MemberCheck() member_check;
    BiasRoutedRanks() bias_routed;
    BiasPositionalRanks() bias_positional;
    RangeCheck() range_check;
    IndexRoutedRanks() index_routed;
    UnbiasPositionalRanks() unbias_positional;
    ConflictCheck() conflict_check;
    DenseCheck() dense_check;
    Validate() validate;
    RoundState() round_state;
    AdmissionOutcome() admission_outcome;
    FirstOpened() first_opened;
    NewestRound() newest_round;
    SeenRecords() seen_records;
#ifdef ZEBRA_LNS
    LnsValues() lns_values;
#endif
    StartContinuation() start_continuation;
    NextContinuation() next_continuation;
    DropPositionalPairs() drop_positional_pairs;
    StartReadout() start_readout;
    ReadoutRow() readout_row;
    UpdateRoute() update_route;

    Counter<bit<64>, bit<8>>(STATS, CounterType_t.PACKETS) stats;

    bool resend;
    bool before_first;
    bool far;
    round_op_t round_op;
    fallback_reason_t admission;
    bool write_record;
    acc_index_t same_entry_index;
    bool same;
    bool closed;
    bit<1> read_worker;
    bit<1> respond;
    bit<1> finish;
    bit<1> last_row;

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    /* What egress needs: the answer to build, the worker's progress and
     * coverage to update, what the registers do and where the routed slots
     * (which follow the bridge) are. */
    action fill_bridge() {
        hdr.bridge.setValid();
        hdr.bridge.kind = ctl_kind_t.BRIDGED;
        hdr.bridge.reason = (bit<8>)ig_md.reason;
        hdr.bridge.respond = respond;
        hdr.bridge.dup = ig_md.dup;
        hdr.bridge.finish = finish;
        hdr.bridge.read_worker = read_worker;
        hdr.bridge.last_row = last_row;
        hdr.bridge.to_cpu = 0;
        hdr.bridge.acc_op = ig_md.acc_op;
        hdr.bridge.same = (bit<1>)same;
        hdr.bridge.reserved = 0;
        hdr.bridge.workers = ig_md.job.workers;
        hdr.bridge.round = ig_md.round;
        hdr.bridge.done_index = ig_md.rs_index;
        hdr.bridge.ws_index = ig_md.ws_index;
        hdr.bridge.cover_index = ig_md.cover_index;
        hdr.bridge.entry = same_entry_index;
        hdr.bridge.value_mask = ig_md.value_mask;
        hdr.bridge.slots = 1;
        hdr.slot_index[0].setValid();
        hdr.slot_value[0].setValid();
        hdr.slot_index[1].setValid();
        hdr.slot_value[1].setValid();
        hdr.slot_index[2].setValid();
        hdr.slot_value[2].setValid();
        hdr.slot_index[3].setValid();
        hdr.slot_value[3].setValid();
        hdr.slot_index[4].setValid();
        hdr.slot_value[4].setValid();
        hdr.slot_index[5].setValid();
        hdr.slot_value[5].setValid();
        hdr.slot_index[6].setValid();
        hdr.slot_value[6].setValid();
        hdr.slot_index[7].setValid();
        hdr.slot_value[7].setValid();
    }

    apply {
        /* 1. Stage 0: the pass is the parser's (ig_md.pass), so the tables
         * keyed on parsed fields start at once. Nothing below changes state
         * for a datagram not addressed to the switch (for_switch). */
        switch_ports.apply(ig_md);
        switch_address.apply(hdr, ig_md.for_switch);

        ig_md.stat = (bit<8>)stat_t.PACKETS;
        ig_md.verdict = verdict_t.DROP;
        ig_md.acc_op = acc_op_t.NONE;
        ig_md.dup = 0;
        ig_md.pairs_low = 0;
        ig_md.pairs_left = 0;
        ig_md.malformed = false;
        ig_md.dense_misaligned = false;
        ig_md.dense_end = 0;
        ig_md.too_long = false;
        ig_md.seq_over = false;
        ig_md.job_known = false;
        ig_md.record_key = ig_md.round << 4;
        ig_md.record_before = 0;
        ig_md.reason = fallback_reason_t.ADDED;
        same_entry_index = 0;
        write_record = false;
        admission = fallback_reason_t.ADDED;
        before_first = false;
        far = false;
        closed = false;
        read_worker = 0;
        last_row = 0;
        respond = 0;
        finish = 0;
        resend = (hdr.hot.flags & HOT_FLAG_RETX) != 0;

        /* 2. The job (and worker), and whether the packet comes from the
         * worker's pinned address with a token it may show. */
        job_check.apply(hdr, ig_md, ig_md.job_id);
        ig_md.member = member_t.OK;
        if (ig_md.pass == pass_t.FAST || ig_md.pass == pass_t.CHECK) {
            member_check.apply(hdr, ig_md, ig_md.for_switch);
        }
        /* A READOUT row (a CLOSE reads row 0 of readout_rows): the worker
         * whose progress egress reads, and whether it is the last row. */
        if (ig_md.pass == pass_t.READOUT) {
            ig_md.ws_index = (ig_md.rs_index << WORKER_BITS) | (state_index_t)hdr.ctl.row[WORKER_BITS - 1:0];
            read_worker = (hdr.ctl.row < (bit<16>)ig_md.job.workers) ? 1w1 : 1w0;
            last_row = (hdr.ctl.row + 1 >= hdr.ctl.rows) ? 1w1 : 1w0;
        } else if (ig_md.pass == pass_t.CLOSE) {
            ig_md.ws_index = ig_md.rs_index << WORKER_BITS;
            read_worker = 1;
            last_row = (ig_md.job.readout_rows <= 1) ? 1w1 : 1w0;
        }
        ig_md.cover_index = ig_md.cover_index + (cover_index_t)(hdr.hot.seq >> 5);
        ig_md.rec_index = ig_md.rec_index + (record_index_t)hdr.hot.seq;

        /* 3. Ranks to register entries, the range check, conflicts. */
        if (ig_md.pass == pass_t.FAST && !ig_md.dense) {
            bias_routed.apply(hdr, ig_md.job.rank_bias);
        } else if (ig_md.pass == pass_t.CHECK) {
            bias_positional.apply(hdr, ig_md.job.rank_bias);
        } else if (ig_md.pass == pass_t.CONT) {
            bias_routed.apply(hdr, ig_md.job.rank_bias);
        }
        range_check.apply(hdr, ig_md, ig_md.pass == pass_t.CHECK);
        if ((ig_md.pass == pass_t.FAST && !ig_md.dense) || ig_md.pass == pass_t.CONT) {
            index_routed.apply(hdr, ig_md.job.rank_bias, ig_md.row_base);
        } else if (ig_md.pass == pass_t.CHECK) {
            unbias_positional.apply(hdr, ig_md.job.rank_bias);
        }
        if (ig_md.pass == pass_t.FAST && !ig_md.dense) {
            conflict_check.apply(ig_md.routed_mask, hdr.hot.count, ig_md.pairs_low, ig_md.pairs_left);
        }
        if (ig_md.pass == pass_t.FAST && ig_md.dense) {
            dense_check.apply(hdr, ig_md, same_entry_index);
        }

        /* A dense block (its entry from DenseCheck), a READOUT row: every
         * register at one entry. */
        same = false;
        if (ig_md.pass == pass_t.FAST && ig_md.dense) {
            same = true;
        } else if (ig_md.pass == pass_t.READOUT || ig_md.pass == pass_t.CLOSE) {
            same = true;
            same_entry_index = ig_md.row_base + hdr.ctl.row;
        }

        /* 4. The checks that need no state: one table. */
        if (ig_md.pass == pass_t.FAST || ig_md.pass == pass_t.CHECK) {
            validate.apply(hdr, ig_md);
        }

        /* 5. The round state: admit a HOT packet of a member (peek only, for
         * one that may not open its round: Unopened; nothing for one far
         * ahead of the job's newest round: FarAhead), close, release. */
        round_op = round_op_t.NONE;
        if ((ig_md.pass == pass_t.FAST || ig_md.pass == pass_t.CHECK) && ig_md.for_switch && !ig_md.malformed
                && ig_md.pairs_low == ig_md.pairs_left && ig_md.reason == fallback_reason_t.ADDED
                && ig_md.member == member_t.OK) {
            first_opened.apply(ig_md.job.index, ig_md.round, resend, before_first);
            newest_round.apply(ig_md.job.index, ig_md.round, ig_md.far_floor, resend, far);
            round_op = round_op_t.HOT;
        } else if ((ig_md.pass == pass_t.CLOSE || ig_md.pass == pass_t.FLUSH) && ig_md.job_known) {
            round_op = round_op_t.CLOSE;
        } else if (ig_md.pass == pass_t.RELEASE && ig_md.job_known) {
            round_op = round_op_t.RELEASE;
        }
        round_state.apply(round_op, resend, before_first, far, ig_md.rs_index, ig_md.round,
                          ig_md.seen);
        closed = round_op == round_op_t.CLOSE && ig_md.seen == ig_md.round;

        /* 6. The record: first time, retransmission, or stale copy. */
        if (round_op == round_op_t.HOT) {
            admission_outcome.apply(ig_md.seen, ig_md.round, before_first, resend, admission, write_record);
        }
        seen_records.apply(ig_md.rec_index, ig_md.record_key, admission, round_op == round_op_t.HOT && !far,
                           write_record, ig_md.record_before);

        /* 7. The verdict on a HOT packet, and what the registers (in egress)
         * do: exactly one action each. */
        if (ig_md.pass == pass_t.FAST || ig_md.pass == pass_t.CHECK) {
            if (ig_md.malformed) {
                ig_md.verdict = verdict_t.DROP;
                ig_md.stat = (bit<8>)stat_t.BAD;
            } else if (ig_md.pairs_low != ig_md.pairs_left) {
                ig_md.verdict = verdict_t.RESUBMIT;
                ig_md.stat = (bit<8>)stat_t.RESUBMITS;
            } else if (ig_md.worker_known && ig_md.member == member_t.UNPINNED) {
                ig_md.verdict = verdict_t.DROP;
                ig_md.stat = (bit<8>)stat_t.UNPINNED;
            } else if (ig_md.worker_known && ig_md.member == member_t.ADDRESS) {
                ig_md.verdict = verdict_t.DROP;
                ig_md.stat = (bit<8>)stat_t.REFUSED_ADDRESS;
            } else if (ig_md.worker_known && ig_md.member == member_t.TOKEN) {
                ig_md.verdict = verdict_t.DROP;
                ig_md.stat = (bit<8>)stat_t.REFUSED_TOKEN;
            } else if (ig_md.reason != fallback_reason_t.ADDED) {
                ig_md.verdict = verdict_t.ANSWER;
                respond = 1;
                ig_md.stat = (bit<8>)stat_t.FALLBACK_BASE + (bit<8>)ig_md.reason;
            } else if (far) {
                ig_md.verdict = verdict_t.ANSWER;
                respond = 1;
                ig_md.reason = fallback_reason_t.FAR_AHEAD;
                ig_md.stat = (bit<8>)stat_t.FALLBACK_BASE + (bit<8>)fallback_reason_t.FAR_AHEAD;
            } else if (ig_md.record_before == 0) {
                if (admission != fallback_reason_t.ADDED) {
                    ig_md.verdict = verdict_t.ANSWER;
                    respond = 1;
                    ig_md.stat = (bit<8>)stat_t.FALLBACK_BASE + (bit<8>)admission;
                    ig_md.reason = admission;
                } else if (ig_md.pass == pass_t.CHECK) {
                    ig_md.verdict = verdict_t.CONTINUE;
                    ig_md.stat = (bit<8>)stat_t.RECIRCULATIONS;
                } else {
                    ig_md.verdict = verdict_t.ADD;
                    respond = 1;
                    finish = 1;
                    ig_md.stat = (bit<8>)stat_t.ADDED;
                    ig_md.acc_op = acc_op_t.ADD;
                }
            } else if (ig_md.record_before[31:4] == ig_md.round[27:0]) {
                ig_md.verdict = verdict_t.ANSWER;
                respond = 1;
                ig_md.dup = 1;
                ig_md.stat = (bit<8>)stat_t.DUPLICATES;
                ig_md.reason = (fallback_reason_t)(4w0 ++ ig_md.record_before[3:0]);
            } else {
                ig_md.verdict = verdict_t.DROP;
                ig_md.stat = (bit<8>)stat_t.STALE;
            }
        } else if (ig_md.pass == pass_t.CONT) {
            ig_md.acc_op = acc_op_t.ADD;
            if (hdr.hot.count == 1) {
                respond = 1;
                finish = 1;
            }
            next_continuation.apply(hdr, ig_md, ig_tm_md);
        } else if (ig_md.pass == pass_t.READOUT || closed) {
            ig_md.acc_op = acc_op_t.READ;
            if (ig_md.pass == pass_t.CLOSE) {
                ig_md.stat = (bit<8>)stat_t.ROUNDS_COMPLETE;
            } else {
                ig_md.stat = (bit<8>)stat_t.READOUT_PASSES;
            }
        } else if (ig_md.pass == pass_t.FLUSH) {
            ig_md.stat = (bit<8>)stat_t.FROM_CPU;
        } else if (ig_md.pass == pass_t.RELEASE) {
            ig_md.stat = (bit<8>)stat_t.RELEASES;
        } else if (ig_md.pass == pass_t.TO_CPU) {
            ig_md.stat = (bit<8>)stat_t.TO_CPU;
        } else if (ig_md.pass == pass_t.BAD) {
            ig_md.stat = (bit<8>)stat_t.BAD;
        }
        if (ig_md.pass == pass_t.CLOSE && closed) {
            start_readout.apply(hdr, ig_md, false);
        }
#ifdef ZEBRA_LNS
        if (ig_md.pass == pass_t.FAST || ig_md.pass == pass_t.CONT) {
            lns_values.apply(hdr, ig_md.job.lns_profile, ig_md.job.lns_saturate);
        }
#endif

        /* 8. Where the packet goes, one pass at a time. UPDATE and UPDATE_ACK:
         * to the workers or the server (replicate.p4); a HOT packet: whether
         * its worker moved. */
        if (ig_md.for_switch && (ig_md.pass == pass_t.FAST || ig_md.pass == pass_t.CHECK
                                 || ig_md.pass == pass_t.UPDATE || ig_md.pass == pass_t.UPDATE_ACK)) {
            update_route.apply(hdr, ig_md, ig_intr_md, ig_dprsr_md, ig_tm_md, ig_md.pass);
        }
        if (ig_md.pass == pass_t.OTHER || ig_md.pass == pass_t.FROM_CPU || (!ig_md.internal && !ig_md.for_switch)) {
            if (ig_md.pass == pass_t.FROM_CPU) {
                hdr.ctl.setInvalid();
            }
            forward.apply(hdr, ig_md, ig_dprsr_md, ig_tm_md);
        } else if (ig_md.pass == pass_t.FAST || ig_md.pass == pass_t.CHECK) {
            if (ig_md.verdict == verdict_t.ANSWER || ig_md.verdict == verdict_t.ADD) {
                fill_bridge();
                ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
                if (ig_md.pass == pass_t.CHECK) {
                    drop_positional_pairs.apply(hdr);
                }
            } else if (ig_md.verdict == verdict_t.RESUBMIT) {
                hdr.resubmit.setValid();
                hdr.resubmit.mode = RESUBMIT_CHECK;
                ig_dprsr_md.resubmit_type = (bit<3>)RESUBMIT_CHECK;
            } else if (ig_md.verdict == verdict_t.CONTINUE) {
                start_continuation.apply(hdr, ig_md, ig_intr_md, ig_tm_md);
            } else {
                drop();
            }
            /* A worker of the job not pinned yet (the controller pins it),
             * or answered (as the model learns) from an address its route
             * does not hold (another ingress port or MAC: the pinned IPv4
             * address and UDP port are checked above): tell the controller. */
            if (ig_md.worker_known && (ig_md.member == member_t.UNPINNED
                    || (ig_md.moved && (ig_md.verdict == verdict_t.ANSWER || ig_md.verdict == verdict_t.ADD
                                        || ig_md.verdict == verdict_t.CONTINUE)))) {
                ig_dprsr_md.digest_type = DIGEST_WORKER;
            }
        } else if (ig_md.pass == pass_t.CONT) {
            fill_bridge();
        } else if (ig_md.pass == pass_t.READOUT || closed) {
            fill_bridge();
            readout_row.apply(hdr, ig_md, ig_tm_md);
        } else if (ig_md.pass == pass_t.FLUSH) {
            if (closed) {
                hdr.ctl.flags = CTL_FLAG_CLOSED;
                ig_md.stat = (bit<8>)stat_t.ROUNDS_FLUSHED;
            } else {
                hdr.ctl.flags = 0;
            }
            to_cpu.apply(hdr, ig_md, ig_tm_md);
        } else if (ig_md.pass == pass_t.TO_CPU) {
            to_cpu.apply(hdr, ig_md, ig_tm_md);
        } else if (ig_md.pass != pass_t.UPDATE && ig_md.pass != pass_t.UPDATE_ACK) {
            drop();
        }

        stats.count(ig_md.stat);
    }
}

control Egress(
    inout header_t hdr,
    inout egress_metadata_t eg_md,
    in egress_intrinsic_metadata_t eg_intr_md,
    in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
    inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    MirrorSessions() mirror_sessions;
    Accumulators() accumulators;
    DropSlots() drop_slots;
    WorkerProgress() worker_progress;
    CoverBit() cover_bit;
    Coverage() coverage;
    Completion() completion;
    ReadoutOut() readout_out;
    CompletionOut() completion_out;
    Answer() answer;
    UpdateCopy() update_copy;

    Counter<bit<64>, bit<8>>(STATS, CounterType_t.PACKETS) stats;

    acc_op_t progress_op;
    bool complete;
    bit<8> stat;
    bool counted;
    bit<32> cover_mask;

    apply {
        counted = false;
        if (hdr.bridge.isValid()) {
            mirror_sessions.apply(eg_md);
            stat = (bit<8>)stat_t.PACKETS;

            accumulators.apply(hdr);
            if (hdr.bridge.acc_op != acc_op_t.READ) {
                drop_slots.apply(hdr);
            }

            if ((hdr.hot.flags & HOT_FLAG_DONE) != 0) {
                eg_md.progress_inc = (hdr.hot.seq ++ 16w0) + 32w0x00010001;     /* ((seq + 1) << 16) + 1 */
            } else {
                eg_md.progress_inc = 1;
            }
            if (hdr.bridge.finish == 1) {
                progress_op = acc_op_t.ADD;
            } else if (hdr.bridge.acc_op == acc_op_t.READ && hdr.bridge.read_worker == 1) {
                progress_op = acc_op_t.READ;
            } else {
                progress_op = acc_op_t.NONE;
            }
            worker_progress.apply(progress_op, hdr.bridge.ws_index, hdr.bridge.round,
                                  eg_md.progress_inc, eg_md.progress);
            cover_mask = 0;
            if (hdr.bridge.finish == 1) {
                cover_bit.apply(hdr.hot.seq, cover_mask);
            }
            coverage.apply(hdr.bridge.finish == 1, hdr.bridge.cover_index, hdr.bridge.round, cover_mask);

            complete = hdr.bridge.finish == 1 && eg_md.progress[31:16] == eg_md.progress[15:0];
            completion.apply(complete, hdr.bridge.done_index, hdr.bridge.round, eg_md.done);

            if (hdr.bridge.acc_op == acc_op_t.READ) {
                if (hdr.bridge.read_worker == 1) {
                    hdr.readout.progress = eg_md.progress;
                }
                readout_out.apply(hdr, eg_md, eg_dprsr_md);
            } else if (complete && eg_md.done == (bit<32>)hdr.bridge.workers) {
                completion_out.apply(hdr, eg_md, eg_dprsr_md);
                stat = (bit<8>)stat_t.ROUNDS_COMPLETE;
            }

            if (hdr.bridge.respond == 1) {
                answer.apply(hdr, hdr.bridge);
                if (hdr.bridge.reason == 0 && stat == (bit<8>)stat_t.PACKETS) {
                    stat = (bit<8>)stat_t.ACKS;
                }
            }

            counted = true;
            hdr.bridge.setInvalid();
        } else if (hdr.replica.isValid()) {
            update_copy.apply(hdr, eg_intr_md, eg_dprsr_md, stat);
            counted = true;
        }
        if (counted) {
            stats.count(stat);
        }
    }
}

Pipeline(
    IngressParser(),
    Ingress(),
    IngressDeparser(),
    EgressParser(),
    Egress(),
    EgressDeparser()) pipe;

Switch(pipe) main;
