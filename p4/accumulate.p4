/*
 * The accumulators: REGISTERS register arrays of (round tag, i32 sum) entries,
 * hot rank r in register r mod R, slot r div R (the heat layout), entry
 * copy * slots + region base + slot.
 *
 * Every register does exactly one RegisterAction per pass (add, read, or
 * nothing), chosen by a fixed table on the pass (Accumulator.dispatch), as
 * SwitchML does. Sums are 32-bit fixed point with the job's scale, added
 * with the stateful ALU's saturating |+|; in the ZEBRA_LNS build the values
 * arrive as f32 and lns/lns.p4 turns each into the job's fixed point first.
 * A per-entry packet counter counts the pairs each slot received (the switch's
 * side of online hot-key ranking; the controller reads it).
 */

#ifndef _ZEBRA_ACCUMULATE_
#define _ZEBRA_ACCUMULATE_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

const int<32> I32_MIN = (int<32>)32w0x80000000;

control Accumulator(
    in acc_op_t op,
    in bool has_value,
    in bool same,
    in acc_index_t index,
    in acc_index_t entry,
    in value_t value,
    in bit<32> round,
    inout value_t readout) {

    Register<acc_entry_t, acc_index_t>(REGISTER_ENTRIES, {0, 0}) sums;
    Counter<bit<32>, acc_index_t>(REGISTER_ENTRIES, CounterType_t.PACKETS) hits;

    /* An entry tagged with another round is overwritten: no clearing pass. */
    RegisterAction<acc_entry_t, acc_index_t, value_t>(sums) add_value = {
        void apply(inout acc_entry_t e) {
            if (e.round == round) {
                e.sum = e.sum |+| (int<32>)value;
            } else {
                e.round = round;
                e.sum = (int<32>)value;
            }
        }
    };

    RegisterAction<acc_entry_t, acc_index_t, value_t>(sums) read_value = {
        void apply(inout acc_entry_t e, out value_t rv) {
            if (e.round != round) {
                rv = SLOT_UNTOUCHED;
            } else if (e.sum == I32_MIN) {
                rv = SLOT_UNTOUCHED + 1;
            } else {
                rv = (value_t)e.sum;
            }
        }
    };

    /* A routed pair: its own entry. */
    action add() {
        add_value.execute(index);
        hits.count(index);
    }

    /* A dense block: every register adds at the block's entry. */
    action add_at_entry() {
        add_value.execute(entry);
        hits.count(entry);
    }

    /* A READOUT row: every register reads the row's entry. */
    action read() {
        readout = read_value.execute(entry);
    }

    table dispatch {
        key = {
            op        : exact;
            has_value : exact;
            same      : exact;
        }
        actions = {
            add;
            add_at_entry;
            read;
            @defaultonly NoAction;
        }
        const entries = {
            (acc_op_t.ADD, true, false)  : add();
            (acc_op_t.ADD, true, true)   : add_at_entry();
            (acc_op_t.READ, true, true)  : read();
            (acc_op_t.READ, false, true) : read();
        }
        const default_action = NoAction;
        size = 4;
    }

    apply {
        dispatch.apply();
    }
}

/* Routed pairs (parsers.p4): rank + rank_bias has bit 15 set iff the rank is
 * not below the job's hot keys (out of range); worker_check.p4 gathers those
 * bits. Ranks are below 2^15 (the parser checked), so nothing overflows. */
control BiasRoutedRanks(inout header_t hdr, in bit<16> bias) {
    apply {
        hdr.slot_index[0].index = hdr.slot_index[0].index + bias;
        hdr.slot_index[1].index = hdr.slot_index[1].index + bias;
        hdr.slot_index[2].index = hdr.slot_index[2].index + bias;
        hdr.slot_index[3].index = hdr.slot_index[3].index + bias;
        hdr.slot_index[4].index = hdr.slot_index[4].index + bias;
        hdr.slot_index[5].index = hdr.slot_index[5].index + bias;
        hdr.slot_index[6].index = hdr.slot_index[6].index + bias;
        hdr.slot_index[7].index = hdr.slot_index[7].index + bias;
    }
}

/* ... and back: the rank, then its register entry:
 * ((rank + bias - bias) >> REGISTER_BITS) + copy * slots + region base. */
control IndexRoutedRanks(inout header_t hdr, in bit<16> bias, in acc_index_t row_base) {
    apply {
        hdr.slot_index[0].index = ((hdr.slot_index[0].index - bias) >> REGISTER_BITS) + row_base;
        hdr.slot_index[1].index = ((hdr.slot_index[1].index - bias) >> REGISTER_BITS) + row_base;
        hdr.slot_index[2].index = ((hdr.slot_index[2].index - bias) >> REGISTER_BITS) + row_base;
        hdr.slot_index[3].index = ((hdr.slot_index[3].index - bias) >> REGISTER_BITS) + row_base;
        hdr.slot_index[4].index = ((hdr.slot_index[4].index - bias) >> REGISTER_BITS) + row_base;
        hdr.slot_index[5].index = ((hdr.slot_index[5].index - bias) >> REGISTER_BITS) + row_base;
        hdr.slot_index[6].index = ((hdr.slot_index[6].index - bias) >> REGISTER_BITS) + row_base;
        hdr.slot_index[7].index = ((hdr.slot_index[7].index - bias) >> REGISTER_BITS) + row_base;
    }
}

/* Positional pairs of a resubmitted packet (CHECK pass): the same range test
 * on each position, undone right after so the pairs go on unchanged. */
control BiasPositionalRanks(inout header_t hdr, in bit<16> bias) {
    apply {
        hdr.pairs[0].index = hdr.pairs[0].index + bias;
        hdr.pairs[1].index = hdr.pairs[1].index + bias;
        hdr.pairs[2].index = hdr.pairs[2].index + bias;
        hdr.pairs[3].index = hdr.pairs[3].index + bias;
        hdr.pairs[4].index = hdr.pairs[4].index + bias;
        hdr.pairs[5].index = hdr.pairs[5].index + bias;
        hdr.pairs[6].index = hdr.pairs[6].index + bias;
        hdr.pairs[7].index = hdr.pairs[7].index + bias;
    }
}

control UnbiasPositionalRanks(inout header_t hdr, in bit<16> bias) {
    apply {
        hdr.pairs[0].index = hdr.pairs[0].index - bias;
        hdr.pairs[1].index = hdr.pairs[1].index - bias;
        hdr.pairs[2].index = hdr.pairs[2].index - bias;
        hdr.pairs[3].index = hdr.pairs[3].index - bias;
        hdr.pairs[4].index = hdr.pairs[4].index - bias;
        hdr.pairs[5].index = hdr.pairs[5].index - bias;
        hdr.pairs[6].index = hdr.pairs[6].index - bias;
        hdr.pairs[7].index = hdr.pairs[7].index - bias;
    }
}

/* Every register, in egress: the ingress spends its stages deciding whether a
 * packet may add (docs/P4.md, "Stages"), and the routed slots follow the
 * bridge as they were parsed. A READOUT row reads each register into the
 * value it would add from (slot_value[k]), which egress emits to the CPU. */
control Accumulators(inout header_t hdr) {
    Accumulator() acc00;
    Accumulator() acc01;
    Accumulator() acc02;
    Accumulator() acc03;
    Accumulator() acc04;
    Accumulator() acc05;
    Accumulator() acc06;
    Accumulator() acc07;

    apply {
        acc00.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[0:0] == 1, hdr.bridge.same == 1, hdr.slot_index[0].index, hdr.bridge.entry, hdr.slot_value[0].value, hdr.bridge.round, hdr.slot_value[0].value);
        acc01.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[1:1] == 1, hdr.bridge.same == 1, hdr.slot_index[1].index, hdr.bridge.entry, hdr.slot_value[1].value, hdr.bridge.round, hdr.slot_value[1].value);
        acc02.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[2:2] == 1, hdr.bridge.same == 1, hdr.slot_index[2].index, hdr.bridge.entry, hdr.slot_value[2].value, hdr.bridge.round, hdr.slot_value[2].value);
        acc03.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[3:3] == 1, hdr.bridge.same == 1, hdr.slot_index[3].index, hdr.bridge.entry, hdr.slot_value[3].value, hdr.bridge.round, hdr.slot_value[3].value);
        acc04.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[4:4] == 1, hdr.bridge.same == 1, hdr.slot_index[4].index, hdr.bridge.entry, hdr.slot_value[4].value, hdr.bridge.round, hdr.slot_value[4].value);
        acc05.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[5:5] == 1, hdr.bridge.same == 1, hdr.slot_index[5].index, hdr.bridge.entry, hdr.slot_value[5].value, hdr.bridge.round, hdr.slot_value[5].value);
        acc06.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[6:6] == 1, hdr.bridge.same == 1, hdr.slot_index[6].index, hdr.bridge.entry, hdr.slot_value[6].value, hdr.bridge.round, hdr.slot_value[6].value);
        acc07.apply(hdr.bridge.acc_op, hdr.bridge.value_mask[7:7] == 1, hdr.bridge.same == 1, hdr.slot_index[7].index, hdr.bridge.entry, hdr.slot_value[7].value, hdr.bridge.round, hdr.slot_value[7].value);
    }
}

/* After the registers: the slots are not part of an answer or a recirculated
 * packet (a READOUT row keeps its values). */
control DropSlots(inout header_t hdr) {
    apply {
        hdr.slot_index[0].setInvalid();
        hdr.slot_value[0].setInvalid();
        hdr.slot_index[1].setInvalid();
        hdr.slot_value[1].setInvalid();
        hdr.slot_index[2].setInvalid();
        hdr.slot_value[2].setInvalid();
        hdr.slot_index[3].setInvalid();
        hdr.slot_value[3].setInvalid();
        hdr.slot_index[4].setInvalid();
        hdr.slot_value[4].setInvalid();
        hdr.slot_index[5].setInvalid();
        hdr.slot_value[5].setInvalid();
        hdr.slot_index[6].setInvalid();
        hdr.slot_value[6].setInvalid();
        hdr.slot_index[7].setInvalid();
        hdr.slot_value[7].setInvalid();
    }
}

#endif /* _ZEBRA_ACCUMULATE_ */
