/*
 * Who may add: the job and worker tables, the checks a HOT packet must pass
 * (in the order of zebra-proto's Switch::on_hot: UnknownJob, BadWorker, the
 * member check, BadFormat, SeqOverflow, OutOfRange; FarAhead is
 * round_state.p4's NewestRound), and the per-(worker, copy, seq)
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
        bit<8> servers,
        bit<16> max_update_len,
        bit<1> keyed,
        bit<32> far_bound) {
        ig_md.job_known = true;
        ig_md.job.index = index;
        ig_md.job.workers = workers;
        ig_md.job.rank_bias = 16w0x8000 - hot_keys[15:0];
        ig_md.job.dense_bias = 16w0x7FFF - hot_keys[15:0];
        ig_md.job.max_udp_len = max_udp_len;
        ig_md.job.max_seqs = max_seqs;
        ig_md.job.fixed = fixed;
        ig_md.job.copy_mask = copy_mask;
        ig_md.job.region_base = region_base;
        ig_md.job.readout_rows = readout_rows;
        ig_md.job.lns_profile = lns_profile;
        ig_md.job.lns_saturate = lns_saturate;
        ig_md.job.servers = servers;
        ig_md.job.max_update_len = max_update_len;
        ig_md.job.keyed = keyed;
        ig_md.far_floor = ig_md.round |-| far_bound;
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
        ig_md.rec_index = rec_base;
        ig_md.cover_index = cover_base;
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
            ig_md.rs_index = ((state_index_t)ig_md.job.index << COPY_BITS) | (state_index_t)ig_md.copy;
            copy_offsets.apply();
            workers.apply();
            ig_md.ws_index = (ig_md.rs_index << WORKER_BITS) | (state_index_t)hdr.hot.worker[WORKER_BITS - 1:0];
        }
    }
}

/* Only a job's members take part (zebra-proto's switch/members.rs,
 * docs/SECURITY.md): each worker slot (job, worker) is pinned to one source
 * address, IPv4 and UDP port, and a worker that has shown the job's token
 * once must always show it. Applied to HOT and HOT_DENSE packets (FAST and
 * CHECK passes).
 *
 *   pinned    (job index, worker): the slot has a pinned address. A miss is
 *             a worker the switch has not pinned yet (UNPINNED): the packet
 *             is dropped with a DIGEST_WORKER, the controller pins its
 *             address (writes both tables) and the worker's resend is checked
 *             against it. The model pins at the first packet and handles it;
 *             here the first packet costs the worker a resend.
 *   members   (job index, worker, IPv4 source, UDP source port): a hit is a
 *             packet from the pinned address. The address is key, not action
 *             data, so that the match is the comparison and both lookups sit
 *             in one stage beside each other.
 *   tokens    (job id, token): a hit is a packet showing the job's token.
 *   shown     one bit per (job, worker): the worker has shown the job's
 *             token, set by a packet from its pinned address showing it.
 *   decide    Members::check's order: no pin and a wrong token in a job
 *             with a key -> TOKEN; no pin -> UNPINNED; another address ->
 *             ADDRESS; a wrong token from the pinned address once the right
 *             one was shown (or in a job with a key) -> TOKEN; else OK.
 *
 * ADDRESS and TOKEN are refusals: nothing changes, nothing is answered, the
 * packet is counted (REFUSED_ADDRESS, REFUSED_TOKEN). The check is for a
 * worker of the job only: UnknownJob and BadWorker come first (zebra.p4).
 * Nothing is written for a datagram not addressed to the switch. */
control MemberCheck(in header_t hdr, inout ingress_metadata_t ig_md, in bool for_switch) {

    Register<bit<1>, member_index_t>(MEMBER_ENTRIES, 0) shown;

    RegisterAction<bit<1>, member_index_t, bit<1>>(shown) show = {
        void apply(inout bit<1> s, out bit<1> before) {
            before = s;
            s = 1;
        }
    };

    RegisterAction<bit<1>, member_index_t, bit<1>>(shown) look = {
        void apply(inout bit<1> s, out bit<1> before) {
            before = s;
        }
    };

    bool pinned;
    bool at_pin;
    bool right;
    bit<1> shown_before;
    member_index_t index;

    action slot_pinned() {
        pinned = true;
    }

    action slot_free() {
        pinned = false;
    }

    /* One entry per pinned worker, written by the controller from the
     * worker's first DIGEST_WORKER and kept while the job runs. */
    table pins {
        key = {
            ig_md.job.index : exact;
            hdr.hot.worker  : exact;
        }
        actions = {
            slot_pinned;
            @defaultonly slot_free;
        }
        const default_action = slot_free;
        size = MEMBER_ENTRIES;
    }

    action from_pin() {
        at_pin = true;
    }

    action elsewhere() {
        at_pin = false;
    }

    /* The same slots with their pinned address. */
    table members {
        key = {
            ig_md.job.index   : exact;
            hdr.hot.worker    : exact;
            hdr.ipv4.src_addr : exact;
            hdr.udp.src_port  : exact;
        }
        actions = {
            from_pin;
            @defaultonly elsewhere;
        }
        const default_action = elsewhere;
        size = MEMBER_ENTRIES;
    }

    action token_right() {
        right = true;
    }

    action token_wrong() {
        right = false;
    }

    /* (job, the job's token): a hit is a packet showing the right token. The
     * token is key, not action data, for the same reason. */
    table tokens {
        key = {
            ig_md.job_id  : exact;
            hdr.hot.token : exact;
        }
        actions = {
            token_right;
            @defaultonly token_wrong;
        }
        const default_action = token_wrong;
        size = MAX_JOBS;
    }

    action member_is(member_t m) {
        ig_md.member = m;
    }

    table decide {
        key = {
            pinned          : exact;
            at_pin          : ternary;
            right           : ternary;
            ig_md.job.keyed : ternary;
            shown_before    : ternary;
        }
        actions = {
            member_is;
        }
        const entries = {
            (false, _, false, 1, _)    : member_is(member_t.TOKEN);
            (false, _, _, _, _)        : member_is(member_t.UNPINNED);
            (true, false, _, _, _)     : member_is(member_t.ADDRESS);
            (true, true, true, _, _)   : member_is(member_t.OK);
            (true, true, false, 1, _)  : member_is(member_t.TOKEN);
            (true, true, false, _, 1)  : member_is(member_t.TOKEN);
        }
        const default_action = member_is(member_t.OK);
        size = 8;
    }

    apply {
        shown_before = 0;
        tokens.apply();
        index = ig_md.job.index ++ hdr.hot.worker[WORKER_BITS - 1:0];
        pins.apply();
        members.apply();
        if (at_pin && for_switch) {
            if (right) {
                shown_before = show.execute(index);
            } else {
                shown_before = look.execute(index);
            }
        }
        decide.apply();
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
    Hash<bit<8>>(HashAlgorithm_t.IDENTITY) routed_flags;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) routed_present;
    Hash<bit<8>>(HashAlgorithm_t.IDENTITY) position_flags;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) position_present;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) values_present;

    apply {
        if (by_position) {
            ig_md.out_flags = position_flags.get({
                hdr.pairs[7].index[15:15], hdr.pairs[6].index[15:15], hdr.pairs[5].index[15:15], hdr.pairs[4].index[15:15], hdr.pairs[3].index[15:15], hdr.pairs[2].index[15:15], hdr.pairs[1].index[15:15], hdr.pairs[0].index[15:15]});
            ig_md.routed_mask = position_present.get({
                24w0, (bit<1>)hdr.pairs[7].isValid(), (bit<1>)hdr.pairs[6].isValid(), (bit<1>)hdr.pairs[5].isValid(), (bit<1>)hdr.pairs[4].isValid(), (bit<1>)hdr.pairs[3].isValid(), (bit<1>)hdr.pairs[2].isValid(), (bit<1>)hdr.pairs[1].isValid(), (bit<1>)hdr.pairs[0].isValid()});
        } else {
            ig_md.out_flags = routed_flags.get({
                hdr.slot_index[7].index[15:15], hdr.slot_index[6].index[15:15], hdr.slot_index[5].index[15:15], hdr.slot_index[4].index[15:15], hdr.slot_index[3].index[15:15], hdr.slot_index[2].index[15:15], hdr.slot_index[1].index[15:15], hdr.slot_index[0].index[15:15]});
            ig_md.routed_mask = routed_present.get({
                24w0, (bit<1>)hdr.slot_index[7].isValid(), (bit<1>)hdr.slot_index[6].isValid(), (bit<1>)hdr.slot_index[5].isValid(), (bit<1>)hdr.slot_index[4].isValid(), (bit<1>)hdr.slot_index[3].isValid(), (bit<1>)hdr.slot_index[2].isValid(), (bit<1>)hdr.slot_index[1].isValid(), (bit<1>)hdr.slot_index[0].isValid()});
            ig_md.value_mask = values_present.get({
                8w0, (bit<1>)hdr.slot_value[7].isValid(), (bit<1>)hdr.slot_value[6].isValid(), (bit<1>)hdr.slot_value[5].isValid(), (bit<1>)hdr.slot_value[4].isValid(), (bit<1>)hdr.slot_value[3].isValid(), (bit<1>)hdr.slot_value[2].isValid(), (bit<1>)hdr.slot_value[1].isValid(), (bit<1>)hdr.slot_value[0].isValid()});
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
            ig_md.dense_end        : ternary;
            hdr.dense.base         : ternary;
            ig_md.dense            : ternary;
            ig_md.out_flags        : ternary;
            ig_md.routed_mask      : ternary;
        }
        actions = {
            reason_is;
        }
        const entries = {
            (false, HOT_FLAG_RETX &&& HOT_FLAG_RETX, _, _, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.UNOPENED);
            (false, _, _, _, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.UNKNOWN_JOB);
            (true, _, false, _, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_WORKER);
            (true, HOT_FLAG_FIXED &&& HOT_FLAG_FIXED, _, 0, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, 0 &&& HOT_FLAG_FIXED, _, 1, _, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, true, _, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, true, _, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 28 &&& 32w1 << 28, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 29 &&& 32w1 << 29, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 30 &&& 32w1 << 30, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, 32w1 << 31 &&& 32w1 << 31, _, _, _, _, _, _, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, _, true, _, _, _, _, true, _, _) : reason_is(fallback_reason_t.BAD_FORMAT);
            (true, _, _, _, _, _, _, _, true, _, _, _, _, _, _) : reason_is(fallback_reason_t.SEQ_OVERFLOW);
            (true, _, _, _, _, _, _, _, _, true, _, _, _, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 15 &&& 32w1 << 15, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 16 &&& 32w1 << 16, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 17 &&& 32w1 << 17, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 18 &&& 32w1 << 18, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 19 &&& 32w1 << 19, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 20 &&& 32w1 << 20, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 21 &&& 32w1 << 21, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 22 &&& 32w1 << 22, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 23 &&& 32w1 << 23, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 24 &&& 32w1 << 24, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 25 &&& 32w1 << 25, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 26 &&& 32w1 << 26, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 27 &&& 32w1 << 27, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 28 &&& 32w1 << 28, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 29 &&& 32w1 << 29, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 30 &&& 32w1 << 30, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, 32w1 << 31 &&& 32w1 << 31, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, 0x8000 &&& 0x8000, _, true, _, _) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 0 &&& 8w1 << 0, 32w1 << 0 &&& 32w1 << 0) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 1 &&& 8w1 << 1, 32w1 << 1 &&& 32w1 << 1) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 2 &&& 8w1 << 2, 32w1 << 2 &&& 32w1 << 2) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 3 &&& 8w1 << 3, 32w1 << 3 &&& 32w1 << 3) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 4 &&& 8w1 << 4, 32w1 << 4 &&& 32w1 << 4) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 5 &&& 8w1 << 5, 32w1 << 5 &&& 32w1 << 5) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 6 &&& 8w1 << 6, 32w1 << 6 &&& 32w1 << 6) : reason_is(fallback_reason_t.OUT_OF_RANGE);
            (true, _, _, _, _, _, _, _, _, _, _, _, false, 8w1 << 7 &&& 8w1 << 7, 32w1 << 7 &&& 32w1 << 7) : reason_is(fallback_reason_t.OUT_OF_RANGE);
        }
        const default_action = reason_is(fallback_reason_t.ADDED);
        size = 80;
    }

    action length_ok() {
        ig_md.malformed = false;
    }

    action length_wrong() {
        ig_md.malformed = true;
    }

    /* The UDP length a count of pairs (or dense values) implies: any other is
     * malformed. */
    table lengths {
        key = {
            hdr.hot.count  : exact;
            ig_md.dense    : exact;
            hdr.udp.length : exact;
        }
        actions = {
            length_ok;
            @defaultonly length_wrong;
        }
        const entries = {
            (0, false, 8 + HOT_HEADER_LEN + 0) : length_ok();
            (1, false, 8 + HOT_HEADER_LEN + 8) : length_ok();
            (2, false, 8 + HOT_HEADER_LEN + 16) : length_ok();
            (3, false, 8 + HOT_HEADER_LEN + 24) : length_ok();
            (4, false, 8 + HOT_HEADER_LEN + 32) : length_ok();
            (5, false, 8 + HOT_HEADER_LEN + 40) : length_ok();
            (6, false, 8 + HOT_HEADER_LEN + 48) : length_ok();
            (7, false, 8 + HOT_HEADER_LEN + 56) : length_ok();
            (8, false, 8 + HOT_HEADER_LEN + 64) : length_ok();
            (9, false, 8 + HOT_HEADER_LEN + 72) : length_ok();
            (10, false, 8 + HOT_HEADER_LEN + 80) : length_ok();
            (11, false, 8 + HOT_HEADER_LEN + 88) : length_ok();
            (12, false, 8 + HOT_HEADER_LEN + 96) : length_ok();
            (13, false, 8 + HOT_HEADER_LEN + 104) : length_ok();
            (14, false, 8 + HOT_HEADER_LEN + 112) : length_ok();
            (15, false, 8 + HOT_HEADER_LEN + 120) : length_ok();
            (16, false, 8 + HOT_HEADER_LEN + 128) : length_ok();
            (17, false, 8 + HOT_HEADER_LEN + 136) : length_ok();
            (18, false, 8 + HOT_HEADER_LEN + 144) : length_ok();
            (19, false, 8 + HOT_HEADER_LEN + 152) : length_ok();
            (20, false, 8 + HOT_HEADER_LEN + 160) : length_ok();
            (21, false, 8 + HOT_HEADER_LEN + 168) : length_ok();
            (22, false, 8 + HOT_HEADER_LEN + 176) : length_ok();
            (23, false, 8 + HOT_HEADER_LEN + 184) : length_ok();
            (24, false, 8 + HOT_HEADER_LEN + 192) : length_ok();
            (25, false, 8 + HOT_HEADER_LEN + 200) : length_ok();
            (26, false, 8 + HOT_HEADER_LEN + 208) : length_ok();
            (27, false, 8 + HOT_HEADER_LEN + 216) : length_ok();
            (28, false, 8 + HOT_HEADER_LEN + 224) : length_ok();
            (29, false, 8 + HOT_HEADER_LEN + 232) : length_ok();
            (30, false, 8 + HOT_HEADER_LEN + 240) : length_ok();
            (31, false, 8 + HOT_HEADER_LEN + 248) : length_ok();
            (32, false, 8 + HOT_HEADER_LEN + 256) : length_ok();
            (33, false, 8 + HOT_HEADER_LEN + 264) : length_ok();
            (34, false, 8 + HOT_HEADER_LEN + 272) : length_ok();
            (35, false, 8 + HOT_HEADER_LEN + 280) : length_ok();
            (36, false, 8 + HOT_HEADER_LEN + 288) : length_ok();
            (37, false, 8 + HOT_HEADER_LEN + 296) : length_ok();
            (38, false, 8 + HOT_HEADER_LEN + 304) : length_ok();
            (39, false, 8 + HOT_HEADER_LEN + 312) : length_ok();
            (40, false, 8 + HOT_HEADER_LEN + 320) : length_ok();
            (41, false, 8 + HOT_HEADER_LEN + 328) : length_ok();
            (42, false, 8 + HOT_HEADER_LEN + 336) : length_ok();
            (43, false, 8 + HOT_HEADER_LEN + 344) : length_ok();
            (44, false, 8 + HOT_HEADER_LEN + 352) : length_ok();
            (45, false, 8 + HOT_HEADER_LEN + 360) : length_ok();
            (46, false, 8 + HOT_HEADER_LEN + 368) : length_ok();
            (47, false, 8 + HOT_HEADER_LEN + 376) : length_ok();
            (48, false, 8 + HOT_HEADER_LEN + 384) : length_ok();
            (49, false, 8 + HOT_HEADER_LEN + 392) : length_ok();
            (50, false, 8 + HOT_HEADER_LEN + 400) : length_ok();
            (51, false, 8 + HOT_HEADER_LEN + 408) : length_ok();
            (52, false, 8 + HOT_HEADER_LEN + 416) : length_ok();
            (53, false, 8 + HOT_HEADER_LEN + 424) : length_ok();
            (54, false, 8 + HOT_HEADER_LEN + 432) : length_ok();
            (55, false, 8 + HOT_HEADER_LEN + 440) : length_ok();
            (56, false, 8 + HOT_HEADER_LEN + 448) : length_ok();
            (57, false, 8 + HOT_HEADER_LEN + 456) : length_ok();
            (58, false, 8 + HOT_HEADER_LEN + 464) : length_ok();
            (59, false, 8 + HOT_HEADER_LEN + 472) : length_ok();
            (60, false, 8 + HOT_HEADER_LEN + 480) : length_ok();
            (61, false, 8 + HOT_HEADER_LEN + 488) : length_ok();
            (62, false, 8 + HOT_HEADER_LEN + 496) : length_ok();
            (63, false, 8 + HOT_HEADER_LEN + 504) : length_ok();
            (64, false, 8 + HOT_HEADER_LEN + 512) : length_ok();
            (0, true, 8 + HOT_DENSE_HEADER_LEN + 0) : length_ok();
            (1, true, 8 + HOT_DENSE_HEADER_LEN + 4) : length_ok();
            (2, true, 8 + HOT_DENSE_HEADER_LEN + 8) : length_ok();
            (3, true, 8 + HOT_DENSE_HEADER_LEN + 12) : length_ok();
            (4, true, 8 + HOT_DENSE_HEADER_LEN + 16) : length_ok();
            (5, true, 8 + HOT_DENSE_HEADER_LEN + 20) : length_ok();
            (6, true, 8 + HOT_DENSE_HEADER_LEN + 24) : length_ok();
            (7, true, 8 + HOT_DENSE_HEADER_LEN + 28) : length_ok();
            (8, true, 8 + HOT_DENSE_HEADER_LEN + 32) : length_ok();
            (9, true, 8 + HOT_DENSE_HEADER_LEN + 36) : length_ok();
            (10, true, 8 + HOT_DENSE_HEADER_LEN + 40) : length_ok();
            (11, true, 8 + HOT_DENSE_HEADER_LEN + 44) : length_ok();
            (12, true, 8 + HOT_DENSE_HEADER_LEN + 48) : length_ok();
            (13, true, 8 + HOT_DENSE_HEADER_LEN + 52) : length_ok();
            (14, true, 8 + HOT_DENSE_HEADER_LEN + 56) : length_ok();
            (15, true, 8 + HOT_DENSE_HEADER_LEN + 60) : length_ok();
            (16, true, 8 + HOT_DENSE_HEADER_LEN + 64) : length_ok();
            (17, true, 8 + HOT_DENSE_HEADER_LEN + 68) : length_ok();
            (18, true, 8 + HOT_DENSE_HEADER_LEN + 72) : length_ok();
            (19, true, 8 + HOT_DENSE_HEADER_LEN + 76) : length_ok();
            (20, true, 8 + HOT_DENSE_HEADER_LEN + 80) : length_ok();
            (21, true, 8 + HOT_DENSE_HEADER_LEN + 84) : length_ok();
            (22, true, 8 + HOT_DENSE_HEADER_LEN + 88) : length_ok();
            (23, true, 8 + HOT_DENSE_HEADER_LEN + 92) : length_ok();
            (24, true, 8 + HOT_DENSE_HEADER_LEN + 96) : length_ok();
            (25, true, 8 + HOT_DENSE_HEADER_LEN + 100) : length_ok();
            (26, true, 8 + HOT_DENSE_HEADER_LEN + 104) : length_ok();
            (27, true, 8 + HOT_DENSE_HEADER_LEN + 108) : length_ok();
            (28, true, 8 + HOT_DENSE_HEADER_LEN + 112) : length_ok();
            (29, true, 8 + HOT_DENSE_HEADER_LEN + 116) : length_ok();
            (30, true, 8 + HOT_DENSE_HEADER_LEN + 120) : length_ok();
            (31, true, 8 + HOT_DENSE_HEADER_LEN + 124) : length_ok();
            (32, true, 8 + HOT_DENSE_HEADER_LEN + 128) : length_ok();
            (33, true, 8 + HOT_DENSE_HEADER_LEN + 132) : length_ok();
            (34, true, 8 + HOT_DENSE_HEADER_LEN + 136) : length_ok();
            (35, true, 8 + HOT_DENSE_HEADER_LEN + 140) : length_ok();
            (36, true, 8 + HOT_DENSE_HEADER_LEN + 144) : length_ok();
            (37, true, 8 + HOT_DENSE_HEADER_LEN + 148) : length_ok();
            (38, true, 8 + HOT_DENSE_HEADER_LEN + 152) : length_ok();
            (39, true, 8 + HOT_DENSE_HEADER_LEN + 156) : length_ok();
            (40, true, 8 + HOT_DENSE_HEADER_LEN + 160) : length_ok();
            (41, true, 8 + HOT_DENSE_HEADER_LEN + 164) : length_ok();
            (42, true, 8 + HOT_DENSE_HEADER_LEN + 168) : length_ok();
            (43, true, 8 + HOT_DENSE_HEADER_LEN + 172) : length_ok();
            (44, true, 8 + HOT_DENSE_HEADER_LEN + 176) : length_ok();
            (45, true, 8 + HOT_DENSE_HEADER_LEN + 180) : length_ok();
            (46, true, 8 + HOT_DENSE_HEADER_LEN + 184) : length_ok();
            (47, true, 8 + HOT_DENSE_HEADER_LEN + 188) : length_ok();
            (48, true, 8 + HOT_DENSE_HEADER_LEN + 192) : length_ok();
            (49, true, 8 + HOT_DENSE_HEADER_LEN + 196) : length_ok();
            (50, true, 8 + HOT_DENSE_HEADER_LEN + 200) : length_ok();
            (51, true, 8 + HOT_DENSE_HEADER_LEN + 204) : length_ok();
            (52, true, 8 + HOT_DENSE_HEADER_LEN + 208) : length_ok();
            (53, true, 8 + HOT_DENSE_HEADER_LEN + 212) : length_ok();
            (54, true, 8 + HOT_DENSE_HEADER_LEN + 216) : length_ok();
            (55, true, 8 + HOT_DENSE_HEADER_LEN + 220) : length_ok();
            (56, true, 8 + HOT_DENSE_HEADER_LEN + 224) : length_ok();
            (57, true, 8 + HOT_DENSE_HEADER_LEN + 228) : length_ok();
            (58, true, 8 + HOT_DENSE_HEADER_LEN + 232) : length_ok();
            (59, true, 8 + HOT_DENSE_HEADER_LEN + 236) : length_ok();
            (60, true, 8 + HOT_DENSE_HEADER_LEN + 240) : length_ok();
            (61, true, 8 + HOT_DENSE_HEADER_LEN + 244) : length_ok();
            (62, true, 8 + HOT_DENSE_HEADER_LEN + 248) : length_ok();
            (63, true, 8 + HOT_DENSE_HEADER_LEN + 252) : length_ok();
            (64, true, 8 + HOT_DENSE_HEADER_LEN + 256) : length_ok();
        }
        const default_action = length_wrong;
        size = 2 * (MAX_PAIRS_PER_PACKET + 1);
    }

    apply {
        lengths.apply();
        if (hdr.hot.round == 0) {
            ig_md.malformed = true;
        }
        ig_md.too_long = hdr.udp.length > ig_md.job.max_udp_len;
        ig_md.seq_over = hdr.hot.seq >= ig_md.job.max_seqs;
        reasons.apply();
    }
}

/* A dense block must start at a multiple of R (every worker's does:
 * dense_values_per_packet is R for the packet sizes the controller accepts
 * with dense ranks) and end within the job's hot keys. */
control DenseCheck(inout header_t hdr, inout ingress_metadata_t ig_md, out acc_index_t entry) {
    apply {
        ig_md.dense_misaligned = hdr.dense.base[REGISTER_BITS - 1:0] != 0;
        ig_md.dense_end = hdr.dense.base[15:0] + (bit<16>)hdr.hot.count;
        ig_md.dense_end = ig_md.dense_end + ig_md.job.dense_bias;
        entry = ig_md.row_base + (acc_index_t)(hdr.dense.base[15:0] >> REGISTER_BITS);
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
    in fallback_reason_t outcome,
    in bool enabled,
    in bool write,
    out bit<32> before) {

    Register<bit<32>, record_index_t>(RECORD_ENTRIES, 0) records;

    RegisterAction<bit<32>, record_index_t, bit<32>>(records) check_and_record = {
        void apply(inout bit<32> r, out bit<32> old) {
            if (r < key) {
                old = 0;
                r = key | (bit<32>)(bit<8>)outcome;
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
