//! Sockets: the `zmq_*` socket calls over pipes, with libzmq's semantics
//! for multipart messages, high-water marks, timeouts and routing.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use zebra_net::sys::EventFd;
use zebra_zmtp::{PeerInfo, SocketType};

use crate::consts::{event, opt, ZMQ_POLLIN, ZMQ_POLLOUT};
use crate::context::CtxShared;
use crate::endpoint::{self, Endpoint, Role};
use crate::error::{Error, Result};
use crate::filters::AcceptFilter;
use crate::inbound::{Inbound, Popped};
use crate::inproc;
use crate::monitor::Monitor;
use crate::options::{int_bytes, SocketOptions};
use crate::pipe::{Origin, Pipe, PipeOptions};
use crate::reactor::{Command, ListenerEntry, ReactorHandle};
use crate::routing::{Refused, Routing};
use crate::signal::{Signal, ACTIVITY};
use crate::stream::{Msg, Parts};

/// One received message part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The part's bytes.
    pub data: Bytes,
    /// More parts of the same message follow (`ZMQ_RCVMORE`).
    pub more: bool,
}

/// How long an unbind waits for the I/O thread to close the listener.
const UNBIND_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct SendState {
    /// A multipart message is in progress.
    active: bool,
    /// Where it goes; `None` drops it (unroutable on a ROUTER) unless
    /// `sole` is set.
    target: Option<Arc<Pipe>>,
    /// DEALER/PAIR with a single send target: that pipe, kept between
    /// messages while the routing's change count (the second field) stays
    /// the same.
    sole: Option<(Arc<Pipe>, u64)>,
    parts: Msg,
}

#[derive(Debug)]
enum EndpointEntry {
    Listener {
        keys: Vec<String>,
        id: u64,
        reactor: Arc<ReactorHandle>,
    },
    InprocBind {
        uri: String,
        name: String,
    },
    Connect {
        uri: String,
        pipe: Arc<Pipe>,
    },
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn deadline(timeout_ms: i32) -> Option<Instant> {
    u64::try_from(timeout_ms)
        .ok()
        .map(|ms| Instant::now() + Duration::from_millis(ms))
}

/// The shared state of one socket.
#[derive(Debug)]
pub(crate) struct SocketCore {
    pub id: u64,
    pub socket_type: SocketType,
    pub ctx: Arc<CtxShared>,
    pub inbound: Inbound,
    /// Wakes blocked sends and receives on any change.
    pub signal: Signal,
    options: Mutex<SocketOptions>,
    routing: Mutex<Routing>,
    /// The routing's change count (see [`Routing::choose`]).
    routing_changes: Arc<AtomicU64>,
    send: Mutex<SendState>,
    endpoints: Mutex<Vec<EndpointEntry>>,
    monitor: Mutex<Option<Monitor>>,
    monitor_mask: AtomicI32,
    last_endpoint: Mutex<String>,
    rcvmore: AtomicBool,
    /// A multipart send is in progress (mirrors `send.active` for `events`).
    sending: AtomicBool,
    closed: AtomicBool,
    warned_duplicate: AtomicBool,
    /// `ZMQ_FD`, made when first asked for: readable after any change of
    /// the socket until `ZMQ_EVENTS` is next read, as libzmq's.
    events_fd: OnceLock<EventFd>,
}

impl SocketCore {
    pub fn new(ctx: Arc<CtxShared>, id: u64, socket_type: SocketType, seed: u32) -> SocketCore {
        let routing_changes = Arc::new(AtomicU64::new(0));
        SocketCore {
            id,
            socket_type,
            ctx,
            inbound: Inbound::default(),
            signal: Signal::default(),
            options: Mutex::new(SocketOptions::new(socket_type)),
            routing: Mutex::new(Routing::new(socket_type, seed, routing_changes.clone())),
            routing_changes,
            send: Mutex::new(SendState::default()),
            endpoints: Mutex::new(Vec::new()),
            monitor: Mutex::new(None),
            monitor_mask: AtomicI32::new(0),
            last_endpoint: Mutex::new(String::new()),
            rcvmore: AtomicBool::new(false),
            sending: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            warned_duplicate: AtomicBool::new(false),
            events_fd: OnceLock::new(),
        }
    }

    /// Wakes this socket's blocked calls and pollers.
    pub fn changed(&self) {
        self.signal.notify();
        ACTIVITY.notify();
        if let Some(fd) = self.events_fd.get() {
            fd.notify();
        }
    }

    /// `ZMQ_FD`: a descriptor that becomes readable when the socket's
    /// events may have changed; reading `ZMQ_EVENTS` clears it (an
    /// application reads `ZMQ_EVENTS` after it wakes, as with libzmq).
    fn events_fd(&self) -> Result<i32> {
        if self.events_fd.get().is_none() {
            let fd = EventFd::new().map_err(Error::Io)?;
            fd.notify();
            let _ = self.events_fd.set(fd);
        }
        Ok(self.events_fd.get().map_or(-1, EventFd::fd))
    }

    pub fn is_router(&self) -> bool {
        self.socket_type == SocketType::Router
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub fn check_usable(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::NotSocket);
        }
        if self.inbound.is_terminated() {
            return Err(Error::Terminated);
        }
        Ok(())
    }

    pub fn options(&self) -> SocketOptions {
        lock(&self.options).clone()
    }

    pub fn pipe_options(&self) -> PipeOptions {
        let o = lock(&self.options);
        PipeOptions {
            zmtp: o.zmtp_config(),
            sndhwm: usize::try_from(o.sndhwm).unwrap_or(0),
            rcvhwm: usize::try_from(o.rcvhwm).unwrap_or(0),
            reconnect_ivl: o.reconnect_ivl,
            reconnect_ivl_max: o.reconnect_ivl_max(),
            immediate: o.immediate(),
            handshake_ivl: o.handshake_ivl,
            tcp: o.tcp_tuning(),
        }
    }

    pub fn set_option(&self, option: i32, value: &[u8]) -> Result<()> {
        self.check_usable()?;
        lock(&self.options).set(option, value)
    }

    pub fn reset_option(&self, option: i32) -> Result<()> {
        self.check_usable()?;
        lock(&self.options).reset(option)
    }

    pub fn get_option(&self, option: i32) -> Result<Vec<u8>> {
        self.check_usable()?;
        match option {
            opt::EVENTS => Ok(int_bytes(self.events())),
            opt::RCVMORE => Ok(int_bytes(i32::from(self.rcvmore.load(Ordering::Relaxed)))),
            opt::LAST_ENDPOINT => {
                let mut v = lock(&self.last_endpoint).as_bytes().to_vec();
                v.push(0);
                Ok(v)
            }
            opt::FD => Ok(int_bytes(self.events_fd()?)),
            _ => lock(&self.options)
                .get(option)?
                .ok_or_else(|| Error::Invalid(format!("option {option} has no value"))),
        }
    }

    // ----- endpoints -----

    pub fn bind(self: &Arc<Self>, uri: &str) -> Result<()> {
        self.check_usable()?;
        let ep = endpoint::parse(uri, Role::Bind)?;
        let ipc = matches!(ep, Endpoint::Ipc { .. });
        let (listener, resolved, unlink) = match ep {
            Endpoint::Inproc { name } => {
                inproc::bind(self, &name, uri)?;
                lock(&self.endpoints).push(EndpointEntry::InprocBind {
                    uri: uri.to_owned(),
                    name,
                });
                *lock(&self.last_endpoint) = uri.to_owned();
                return Ok(());
            }
            Endpoint::Tcp { host, port, .. } => {
                let ipv6 = lock(&self.options).ipv6();
                let addr = endpoint::resolve_bind(&host, port, ipv6)?;
                let tuning = lock(&self.options).tcp_tuning();
                let (l, local) = crate::transport::bind(addr, uri, &tuning)?;
                (l, endpoint::tcp_uri(local), None)
            }
            Endpoint::Ipc { path } => {
                let path = if path == "*" {
                    self.ctx.fresh_ipc_path().display().to_string()
                } else {
                    path
                };
                let (l, unlink) = crate::ipc::bind_ipc(&path, uri)?;
                (l, format!("ipc://{path}"), unlink)
            }
        };
        let filter = self.accept_filter(ipc);
        let tuning = lock(&self.options).tcp_tuning();
        let reactor = self.ctx.reactors()?.pick();
        let id = self.ctx.next_id();
        self.monitor_event(event::LISTENING, listener.fd(), &resolved);
        reactor.send(Command::Listen(Box::new(ListenerEntry {
            id,
            listener,
            socket: Arc::downgrade(self),
            uri: resolved.clone(),
            unlink,
            filter,
            tuning,
        })));
        lock(&self.endpoints).push(EndpointEntry::Listener {
            keys: vec![uri.to_owned(), resolved.clone()],
            id,
            reactor,
        });
        *lock(&self.last_endpoint) = resolved;
        Ok(())
    }

    /// The filter a new listener applies: the socket's TCP or IPC accept
    /// filters as they are now (libzmq copies them at bind).
    fn accept_filter(&self, ipc: bool) -> AcceptFilter {
        let o = lock(&self.options);
        if ipc && !o.ipc_filter.is_empty() {
            AcceptFilter::Ipc(o.ipc_filter.clone())
        } else if !ipc && !o.tcp_accept_filters.is_empty() {
            AcceptFilter::Tcp(o.tcp_accept_filters.clone())
        } else {
            AcceptFilter::Any
        }
    }

    /// `ZMQ_PROBE_ROUTER`: a pipe of `zmq_connect` starts with an empty
    /// message, sent once its connection is up. (`zmq_setsockopt(3)` says
    /// "made or accepted", but libzmq 4.3 probes only the peers it connects
    /// to; so does the engine.)
    fn probe(&self, pipe: &Arc<Pipe>) {
        if lock(&self.options).probe_router {
            let mut msg = Msg::new();
            msg.push(Bytes::new());
            pipe.push(&mut msg, true);
        }
    }

    pub fn connect(self: &Arc<Self>, uri: &str) -> Result<()> {
        self.check_usable()?;
        let ep = endpoint::parse(uri, Role::Connect)?;
        let options = self.pipe_options();
        let pipe = match ep {
            Endpoint::Inproc { name } => {
                let origin = Origin::Inproc {
                    uri: uri.to_owned(),
                };
                let pipe = Pipe::new(self, origin, options, None);
                if self.adopt_connecter(&pipe) {
                    self.probe(&pipe);
                    inproc::connect(self, &name, pipe.clone());
                }
                pipe
            }
            endpoint => {
                let reactor = self.ctx.reactors()?.assign();
                let origin = Origin::Connect {
                    uri: uri.to_owned(),
                    endpoint,
                };
                let pipe = Pipe::new(self, origin, options, Some(reactor.clone()));
                if self.adopt_connecter(&pipe) {
                    self.probe(&pipe);
                    reactor.send(Command::Connect(pipe.clone()));
                } else {
                    pipe.finish(None);
                }
                pipe
            }
        };
        lock(&self.endpoints).push(EndpointEntry::Connect {
            uri: uri.to_owned(),
            pipe,
        });
        *lock(&self.last_endpoint) = uri.to_owned();
        Ok(())
    }

    /// Registers a new connecting pipe; DEALER and PAIR take it as a send
    /// target at once (messages queue until the peer is there), or with
    /// `ZMQ_IMMEDIATE` after the handshake, as a ROUTER does, when it knows
    /// the peer's routing id.
    /// A ROUTER with `ZMQ_CONNECT_ROUTING_ID` set names the peer with it
    /// and routes to it at once (messages queue until the peer is there),
    /// as libzmq.
    fn adopt_connecter(&self, pipe: &Arc<Pipe>) -> bool {
        let mut routing = lock(&self.routing);
        if self.is_router() {
            let preset = lock(&self.options).connect_routing_id.take();
            match preset {
                Some(id) => {
                    let handover = lock(&self.options).router_handover;
                    if let Err(refused) = routing.attach(pipe, &id, handover) {
                        log::info!("zebra-engine: connect ignored: {}", refused.reason());
                        return false;
                    }
                }
                None => routing.register(pipe),
            }
            return true;
        }
        if pipe.options.immediate {
            routing.register(pipe);
            return true;
        }
        match routing.attach(pipe, &Bytes::new(), false) {
            Ok(()) => true,
            Err(refused) => {
                log::info!(
                    "zebra-engine: connect ignored: {} (as libzmq)",
                    refused.reason()
                );
                false
            }
        }
    }

    pub fn unbind(&self, uri: &str) -> Result<()> {
        self.check_usable()?;
        let mut removed = Vec::new();
        {
            let mut eps = lock(&self.endpoints);
            let mut i = 0;
            while i < eps.len() {
                let hit = match &eps[i] {
                    EndpointEntry::Listener { keys, .. } => keys.iter().any(|k| k == uri),
                    EndpointEntry::InprocBind { uri: u, .. } => u == uri,
                    EndpointEntry::Connect { .. } => false,
                };
                if hit {
                    removed.push(eps.remove(i));
                } else {
                    i += 1;
                }
            }
        }
        if removed.is_empty() {
            return Err(Error::NotFound(uri.to_owned()));
        }
        let linger = lock(&self.options).linger;
        for entry in removed {
            match entry {
                EndpointEntry::Listener { id, reactor, .. } => {
                    let (tx, rx) = mpsc::channel();
                    reactor.send(Command::StopListener(id, Some(tx)));
                    if rx.recv_timeout(UNBIND_WAIT).is_err() {
                        log::debug!("zebra-engine: unbind {uri}: listener close not confirmed");
                    }
                    let accepted: Vec<Arc<Pipe>> = {
                        let mut routing = lock(&self.routing);
                        let pipes: Vec<Arc<Pipe>> = routing
                            .pipes
                            .values()
                            .filter(|p| matches!(p.origin, Origin::Accept { listener, .. } if listener == id))
                            .cloned()
                            .collect();
                        for p in &pipes {
                            routing.remove(p);
                        }
                        pipes
                    };
                    for p in accepted {
                        p.close(linger);
                    }
                }
                EndpointEntry::InprocBind { name, .. } => inproc::unbind(self, &name),
                EndpointEntry::Connect { .. } => {}
            }
        }
        Ok(())
    }

    pub fn disconnect(&self, uri: &str) -> Result<()> {
        self.check_usable()?;
        let pipes: Vec<Arc<Pipe>> = {
            let mut eps = lock(&self.endpoints);
            let mut pipes = Vec::new();
            eps.retain(|e| match e {
                EndpointEntry::Connect { uri: u, pipe } if u == uri => {
                    pipes.push(pipe.clone());
                    false
                }
                _ => true,
            });
            pipes
        };
        if pipes.is_empty() {
            return Err(Error::NotFound(uri.to_owned()));
        }
        let linger = lock(&self.options).linger;
        {
            let mut routing = lock(&self.routing);
            for p in &pipes {
                routing.remove(p);
            }
        }
        for p in pipes {
            p.close(linger);
        }
        Ok(())
    }

    // ----- pipes, called by the I/O threads and inproc -----

    /// A pipe for a connection accepted by listener `listener`; `None` if
    /// the socket is closed.
    pub fn new_accepted_pipe(
        self: &Arc<Self>,
        listener: u64,
        uri: &str,
        reactor: Arc<ReactorHandle>,
    ) -> Option<Arc<Pipe>> {
        let origin = Origin::Accept {
            listener,
            uri: uri.to_owned(),
        };
        let pipe = Pipe::new(self, origin, self.pipe_options(), Some(reactor));
        let mut routing = lock(&self.routing);
        if self.is_closed() {
            return None;
        }
        routing.register(&pipe);
        Some(pipe)
    }

    /// A pipe for the binding side of an inproc link.
    pub fn new_inproc_peer(self: &Arc<Self>, uri: &str) -> Option<Arc<Pipe>> {
        let origin = Origin::Inproc {
            uri: uri.to_owned(),
        };
        let pipe = Pipe::new(self, origin, self.pipe_options(), None);
        let mut routing = lock(&self.routing);
        if self.is_closed() {
            return None;
        }
        routing.register(&pipe);
        Some(pipe)
    }

    /// Makes a registered pipe a send target once its peer is known.
    pub fn attach(&self, pipe: &Arc<Pipe>, peer_id: &Bytes) -> std::result::Result<(), Refused> {
        let handover = lock(&self.options).router_handover;
        let mut routing = lock(&self.routing);
        if !routing.pipes.contains_key(&pipe.id) {
            return Ok(());
        }
        let r = routing.attach(pipe, peer_id, handover);
        drop(routing);
        if r.is_ok() {
            self.changed();
        }
        r
    }

    /// The handshake of one of our pipes completed.
    pub fn on_handshake(
        &self,
        pipe: &Arc<Pipe>,
        peer: &PeerInfo,
    ) -> std::result::Result<(), Refused> {
        let r = self.attach(pipe, &peer.identity);
        if r == Err(Refused::DuplicateId) {
            let first = !self.warned_duplicate.swap(true, Ordering::Relaxed);
            let id = String::from_utf8_lossy(&peer.identity);
            if first {
                log::warn!(
                    "zebra-engine: ROUTER refuses a second peer with routing id {id:?} on {}",
                    pipe.origin.uri()
                );
            } else {
                log::debug!("zebra-engine: ROUTER refuses duplicate routing id {id:?}");
            }
        }
        r
    }

    /// Queues `messages` whole messages received on `pipe`, taking their
    /// parts out of `parts`.
    pub fn deliver(&self, pipe: &Arc<Pipe>, parts: &mut Parts, messages: usize) {
        if self.is_closed() {
            return;
        }
        let prefix = if self.is_router() {
            match pipe.identity.get() {
                Some(id) => Some(id),
                None => return,
            }
        } else {
            None
        };
        pipe.in_flight.fetch_add(messages, Ordering::SeqCst);
        self.inbound.push_batch(prefix, parts, messages, pipe);
        self.changed();
    }

    /// A connecting pipe lost its connection and will reconnect: with
    /// `ZMQ_IMMEDIATE` it stops being a send target and drops its queue
    /// until the next handshake, as libzmq ends the pipe and makes another.
    pub fn connection_lost(&self, pipe: &Pipe) {
        if pipe.options.immediate && !self.is_router() {
            lock(&self.routing).detach(pipe);
            pipe.drop_queue();
            self.changed();
        }
    }

    /// Forgets a pipe that ended, and the endpoint it was connecting.
    pub fn forget_pipe(&self, pipe: &Pipe) {
        lock(&self.routing).remove(pipe);
        lock(&self.endpoints).retain(
            |e| !matches!(e, EndpointEntry::Connect { pipe: p, .. } if std::ptr::eq(&**p, pipe)),
        );
        self.changed();
    }

    // ----- messages -----

    pub fn send(&self, data: Bytes, more: bool, dontwait: bool) -> Result<()> {
        self.check_usable()?;
        let mut st = lock(&self.send);
        if !st.active {
            if self.is_router() {
                if !more {
                    return Ok(());
                }
                st.target = self.route_by_id(&data, dontwait)?;
                st.active = true;
                self.sending.store(true, Ordering::Relaxed);
                return Ok(());
            }
            let changes = self.routing_changes.load(Ordering::Acquire);
            let keep = matches!(&st.sole, Some((p, c)) if *c == changes && p.can_write());
            if !keep {
                st.sole = None;
                match self.choose_pipe(dontwait)? {
                    (pipe, true) => st.sole = Some((pipe, changes)),
                    (pipe, false) => st.target = Some(pipe),
                }
            }
            st.active = true;
            if more {
                self.sending.store(true, Ordering::Relaxed);
            }
        }
        st.parts.push(data);
        if !more {
            st.active = false;
            self.sending.store(false, Ordering::Relaxed);
            let SendState {
                target,
                sole,
                parts,
                ..
            } = &mut *st;
            match (target.take(), sole) {
                (Some(pipe), _) => pipe.push(parts, dontwait),
                (None, Some((pipe, _))) if !self.is_router() => pipe.push(parts, dontwait),
                _ => {}
            }
            parts.clear();
        }
        Ok(())
    }

    fn wait_for_room(
        &self,
        seen: u64,
        dontwait: bool,
        until: &mut Option<Option<Instant>>,
    ) -> Result<()> {
        if dontwait {
            return Err(Error::Again);
        }
        let deadline = *until.get_or_insert_with(|| deadline(lock(&self.options).sndtimeo));
        if deadline.is_some_and(|d| d <= Instant::now()) {
            return Err(Error::Again);
        }
        self.check_usable()?;
        if !self.signal.wait(seen, deadline) {
            return Err(Error::Again);
        }
        self.check_usable()
    }

    fn choose_pipe(&self, dontwait: bool) -> Result<(Arc<Pipe>, bool)> {
        let mut until = None;
        loop {
            let seen = self.signal.seq();
            if let Some(p) = lock(&self.routing).choose() {
                return Ok(p);
            }
            self.wait_for_room(seen, dontwait, &mut until)?;
        }
    }

    fn route_by_id(&self, id: &[u8], dontwait: bool) -> Result<Option<Arc<Pipe>>> {
        let mandatory = lock(&self.options).router_mandatory;
        let mut until = None;
        loop {
            let seen = self.signal.seq();
            match lock(&self.routing).route(id) {
                None if mandatory => return Err(Error::HostUnreachable),
                None => return Ok(None),
                Some(p) if p.can_write() => return Ok(Some(p)),
                Some(_) if !mandatory => return Ok(None),
                Some(_) => {}
            }
            self.wait_for_room(seen, dontwait, &mut until)?;
        }
    }

    /// Sends a whole message without blocking, dropping it if it does not
    /// fit (monitor events).
    pub fn send_nowait(&self, mut parts: Msg) {
        if self.is_closed() {
            return;
        }
        if let Some((p, _)) = lock(&self.routing).choose() {
            p.push(&mut parts, true);
        }
    }

    #[inline]
    pub fn recv(&self, dontwait: bool) -> Result<Part> {
        if let Some(p) = self.inbound.try_pop()? {
            return Ok(self.took(p));
        }
        if dontwait {
            return Err(Error::Again);
        }
        self.recv_blocking()
    }

    fn recv_blocking(&self) -> Result<Part> {
        let timeout = lock(&self.options).rcvtimeo;
        if timeout == 0 {
            return Err(Error::Again);
        }
        let until = deadline(timeout);
        loop {
            let seen = self.signal.seq();
            if let Some(p) = self.inbound.try_pop()? {
                return Ok(self.took(p));
            }
            self.check_usable()?;
            if !self.signal.wait(seen, until) {
                return Err(Error::Again);
            }
        }
    }

    fn took(&self, p: Popped) -> Part {
        self.rcvmore.store(p.more, Ordering::Relaxed);
        if let Some((source, n)) = p.source {
            source.consumed(n);
        }
        Part {
            data: p.data,
            more: p.more,
        }
    }

    pub fn events(&self) -> i32 {
        if let Some(fd) = self.events_fd.get() {
            fd.drain();
        }
        if self.is_closed() || self.inbound.is_terminated() {
            return 0;
        }
        let mut events = 0;
        if self.inbound.readable() {
            events |= ZMQ_POLLIN;
        }
        let mandatory = lock(&self.options).router_mandatory;
        if self.sending.load(Ordering::Relaxed) || lock(&self.routing).writable(mandatory) {
            events |= ZMQ_POLLOUT;
        }
        events
    }

    // ----- monitor -----

    pub fn monitor(self: &Arc<Self>, uri: Option<&str>, events: i32) -> Result<()> {
        self.check_usable()?;
        self.stop_monitor();
        let Some(uri) = uri else {
            return Ok(());
        };
        match endpoint::parse(uri, Role::Bind)? {
            Endpoint::Inproc { .. } => {}
            _ => {
                return Err(Error::ProtocolNotSupported(format!(
                    "monitor endpoint {uri:?} must be inproc://"
                )))
            }
        }
        let monitor = Monitor::start(&self.ctx, uri, events)?;
        *lock(&self.monitor) = Some(monitor);
        self.monitor_mask.store(events, Ordering::Release);
        Ok(())
    }

    fn stop_monitor(&self) {
        self.monitor_mask.store(0, Ordering::Release);
        if let Some(m) = lock(&self.monitor).take() {
            m.stop();
        }
    }

    /// Publishes a monitor event if it is being watched.
    pub fn monitor_event(&self, event: u16, value: i32, uri: &str) {
        if self.monitor_mask.load(Ordering::Relaxed) & i32::from(event) == 0 {
            return;
        }
        if let Some(m) = lock(&self.monitor).as_ref() {
            m.emit(event, value as u32, uri);
        }
    }

    // ----- close -----

    pub fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.changed();
        self.stop_monitor();
        for (source, n) in self.inbound.close() {
            source.consumed(n);
        }
        let endpoints = std::mem::take(&mut *lock(&self.endpoints));
        for entry in endpoints {
            match entry {
                EndpointEntry::Listener { id, reactor, .. } => {
                    reactor.send(Command::StopListener(id, None));
                }
                EndpointEntry::InprocBind { name, .. } => inproc::unbind(self, &name),
                EndpointEntry::Connect { .. } => {}
            }
        }
        let linger = lock(&self.options).linger;
        let pipes = lock(&self.routing).take_all();
        for p in pipes {
            p.close(linger);
        }
        *lock(&self.send) = SendState::default();
        self.sending.store(false, Ordering::Relaxed);
        self.ctx.socket_closed(self.id);
    }

    /// Called by the context on `zmq_ctx_shutdown`.
    pub fn terminate(&self) {
        self.inbound.set_terminated();
        self.changed();
    }
}
