//! One ZMTP 3.x connection with the NULL mechanism, as a state machine.
//!
//! ```text
//!  new() --queue greeting--> Greeting --peer greeting--> Handshake
//!     (queue READY)                                          |
//!                                                 peer READY | peer ERROR
//!                                                            v      \
//!                                                          Ready --> Closed
//!  any protocol error -----------------------------------> Failed(error)
//! ```
//!
//! Input may be split anywhere: feeding a stream byte by byte or in one
//! piece, borrowed or shared, or reading large bodies straight from the
//! stream gives the same events, the same output and the same error.

use std::collections::VecDeque;
use std::io::{self, Read};

use bytes::Bytes;

use crate::decoder::{FrameDecoder, Input, Limits};
use crate::error::{Error, Result};
use crate::event::{Event, PeerInfo, Version};
use crate::output::OutputQueue;
use crate::socket_type::SocketType;
use crate::wire::command::{Command, MAX_PING_CONTEXT};
use crate::wire::frame::{Frame, FrameHeader};
use crate::wire::greeting::{check_prefix, GreetingRepr, Mechanism, GREETING_LEN};
use crate::wire::metadata::{Metadata, MAX_IDENTITY_LEN};

/// Default limit on a command frame body (READY metadata, PING, ...).
pub const DEFAULT_MAX_COMMAND_SIZE: u64 = 1 << 20;

/// How a connection is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Our socket type, sent in READY and checked against the peer's.
    pub socket_type: SocketType,
    /// Our routing identity (0..=255 bytes); sent for REQ, DEALER, ROUTER.
    pub identity: Bytes,
    /// The greeting's as-server flag. NULL has no client/server roles, and
    /// libzmq sends 0 for it from both ends; kept for completeness.
    pub as_server: bool,
    /// Largest message frame we accept; `None` is unlimited. As libzmq's
    /// ZMQ_MAXMSGSIZE, the limit applies to each frame, and a larger frame
    /// fails the connection on its header, before its body is buffered.
    pub max_message_size: Option<u64>,
    /// Largest command frame we accept.
    pub max_command_size: u64,
    /// How far beyond the bytes received a large message body may reserve
    /// memory at once (never beyond its announced size). 0, the default,
    /// grows a body buffer by doubling as bytes arrive, so that a hostile
    /// length field cannot make us reserve what the peer has not sent. A
    /// caller that reads large bodies straight from the stream
    /// ([`Connection::read_body_from`]) sets it so that a body is read
    /// into one buffer without reallocations; reserved memory that is
    /// not written yet is address space, not committed memory.
    pub reserve_ahead: usize,
}

impl Config {
    /// Defaults: empty identity, no message size limit.
    pub fn new(socket_type: SocketType) -> Config {
        Config {
            socket_type,
            identity: Bytes::new(),
            as_server: false,
            max_message_size: None,
            max_command_size: DEFAULT_MAX_COMMAND_SIZE,
            reserve_ahead: 0,
        }
    }

    /// Sets our routing identity.
    pub fn with_identity(mut self, identity: impl Into<Bytes>) -> Config {
        self.identity = identity.into();
        self
    }

    /// Sets the message size limit from a ZMQ_MAXMSGSIZE value (negative:
    /// unlimited).
    pub fn with_zmq_maxmsgsize(mut self, maxmsgsize: i64) -> Config {
        self.max_message_size = u64::try_from(maxmsgsize).ok();
        self
    }
}

#[derive(Debug)]
enum State {
    Greeting { buf: [u8; GREETING_LEN], len: usize },
    Handshake { version: Version },
    Ready,
    Closed,
    Failed(Error),
}

/// A ZMTP connection: bytes in through [`handle_input`](Self::handle_input),
/// bytes out through [`poll_output`](Self::poll_output), events through
/// [`poll_event`](Self::poll_event). No I/O, no clock, no threads.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    state: State,
    decoder: FrameDecoder,
    out: OutputQueue,
    /// Events other than messages, each with the number of message parts
    /// queued before it (so that both come out in order).
    events: VecDeque<(u64, Event)>,
    /// Parts of complete messages with their MORE flags, in order.
    parts: VecDeque<(Bytes, bool)>,
    /// Parts ever queued in / taken from `parts`.
    parts_in: u64,
    parts_out: u64,
    peer: Option<PeerInfo>,
    /// The parts of the message being received.
    partial: Vec<Bytes>,
    held: VecDeque<Vec<Bytes>>,
}

impl Connection {
    /// A new connection; our greeting is queued for output at once.
    pub fn new(config: Config) -> Result<Connection> {
        if config.identity.len() > MAX_IDENTITY_LEN {
            return Err(Error::IdentityTooLong(config.identity.len()));
        }
        let mut out = OutputQueue::new();
        out.push_copy(&GreetingRepr::ours(config.identity.len(), config.as_server).to_bytes());
        Ok(Connection {
            config,
            state: State::Greeting {
                buf: [0; GREETING_LEN],
                len: 0,
            },
            decoder: FrameDecoder::new(),
            out,
            events: VecDeque::new(),
            parts: VecDeque::new(),
            parts_in: 0,
            parts_out: 0,
            peer: None,
            partial: Vec::new(),
            held: VecDeque::new(),
        })
    }

    /// The configuration this connection was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The peer, once the handshake is done.
    pub fn peer(&self) -> Option<&PeerInfo> {
        self.peer.as_ref()
    }

    /// Whether messages can flow.
    pub fn is_handshake_done(&self) -> bool {
        matches!(self.state, State::Ready)
    }

    /// Whether the connection has ended (peer ERROR, end of stream or failure).
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed | State::Failed(_))
    }

    /// The error that failed the connection, if any.
    pub fn error(&self) -> Option<&Error> {
        match &self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Feeds bytes received from the peer. On error the connection is failed
    /// and every later call returns the same error; events decoded before
    /// the bad bytes stay available from [`poll_event`](Self::poll_event).
    /// Input after a peer's ERROR is ignored.
    pub fn handle_input(&mut self, input: &[u8]) -> Result<()> {
        let mut input = input;
        self.handle(&mut input)
    }

    /// As [`handle_input`](Self::handle_input), for shared bytes: a message
    /// body that lies whole inside `input` is delivered as a slice of it,
    /// without copying (and keeps `input`'s storage alive while it lives).
    pub fn handle_input_bytes(&mut self, input: Bytes) -> Result<()> {
        let mut input = input;
        self.handle(&mut input)
    }

    fn handle<I: Input>(&mut self, input: &mut I) -> Result<()> {
        match &self.state {
            State::Failed(e) => return Err(e.clone()),
            State::Closed => return Ok(()),
            _ => {}
        }
        let r = self.process(input);
        if let Err(e) = &r {
            log::debug!("zmtp connection failed: {e}");
            self.state = State::Failed(e.clone());
        }
        r
    }

    /// Bytes still missing from the body of the message frame being
    /// received (0 if there is none), which the caller may read straight
    /// from the stream with [`read_body_from`](Self::read_body_from)
    /// instead of passing them to [`handle_input`](Self::handle_input).
    pub fn body_missing(&self) -> usize {
        match self.state {
            State::Ready => self.decoder.message_body_missing(),
            _ => 0,
        }
    }

    /// Reads the rest of the message body being received straight from
    /// `reader` into the body's own buffer (at most
    /// [`body_missing`](Self::body_missing) bytes, in as many reads as it
    /// takes until a read returns 0, fails or would block), and delivers
    /// the message if it is now complete. Returns the bytes read: 0 when
    /// the reader is at its end, or when no body is missing. As with
    /// [`Read::read`], an error means nothing was read (an error after some
    /// bytes is left for the next read to meet).
    ///
    /// With `std`'s sockets the kernel writes the body in place: the
    /// buffer is neither copied nor zero-filled first.
    pub fn read_body_from<R: Read + ?Sized>(&mut self, reader: &mut R) -> io::Result<usize> {
        if self.body_missing() == 0 {
            return Ok(0);
        }
        let limits = self.limits();
        let (n, frame) = self.decoder.read_body(reader, &limits)?;
        if let Some(frame) = frame {
            self.on_message_part(frame.body, frame.more);
        }
        Ok(n)
    }

    /// Tells the connection the peer closed its end of the stream. Returns
    /// an error if the stream ended inside the handshake, a frame or a
    /// multipart message (which is dropped, as libzmq does).
    pub fn handle_eof(&mut self) -> Result<()> {
        let r = match &self.state {
            State::Failed(e) => return Err(e.clone()),
            State::Closed => return Ok(()),
            State::Greeting { .. } => Err(Error::UnexpectedEof("the greeting")),
            State::Handshake { .. } => Err(Error::UnexpectedEof("the handshake")),
            State::Ready if !self.decoder.is_idle() => Err(Error::UnexpectedEof("a frame")),
            State::Ready if !self.partial.is_empty() => {
                Err(Error::UnexpectedEof("a multipart message"))
            }
            State::Ready => Ok(()),
        };
        self.partial.clear();
        self.state = match &r {
            Ok(()) => State::Closed,
            Err(e) => State::Failed(e.clone()),
        };
        r
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(&(at, _)) = self.events.front() {
            if at == self.parts_out {
                return self.events.pop_front().map(|(_, e)| e);
            }
        }
        let mut message = Vec::new();
        while let Some((body, more)) = self.parts.pop_front() {
            self.parts_out += 1;
            message.push(body);
            if !more {
                return Some(Event::Message(message));
            }
        }
        None
    }

    /// The next part of a received message with its MORE flag, if a
    /// message is what comes next; [`poll_event`](Self::poll_event) gives
    /// what else happened, in order. Only complete messages are handed out
    /// this way, one part at a time without collecting them: once the
    /// first part of a message is returned, the rest are there too.
    pub fn poll_message_part(&mut self) -> Option<(Bytes, bool)> {
        if self
            .events
            .front()
            .is_some_and(|&(at, _)| at == self.parts_out)
        {
            return None;
        }
        let part = self.parts.pop_front()?;
        self.parts_out += 1;
        Some(part)
    }

    /// The next chunk of bytes to write to the peer, if any. Chunks must be
    /// written in the order they are returned.
    pub fn poll_output(&mut self) -> Option<Bytes> {
        self.out.pop()
    }

    /// Bytes waiting in [`poll_output`](Self::poll_output).
    pub fn pending_output(&self) -> usize {
        self.out.len()
    }

    /// Queues a multipart message (MORE on every part but the last). Before
    /// the handshake completes the message is held and sent right after it.
    /// Large parts are not copied; nothing is allocated for a message of
    /// small parts once the handshake is done.
    pub fn send_message<I, B>(&mut self, parts: I) -> Result<()>
    where
        I: IntoIterator<Item = B>,
        B: Into<Bytes>,
    {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let mut parts = parts.into_iter().map(Into::into).peekable();
        if parts.peek().is_none() {
            return Err(Error::EmptyMessage);
        }
        if self.is_handshake_done() {
            self.encode_message(parts);
        } else {
            self.held.push_back(parts.collect());
        }
        Ok(())
    }

    /// Number of messages held until the handshake completes.
    pub fn held_messages(&self) -> usize {
        self.held.len()
    }

    /// Queues a PING (ZMTP 3.1 heartbeat). `ttl_deciseconds` tells the peer
    /// how long to wait for our traffic; the context (<= 16 bytes) comes
    /// back in [`Event::Pong`].
    pub fn send_ping(&mut self, ttl_deciseconds: u16, context: &[u8]) -> Result<()> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        if context.len() > MAX_PING_CONTEXT {
            return Err(Error::PingContextTooLong(context.len()));
        }
        match &self.peer {
            Some(p) if p.version >= Version::V3_1 => {}
            _ => return Err(Error::PingUnsupported),
        }
        self.queue_command(&Command::Ping {
            ttl_deciseconds,
            context: Bytes::copy_from_slice(context),
        })
    }

    fn limits(&self) -> Limits {
        Limits {
            max_message_frame: self.config.max_message_size,
            max_command_frame: self.config.max_command_size,
            allow_messages: matches!(self.state, State::Ready),
            reserve_ahead: self.config.reserve_ahead,
        }
    }

    fn process<I: Input>(&mut self, input: &mut I) -> Result<()> {
        loop {
            match &mut self.state {
                State::Greeting { buf, len } => {
                    let available = input.remaining();
                    let n = (GREETING_LEN - *len).min(available.len());
                    buf[*len..*len + n].copy_from_slice(&available[..n]);
                    *len += n;
                    input.advance(n);
                    check_prefix(&buf[..*len])?;
                    if *len < GREETING_LEN {
                        return Ok(());
                    }
                    let greeting = GreetingRepr::from_bytes(&buf[..])?;
                    self.on_greeting(&greeting)?;
                }
                State::Handshake { .. } | State::Ready => {
                    let limits = self.limits();
                    match self.decoder.decode(input, &limits)? {
                        Some(frame) => self.on_frame(frame)?,
                        None => return Ok(()),
                    }
                }
                State::Closed | State::Failed(_) => return Ok(()),
            }
        }
    }

    fn on_greeting(&mut self, g: &GreetingRepr) -> Result<()> {
        if g.mechanism != Mechanism::NULL {
            return Err(Error::UnsupportedMechanism(g.mechanism.name().to_owned()));
        }
        let ready = Command::Ready(Metadata::for_socket(
            self.config.socket_type,
            &self.config.identity,
        ));
        self.queue_command(&ready)?;
        self.state = State::Handshake {
            version: Version::from_greeting(g.major, g.minor),
        };
        Ok(())
    }

    fn on_frame(&mut self, frame: Frame) -> Result<()> {
        if !frame.command {
            return self.on_message_frame(frame);
        }
        let command = Command::parse(&frame.body)?;
        match (&self.state, command) {
            (_, Command::Error { reason }) => {
                self.push_event(Event::PeerError { reason });
                self.state = State::Closed;
            }
            (State::Handshake { version }, Command::Ready(metadata)) => {
                let version = *version;
                self.on_ready(version, metadata)?;
            }
            (
                State::Ready,
                Command::Ping {
                    ttl_deciseconds,
                    context,
                },
            ) => {
                let echoed = context.slice(..context.len().min(MAX_PING_CONTEXT));
                self.queue_command(&Command::Pong { context: echoed })?;
                self.push_event(Event::Ping { ttl_deciseconds });
            }
            (State::Ready, Command::Pong { context }) => {
                self.push_event(Event::Pong { context });
            }
            (State::Ready, Command::Other { name, .. }) => {
                log::debug!("zmtp: ignoring {} command", String::from_utf8_lossy(&name));
            }
            (_, c) => return Err(Error::UnexpectedCommand(c.name_lossy())),
        }
        Ok(())
    }

    fn on_ready(&mut self, version: Version, metadata: Metadata) -> Result<()> {
        let socket_type = metadata.socket_type()?;
        if !self.config.socket_type.is_compatible_with(socket_type) {
            return Err(Error::IncompatibleSocketType {
                ours: self.config.socket_type.name(),
                peer: socket_type.name(),
            });
        }
        let identity = metadata.identity()?;
        let peer = PeerInfo {
            version,
            socket_type,
            identity,
            metadata,
        };
        self.peer = Some(peer.clone());
        self.state = State::Ready;
        self.push_event(Event::HandshakeDone(peer));
        while let Some(parts) = self.held.pop_front() {
            self.encode_message(parts.into_iter().peekable());
        }
        Ok(())
    }

    fn on_message_frame(&mut self, frame: Frame) -> Result<()> {
        if !matches!(self.state, State::Ready) {
            return Err(Error::MessageBeforeReady);
        }
        self.on_message_part(frame.body, frame.more);
        Ok(())
    }

    fn on_message_part(&mut self, body: Bytes, more: bool) {
        if more {
            self.partial.push(body);
            return;
        }
        let n = self.partial.len();
        self.parts
            .extend(self.partial.drain(..).map(|part| (part, true)));
        self.parts.push_back((body, false));
        self.parts_in += n as u64 + 1;
    }

    fn push_event(&mut self, event: Event) {
        self.events.push_back((self.parts_in, event));
    }

    fn queue_command(&mut self, c: &Command) -> Result<()> {
        let mut r = Ok(());
        self.out.with_tail(|t| r = c.emit_frame(t));
        r
    }

    fn encode_message(&mut self, mut parts: std::iter::Peekable<impl Iterator<Item = Bytes>>) {
        while let Some(part) = parts.next() {
            let more = parts.peek().is_some();
            self.out
                .push_frame(FrameHeader::message(part.len() as u64, more), &part);
        }
    }
}
