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
