/*
 * ACK and FALLBACK: the worker's HOT packet, turned around in egress. The
 * ingress decided what to say (zebra_bridge_h: reason, dup); this rewrites
 * the headers: addresses and ports swapped, the 10 bytes after the common
 * header replaced by the response (WIRE.md "ACK and FALLBACK": worker, round,
 * seq as in the packet answered, flags DUP, reason), lengths for a 16-byte
 * datagram. The pairs were consumed in ingress and are not emitted.
 */

#ifndef _ZEBRA_ACK_
#define _ZEBRA_ACK_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

const bit<16> RESPONSE_UDP_LEN = 8 + RESPONSE_LEN;
const bit<16> RESPONSE_IPV4_LEN = 20 + 8 + RESPONSE_LEN;

control Answer(inout header_t hdr, in zebra_bridge_h bridge) {
    mac_addr_t mac;
    ipv4_addr_t ip;
    udp_port_t port;

    action back_to_sender() {
        mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        ip = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = ip;
        hdr.ipv4.total_len = RESPONSE_IPV4_LEN;
        hdr.ipv4.ttl = 64;
        port = hdr.udp.dst_port;
        hdr.udp.dst_port = hdr.udp.src_port;
        hdr.udp.src_port = port;
        hdr.udp.length = RESPONSE_UDP_LEN;
        hdr.udp.checksum = 0;
    }

    action respond(zebra_type_t type, bit<8> flags) {
        back_to_sender();
        hdr.zebra.type = type;
        hdr.response.setValid();
        hdr.response.worker = hdr.hot.worker;
        hdr.response.round = hdr.hot.round;
        hdr.response.seq = hdr.hot.seq;
        hdr.response.flags = flags;
        hdr.response.reason = (fallback_reason_t)bridge.reason;
        hdr.hot.setInvalid();
        hdr.dense.setInvalid();
    }

    /* ADDED (0) is an ACK, any other reason a FALLBACK. */
    table kind {
        key = {
            bridge.reason : ternary;
            bridge.dup    : exact;
        }
        actions = {
            respond;
        }
        const entries = {
            (0, 0) : respond(zebra_type_t.ACK, 0);
            (0, 1) : respond(zebra_type_t.ACK, RESPONSE_FLAG_DUP);
            (_, 0) : respond(zebra_type_t.FALLBACK, 0);
            (_, 1) : respond(zebra_type_t.FALLBACK, RESPONSE_FLAG_DUP);
        }
        size = 4;
    }

    apply {
        kind.apply();
    }
}

#endif /* _ZEBRA_ACK_ */
