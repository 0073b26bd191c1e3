//! The netns testbed for the user-level stack: a namespace pair from
//! `scripts/netns-pair.sh`, our stack in one (over DPDK's af_packet PMD or a raw socket),
//! the kernel in the other, and the traffic checks both back ends share.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

pub use zebra_net::testbed::{can_run, Pair};
use zebra_net::{sys, Stack, TcpListener, TcpStream, UdpSocket};

/// Any single wait in these tests; a stuck transfer fails instead of hanging.
pub const DEADLINE: Duration = Duration::from_secs(120);

pub fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The test stream: byte `i` is `pattern[i % len] ^ (i / len)`, from a seeded xorshift.
pub struct Pattern(Vec<u8>);

impl Pattern {
    pub fn new(seed: u64) -> Pattern {
        let mut x = seed | 1;
        let bytes = (0..1 << 17)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()
            })
            .collect();
        Pattern(bytes)
    }

    /// Fills `buf` with the stream's bytes from `offset`.
    pub fn fill(&self, offset: u64, buf: &mut [u8]) {
        let len = self.0.len() as u64;
        for (i, b) in buf.iter_mut().enumerate() {
            let at = offset + i as u64;
            *b = self.0[(at % len) as usize] ^ (at / len) as u8;
        }
    }
}

/// Waits until `fd` signals or the deadline passes (then panics with `what`).
pub fn wait(fd: std::os::fd::RawFd, started: Instant, what: &str) {
    assert!(
        started.elapsed() < DEADLINE,
        "{what}: no progress within {DEADLINE:?}"
    );
    sys::wait_readable(&[fd], Some(Duration::from_millis(50))).expect("ppoll");
}

/// Sends `total` bytes of the pattern on a stack stream, then closes it.
pub fn stack_send(stream: &TcpStream, pattern: &Pattern, total: u64) {
    let started = Instant::now();
    while !stream.poll_connected().expect("connect") {
        wait(stream.fd(), started, "connect");
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut sent = 0u64;
    let mut filled = 0u64;
    let mut pending = 0..0;
    while sent < total {
        if pending.is_empty() {
            let n = buf.len().min((total - filled) as usize);
            pattern.fill(filled, &mut buf[..n]);
            filled += n as u64;
            pending = 0..n;
        }
        match (&*stream).write(&buf[pending.clone()]) {
            Ok(n) => {
                pending.start += n;
                sent += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait(stream.fd(), started, "send")
            }
            Err(e) => panic!("send after {sent} bytes: {e}"),
        }
    }
    stream.shutdown_write();
    while stream.send_queue() > 0 {
        wait(stream.fd(), started, "drain");
    }
}

/// Reads a stack stream to its end, checking every byte against the pattern; returns
/// the byte count.
pub fn stack_receive(stream: &TcpStream, pattern: &Pattern) -> u64 {
    let started = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    let mut want = vec![0u8; 64 * 1024];
    let mut got = 0u64;
    loop {
        match (&*stream).read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => {
                pattern.fill(got, &mut want[..n]);
                assert!(
                    buf[..n] == want[..n],
                    "stack received wrong bytes at offset {got}..{}",
                    got + n as u64
                );
                got += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait(stream.fd(), started, "receive")
            }
            Err(e) => panic!("receive after {got} bytes: {e}"),
        }
    }
}

/// Kernel side: reads a std stream to its end, checking the pattern.
pub fn kernel_receive(mut stream: std::net::TcpStream, pattern: &Pattern) -> u64 {
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut want = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    loop {
        let n = stream.read(&mut buf).expect("kernel read");
        if n == 0 {
            return got;
        }
        pattern.fill(got, &mut want[..n]);
        assert!(
            buf[..n] == want[..n],
            "kernel received wrong bytes at offset {got}..{}",
            got + n as u64
        );
        got += n as u64;
    }
}

/// Kernel side: writes `total` pattern bytes and closes.
pub fn kernel_send(mut stream: std::net::TcpStream, pattern: &Pattern, total: u64) {
    stream.set_write_timeout(Some(DEADLINE)).unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut sent = 0u64;
    while sent < total {
        let n = buf.len().min((total - sent) as usize);
        pattern.fill(sent, &mut buf[..n]);
        stream.write_all(&buf[..n]).expect("kernel write");
        sent += n as u64;
    }
}

/// ARP both ways, then UDP echo by the kernel of `count` datagrams of varied sizes.
pub fn udp_echo(pair: &Pair, stack: &Stack, count: usize) {
    let kernel = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let echo = pair.in_kernel(move || {
        drop(kernel);
        let sock = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).expect("kernel UDP bind");
        sock.set_read_timeout(Some(DEADLINE)).unwrap();
        ready_tx.send(sock.local_addr().unwrap().port()).unwrap();
        let mut buf = [0u8; 2048];
        for _ in 0..count {
            let (n, from) = sock.recv_from(&mut buf).expect("kernel UDP receive");
            sock.send_to(&buf[..n], from).expect("kernel UDP send");
        }
    });
    let port = ready_rx.recv().expect("kernel UDP port");
    let to = SocketAddrV4::new(pair.kernel_ip, port);
    let sock = UdpSocket::bind(stack, 0).expect("stack UDP bind");
    let max = sock.max_payload();
    let pattern = Pattern::new(7);
    let mut out = vec![0u8; max];
    let mut back = vec![0u8; 2048];
    let started = Instant::now();
    for i in 0..count {
        let len = 1 + (i * 131) % max;
        pattern.fill((i * 4096) as u64, &mut out[..len]);
        loop {
            match sock.send_to(&out[..len], to) {
                Ok(n) => break assert_eq!(n, len),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    wait(sock.fd(), started, "UDP send")
                }
                Err(e) => panic!("UDP send {i}: {e}"),
            }
        }
        let (n, from) = loop {
            match sock.recv_from(&mut back) {
                Ok(r) => break r,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    wait(sock.fd(), started, "UDP echo")
                }
                Err(e) => panic!("UDP receive {i}: {e}"),
            }
        };
        assert_eq!(from, to, "echo {i} from the wrong sender");
        assert_eq!(&back[..n], &out[..len], "echo {i} differs");
    }
    echo.join().expect("kernel echo thread");
    let arp = pair
        .kernel_neighbour()
        .expect("the kernel learned the stack's MAC by ARP");
    assert_eq!(
        arp,
        mac_text(stack.mac()),
        "the kernel's ARP entry for {}",
        pair.stack_ip
    );
    println!(
        "udp: {count} datagrams echoed ({:.0} round trips/s); kernel ARP entry {arp}",
        count as f64 / started.elapsed().as_secs_f64()
    );
}

/// A stack client sends `total` bytes to a kernel server, and a kernel client sends
/// `total` bytes to a stack listener; every byte is checked.
pub fn tcp_both_ways(pair: &Pair, stack: &Stack, total: u64) {
    let pattern = std::sync::Arc::new(Pattern::new(42));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let p = pattern.clone();
    let server = pair.in_kernel(move || {
        let l = std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).expect("kernel listen");
        ready_tx.send(l.local_addr().unwrap().port()).unwrap();
        let (s, _) = l.accept().expect("kernel accept");
        kernel_receive(s, &p)
    });
    let port = ready_rx.recv().unwrap();
    let started = Instant::now();
    let stream =
        TcpStream::connect(stack, SocketAddrV4::new(pair.kernel_ip, port)).expect("stack connect");
    stack_send(&stream, &pattern, total);
    let got = server.join().expect("kernel server");
    assert_eq!(got, total, "kernel received {got} of {total} bytes");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "tcp stack->kernel: {total} bytes in {secs:.2}s ({:.1} MB/s)",
        total as f64 / secs / 1e6
    );
    drop(stream);

    let listener = TcpListener::bind(stack, 0).expect("stack listen");
    let to = SocketAddrV4::new(pair.stack_ip, listener.port());
    let p = pattern.clone();
    let client = pair.in_kernel(move || {
        let s = std::net::TcpStream::connect_timeout(&to.into(), DEADLINE)
            .expect("kernel connect to the stack");
        kernel_send(s, &p, total);
    });
    let started = Instant::now();
    let stream = accept_from(&listener, pair.kernel_ip, started);
    let got = stack_receive(&stream, &pattern);
    client.join().expect("kernel client");
    assert_eq!(got, total, "stack received {got} of {total} bytes");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "tcp kernel->stack: {total} bytes in {secs:.2}s ({:.1} MB/s)",
        total as f64 / secs / 1e6
    );
}

/// A refused connect (no kernel listener on the port) fails cleanly.
pub fn tcp_refused(pair: &Pair, stack: &Stack) {
    let port = pair
        .in_kernel(|| {
            std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        })
        .join()
        .unwrap();
    let stream =
        TcpStream::connect(stack, SocketAddrV4::new(pair.kernel_ip, port)).expect("connect starts");
    let started = Instant::now();
    let err = loop {
        match stream.poll_connected() {
            Ok(false) => wait(stream.fd(), started, "refused connect"),
            Ok(true) => panic!("connected to a closed port"),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
}

/// A connection from the stack to its own address (PS-lite's scheduler connects to its own
/// ROUTER): `total` bytes through the self-loop, every byte checked, no frame on the wire.
pub fn tcp_to_itself(pair: &Pair, stack: &Stack, total: u64) {
    let pattern = Pattern::new(7);
    let before = stack.stats();
    let listener = TcpListener::bind(stack, 0).expect("stack listen");
    let stream = TcpStream::connect(stack, SocketAddrV4::new(pair.stack_ip, listener.port()))
        .expect("connect to itself");
    let started = Instant::now();
    let accepted = accept_from(&listener, pair.stack_ip, started);
    let got = std::thread::scope(|s| {
        let receiver = s.spawn(|| stack_receive(&accepted, &pattern));
        stack_send(&stream, &pattern, total);
        receiver.join().expect("receiver")
    });
    assert_eq!(got, total, "received {got} of {total} bytes from itself");
    let after = stack.stats();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "tcp stack->itself: {total} bytes in {secs:.2}s ({:.1} MB/s), {} frames looped",
        total as f64 / secs / 1e6,
        after.looped - before.looped
    );
    assert!(
        after.looped > before.looped,
        "the frames went through the self-loop"
    );
}

/// The next connection the stack's listener accepts, which must come from `peer`.
fn accept_from(listener: &TcpListener, peer: Ipv4Addr, started: Instant) -> TcpStream {
    loop {
        match listener.accept() {
            Ok((s, from)) => {
                assert_eq!(from.ip(), std::net::IpAddr::V4(peer));
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait(listener.fd(), started, "accept")
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}
