/*
 * ACK and FALLBACK: the worker's HOT packet, turned around in egress. The
 * ingress decided what to say (zebra_bridge_h: reason, dup); this rewrites
 * the headers: addresses and ports swapped, the 10 bytes after the common
 * header replaced by the response (WIRE.md "ACK and FALLBACK": worker, round,
 * seq as in the packet answered, flags DUP, reason, and the job's token for
 * a worker of the job, 0 for UNKNOWN_JOB and BAD_WORKER, as zebra-proto's
 * Switch::respond), lengths for a 20-byte datagram. The token is the
 * `tokens` table's (job id -> token, one entry per job, written by the
 * controller with the ingress one). The pairs were consumed in ingress and are not emitted.
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
        hdr.response.token = 0;
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

    action token_is(token_t token) {
        hdr.response.token = token;
    }

    action no_token() {
    }

    table tokens {
        key = {
            hdr.zebra.job : exact;
        }
        actions = {
            token_is;
            @defaultonly no_token;
        }
        const default_action = no_token;
        size = MAX_JOBS;
    }

    apply {
        kind.apply();
        if (bridge.reason != (bit<8>)fallback_reason_t.UNKNOWN_JOB
                && bridge.reason != (bit<8>)fallback_reason_t.BAD_WORKER) {
            tokens.apply();
        }
    }
}

#endif /* _ZEBRA_ACK_ */
