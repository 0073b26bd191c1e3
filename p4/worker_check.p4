/*
 * Who may add: the job and worker tables, the checks a HOT packet must pass
 * (in the order of zebra-proto's Switch::on_hot: UnknownJob, BadWorker,
 * BadFormat, SeqOverflow, OutOfRange), and the per-(worker, copy, seq)
 * records that answer a retransmission from what happened the first time
 * instead of adding it twice (the paper's "repeat-write-error").
 *
 * Every job-specific number comes from these tables, written by the
 * controller (p4/controller/zebra_ctl/worker_check.py) from the settings file.
 */

#ifndef _ZEBRA_WORKER_CHECK_
#define _ZEBRA_WORKER_CHECK_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

/* The job of a packet, its copy of the slot memory, and (for HOT and CONT
 * packets; the lookup is harmless for others) its worker's records. UPDATE and UPDATE_ACK use the job's workers,
 * servers and longest update (replicate.p4). */
control JobCheck(
    inout header_t hdr,
    inout ingress_metadata_t ig_md,
    in bit<16> job_id) {

    action set_job(
        job_index_t index,
        bit<8> workers,
        bit<32> hot_keys,
        bit<16> max_udp_len,
        bit<16> max_seqs,
        bit<1> fixed,
        copy_t copy_mask,
        acc_index_t region_base,
        bit<16> readout_rows,
        bit<8> lns_profile,
        bit<8> lns_saturate,
        bit<16> servers,
        bit<16> max_update_len) {
        ig_md.job_known = true;
        ig_md.job.index = index;
        ig_md.job.workers = workers;
        ig_md.job.hot_keys = hot_keys;
        ig_md.job.rank_bias = 16w0x8000 - hot_keys[15:0];
        ig_md.job.max_udp_len = max_udp_len;
        ig_md.job.max_seqs = max_seqs;
        ig_md.job.fixed = fixed;
        ig_md.job.copy_mask = copy_mask;
        ig_md.job.region_base = region_base;
        ig_md.job.readout_rows = readout_rows;
        ig_md.job.state_base = (state_index_t)index << COPY_BITS;
        ig_md.job.lns_profile = lns_profile;
        ig_md.job.lns_saturate = lns_saturate;
        ig_md.job.servers = servers;
        ig_md.job.max_update_len = max_update_len;
    }

    action unknown_job() {
        ig_md.job_known = false;
    }

    /* One entry per job the switch serves. */
    table jobs {
        key = {
            job_id : exact;
        }
        actions = {
            set_job;
            @defaultonly unknown_job;
        }
        const default_action = unknown_job;
        size = MAX_JOBS;
    }

    action set_copy_offset(acc_index_t offset) {
        ig_md.row_base = offset + ig_md.job.region_base;
    }

    /* copy -> copy * slots: the slot memory of copy c starts at c * slots. */
    table copy_offsets {
        key = {
            ig_md.copy : exact;
        }
        actions = {
            set_copy_offset;
        }
        size = MAX_COPIES;
    }

    action set_worker(record_index_t rec_base, cover_index_t cover_base) {
        ig_md.worker_known = true;
        ig_md.rec_base = rec_base;
        ig_md.cover_base = cover_base;
    }

    action unknown_worker() {
        ig_md.worker_known = false;
    }

    /* One entry per (job, worker rank, copy): a rank the table lacks is not a
     * worker of the job (BadWorker). */
    table workers {
        key = {
            ig_md.job.index : exact;
            hdr.hot.worker  : exact;
            ig_md.copy      : exact;
        }
        actions = {
            set_worker;
            @defaultonly unknown_worker;
        }
        const default_action = unknown_worker;
        size = MAX_JOBS * MAX_WORKERS * MAX_COPIES;
    }

    apply {
        ig_md.worker_known = false;
        jobs.apply();
        if (ig_md.job_known) {
            ig_md.copy = ig_md.round[COPY_BITS - 1:0] & ig_md.job.copy_mask;
            ig_md.rs_index = ig_md.job.state_base | (state_index_t)ig_md.copy;
            copy_offsets.apply();
            workers.apply();
            ig_md.ws_index = (ig_md.rs_index << WORKER_BITS) | (state_index_t)hdr.hot.worker[WORKER_BITS - 1:0];
        }
    }
}

/* Is this datagram for the switch? The switch's hot-path address from the
 * settings (`switch = HOST:PORT`); ternary, so that a controller may also
 * accept a subnet. The port was matched by the parser's value set already. */
control SwitchAddress(in header_t hdr, out bool mine) {
    action is_mine() {
        mine = true;
    }

    action not_mine() {
        mine = false;
    }

    table addresses {
        key = {
            hdr.ipv4.dst_addr : ternary;
            hdr.udp.dst_port  : exact;
        }
        actions = {
            is_mine;
            @defaultonly not_mine;
        }
        const default_action = not_mine;
        size = 16;
    }

    apply {
        addresses.apply();
    }
}

/* Out-of-range ranks: bit 15 of every biased rank (accumulate.p4), gathered
 * into one word by an identity hash, and the pairs that are there; Validate's
 * table matches the two words. */
control RangeCheck(in header_t hdr, inout ingress_metadata_t ig_md, in bool by_position) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) routed_flags;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) routed_present;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) position_flags;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) position_present;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) values_present;

    apply {
        if (by_position) {
            ig_md.out_flags = position_flags.get({
                11w0,
                hdr.pairs[20].index[15:15], hdr.pairs[19].index[15:15],
                hdr.pairs[18].index[15:15], hdr.pairs[17].index[15:15], hdr.pairs[16].index[15:15],
                hdr.pairs[15].index[15:15], hdr.pairs[14].index[15:15], hdr.pairs[13].index[15:15],
                hdr.pairs[12].index[15:15], hdr.pairs[11].index[15:15], hdr.pairs[10].index[15:15],
                hdr.pairs[9].index[15:15],  hdr.pairs[8].index[15:15],  hdr.pairs[7].index[15:15],
                hdr.pairs[6].index[15:15],  hdr.pairs[5].index[15:15],  hdr.pairs[4].index[15:15],
                hdr.pairs[3].index[15:15],  hdr.pairs[2].index[15:15],  hdr.pairs[1].index[15:15],
                hdr.pairs[0].index[15:15]});
            ig_md.routed_mask = position_present.get({
                11w0,
                (bit<1>)hdr.pairs[20].isValid(), (bit<1>)hdr.pairs[19].isValid(),
                (bit<1>)hdr.pairs[18].isValid(), (bit<1>)hdr.pairs[17].isValid(), (bit<1>)hdr.pairs[16].isValid(),
                (bit<1>)hdr.pairs[15].isValid(), (bit<1>)hdr.pairs[14].isValid(), (bit<1>)hdr.pairs[13].isValid(),
                (bit<1>)hdr.pairs[12].isValid(), (bit<1>)hdr.pairs[11].isValid(), (bit<1>)hdr.pairs[10].isValid(),
                (bit<1>)hdr.pairs[9].isValid(),  (bit<1>)hdr.pairs[8].isValid(),  (bit<1>)hdr.pairs[7].isValid(),
                (bit<1>)hdr.pairs[6].isValid(),  (bit<1>)hdr.pairs[5].isValid(),  (bit<1>)hdr.pairs[4].isValid(),
                (bit<1>)hdr.pairs[3].isValid(),  (bit<1>)hdr.pairs[2].isValid(),  (bit<1>)hdr.pairs[1].isValid(),
                (bit<1>)hdr.pairs[0].isValid()});
        } else {
            ig_md.out_flags = routed_flags.get({
                16w0, hdr.slot_index[15].index[15:15], hdr.slot_index[14].index[15:15], hdr.slot_index[13].index[15:15],
                hdr.slot_index[12].index[15:15], hdr.slot_index[11].index[15:15], hdr.slot_index[10].index[15:15],
                hdr.slot_index[9].index[15:15], hdr.slot_index[8].index[15:15], hdr.slot_index[7].index[15:15],
                hdr.slot_index[6].index[15:15], hdr.slot_index[5].index[15:15], hdr.slot_index[4].index[15:15],
                hdr.slot_index[3].index[15:15], hdr.slot_index[2].index[15:15], hdr.slot_index[1].index[15:15],
                hdr.slot_index[0].index[15:15]});
            ig_md.routed_mask = routed_present.get({
                16w0, (bit<1>)hdr.slot_index[15].isValid(), (bit<1>)hdr.slot_index[14].isValid(), (bit<1>)hdr.slot_index[13].isValid(),
                (bit<1>)hdr.slot_index[12].isValid(), (bit<1>)hdr.slot_index[11].isValid(), (bit<1>)hdr.slot_index[10].isValid(),
                (bit<1>)hdr.slot_index[9].isValid(), (bit<1>)hdr.slot_index[8].isValid(), (bit<1>)hdr.slot_index[7].isValid(),
                (bit<1>)hdr.slot_index[6].isValid(), (bit<1>)hdr.slot_index[5].isValid(), (bit<1>)hdr.slot_index[4].isValid(),
                (bit<1>)hdr.slot_index[3].isValid(), (bit<1>)hdr.slot_index[2].isValid(), (bit<1>)hdr.slot_index[1].isValid(),
                (bit<1>)hdr.slot_index[0].isValid()});
            ig_md.value_mask = values_present.get({(bit<1>)hdr.slot_value[15].isValid(), (bit<1>)hdr.slot_value[14].isValid(), (bit<1>)hdr.slot_value[13].isValid(), (bit<1>)hdr.slot_value[12].isValid(), (bit<1>)hdr.slot_value[11].isValid(), (bit<1>)hdr.slot_value[10].isValid(), (bit<1>)hdr.slot_value[9].isValid(), (bit<1>)hdr.slot_value[8].isValid(), (bit<1>)hdr.slot_value[7].isValid(), (bit<1>)hdr.slot_value[6].isValid(), (bit<1>)hdr.slot_value[5].isValid(), (bit<1>)hdr.slot_value[4].isValid(), (bit<1>)hdr.slot_value[3].isValid(), (bit<1>)hdr.slot_value[2].isValid(), (bit<1>)hdr.slot_value[1].isValid(), (bit<1>)hdr.slot_value[0].isValid()});
        }
    }
}

/* The reason a HOT packet cannot be added before any state is read, in the
 * model's order; ADDED if none. Every condition is a bit computed beside the
 * others, and one ternary table orders them (its entries in priority order),
 * so the verdict needs one stage, not a chain of conditions. Malformed
 * datagrams (length other than the header implies, round 0) are dropped
 * unanswered, as zebra-proto drops what its parser refuses. */
control Validate(in header_t hdr, inout ingress_metadata_t ig_md) {
    bit<16> implied_len;

    action reason_is(fallback_reason_t r) {
        ig_md.reason = r;
    }

    /* A RETX of a job the switch does not have: a switch started again that
     * has not admitted the job yet; an earlier incarnation may have added it
     * (Unopened). A rank out of range: one routed (or, in a CHECK pass,
     * positional) pair whose biased rank has bit 15 set. */
    table reasons {
        key = {
            ig_md.job_known        : exact;
            hdr.hot.flags          : ternary;
            ig_md.worker_known     : ternary;
            ig_md.job.fixed        : ternary;
            ig_md.too_long         : ternary;
            ig_md.too_many         : ternary;
            hdr.hot.round          : ternary;
            ig_md.dense_misaligned : ternary;
            ig_md.seq_over         : ternary;
            ig_md.rank_too_big     : ternary;
            ig_md.dense_beyond     : ternary;
            ig_md.dense            : ternary;
            ig_md.out_flags        : ternary;
            ig_md.routed_mask      : ternary;
        }
        actions = {
            reason_is;
        }
        const entries = {
            (false, HOT_FLAG_RETX &&& HOT_FLAG_RETX, _, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.UNOPENED);
            (false, _, _, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.UNKNOWN_JOB);
            (true, _, false, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_WORKER);
            (true, HOT_FLAG_FIXED &&& HOT_FLAG_FIXED, _, 0, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, 0 &&& HOT_FLAG_FIXED, _, 1, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, true, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, true, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 28 &&& 32w1 << 28, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 29 &&& 32w1 << 29, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 30 &&& 32w1 << 30, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 31 &&& 32w1 << 31, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, _, true, _, _, _, true, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, _, _, true, _, _, _, _, _) : reason_is(fallback_reason_t.SEQ_OVERFLOW);
            (true, _, _, _, _, _, _, _, _, true, _, _, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, true, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 0 &&& 32w1 << 0, 32w1 << 0 &&& 32w1 << 0) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 1 &&& 32w1 << 1, 32w1 << 1 &&& 32w1 << 1) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 2 &&& 32w1 << 2, 32w1 << 2 &&& 32w1 << 2) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 3 &&& 32w1 << 3, 32w1 << 3 &&& 32w1 << 3) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 4 &&& 32w1 << 4, 32w1 << 4 &&& 32w1 << 4) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 5 &&& 32w1 << 5, 32w1 << 5 &&& 32w1 << 5) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 6 &&& 32w1 << 6, 32w1 << 6 &&& 32w1 << 6) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 7 &&& 32w1 << 7, 32w1 << 7 &&& 32w1 << 7) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 8 &&& 32w1 << 8, 32w1 << 8 &&& 32w1 << 8) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 9 &&& 32w1 << 9, 32w1 << 9 &&& 32w1 << 9) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 10 &&& 32w1 << 10, 32w1 << 10 &&& 32w1 << 10) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 11 &&& 32w1 << 11, 32w1 << 11 &&& 32w1 << 11) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 12 &&& 32w1 << 12, 32w1 << 12 &&& 32w1 << 12) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 13 &&& 32w1 << 13, 32w1 << 13 &&& 32w1 << 13) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 14 &&& 32w1 << 14, 32w1 << 14 &&& 32w1 << 14) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 15 &&& 32w1 << 15, 32w1 << 15 &&& 32w1 << 15) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 16 &&& 32w1 << 16, 32w1 << 16 &&& 32w1 << 16) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 17 &&& 32w1 << 17, 32w1 << 17 &&& 32w1 << 17) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 18 &&& 32w1 << 18, 32w1 << 18 &&& 32w1 << 18) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 19 &&& 32w1 << 19, 32w1 << 19 &&& 32w1 << 19) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, false, 32w1 << 20 &&& 32w1 << 20, 32w1 << 20 &&& 32w1 << 20) : reason_is(fallback_reason_t.OUT_OF_RANGE);
        }
        const default_action = reason_is(fallback_reason_t.ADDED);
        size = 64;
    }

    action implied(bit<16> n) {
        implied_len = n;
    }

    /* The UDP length a count of pairs (or dense values) implies. */
    table lengths {
        key = {
            hdr.hot.count : exact;
            ig_md.dense   : exact;
        }
        actions = {
            implied;
        }
        const entries = {
            (0, false) : implied(8 + HOT_HEADER_LEN + 0);
            (1, false) : implied(8 + HOT_HEADER_LEN + 8);
            (2, false) : implied(8 + HOT_HEADER_LEN + 16);
            (3, false) : implied(8 + HOT_HEADER_LEN + 24);
            (4, false) : implied(8 + HOT_HEADER_LEN + 32);
            (5, false) : implied(8 + HOT_HEADER_LEN + 40);
            (6, false) : implied(8 + HOT_HEADER_LEN + 48);
            (7, false) : implied(8 + HOT_HEADER_LEN + 56);
            (8, false) : implied(8 + HOT_HEADER_LEN + 64);
            (9, false) : implied(8 + HOT_HEADER_LEN + 72);
            (10, false) : implied(8 + HOT_HEADER_LEN + 80);
            (11, false) : implied(8 + HOT_HEADER_LEN + 88);
            (12, false) : implied(8 + HOT_HEADER_LEN + 96);
            (13, false) : implied(8 + HOT_HEADER_LEN + 104);
            (14, false) : implied(8 + HOT_HEADER_LEN + 112);
            (15, false) : implied(8 + HOT_HEADER_LEN + 120);
            (16, false) : implied(8 + HOT_HEADER_LEN + 128);
            (17, false) : implied(8 + HOT_HEADER_LEN + 136);
            (18, false) : implied(8 + HOT_HEADER_LEN + 144);
            (19, false) : implied(8 + HOT_HEADER_LEN + 152);
            (20, false) : implied(8 + HOT_HEADER_LEN + 160);
            (21, false) : implied(8 + HOT_HEADER_LEN + 168);
            (22, false) : implied(8 + HOT_HEADER_LEN + 176);
            (23, false) : implied(8 + HOT_HEADER_LEN + 184);
            (24, false) : implied(8 + HOT_HEADER_LEN + 192);
            (25, false) : implied(8 + HOT_HEADER_LEN + 200);
            (26, false) : implied(8 + HOT_HEADER_LEN + 208);
            (27, false) : implied(8 + HOT_HEADER_LEN + 216);
            (28, false) : implied(8 + HOT_HEADER_LEN + 224);
            (29, false) : implied(8 + HOT_HEADER_LEN + 232);
            (30, false) : implied(8 + HOT_HEADER_LEN + 240);
            (31, false) : implied(8 + HOT_HEADER_LEN + 248);
            (32, false) : implied(8 + HOT_HEADER_LEN + 256);
            (33, false) : implied(8 + HOT_HEADER_LEN + 264);
            (34, false) : implied(8 + HOT_HEADER_LEN + 272);
            (35, false) : implied(8 + HOT_HEADER_LEN + 280);
            (36, false) : implied(8 + HOT_HEADER_LEN + 288);
            (37, false) : implied(8 + HOT_HEADER_LEN + 296);
            (38, false) : implied(8 + HOT_HEADER_LEN + 304);
            (39, false) : implied(8 + HOT_HEADER_LEN + 312);
            (40, false) : implied(8 + HOT_HEADER_LEN + 320);
            (41, false) : implied(8 + HOT_HEADER_LEN + 328);
            (42, false) : implied(8 + HOT_HEADER_LEN + 336);
            (43, false) : implied(8 + HOT_HEADER_LEN + 344);
            (44, false) : implied(8 + HOT_HEADER_LEN + 352);
            (45, false) : implied(8 + HOT_HEADER_LEN + 360);
            (46, false) : implied(8 + HOT_HEADER_LEN + 368);
            (47, false) : implied(8 + HOT_HEADER_LEN + 376);
            (48, false) : implied(8 + HOT_HEADER_LEN + 384);
            (49, false) : implied(8 + HOT_HEADER_LEN + 392);
            (50, false) : implied(8 + HOT_HEADER_LEN + 400);
            (51, false) : implied(8 + HOT_HEADER_LEN + 408);
            (52, false) : implied(8 + HOT_HEADER_LEN + 416);
            (53, false) : implied(8 + HOT_HEADER_LEN + 424);
            (54, false) : implied(8 + HOT_HEADER_LEN + 432);
            (55, false) : implied(8 + HOT_HEADER_LEN + 440);
            (56, false) : implied(8 + HOT_HEADER_LEN + 448);
            (57, false) : implied(8 + HOT_HEADER_LEN + 456);
            (58, false) : implied(8 + HOT_HEADER_LEN + 464);
            (59, false) : implied(8 + HOT_HEADER_LEN + 472);
            (60, false) : implied(8 + HOT_HEADER_LEN + 480);
            (61, false) : implied(8 + HOT_HEADER_LEN + 488);
            (62, false) : implied(8 + HOT_HEADER_LEN + 496);
            (63, false) : implied(8 + HOT_HEADER_LEN + 504);
            (64, false) : implied(8 + HOT_HEADER_LEN + 512);
            (0, true) : implied(8 + HOT_DENSE_HEADER_LEN + 0);
            (1, true) : implied(8 + HOT_DENSE_HEADER_LEN + 4);
            (2, true) : implied(8 + HOT_DENSE_HEADER_LEN + 8);
            (3, true) : implied(8 + HOT_DENSE_HEADER_LEN + 12);
            (4, true) : implied(8 + HOT_DENSE_HEADER_LEN + 16);
            (5, true) : implied(8 + HOT_DENSE_HEADER_LEN + 20);
            (6, true) : implied(8 + HOT_DENSE_HEADER_LEN + 24);
            (7, true) : implied(8 + HOT_DENSE_HEADER_LEN + 28);
            (8, true) : implied(8 + HOT_DENSE_HEADER_LEN + 32);
            (9, true) : implied(8 + HOT_DENSE_HEADER_LEN + 36);
            (10, true) : implied(8 + HOT_DENSE_HEADER_LEN + 40);
            (11, true) : implied(8 + HOT_DENSE_HEADER_LEN + 44);
            (12, true) : implied(8 + HOT_DENSE_HEADER_LEN + 48);
            (13, true) : implied(8 + HOT_DENSE_HEADER_LEN + 52);
            (14, true) : implied(8 + HOT_DENSE_HEADER_LEN + 56);
            (15, true) : implied(8 + HOT_DENSE_HEADER_LEN + 60);
            (16, true) : implied(8 + HOT_DENSE_HEADER_LEN + 64);
            (17, true) : implied(8 + HOT_DENSE_HEADER_LEN + 68);
            (18, true) : implied(8 + HOT_DENSE_HEADER_LEN + 72);
            (19, true) : implied(8 + HOT_DENSE_HEADER_LEN + 76);
            (20, true) : implied(8 + HOT_DENSE_HEADER_LEN + 80);
            (21, true) : implied(8 + HOT_DENSE_HEADER_LEN + 84);
            (22, true) : implied(8 + HOT_DENSE_HEADER_LEN + 88);
            (23, true) : implied(8 + HOT_DENSE_HEADER_LEN + 92);
            (24, true) : implied(8 + HOT_DENSE_HEADER_LEN + 96);
            (25, true) : implied(8 + HOT_DENSE_HEADER_LEN + 100);
            (26, true) : implied(8 + HOT_DENSE_HEADER_LEN + 104);
            (27, true) : implied(8 + HOT_DENSE_HEADER_LEN + 108);
            (28, true) : implied(8 + HOT_DENSE_HEADER_LEN + 112);
            (29, true) : implied(8 + HOT_DENSE_HEADER_LEN + 116);
            (30, true) : implied(8 + HOT_DENSE_HEADER_LEN + 120);
            (31, true) : implied(8 + HOT_DENSE_HEADER_LEN + 124);
            (32, true) : implied(8 + HOT_DENSE_HEADER_LEN + 128);
            (33, true) : implied(8 + HOT_DENSE_HEADER_LEN + 132);
            (34, true) : implied(8 + HOT_DENSE_HEADER_LEN + 136);
            (35, true) : implied(8 + HOT_DENSE_HEADER_LEN + 140);
            (36, true) : implied(8 + HOT_DENSE_HEADER_LEN + 144);
            (37, true) : implied(8 + HOT_DENSE_HEADER_LEN + 148);
            (38, true) : implied(8 + HOT_DENSE_HEADER_LEN + 152);
            (39, true) : implied(8 + HOT_DENSE_HEADER_LEN + 156);
            (40, true) : implied(8 + HOT_DENSE_HEADER_LEN + 160);
            (41, true) : implied(8 + HOT_DENSE_HEADER_LEN + 164);
            (42, true) : implied(8 + HOT_DENSE_HEADER_LEN + 168);
            (43, true) : implied(8 + HOT_DENSE_HEADER_LEN + 172);
            (44, true) : implied(8 + HOT_DENSE_HEADER_LEN + 176);
            (45, true) : implied(8 + HOT_DENSE_HEADER_LEN + 180);
            (46, true) : implied(8 + HOT_DENSE_HEADER_LEN + 184);
            (47, true) : implied(8 + HOT_DENSE_HEADER_LEN + 188);
            (48, true) : implied(8 + HOT_DENSE_HEADER_LEN + 192);
            (49, true) : implied(8 + HOT_DENSE_HEADER_LEN + 196);
            (50, true) : implied(8 + HOT_DENSE_HEADER_LEN + 200);
            (51, true) : implied(8 + HOT_DENSE_HEADER_LEN + 204);
            (52, true) : implied(8 + HOT_DENSE_HEADER_LEN + 208);
            (53, true) : implied(8 + HOT_DENSE_HEADER_LEN + 212);
            (54, true) : implied(8 + HOT_DENSE_HEADER_LEN + 216);
            (55, true) : implied(8 + HOT_DENSE_HEADER_LEN + 220);
            (56, true) : implied(8 + HOT_DENSE_HEADER_LEN + 224);
            (57, true) : implied(8 + HOT_DENSE_HEADER_LEN + 228);
            (58, true) : implied(8 + HOT_DENSE_HEADER_LEN + 232);
            (59, true) : implied(8 + HOT_DENSE_HEADER_LEN + 236);
            (60, true) : implied(8 + HOT_DENSE_HEADER_LEN + 240);
            (61, true) : implied(8 + HOT_DENSE_HEADER_LEN + 244);
            (62, true) : implied(8 + HOT_DENSE_HEADER_LEN + 248);
            (63, true) : implied(8 + HOT_DENSE_HEADER_LEN + 252);
            (64, true) : implied(8 + HOT_DENSE_HEADER_LEN + 256);
        }
        const default_action = implied(0);
        size = 2 * (MAX_PAIRS_PER_PACKET + 1);
    }

    apply {
        lengths.apply();
        ig_md.malformed = hdr.udp.length != implied_len || hdr.hot.round == 0;
        ig_md.too_long = hdr.udp.length > ig_md.job.max_udp_len;
        ig_md.seq_over = hdr.hot.seq >= ig_md.job.max_seqs;
        reasons.apply();
    }
}

/* A dense block must start at a multiple of R (every worker's does:
 * dense_values_per_packet is R for the packet sizes the controller accepts
 * with dense ranks) and end within the job's hot keys. */
control DenseCheck(inout header_t hdr, inout ingress_metadata_t ig_md) {
    bit<32> end;

    apply {
        ig_md.dense_misaligned = hdr.dense.base[REGISTER_BITS - 1:0] != 0;
        end = hdr.dense.base + (bit<32>)hdr.hot.count;
        ig_md.dense_beyond = hdr.dense.base[31:SLOT_BITS + REGISTER_BITS] != 0 || end > ig_md.job.hot_keys;
        ig_md.dense_entry = ig_md.row_base + (acc_index_t)(hdr.dense.base >> REGISTER_BITS);
    }
}

/* The records: (round << 4) | outcome per (job, worker, copy, seq). A record
 * below round << 4 is from an older round: this packet is new (answered 0)
 * and its outcome is written; otherwise the record is answered: of this
 * round, the packet was seen (answer from the record, DUP); of a later round,
 * a stale copy (drop). 0 for new saves the verdict a comparison.
 * The outcome is decided by the round state before the record is written.
 * A WindowFull outcome is not written (write = false): it means "not now",
 * and the worker's resend is decided afresh once the copy is free. */
control SeenRecords(
    in record_index_t index,
    in bit<32> key,
    in bit<32> record,
    in bool enabled,
    in bool write,
    out bit<32> before) {

    Register<bit<32>, record_index_t>(RECORD_ENTRIES, 0) records;

    RegisterAction<bit<32>, record_index_t, bit<32>>(records) check_and_record = {
        void apply(inout bit<32> r, out bit<32> old) {
            if (r < key) {
                old = 0;
                r = record;
            } else {
                old = r;
            }
        }
    };

    RegisterAction<bit<32>, record_index_t, bit<32>>(records) peek_record = {
        void apply(inout bit<32> r, out bit<32> old) {
            if (r < key) {
                old = 0;
            } else {
                old = r;
            }
        }
    };

    action check() {
        before = check_and_record.execute(index);
    }

    action peek() {
        before = peek_record.execute(index);
    }

    action skip() {
        before = 0;
    }

    table op {
        key = {
            enabled : exact;
            write   : exact;
        }
        actions = {
            check;
            peek;
            skip;
        }
        const entries = {
            (true, true)   : check();
            (true, false)  : peek();
            (false, true)  : skip();
            (false, false) : skip();
        }
        size = 4;
    }

    apply {
        op.apply();
    }
}

#endif /* _ZEBRA_WORKER_CHECK_ */
