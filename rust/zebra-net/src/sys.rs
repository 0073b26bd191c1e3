//! The OS calls the stack makes through `libc`: eventfds, `AF_PACKET` sockets, `ppoll`,
//! and `setns` (to put a thread into a network namespace, as the tests and the netns
//! testbed do); and what the engine needs of kernel streams that its socket crates lack
//! (`SO_RCVLOWAT`, a Unix peer's credentials, group membership for the IPC filters).
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    usize::try_from(ret).map_err(|_| io::Error::last_os_error())
}

/// Sets a socket's receive low-water mark (`SO_RCVLOWAT`): readiness waits for this many
/// bytes (at least 1; more than `c_int` holds is clamped).
pub fn set_recv_lowat(socket: &impl AsFd, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes.max(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: the descriptor is open for the call (borrowed); the option value is a c_int
    // that lives across the call, and its size is passed with it.
    check(unsafe {
        libc::setsockopt(
            socket.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// The process, user and group of the peer of a connected Unix stream (`SO_PEERCRED`).
pub fn peer_cred(socket: &impl AsFd) -> io::Result<(i32, u32, u32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the descriptor is open for the call (borrowed); `cred` and `len` live across
    // the call, and `len` holds `cred`'s size, which the kernel does not exceed.
    check(unsafe {
        libc::getsockopt(
            socket.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    })?;
    Ok((cred.pid, cred.uid, cred.gid))
}

/// Whether the user `uid` is listed as a member of group `gid` (the group's member list
/// from the system's user databases, as `getpwuid` and `getgrgid` see them; a user's
/// primary group is not listed there).
pub fn user_listed_in_group(uid: u32, gid: u32) -> bool {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `passwd` and `buf` outlive the call and `buf.len()` is passed with `buf`;
    // on success `found` points at `passwd`, whose strings point into `buf`.
    let name = unsafe {
        let mut passwd: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            uid,
            &mut passwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        );
        if rc != 0 || found.is_null() || passwd.pw_name.is_null() {
            return false;
        }
        std::ffi::CStr::from_ptr(passwd.pw_name).to_owned()
    };
    // SAFETY: as above, for the group entry; `gr_mem` is a NULL-terminated array of
    // NUL-terminated strings in `buf`, read before `buf` is dropped.
    unsafe {
        let mut group: libc::group = std::mem::zeroed();
        let mut found: *mut libc::group = std::ptr::null_mut();
        let rc = libc::getgrgid_r(
            gid,
            &mut group,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        );
        if rc != 0 || found.is_null() || group.gr_mem.is_null() {
            return false;
        }
        let mut member = group.gr_mem;
        while !(*member).is_null() {
            if std::ffi::CStr::from_ptr(*member) == name.as_c_str() {
                return true;
            }
            member = member.add(1);
        }
    }
    false
}

/// A non-blocking eventfd: one thread signals, another waits on it with poll/epoll.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd takes no pointers; a non-negative return is a new descriptor
        // that nothing else owns.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the eventfd readable (wakes its pollers).
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to a descriptor we own. A full counter
        // (EAGAIN) still leaves the eventfd readable, which is all a notification means.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Resets the counter (after a wake-up was seen).
    pub fn drain(&self) {
        let mut n: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64; EAGAIN (nothing pending) is fine.
        unsafe { libc::read(self.0.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Waits until one of `fds` is readable or `timeout` passes (`None`: no limit); true if
/// one is readable.
pub fn wait_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<bool> {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `polls` is a live array of `polls.len()` pollfds, `ts_ptr` null or a live
    // timespec, and a null signal mask leaves the mask unchanged.
    let ret = unsafe {
        libc::ppoll(
            polls.as_mut_ptr(),
            polls.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    match check(ret) {
        Ok(n) => Ok(n > 0),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

/// The kernel buffer of a packet socket, each way.
const PACKET_BUFFER: libc::c_int = 8 << 20;

/// An `AF_PACKET` raw socket bound to one interface: whole Ethernet frames in and out,
/// non-blocking, its own outgoing frames not looped back.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    /// The interface's MAC address and IP MTU.
    pub mac: [u8; 6],
    pub mtu: usize,
}

fn ifreq_for(iface: &str) -> io::Result<libc::ifreq> {
    if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || iface.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    // SAFETY: ifreq is plain old data; all zeros is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(iface.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// The IPv4 address of the interface named `iface` (`SIOCGIFADDR`), if it has one.
pub fn interface_ipv4(iface: &str) -> Option<std::net::Ipv4Addr> {
    let mut req = ifreq_for(iface).ok()?;
    // SAFETY: socket takes no pointers; a non-negative return is a new descriptor, owned
    // from here on.
    let fd = unsafe {
        let raw = check(libc::socket(
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
        ))
        .ok()?;
        OwnedFd::from_raw_fd(raw)
    };
    // SAFETY: `req` is a valid ifreq naming the interface and outlives the call; the
    // kernel writes the address into it.
    unsafe { check(libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFADDR, &mut req)).ok()? };
    // SAFETY: after SIOCGIFADDR succeeded on an AF_INET socket, the union holds a
    // sockaddr_in, which fits in a sockaddr.
    let addr: libc::sockaddr_in = unsafe { std::mem::transmute(req.ifr_ifru.ifru_addr) };
    Some(std::net::Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)))
}

impl PacketSocket {
    pub fn open(iface: &str) -> io::Result<PacketSocket> {
        let mut req = ifreq_for(iface)?;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket takes no pointers; a non-negative return is a new descriptor.
        let raw = check(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto.into(),
            )
        })?;
        // SAFETY: `raw` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the ioctls read the name from and write one union member into `req`, a
        // live ifreq.
        unsafe {
            check(libc::ioctl(raw, libc::SIOCGIFINDEX, &mut req))?;
        }
        // SAFETY: SIOCGIFINDEX filled the ifindex member of the union.
        let ifindex = unsafe { req.ifr_ifru.ifru_ifindex };
        // SAFETY: as above, for the MTU member.
        unsafe { check(libc::ioctl(raw, libc::SIOCGIFMTU, &mut req))? };
        // SAFETY: SIOCGIFMTU filled the mtu member.
        let mtu = usize::try_from(unsafe { req.ifr_ifru.ifru_mtu }).unwrap_or(1500);
        // SAFETY: as above, for the hardware address member.
        unsafe { check(libc::ioctl(raw, libc::SIOCGIFHWADDR, &mut req))? };
        let mut mac = [0u8; 6];
        // SAFETY: SIOCGIFHWADDR filled the hwaddr member (a sockaddr whose data starts
        // with the 6-byte Ethernet address).
        let data = unsafe { req.ifr_ifru.ifru_hwaddr.sa_data };
        for (dst, src) in mac.iter_mut().zip(data.iter()) {
            *dst = *src as u8;
        }
        // SAFETY: sockaddr_ll is plain old data; all zeros is valid before the fields are set.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto;
        addr.sll_ifindex = ifindex;
        // SAFETY: `addr` is a live sockaddr_ll and its size is passed with it.
        check(unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        let one: libc::c_int = 1;
        // SAFETY: the option value is a live c_int of the size given. Kernels before 4.20
        // lack the option; the stack then also sees its own frames, which it ignores.
        unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_PACKET,
                libc::PACKET_IGNORE_OUTGOING,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        // A TCP peer's burst (a whole receive window) must fit while the network thread
        // is not scheduled: the default buffer (about 200 KiB) overflows then, and every
        // drop costs a retransmission timeout. FORCE (root) passes rmem_max; without it
        // the kernel caps the plain option at rmem_max.
        let size: libc::c_int = PACKET_BUFFER;
        for (force, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            for opt in [force, plain] {
                // SAFETY: the option value is a live c_int of the size given.
                let r = unsafe {
                    libc::setsockopt(
                        raw,
                        libc::SOL_SOCKET,
                        opt,
                        (&size as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                if r == 0 {
                    break;
                }
            }
        }
        Ok(PacketSocket { fd, mac, mtu })
    }

    /// One frame into `buf`; `WouldBlock` when none is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is a live, writable buffer of `buf.len()` bytes.
        check_size(unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC,
            )
        })
    }

    /// Sends one frame.
    pub fn send(&self, frame: &[u8]) -> io::Result<usize> {
        // SAFETY: `frame` is a live buffer of `frame.len()` bytes.
        check_size(unsafe {
            libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0)
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Moves the calling thread into the network namespace `name` (`/run/netns/NAME`, as
/// `ip netns add` makes); threads it spawns afterwards start there too.
pub fn enter_netns(name: &str) -> io::Result<()> {
    if name.is_empty() || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad namespace name",
        ));
    }
    let file = File::open(format!("/run/netns/{name}"))?;
    // SAFETY: setns takes a descriptor we hold open for the call.
    check(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

/// Whether the process runs with an effective user id of 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// One datagram of [`recv_batch`]: its length and sender, or why it cannot be used.
pub type Received = io::Result<(usize, std::net::SocketAddr)>;

/// Receives up to `data.len() / slot` datagrams with one `recvmmsg` (non-blocking): the
/// `i`th lands at `data[i * slot..]`, and `got` is refilled with one entry per datagram
/// received, in order. A datagram longer than `slot` is reported as an error entry
/// (`InvalidData`), never handed on cut. `WouldBlock` when nothing is waiting.
pub fn recv_batch(
    socket: &impl AsFd,
    data: &mut [u8],
    slot: usize,
    got: &mut Vec<Received>,
) -> io::Result<()> {
    got.clear();
    if slot == 0 || data.len() < slot {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "recv_batch needs room for one datagram",
        ));
    }
    let slots = (data.len() / slot).min(MAX_BATCH);
    // SAFETY: sockaddr_storage is plain data, valid when zeroed.
    let mut names: Vec<libc::sockaddr_storage> = vec![unsafe { std::mem::zeroed() }; slots];
    let mut iovecs: Vec<libc::iovec> = data
        .chunks_exact_mut(slot)
        .take(slots)
        .map(|chunk| libc::iovec {
            iov_base: chunk.as_mut_ptr().cast(),
            iov_len: slot,
        })
        .collect();
    let mut headers = mmsg_headers(&mut names, &vec![STORAGE_LEN; slots], &mut iovecs);
    // SAFETY: the descriptor is open for the call (borrowed). Every header points at its
    // own sockaddr_storage (with its size) and one iovec over a disjoint `slot`-byte
    // chunk of `data`; `names`, `iovecs` and `data` outlive the call and none of them is
    // touched through Rust references while the kernel writes them. The headers' own
    // count is passed, no timeout.
    let n = check(unsafe {
        libc::recvmmsg(
            socket.as_fd().as_raw_fd(),
            headers.as_mut_ptr(),
            headers.len() as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    })?;
    let n = usize::try_from(n).unwrap_or(0).min(headers.len());
    for (h, name) in headers.iter().zip(&names).take(n) {
        let len = h.msg_len as usize;
        got.push(
            if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || len > slot {
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("datagram longer than {slot} bytes"),
                ))
            } else {
                from_storage(name, h.msg_hdr.msg_namelen).map(|from| (len, from))
            },
        );
    }
    Ok(())
}

/// Sends datagrams with `sendmmsg`, in order, non-blocking: returns how many of the first
/// ones the kernel took (at least one), or the error of the first if it took none, so a
/// caller resumes after the count, or skips one datagram on an error.
pub fn send_batch<B: AsRef<[u8]>>(
    socket: &impl AsFd,
    datagrams: &[(std::net::SocketAddr, B)],
) -> io::Result<usize> {
    let datagrams = &datagrams[..datagrams.len().min(MAX_BATCH)];
    if datagrams.is_empty() {
        return Ok(0);
    }
    let (mut names, names_len): (Vec<libc::sockaddr_storage>, Vec<libc::socklen_t>) =
        datagrams.iter().map(|(to, _)| to_storage(to)).unzip();
    let mut iovecs: Vec<libc::iovec> = datagrams
        .iter()
        .map(|(_, bytes)| libc::iovec {
            // The kernel only reads through a send's iovec.
            iov_base: bytes.as_ref().as_ptr().cast_mut().cast(),
            iov_len: bytes.as_ref().len(),
        })
        .collect();
    let mut headers = mmsg_headers(&mut names, &names_len, &mut iovecs);
    // SAFETY: the descriptor is open for the call (borrowed). Every header points at its
    // own address (with its length) and one iovec over bytes borrowed from `datagrams`,
    // which the kernel only reads; all of them outlive the call. The headers' own count
    // is passed, at most MAX_BATCH (the kernel's UIO_MAXIOV).
    let n = check(unsafe {
        libc::sendmmsg(
            socket.as_fd().as_raw_fd(),
            headers.as_mut_ptr(),
            headers.len() as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    })?;
    match usize::try_from(n) {
        Ok(n) if n > 0 => Ok(n.min(datagrams.len())),
        _ => Err(io::ErrorKind::WouldBlock.into()),
    }
}

/// One `mmsghdr` per iovec, the `i`th pointing at `names[i]` (`name_lens[i]` bytes of it)
/// and at `iovecs[i]` alone. The pointers are valid while the three slices are neither
/// moved nor used through references.
fn mmsg_headers(
    names: &mut [libc::sockaddr_storage],
    name_lens: &[libc::socklen_t],
    iovecs: &mut [libc::iovec],
) -> Vec<libc::mmsghdr> {
    let (name_base, iovec_base) = (names.as_mut_ptr(), iovecs.as_mut_ptr());
    (0..iovecs.len().min(names.len()).min(name_lens.len()))
        .map(|i| {
            // SAFETY: mmsghdr is plain data (pointers and lengths), valid when zeroed.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_name = name_base.wrapping_add(i).cast();
            h.msg_hdr.msg_namelen = name_lens[i];
            h.msg_hdr.msg_iov = iovec_base.wrapping_add(i);
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect()
}

/// Most datagrams one [`recv_batch`] or [`send_batch`] call handles (the kernel's
/// `UIO_MAXIOV` caps `vlen` at 1024).
pub const MAX_BATCH: usize = 1024;

const STORAGE_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_storage>() as _;

fn to_storage(addr: &std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data, valid when zeroed.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        std::net::SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for every sockaddr type.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

fn from_storage(
    storage: &libc::sockaddr_storage,
    len: libc::socklen_t,
) -> io::Result<std::net::SocketAddr> {
    let len = len as usize;
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the kernel wrote a sockaddr_in (family and length checked) into a
            // sockaddr_storage, which is larger than and aligned for it.
            let sin: libc::sockaddr_in =
                unsafe { std::ptr::read(std::ptr::from_ref(storage).cast()) };
            Ok(std::net::SocketAddr::from((
                sin.sin_addr.s_addr.to_ne_bytes(),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for a sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read(std::ptr::from_ref(storage).cast()) };
            Ok(std::net::SocketAddr::V6(std::net::SocketAddrV6::new(
                sin6.sin6_addr.s6_addr.into(),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        family => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sender address of family {family}, length {len}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{SocketAddr, UdpSocket};

    #[test]
    fn batches_carry_every_datagram_in_order_with_its_sender() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let sent: Vec<(SocketAddr, Vec<u8>)> = (0..100u32)
            .map(|i| (to, vec![i as u8; 1 + (i as usize * 13) % 1400]))
            .collect();
        let mut at = 0;
        while at < sent.len() {
            at += send_batch(&tx, &sent[at..]).unwrap();
        }
        let mut data = vec![0u8; 32 * 2048];
        let mut got = Vec::new();
        let mut received = Vec::new();
        while received.len() < sent.len() {
            match recv_batch(&rx, &mut data, 2048, &mut got) {
                Ok(()) => {
                    assert!(!got.is_empty() && got.len() <= 32);
                    for (i, r) in got.iter().enumerate() {
                        let (n, from) = r.as_ref().unwrap();
                        assert_eq!(*from, tx.local_addr().unwrap());
                        received.push(data[i * 2048..i * 2048 + n].to_vec());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        let want: Vec<Vec<u8>> = sent.into_iter().map(|(_, b)| b).collect();
        assert_eq!(received, want);
        let e = recv_batch(&rx, &mut data, 2048, &mut got).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn a_datagram_longer_than_its_slot_is_an_error_not_cut() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        assert_eq!(
            send_batch(&tx, &[(to, vec![7u8; 40]), (to, vec![8u8; 8])]).unwrap(),
            2
        );
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut one = [0u8; 1];
        rx.peek(&mut one).unwrap();
        let mut data = vec![0u8; 4 * 16];
        let mut got = Vec::new();
        let mut results = Vec::new();
        while results.len() < 2 {
            match recv_batch(&rx, &mut data, 16, &mut got) {
                Ok(()) => results.extend(
                    got.drain(..)
                        .map(|r| r.map(|(n, _)| n).map_err(|e| e.kind())),
                ),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(results, vec![Err(io::ErrorKind::InvalidData), Ok(8)]);
    }

    #[test]
    fn addresses_round_trip_through_sockaddr_storage() {
        for addr in ["192.0.2.7:9000", "[2001:db8::1]:443", "[fe80::1%3]:1"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let (storage, len) = to_storage(&addr);
            assert_eq!(from_storage(&storage, len).unwrap(), addr);
        }
        let (storage, _) = to_storage(&"192.0.2.7:9000".parse().unwrap());
        assert!(from_storage(&storage, 4).is_err());
    }
}
