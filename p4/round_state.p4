/*
 * Rounds: which round each (job, copy) holds and whether it is open, each
 * worker's progress in it, the count of complete workers, and which packets
 * of each worker were added (coverage).
 *
 * A round ends when every worker is complete: its DONE packet (seq s) and all
 * s + 1 packets added. The packet that completes the last worker is mirrored
 * (mirror_cpu.p4) as a CLOSE to the recirculation port; the CLOSE pass marks
 * the copy draining and starts the readout. A round still open after
 * round_timeout is closed by the switch CPU with a FLUSH. A draining copy
 * takes no new round (WindowFull) until the CPU has every row and RELEASEs
 * it: a pipeline cannot read a copy out while a newer round writes it.
 */

#ifndef _ZEBRA_ROUND_STATE_
#define _ZEBRA_ROUND_STATE_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

enum bit<3> round_op_t {
    NONE    = 0,
    HOT     = 1,    /* admit, or peek if it may not open its round (a resend, before the first) */
    CLOSE   = 2,
    RELEASE = 3
}

/* One entry per (job, copy); see types.p4 for the encoding. */
control RoundState(
    in round_op_t op,
    in bool resend,
    in bool before_first,
    in bool far,
    in state_index_t index,
    in bit<32> round,
    out bit<32> before) {

    bit<32> draining;

    Register<round_state_t, state_index_t>(ROUND_STATE_ENTRIES, {0, ROUND_FREE}) rounds;

    /* A HOT packet: open its round if the copy is free and last held an
     * older round. The old hi tells the rest (admission_outcome below). */
    RegisterAction<round_state_t, state_index_t, bit<32>>(rounds) admit = {
        void apply(inout round_state_t s, out bit<32> old) {
            old = s.hi;
            if (s.lo < round) {
                s.lo = ROUND_BUSY;
                s.hi = round;
            }
        }
    };

    /* A HOT packet that may not open its round: a resend, or of a round
     * older than the first this switch opened (FirstOpened). Read only. */
    RegisterAction<round_state_t, state_index_t, bit<32>>(rounds) peek = {
        void apply(inout round_state_t s, out bit<32> old) {
            old = s.hi;
        }
    };

    /* CLOSE (every worker complete) or FLUSH (timeout): open -> draining. */
    RegisterAction<round_state_t, state_index_t, bit<32>>(rounds) close = {
        void apply(inout round_state_t s, out bit<32> old) {
            old = s.hi;
            if (s.hi == round) {
                s.hi = s.hi + ROUND_DRAINING;
            }
        }
    };

    /* RELEASE (the CPU has the round): draining -> free, remembering it. */
    RegisterAction<round_state_t, state_index_t, bit<32>>(rounds) release = {
        void apply(inout round_state_t s, out bit<32> old) {
            old = s.hi;
            if (s.hi == draining) {
                s.lo = round;
                s.hi = s.hi - (ROUND_DRAINING - ROUND_FREE);
            }
        }
    };

    action do_admit() {
        before = admit.execute(index);
    }

    action do_peek() {
        before = peek.execute(index);
    }

    action do_close() {
        before = close.execute(index);
    }

    action do_release() {
        before = release.execute(index);
    }

    action do_nothing() {
        before = 0;
    }

    /* A HOT packet that may not open its round, a resend or one of a round
     * before the first this switch opened (FirstOpened), only reads; one
     * far ahead of its job's newest round (NewestRound) is refused
     * (FarAhead) and touches nothing. */
    table dispatch {
        key = {
            op           : exact;
            resend       : ternary;
            before_first : ternary;
            far          : ternary;
        }
        actions = {
            do_admit;
            do_peek;
            do_close;
            do_release;
            do_nothing;
        }
        const entries = {
            (round_op_t.HOT, _, _, true)         : do_nothing();
            (round_op_t.HOT, false, false, _)    : do_admit();
            (round_op_t.HOT, _, _, _)            : do_peek();
            (round_op_t.CLOSE, _, _, _)          : do_close();
            (round_op_t.RELEASE, _, _, _)        : do_release();
        }
        const default_action = do_nothing;
        size = 8;
    }

    apply {
        draining = round | ROUND_DRAINING;
        dispatch.apply();
    }
}

/* What the copy's state before a HOT packet means for it (zebra-proto's
 * Switch::on_hot): a round older than the first this switch opened ->
 * Unopened; its round open -> added; the copy free and last holding an older
 * round -> the packet opened its round, added, unless it was a resend, which
 * opens nothing (Unopened: an earlier incarnation of the switch may have
 * held the round); an older round open or draining -> WindowFull; anything
 * else (its round closed, a newer round) -> Late.
 *
 * One subtraction and one ternary table: before - round, with rounds and
 * held rounds below 2^ROUND_BITS, is the flag bits + (held - round), so its
 * top four bits tell every case: open (no flag) 0 -> held == round, 1111 ->
 * older, 0000 -> newer; free (bit 30) 0011 -> older, 0100 -> not; draining
 * (bit 31) 0111 -> older, 1000 -> not. The subtraction is in place. The record
 * keeps (round << 4) | outcome. */
control AdmissionOutcome(
    inout bit<32> before,
    in bit<32> round,
    in bool before_first,
    in bool resend,
    out fallback_reason_t outcome,
    out bool write) {

    /* WindowFull is not written: it means "not now" (worker_check.p4). */
    action is(fallback_reason_t r, bool w) {
        outcome = r;
        write = w;
    }

    table decide {
        key = {
            before_first : exact;
            resend       : ternary;
            before       : ternary;
        }
        actions = {
            is;
        }
        const entries = {
            (true, _, _)                              : is(fallback_reason_t.UNOPENED, true);
            (false, _, 0)                             : is(fallback_reason_t.ADDED, true);
            (false, true, 0x30000000 &&& 0xF0000000)  : is(fallback_reason_t.UNOPENED, true);
            (false, false, 0x30000000 &&& 0xF0000000) : is(fallback_reason_t.ADDED, true);
            (false, _, 0xF0000000 &&& 0xF0000000)     : is(fallback_reason_t.WINDOW_FULL, false);
            (false, _, 0x70000000 &&& 0xF0000000)     : is(fallback_reason_t.WINDOW_FULL, false);
            (false, _, _)                             : is(fallback_reason_t.LATE, true);
        }
        size = 8;
    }

    apply {
        before = before - round;
        decide.apply();
    }
}

/* The first round this switch opened for each job (0: none yet), noted by
 * the job's first new (not resent) HOT packet that reaches the round state:
 * at a switch that has just started every copy is free, so that packet opens
 * its round. Registers start at zero, so a switch started again has none:
 * rounds before its first were an earlier incarnation's (Unopened). */
control FirstOpened(
    in job_index_t index,
    in bit<32> round,
    in bool resend,
    out bool before_first) {

    Register<bit<32>, job_index_t>(MAX_JOBS, 0) firsts;

    /* Whether the packet's round is before the job's first (none yet: no),
     * answered by the stateful ALU's two conditions (s == 0, round < s). */
    RegisterAction<bit<32>, job_index_t, bool>(firsts) note = {
        void apply(inout bit<32> s, out bool before) {
            before = s != 0 && round < s;
            if (s == 0) {
                s = round;
            }
        }
    };

    RegisterAction<bit<32>, job_index_t, bool>(firsts) read = {
        void apply(inout bit<32> s, out bool before) {
            before = s != 0 && round < s;
        }
    };

    apply {
        if (resend) {
            before_first = read.execute(index);
        } else {
            before_first = note.execute(index);
        }
    }
}

/* The newest round of each job (0: none yet), and whether a HOT packet's
 * round is more than max_round_ahead past it (zebra-proto's Switch::on_hot:
 * FarAhead, refused and not remembered, so one stray or forged round cannot
 * make every later round of the job late in its copy).
 *
 * far <=> newest != 0 && round > newest + max_round_ahead
 *     <=> newest - 1 < floor, where floor = round |-| (max_round_ahead + 1)
 * (newest - 1 wraps to the largest value for 0, which is never below floor;
 * a round of at most max_round_ahead + 1 has floor 0, never far): one
 * condition of the stateful ALU. The other, newest < round, moves the newest
 * round up to a packet's that is not far. Noted, as FirstOpened, by the new
 * (not resent) packets that reach the round state: the model notes only a
 * round it opens, so a packet the copy's older round turns away (WindowFull)
 * moves the newest round here and not there (docs/P4.md). Registers start at
 * zero: a switch started again checks nothing until its first round. */
control NewestRound(
    in job_index_t index,
    in bit<32> round,
    in bit<32> floor,
    in bool resend,
    out bool far) {

    Register<bit<32>, job_index_t>(MAX_JOBS, 0) newest;

    RegisterAction<bit<32>, job_index_t, bool>(newest) note = {
        void apply(inout bit<32> s, out bool ahead) {
            ahead = s - 1 < floor;
            if (s - 1 >= floor && s < round) {
                s = round;
            }
        }
    };

    RegisterAction<bit<32>, job_index_t, bool>(newest) read = {
        void apply(inout bit<32> s, out bool ahead) {
            ahead = s - 1 < floor;
        }
    };

    apply {
        if (resend) {
            far = read.execute(index);
        } else {
            far = note.execute(index);
        }
    }
}

/* Egress: each worker's progress in the round, (total << 16) | added, where a
 * DONE packet with sequence number s adds (s + 1) << 16 and every added packet
 * 1. Complete when both halves are equal; exactly one packet sees that. */
control WorkerProgress(
    in acc_op_t op,
    in state_index_t index,
    in bit<32> round,
    in bit<32> increment,
    out bit<32> progress) {

    Register<progress_t, state_index_t>(WORKER_STATE_ENTRIES, {0, 0}) progress_reg;

    RegisterAction<progress_t, state_index_t, bit<32>>(progress_reg) add = {
        void apply(inout progress_t p, out bit<32> after) {
            if (p.round == round) {
                p.progress = p.progress + increment;
            } else {
                p.round = round;
                p.progress = increment;
            }
            after = p.progress;
        }
    };

    RegisterAction<progress_t, state_index_t, bit<32>>(progress_reg) read = {
        void apply(inout progress_t p, out bit<32> now) {
            if (p.round == round) {
                now = p.progress;
            } else {
                now = 0;
            }
        }
    };

    action do_add() {
        progress = add.execute(index);
    }

    action do_read() {
        progress = read.execute(index);
    }

    action do_nothing() {
        progress = 0;
    }

    table dispatch {
        key = {
            op : exact;
        }
        actions = {
            do_add;
            do_read;
            do_nothing;
        }
        const entries = {
            acc_op_t.NONE : do_nothing();
            acc_op_t.ADD  : do_add();
            acc_op_t.READ : do_read();
        }
        size = 4;
    }

    apply {
        dispatch.apply();
    }
}

/* Egress: complete workers per (job, copy) and round. */
control Completion(
    in bool count_one,
    in state_index_t index,
    in bit<32> round,
    out bit<32> done) {

    Register<done_count_t, state_index_t>(ROUND_STATE_ENTRIES, {0, 0}) done_reg;

    RegisterAction<done_count_t, state_index_t, bit<32>>(done_reg) add_one = {
        void apply(inout done_count_t d, out bit<32> after) {
            if (d.round == round) {
                d.count = d.count + 1;
            } else {
                d.round = round;
                d.count = 1;
            }
            after = d.count;
        }
    };

    apply {
        done = 0;
        if (count_one) {
            done = add_one.execute(index);
        }
    }
}

/* Egress: coverage words, bit seq % 32 of word seq / 32 per (job, worker,
 * copy). Read by the CPU for the workers of a flushed round that were not
 * complete (a complete worker's coverage is all of 0 ..= its DONE seq). */
control Coverage(
    in bool enabled,
    in cover_index_t index,
    in bit<32> round,
    in bit<32> mask) {

    Register<cover_word_t, cover_index_t>(COVER_ENTRIES, {0, 0}) words;

    RegisterAction<cover_word_t, cover_index_t, bit<32>>(words) set_bit = {
        void apply(inout cover_word_t w) {
            if (w.round == round) {
                w.bits = w.bits | mask;
            } else {
                w.round = round;
                w.bits = mask;
            }
        }
    };

    apply {
        if (enabled) {
            set_bit.execute(index);
        }
    }
}

/* The bit of a sequence number in its coverage word: a shift by a packet
 * field, which an action cannot do, so a fixed table. */
control CoverBit(in bit<16> seq, out bit<32> mask) {
    action set_mask(bit<32> m) {
        mask = m;
    }

    table bit_of_seq {
        key = {
            seq[4:0] : exact;
        }
        actions = {
            set_mask;
        }
        const entries = {
            0  : set_mask(32w1 << 0);
            1  : set_mask(32w1 << 1);
            2  : set_mask(32w1 << 2);
            3  : set_mask(32w1 << 3);
            4  : set_mask(32w1 << 4);
            5  : set_mask(32w1 << 5);
            6  : set_mask(32w1 << 6);
            7  : set_mask(32w1 << 7);
            8  : set_mask(32w1 << 8);
            9  : set_mask(32w1 << 9);
            10 : set_mask(32w1 << 10);
            11 : set_mask(32w1 << 11);
            12 : set_mask(32w1 << 12);
            13 : set_mask(32w1 << 13);
            14 : set_mask(32w1 << 14);
            15 : set_mask(32w1 << 15);
            16 : set_mask(32w1 << 16);
            17 : set_mask(32w1 << 17);
            18 : set_mask(32w1 << 18);
            19 : set_mask(32w1 << 19);
            20 : set_mask(32w1 << 20);
            21 : set_mask(32w1 << 21);
            22 : set_mask(32w1 << 22);
            23 : set_mask(32w1 << 23);
            24 : set_mask(32w1 << 24);
            25 : set_mask(32w1 << 25);
            26 : set_mask(32w1 << 26);
            27 : set_mask(32w1 << 27);
            28 : set_mask(32w1 << 28);
            29 : set_mask(32w1 << 29);
            30 : set_mask(32w1 << 30);
            31 : set_mask(32w1 << 31);
        }
        size = 32;
    }

    apply {
        bit_of_seq.apply();
    }
}

#endif /* _ZEBRA_ROUND_STATE_ */
