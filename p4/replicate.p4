/*
 * The pull half (docs/PULL.md): a server's UPDATE goes to the workers of its
 * job, a worker's UPDATE_ACK to the server, both unchanged but for their
 * addresses. As zebra-proto's Switch::on_update / on_update_ack and the
 * switch node that routes them: no state per update; an UPDATE whose target
 * is UPDATE_TARGET_ALL is copied to every worker of the job the switch has
 * heard from, one with a rank to that worker only; an UPDATE_ACK goes to the
 * server's REGISTER address; one naming a job, server or worker the job does
 * not have, or an UPDATE longer than an aggregate part, is refused; one whose
 * peer has no address yet is unroutable; both are counted and dropped.
 *
 * A copy leaves from the switch's hot-path address (the one the sender
 * addressed) to the peer's, UDP checksum 0, IPv4 checksum recomputed in the
 * egress deparser.
 *
 *   to every worker   the job's multicast group (groups); the replication
 *                     engine makes one copy per PRE node, one node per worker
 *                     (rid = its rank), and egress writes each copy's
 *                     destination from (job, egress_rid) (UpdateCopy.copies)
 *   to one worker     (job, worker) -> port and address (workers)
 *   to the server     (job, server) -> port and address (servers)
 *
 * Where the workers are: the (job, worker) table is also looked up for every
 * HOT packet, whose source (ingress port, MAC, IPv4, UDP port) is compared
 * with the entry. A HOT packet the switch answers for a worker of the job
 * (an ACK or a FALLBACK other than UnknownJob and BadWorker, as the model
 * learns) from another address, or from a worker without an entry, sends a
 * DIGEST_WORKER digest; the controller (zebra_ctl/controls.py, Replicate)
 * writes both (job, worker) tables and the worker's PRE node, and adds the
 * node to the job's group. Until it has, every such packet sends the digest
 * again. A server's entry is written when it registers (or at load, when
 * pinned by the settings), its port being its MAC's L2 route.
 */

#ifndef _ZEBRA_REPLICATE_
#define _ZEBRA_REPLICATE_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

control UpdateRoute(
    inout header_t hdr,
    inout ingress_metadata_t ig_md,
    in ingress_intrinsic_metadata_t ig_intr_md,
    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
    in pass_t pass) {

    peer_t peer;
    bool found;
    bool malformed;
    bool refused;

    action peer_at(PortId_t port, mac_addr_t mac, ipv4_addr_t ip, udp_port_t udp_port) {
        found = true;
        peer.port = port;
        peer.mac = mac;
        peer.ip = ip;
        peer.udp_port = udp_port;
    }

    action to_group(MulticastGroupId_t group) {
        found = true;
        ig_tm_md.mcast_grp_a = group;
    }

    action no_peer() {
        found = false;
    }

    /* (job, worker rank) -> where the worker is: a targeted UPDATE's
     * destination, and what a HOT packet's source is compared with. */
    table workers {
        key = {
            hdr.zebra.job     : exact;
            ig_md.peer_worker : exact;
        }
        actions = {
            peer_at;
            @defaultonly no_peer;
        }
        const default_action = no_peer;
        size = UPDATE_WORKER_ENTRIES;
    }

    /* (job, server index) -> where the server registered from. */
    table servers {
        key = {
            hdr.zebra.job         : exact;
            hdr.update_ack.server : exact;
        }
        actions = {
            peer_at;
            @defaultonly no_peer;
        }
        const default_action = no_peer;
        size = UPDATE_SERVER_ENTRIES;
    }

    /* job -> its multicast group, once it has a worker. */
    table groups {
        key = {
            hdr.zebra.job : exact;
        }
        actions = {
            to_group;
            @defaultonly no_peer;
        }
        const default_action = no_peer;
        size = MAX_JOBS;
    }

    action drop(stat_t why) {
        ig_dprsr_md.drop_ctl = 1;
        ig_md.stat = (bit<8>)why;
    }

    /* From the switch's address, the one the sender addressed. */
    action from_switch() {
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.ttl = 64;
        hdr.udp.src_port = hdr.udp.dst_port;
        hdr.udp.checksum = 0;
    }

    action to_peer() {
        hdr.ethernet.dst_addr = peer.mac;
        hdr.ipv4.dst_addr = peer.ip;
        hdr.udp.dst_port = peer.udp_port;
        ig_tm_md.ucast_egress_port = peer.port;
    }

    action bridge(stat_t sent, bit<1> per_copy) {
        hdr.replica.setValid();
        hdr.replica.kind = ctl_kind_t.REPLICA;
        hdr.replica.stat = (bit<8>)sent;
        hdr.replica.job = hdr.zebra.job;
        hdr.replica.reserved = 0;
        hdr.replica.per_copy = per_copy;
        ig_md.stat = (bit<8>)sent;
    }

    apply {
        found = false;
        if (pass == pass_t.FAST || pass == pass_t.CHECK
                || (pass == pass_t.UPDATE && hdr.update.target != UPDATE_TARGET_ALL)) {
            workers.apply();
        } else if (pass == pass_t.UPDATE) {
            groups.apply();
        } else if (pass == pass_t.UPDATE_ACK) {
            servers.apply();
        }

        if (pass == pass_t.FAST || pass == pass_t.CHECK) {
            ig_md.learn_port = ig_intr_md.ingress_port;
            ig_md.moved = !found
                || peer.port != ig_intr_md.ingress_port
                || peer.mac != hdr.ethernet.src_addr
                || peer.ip != hdr.ipv4.src_addr
                || peer.udp_port != hdr.udp.src_port;
        } else if (pass == pass_t.UPDATE || pass == pass_t.UPDATE_ACK) {
            if (pass == pass_t.UPDATE) {
                malformed = hdr.udp.length < 8 + UPDATE_HEADER_LEN;
                refused = !ig_md.job_known
                    || hdr.update.server >= (bit<16>)ig_md.job.servers
                    || (hdr.update.target != UPDATE_TARGET_ALL
                        && hdr.update.target >= (bit<16>)ig_md.job.workers)
                    || hdr.udp.length > ig_md.job.max_update_len;
            } else {
                malformed = hdr.udp.length != 8 + UPDATE_ACK_LEN;
                refused = !ig_md.job_known
                    || hdr.update_ack.server >= (bit<16>)ig_md.job.servers
                    || hdr.update_ack.worker >= (bit<16>)ig_md.job.workers;
            }
            if (malformed) {
                drop(stat_t.BAD);
            } else if (refused) {
                drop(stat_t.UPDATE_REFUSED);
            } else if (!found) {
                drop(stat_t.UPDATE_UNROUTABLE);
            } else {
                from_switch();
                if (pass == pass_t.UPDATE_ACK) {
                    to_peer();
                    bridge(stat_t.UPDATE_ACKS, 0);
                } else if (hdr.update.target != UPDATE_TARGET_ALL) {
                    to_peer();
                    bridge(stat_t.UPDATES, 0);
                } else {
                    bridge(stat_t.UPDATES, 1);
                }
            }
        }
    }
}

/* Egress: a multicast copy's destination, from its job and the replication
 * id of the PRE node that made it (the worker's rank). A copy whose node has
 * no entry (the controller between two writes) is dropped and counted. */
control UpdateCopy(
    inout header_t hdr,
    in egress_intrinsic_metadata_t eg_intr_md,
    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
    out bit<8> stat) {

    action copy_to(mac_addr_t mac, ipv4_addr_t ip, udp_port_t udp_port) {
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
        hdr.udp.dst_port = udp_port;
    }

    action no_copy() {
        eg_dprsr_md.drop_ctl = 1;
        stat = (bit<8>)stat_t.UPDATE_UNROUTABLE;
    }

    table copies {
        key = {
            hdr.replica.job        : exact;
            eg_intr_md.egress_rid  : exact;
        }
        actions = {
            copy_to;
            @defaultonly no_copy;
        }
        const default_action = no_copy;
        size = UPDATE_WORKER_ENTRIES;
    }

    apply {
        stat = hdr.replica.stat;
        if (hdr.replica.per_copy == 1) {
            copies.apply();
        }
        /* Not emitted: the deparser starts the frame at Ethernet. */
        hdr.replica.setInvalid();
    }
}

#endif /* _ZEBRA_REPLICATE_ */
