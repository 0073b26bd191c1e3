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
 * packets) its worker's records. UPDATE and UPDATE_ACK use the job's workers,
 * servers and longest update (replicate.p4). */
control JobCheck(
    inout header_t hdr,
    inout ingress_metadata_t ig_md,
    in bit<16> job_id,
    in bool with_worker) {

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
        ig_md.job.rank_bias = 32w0x80000000 - hot_keys;
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
            if (with_worker) {
                workers.apply();
                ig_md.ws_index = (ig_md.rs_index << WORKER_BITS) | (state_index_t)hdr.hot.worker[WORKER_BITS - 1:0];
            }
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

/* Out-of-range ranks: bit 31 of every biased rank (accumulate.p4), gathered
 * into one word by an identity hash, masked by the pairs that are there. */
control RangeCheck(in header_t hdr, inout ingress_metadata_t ig_md, in bool by_position) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) routed_flags;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) routed_present;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) position_flags;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) position_present;

    bit<32> flags;
    bit<32> present;

    apply {
        if (by_position) {
            flags = position_flags.get({
                11w0,
                hdr.pairs[20].index[31:31], hdr.pairs[19].index[31:31],
                hdr.pairs[18].index[31:31], hdr.pairs[17].index[31:31], hdr.pairs[16].index[31:31],
                hdr.pairs[15].index[31:31], hdr.pairs[14].index[31:31], hdr.pairs[13].index[31:31],
                hdr.pairs[12].index[31:31], hdr.pairs[11].index[31:31], hdr.pairs[10].index[31:31],
                hdr.pairs[9].index[31:31],  hdr.pairs[8].index[31:31],  hdr.pairs[7].index[31:31],
                hdr.pairs[6].index[31:31],  hdr.pairs[5].index[31:31],  hdr.pairs[4].index[31:31],
                hdr.pairs[3].index[31:31],  hdr.pairs[2].index[31:31],  hdr.pairs[1].index[31:31],
                hdr.pairs[0].index[31:31]});
            present = position_present.get({
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
            flags = routed_flags.get({
                16w0, hdr.slot_index[15].index[31:31], hdr.slot_index[14].index[31:31], hdr.slot_index[13].index[31:31],
                hdr.slot_index[12].index[31:31], hdr.slot_index[11].index[31:31], hdr.slot_index[10].index[31:31],
                hdr.slot_index[9].index[31:31], hdr.slot_index[8].index[31:31], hdr.slot_index[7].index[31:31],
                hdr.slot_index[6].index[31:31], hdr.slot_index[5].index[31:31], hdr.slot_index[4].index[31:31],
                hdr.slot_index[3].index[31:31], hdr.slot_index[2].index[31:31], hdr.slot_index[1].index[31:31],
                hdr.slot_index[0].index[31:31]});
            present = routed_present.get({
                16w0, (bit<1>)hdr.slot_index[15].isValid(), (bit<1>)hdr.slot_index[14].isValid(), (bit<1>)hdr.slot_index[13].isValid(),
                (bit<1>)hdr.slot_index[12].isValid(), (bit<1>)hdr.slot_index[11].isValid(), (bit<1>)hdr.slot_index[10].isValid(),
                (bit<1>)hdr.slot_index[9].isValid(), (bit<1>)hdr.slot_index[8].isValid(), (bit<1>)hdr.slot_index[7].isValid(),
                (bit<1>)hdr.slot_index[6].isValid(), (bit<1>)hdr.slot_index[5].isValid(), (bit<1>)hdr.slot_index[4].isValid(),
                (bit<1>)hdr.slot_index[3].isValid(), (bit<1>)hdr.slot_index[2].isValid(), (bit<1>)hdr.slot_index[1].isValid(),
                (bit<1>)hdr.slot_index[0].isValid()});
        }
        ig_md.routed_mask = present;
        if ((flags & present) != 0 || ig_md.rank_too_big) {
            ig_md.out_of_range = 1;
        } else {
            ig_md.out_of_range = 0;
        }
    }
}

/* The reason a HOT packet cannot be added before any state is read, in the
 * model's order; ADDED if none. Malformed datagrams (length other than the
 * header implies, round 0) are dropped unanswered, as zebra-proto drops what
 * its parser refuses. */
control Validate(in header_t hdr, inout ingress_metadata_t ig_md) {
    bit<16> implied_len;

    apply {
        if (ig_md.dense) {
            implied_len = ((bit<16>)hdr.hot.count << 2) + 8 + HOT_DENSE_HEADER_LEN;
        } else {
            implied_len = ((bit<16>)hdr.hot.count << 3) + 8 + HOT_HEADER_LEN;
        }
        ig_md.malformed = hdr.udp.length != implied_len || hdr.hot.round == 0;

        if (!ig_md.job_known && (hdr.hot.flags & HOT_FLAG_RETX) != 0) {
            /* A switch started again that has not admitted the job yet: an
             * earlier incarnation may have added this resend. */
            ig_md.reason = fallback_reason_t.UNOPENED;
        } else if (!ig_md.job_known) {
            ig_md.reason = fallback_reason_t.UNKNOWN_JOB;
        } else if (!ig_md.worker_known) {
            ig_md.reason = fallback_reason_t.BAD_WORKER;
        } else if (((hdr.hot.flags & HOT_FLAG_FIXED) != 0) != (ig_md.job.fixed == 1)
                   || hdr.udp.length > ig_md.job.max_udp_len
                   || ig_md.too_many
                   || hdr.hot.round[31:ROUND_BITS] != 0
                   || ig_md.dense_misaligned) {
            ig_md.reason = fallback_reason_t.BAD_FORMAT;
        } else if (hdr.hot.seq >= ig_md.job.max_seqs) {
            ig_md.reason = fallback_reason_t.SEQ_OVERFLOW;
        } else if (ig_md.out_of_range == 1) {
            ig_md.reason = fallback_reason_t.OUT_OF_RANGE;
        } else {
            ig_md.reason = fallback_reason_t.ADDED;
        }
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
        if (hdr.dense.base[31:SLOT_BITS + REGISTER_BITS] != 0 || end > ig_md.job.hot_keys) {
            ig_md.out_of_range = 1;
        } else {
            ig_md.out_of_range = 0;
        }
        ig_md.dense_entry = ig_md.row_base + (acc_index_t)(hdr.dense.base >> REGISTER_BITS);
    }
}

/* The records: (round << 4) | outcome per (job, worker, copy, seq). A record
 * below round << 4 is from an older round: this packet is new and its
 * outcome is written; a record of this round means the packet was seen
 * (answer from the record, DUP); a later round means a stale copy (drop).
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
            old = r;
            if (r < key) {
                r = record;
            }
        }
    };

    RegisterAction<bit<32>, record_index_t, bit<32>>(records) peek_record = {
        void apply(inout bit<32> r, out bit<32> old) {
            old = r;
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
