//! `zmq_socket_monitor`: events published on an inproc PAIR socket as
//! libzmq 4.x does, a two-part message `[u16 event + u32 value (native
//! endian), endpoint]`.

use std::sync::Arc;

use bytes::Bytes;
use zebra_zmtp::SocketType;

use crate::consts::{event, opt};
use crate::context::CtxShared;
use crate::error::Result;
use crate::socket::SocketCore;

/// An active monitor: the PAIR socket bound to the monitor endpoint.
#[derive(Debug)]
pub(crate) struct Monitor {
    socket: Arc<SocketCore>,
    events: i32,
}

/// The first part of a monitor message.
pub(crate) fn event_frame(event: u16, value: u32) -> Bytes {
    let mut head = Vec::with_capacity(6);
    head.extend_from_slice(&event.to_ne_bytes());
    head.extend_from_slice(&value.to_ne_bytes());
    Bytes::from(head)
}

impl Monitor {
    /// Binds a PAIR socket (linger 0) to the inproc endpoint `uri`.
    pub fn start(ctx: &Arc<CtxShared>, uri: &str, events: i32) -> Result<Monitor> {
        let socket = ctx.new_socket(SocketType::Pair)?;
        let bound = socket
            .set_option(opt::LINGER, &0i32.to_ne_bytes())
            .and_then(|()| socket.bind(uri));
        if let Err(e) = bound {
            socket.close();
            return Err(e);
        }
        Ok(Monitor { socket, events })
    }

    /// Publishes one event if it is in the mask; dropped if the reader is
    /// behind by a full queue.
    pub fn emit(&self, event: u16, value: u32, uri: &str) {
        if self.events & i32::from(event) == 0 {
            return;
        }
        self.socket.send_nowait(
            [
                event_frame(event, value),
                Bytes::copy_from_slice(uri.as_bytes()),
            ]
            .into_iter()
            .collect(),
        );
    }

    /// Sends `ZMQ_EVENT_MONITOR_STOPPED` and closes the monitor socket.
    pub fn stop(self) {
        self.emit(event::MONITOR_STOPPED, 0, "");
        self.socket.close();
    }
}
