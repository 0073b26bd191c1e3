/*
 * Everything that is not hot-path traffic for the switch (PS-lite's ZeroMQ
 * connections, the cold keys, ARP, the AGGREGATE parts the CPU sends) is
 * forwarded by destination MAC address. The controller writes the table from
 * its ports file; there is no learning.
 */

#ifndef _ZEBRA_FORWARD_
#define _ZEBRA_FORWARD_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

control Forward(
    in header_t hdr,
    inout ingress_metadata_t ig_md,
    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    action to_port(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        ig_tm_md.bypass_egress = 1;
        ig_md.stat = (bit<8>)stat_t.FORWARDED;
    }

    action no_route() {
        ig_dprsr_md.drop_ctl = 1;
        ig_md.stat = (bit<8>)stat_t.NO_ROUTE;
    }

    table l2 {
        key = {
            hdr.ethernet.dst_addr : exact;
        }
        actions = {
            to_port;
            @defaultonly no_route;
        }
        const default_action = no_route;
        size = 1024;
    }

    apply {
        l2.apply();
    }
}

#endif /* _ZEBRA_FORWARD_ */
