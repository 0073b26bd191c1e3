/*
 * The switch CPU's part of the data plane: reading a closed round out and
 * handing it to the CPU, and the packets the CPU exchanges with the pipeline.
 *
 * Readout. A closed round is read one row per pass: row i reads entry
 * copy * slots + region base + i of every register (the slots of ranks
 * i*R .. i*R + R-1) and, for i < workers, the progress of worker i. Each pass
 * is mirrored (E2E) to the CPU and recirculated for row i + 1, until
 * readout_rows = max(region slots, workers) rows are done. The CPU
 * (p4/controller/zebra_ctl/cpu.py) builds the AGGREGATE and COVERAGE parts
 * from the rows, keeps each until its server acknowledges it, and RELEASEs
 * the copy. A row lost on the way to the CPU is asked for again with a
 * one-row READOUT; the copy stays draining until the RELEASE.
 *
 * The CPU port and the recirculation port are run-time values (the
 * controller's set_ports / set_sessions default actions).
 */

#ifndef _ZEBRA_MIRROR_CPU_
#define _ZEBRA_MIRROR_CPU_

#include "configuration.p4"
#include "types.p4"
#include "headers.p4"

control SwitchPorts(inout ingress_metadata_t ig_md) {
    action set_ports(PortId_t cpu_port, PortId_t recirc_port) {
        ig_md.cpu_port = cpu_port;
        ig_md.recirc_port = recirc_port;
    }

    table ports {
        actions = {
            set_ports;
        }
        default_action = set_ports(0, 0);
        size = 1;
    }

    apply {
        ports.apply();
    }
}

/* REGISTER and AGGREGATE_ACK from servers (behind a TO_CPU header, so that
 * everything the CPU receives starts with zebra_ctl_h), FLUSH answers. */
control ToCpu(
    inout header_t hdr,
    in ingress_metadata_t ig_md,
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    apply {
        if (!hdr.ctl.isValid()) {
            hdr.ctl.setValid();
            hdr.ctl.kind = ctl_kind_t.TO_CPU;
            hdr.ctl.flags = 0;
            hdr.ctl.job = hdr.zebra.job;
            hdr.ctl.round = 0;
            hdr.ctl.row = 0;
            hdr.ctl.rows = 0;
            hdr.ctl.port = 0;
            hdr.ctl.reserved = 0;
        }
        ig_tm_md.ucast_egress_port = ig_md.cpu_port;
        ig_tm_md.bypass_egress = 1;
    }
}

/* A CLOSE that closed its round becomes the READOUT of row 0. */
control StartReadout(inout header_t hdr, in ingress_metadata_t ig_md, in bool flushed) {
    apply {
        hdr.ctl.kind = ctl_kind_t.READOUT;
        hdr.ctl.flags = flushed ? CTL_FLAG_FLUSHED : 8w0;
        hdr.ctl.row = 0;
        hdr.ctl.rows = ig_md.job.readout_rows;
        hdr.readout.setValid();
        hdr.slot_value[0].setValid();
        hdr.slot_value[1].setValid();
        hdr.slot_value[2].setValid();
        hdr.slot_value[3].setValid();
        hdr.slot_value[4].setValid();
        hdr.slot_value[5].setValid();
        hdr.slot_value[6].setValid();
        hdr.slot_value[7].setValid();
    }
}

/* One READOUT pass, ingress half: the row and worker this pass reads, the
 * next row. (What egress reads is in the bridge: fill_bridge in zebra.p4.) */
control ReadoutRow(
    inout header_t hdr,
    in ingress_metadata_t ig_md,
    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    apply {
        hdr.readout.row = hdr.ctl.row;
        hdr.readout.worker = hdr.ctl.row;
        hdr.readout.progress = 0;
        hdr.ctl.row = hdr.ctl.row + 1;
        ig_tm_md.ucast_egress_port = ig_md.recirc_port;
    }
}

control MirrorSessions(inout egress_metadata_t eg_md) {
    action set_sessions(MirrorId_t cpu_session, MirrorId_t recirc_session) {
        eg_md.cpu_session = cpu_session;
        eg_md.recirc_session = recirc_session;
    }

    table sessions {
        actions = {
            set_sessions;
        }
        default_action = set_sessions(0, 0);
        size = 1;
    }

    apply {
        sessions.apply();
    }
}

/* One READOUT pass, egress half: a copy to the CPU (behind a zebra_ctl_h
 * saying which row), the packet itself on to the next row or, after the last,
 * dropped. */
control ReadoutOut(
    in header_t hdr,
    inout egress_metadata_t eg_md,
    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {

    apply {
        eg_md.session = eg_md.cpu_session;
        eg_md.mirror_ctl = hdr.ctl;
        eg_md.mirror_ctl.row = hdr.readout.row;
        eg_dprsr_md.mirror_type = MIRROR_TYPE_E2E;
        if (hdr.bridge.last_row == 1) {
            eg_dprsr_md.drop_ctl = 1;
        }
    }
}

/* The packet that completed the last worker: a CLOSE for its round to the
 * recirculation port (the session truncates the copy; only the header counts). */
control CompletionOut(
    in header_t hdr,
    inout egress_metadata_t eg_md,
    inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {

    apply {
        eg_md.session = eg_md.recirc_session;
        eg_md.mirror_ctl.setValid();
        eg_md.mirror_ctl.kind = ctl_kind_t.CLOSE;
        eg_md.mirror_ctl.flags = 0;
        eg_md.mirror_ctl.job = hdr.zebra.job;
        eg_md.mirror_ctl.round = hdr.bridge.round;
        eg_md.mirror_ctl.row = 0;
        eg_md.mirror_ctl.rows = 0;
        eg_md.mirror_ctl.port = 0;
        eg_md.mirror_ctl.reserved = 0;
        eg_dprsr_md.mirror_type = MIRROR_TYPE_E2E;
    }
}

#endif /* _ZEBRA_MIRROR_CPU_ */
