/*
 * The table-lookup float sum (build with -DZEBRA_LNS; see gen_tables.py for
 * the method and measure.py for its precision).
 *
 * Workers of a job in this mode send the f32 bit pattern (FIXED flag clear).
 * Before its register adds it, each value is turned into the job's 32-bit
 * fixed point by two lookups keyed on its exponent and mantissa bits (the
 * pattern read as a quantised log2 |x|) and one add; the sign is applied
 * after. The registers, the readout and the wire are those of the fixed-point
 * build; the CPU divides the sums by 2^F to send f32 aggregates.
 *
 * Every register needs its own copy of the tables (a table is looked up once
 * per pass), so their size is multiplied by REGISTERS: with LNS_HI_BITS 7 and
 * LNS_LO_BITS 4, 33 x 128 + 32 x 16 entries per profile and register, 18.5 KiB
 * of 4-byte action data, 148 KiB for the 8 registers. This build does not fit
 * one Tofino 1 pipe by the resource model (docs/P4.md, "Resources").
 */

#ifndef _ZEBRA_LNS_
#define _ZEBRA_LNS_

#include "../configuration.p4"
#include "../types.p4"
#include "../headers.p4"

/* Mantissa bits keying the hi and lo tables (gen_tables.py --hi-bits, --lo-bits). */
const int LNS_HI_BITS = 7;
const int LNS_LO_BITS = 4;

/* Scales (frac_bits) the tables hold at once; a job names one (lns_profile). */
const int LNS_PROFILES = 2;

/* Exponent rows per profile: the 32 exponents whose values fit an i32 at the
 * profile's scale and are not below half its unit, and one saturation row. */
const int LNS_EXPONENTS = 33;

const int LNS_HI_ENTRIES = LNS_PROFILES * LNS_EXPONENTS * 128;
const int LNS_LO_ENTRIES = LNS_PROFILES * (LNS_EXPONENTS - 1) * 16;

control LnsToFixed(inout value_t value, in bit<8> profile, in bit<8> saturate_exponent) {
    bit<8> exponent;
    bit<32> hi;
    bit<32> lo;
    bit<32> magnitude;

    action set_hi(bit<32> v) {
        hi = v;
    }

    action set_lo(bit<32> v) {
        lo = v;
    }

    /* 2^(e-127+F) * (1 + mh / 2^LNS_HI_BITS), rounded. */
    table to_fixed_hi {
        key = {
            profile                     : exact;
            exponent                    : exact;
            value[22:23 - LNS_HI_BITS]  : exact;
        }
        actions = {
            set_hi;
        }
        default_action = set_hi(0);
        size = LNS_HI_ENTRIES;
    }

    /* 2^(e-127+F) * (ml + 1/2) / 2^(LNS_HI_BITS + LNS_LO_BITS), rounded. */
    table to_fixed_lo {
        key = {
            profile                                                  : exact;
            exponent                                                 : exact;
            value[22 - LNS_HI_BITS:23 - LNS_HI_BITS - LNS_LO_BITS]   : exact;
        }
        actions = {
            set_lo;
        }
        default_action = set_lo(0);
        size = LNS_LO_ENTRIES;
    }

    apply {
        if (value[30:23] > saturate_exponent) {
            exponent = saturate_exponent;
        } else {
            exponent = value[30:23];
        }
        to_fixed_hi.apply();
        to_fixed_lo.apply();
        magnitude = hi |+| lo;
        if (value[31:31] == 1) {
            value = 0 - magnitude;
        } else {
            value = magnitude;
        }
    }
}

/* The values of one pass, in place, before the registers add them. */
control LnsValues(inout header_t hdr, in bit<8> profile, in bit<8> saturate_exponent) {
    LnsToFixed() lns00; LnsToFixed() lns01; LnsToFixed() lns02; LnsToFixed() lns03;
    LnsToFixed() lns04; LnsToFixed() lns05; LnsToFixed() lns06; LnsToFixed() lns07;

    apply {
        if (hdr.slot_value[0].isValid())  { lns00.apply(hdr.slot_value[0].value,  profile, saturate_exponent); }
        if (hdr.slot_value[1].isValid())  { lns01.apply(hdr.slot_value[1].value,  profile, saturate_exponent); }
        if (hdr.slot_value[2].isValid())  { lns02.apply(hdr.slot_value[2].value,  profile, saturate_exponent); }
        if (hdr.slot_value[3].isValid())  { lns03.apply(hdr.slot_value[3].value,  profile, saturate_exponent); }
        if (hdr.slot_value[4].isValid())  { lns04.apply(hdr.slot_value[4].value,  profile, saturate_exponent); }
        if (hdr.slot_value[5].isValid())  { lns05.apply(hdr.slot_value[5].value,  profile, saturate_exponent); }
        if (hdr.slot_value[6].isValid())  { lns06.apply(hdr.slot_value[6].value,  profile, saturate_exponent); }
        if (hdr.slot_value[7].isValid())  { lns07.apply(hdr.slot_value[7].value,  profile, saturate_exponent); }
    }
}

#endif /* _ZEBRA_LNS_ */
