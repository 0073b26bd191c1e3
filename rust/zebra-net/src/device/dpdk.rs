//! The stack over a DPDK port: frames come in and go out in bursts of mbufs from one
//! pool. Every mbuf taken from the pool is owned by exactly one of: the received array
//! (until handed out), an [`RxToken`] (freed when dropped), the transmit array (until
//! `rte_eth_tx_burst` takes it or it is freed as dropped). At close the pool's in-use
//! count must be zero.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;
use zebra_dpdk_sys as rte;

use super::{Counters, Port};
use crate::{Error, StackConfig};

const BURST: usize = 32;
const ETH_HEADER: usize = 14;
/// Transmit retries of a burst the device took only part of, before the rest is dropped
/// (as a full NIC queue drops; TCP retransmits).
const TX_RETRIES: usize = 8;
/// The EAL can be initialised once per process (even after `rte_eal_cleanup`).
static EAL_USED: AtomicBool = AtomicBool::new(false);

fn rte_error(code: c_int) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated
    // string, valid until the next call on this thread; it is copied at once.
    let msg = unsafe { CStr::from_ptr(rte::rte_strerror(code)) };
    format!("{} (rte_errno {code})", msg.to_string_lossy())
}

fn last_error() -> String {
    // SAFETY: zd_errno reads this thread's rte_errno.
    rte_error(unsafe { rte::zd_errno() })
}

/// Initialises the EAL with `args` (whitespace-separated; the program name is added).
fn eal_init(args: &str) -> Result<(), Error> {
    if EAL_USED.swap(true, Ordering::SeqCst) {
        return Err(Error::Eal(
            "the EAL was already initialised in this process".into(),
        ));
    }
    let owned: Vec<CString> = std::iter::once("zebra")
        .chain(args.split_whitespace())
        .map(|a| {
            CString::new(a).map_err(|_| Error::Config(format!("EAL argument {a:?} contains NUL")))
        })
        .collect::<Result<_, _>>()?;
    let mut argv: Vec<*mut c_char> = owned.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: argv holds `owned.len()` pointers to NUL-terminated strings that outlive
    // the call, then NULL. The EAL may permute argv's pointers, never the strings.
    let ret = unsafe { rte::rte_eal_init(owned.len() as c_int, argv.as_mut_ptr()) };
    if ret < 0 {
        return Err(Error::Eal(last_error()));
    }
    Ok(())
}

/// The EAL's run directory, while the EAL is up.
fn runtime_dir() -> Option<std::path::PathBuf> {
    // SAFETY: the EAL is initialised; the string it returns lives as long as the EAL and
    // is copied at once.
    let dir = unsafe { rte::rte_eal_get_runtime_dir() };
    if dir.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated (EAL invariant).
    let dir = unsafe { CStr::from_ptr(dir) }
        .to_string_lossy()
        .into_owned();
    Some(dir.into()).filter(|d: &std::path::PathBuf| d.components().count() > 2)
}

/// Cleans the EAL up (nothing of it may be in use) and removes its run directory, which
/// `rte_eal_cleanup` leaves behind.
fn eal_cleanup(run_dir: Option<std::path::PathBuf>) {
    // SAFETY: the caller no longer uses any EAL object.
    unsafe { rte::rte_eal_cleanup() };
    if let Some(dir) = run_dir {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => log::warn!(
                "zebra-net: removing the EAL run directory {}: {e}",
                dir.display()
            ),
        }
    }
}

/// An mbuf owned by this wrapper; freed when dropped.
struct Mbuf(*mut rte::rte_mbuf);

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: the wrapper owns a valid mbuf (invariant of its construction) and
        // nothing uses it after this.
        unsafe { rte::zd_pktmbuf_free(self.0) };
    }
}

pub(crate) struct DpdkPort {
    port: u16,
    /// The EAL's run directory (`/var/run/dpdk/PREFIX` for root), removed at close.
    run_dir: Option<std::path::PathBuf>,
    pool: *mut rte::rte_mempool,
    mac: [u8; 6],
    mtu: usize,
    /// Received mbufs `rx_pos..rx_len` not yet handed to smoltcp.
    rx: [*mut rte::rte_mbuf; BURST],
    rx_pos: usize,
    rx_len: usize,
    tx: TxQueue,
    rx_counters: Counters,
}

struct TxQueue {
    port: u16,
    pool: *mut rte::rte_mempool,
    pending: Vec<*mut rte::rte_mbuf>,
    /// Where a frame is built when the pool is empty (it is then dropped).
    scratch: Vec<u8>,
    counters: Counters,
}

impl TxQueue {
    fn flush(&mut self) {
        let mut sent = 0;
        let mut tries = 0;
        while sent < self.pending.len() && tries <= TX_RETRIES {
            let rest = &mut self.pending[sent..];
            // SAFETY: `rest` holds valid mbufs we own; tx_burst takes ownership of the
            // first `n` it returns and leaves the others to us.
            let n =
                unsafe { rte::zd_eth_tx_burst(self.port, 0, rest.as_mut_ptr(), rest.len() as u16) };
            sent += usize::from(n);
            tries += usize::from(n == 0);
        }
        self.counters.tx_frames += sent as u64;
        for &m in &self.pending[sent..] {
            self.counters.tx_dropped += 1;
            drop(Mbuf(m));
        }
        self.pending.clear();
    }
}

impl DpdkPort {
    /// Starts the EAL and the first available port (one rx and one tx queue).
    pub fn open(cfg: &StackConfig, eal_args: &str) -> Result<DpdkPort, Error> {
        eal_init(eal_args)?;
        let run_dir = runtime_dir();
        match Self::start_port(cfg) {
            Ok(mut port) => {
                port.run_dir = run_dir;
                Ok(port)
            }
            Err(e) => {
                eal_cleanup(run_dir);
                Err(e)
            }
        }
    }

    fn start_port(cfg: &StackConfig) -> Result<DpdkPort, Error> {
        // SAFETY: the EAL is initialised; these calls only read ethdev tables.
        let (count, port) = unsafe { (rte::rte_eth_dev_count_avail(), rte::zd_eth_next_port(0)) };
        if count == 0 || port >= unsafe { rte::zd_max_ethports() } {
            return Err(Error::NoPort(format!(
                "rte_eth_dev_count_avail() = {count}"
            )));
        }
        let fail = |what: &str, code: c_int| Error::Port {
            port,
            what: format!("{what}: {}", rte_error(-code)),
        };
        // SAFETY: `port` is a valid port id.
        let socket = unsafe { rte::rte_eth_dev_socket_id(port) };
        let name =
            CString::new(format!("zebra_pool_{}", std::process::id())).expect("no NUL in a number");
        // SAFETY: the name is a live NUL-terminated string; the sizes are the build's own.
        let pool = unsafe {
            rte::rte_pktmbuf_pool_create(
                name.as_ptr(),
                cfg.mbufs,
                256.min(cfg.mbufs / 2),
                0,
                rte::zd_mbuf_default_buf_size(),
                socket,
            )
        };
        if pool.is_null() {
            return Err(Error::Port {
                port,
                what: format!("mbuf pool of {} mbufs: {}", cfg.mbufs, last_error()),
            });
        }
        let started = (|| {
            let conf = rte::rte_eth_conf::default();
            // SAFETY: `conf` is a live, zero-initialised configuration (all defaults).
            let r = unsafe { rte::rte_eth_dev_configure(port, 1, 1, &conf) };
            if r < 0 {
                return Err(fail("configure", r));
            }
            // SAFETY: the port is configured for one queue each way; `pool` is valid and
            // a null rxconf/txconf means the driver's defaults.
            let r = unsafe {
                rte::rte_eth_rx_queue_setup(
                    port,
                    0,
                    cfg.rx_ring,
                    socket as u32,
                    std::ptr::null(),
                    pool,
                )
            };
            if r < 0 {
                return Err(fail("rx queue setup", r));
            }
            // SAFETY: as above.
            let r = unsafe {
                rte::rte_eth_tx_queue_setup(port, 0, cfg.tx_ring, socket as u32, std::ptr::null())
            };
            if r < 0 {
                return Err(fail("tx queue setup", r));
            }
            // SAFETY: queues are set up.
            let r = unsafe { rte::rte_eth_dev_start(port) };
            if r < 0 {
                return Err(fail("start", r));
            }
            Ok(())
        })();
        if let Err(e) = started {
            // SAFETY: the port is not started (or failed to) and the pool has no mbuf out.
            unsafe {
                rte::rte_eth_dev_close(port);
                rte::rte_mempool_free(pool);
            }
            return Err(e);
        }
        let mut addr = rte::rte_ether_addr::default();
        let mut mtu: u16 = 1500;
        // SAFETY: both out-parameters are live and of the types the functions write.
        unsafe {
            rte::rte_eth_macaddr_get(port, &mut addr);
            rte::rte_eth_dev_get_mtu(port, &mut mtu);
        }
        Ok(DpdkPort {
            port,
            run_dir: None,
            pool,
            mac: addr.addr_bytes,
            mtu: usize::from(mtu),
            rx: [std::ptr::null_mut(); BURST],
            rx_pos: 0,
            rx_len: 0,
            tx: TxQueue {
                port,
                pool,
                pending: Vec::with_capacity(BURST),
                scratch: Vec::new(),
                counters: Counters::default(),
            },
            rx_counters: Counters::default(),
        })
    }

    /// Mbufs of the pool currently taken.
    pub fn mbufs_in_use(&self) -> u32 {
        // SAFETY: the pool is valid until `close`.
        unsafe { rte::rte_mempool_in_use_count(self.pool) }
    }
}

pub(crate) struct RxToken {
    mbuf: Mbuf,
}

pub(crate) struct TxToken<'a> {
    queue: &'a mut TxQueue,
}

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let m = self.mbuf.0;
        // SAFETY: `m` is a valid received mbuf we own until `self` drops.
        let (segs, len) = unsafe { (rte::zd_pktmbuf_nb_segs(m), rte::zd_pktmbuf_pkt_len(m)) };
        if segs == 1 {
            // SAFETY: a single-segment mbuf holds `len` contiguous bytes at its data
            // pointer, alive while we own it.
            let data = unsafe { std::slice::from_raw_parts(rte::zd_pktmbuf_data(m), len as usize) };
            f(data)
        } else {
            let mut copy = vec![0u8; len as usize];
            // SAFETY: `copy` has room for `len` bytes, the packet's whole length, so the
            // read is in range and returns a pointer to `len` valid bytes.
            let p = unsafe { rte::zd_pktmbuf_read(m, 0, len, copy.as_mut_ptr()) };
            if p != copy.as_ptr() && !p.is_null() {
                // SAFETY: as above; `p` points to `len` bytes inside the mbuf.
                copy.copy_from_slice(unsafe { std::slice::from_raw_parts(p, len as usize) });
            }
            f(&copy)
        }
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let q = self.queue;
        // SAFETY: the pool is valid; a null return means it is empty.
        let m = unsafe { rte::zd_pktmbuf_alloc(q.pool) };
        let data = if m.is_null() || len > usize::from(u16::MAX) {
            std::ptr::null_mut()
        } else {
            // SAFETY: `m` is a fresh mbuf we own; append returns null if it lacks room.
            unsafe { rte::zd_pktmbuf_append(m, len as u16) }
        };
        if data.is_null() {
            if !m.is_null() {
                drop(Mbuf(m));
            }
            q.counters.tx_dropped += 1;
            q.scratch.resize(len, 0);
            return f(&mut q.scratch[..len]);
        }
        // SAFETY: append made `len` bytes at `data` part of the mbuf, which we own.
        let out = f(unsafe { std::slice::from_raw_parts_mut(data, len) });
        q.pending.push(m);
        if q.pending.len() == BURST {
            q.flush();
        }
        out
    }
}

impl Device for DpdkPort {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken, TxToken<'_>)> {
        if self.rx_pos == self.rx_len {
            // SAFETY: `rx` has room for BURST pointers; rx_burst hands us ownership of
            // the first `n` it fills.
            let n =
                unsafe { rte::zd_eth_rx_burst(self.port, 0, self.rx.as_mut_ptr(), BURST as u16) };
            self.rx_pos = 0;
            self.rx_len = usize::from(n);
            self.rx_counters.rx_frames += u64::from(n);
            if n == 0 {
                return None;
            }
        }
        let mbuf = Mbuf(self.rx[self.rx_pos]);
        self.rx_pos += 1;
        Some((
            RxToken { mbuf },
            TxToken {
                queue: &mut self.tx,
            },
        ))
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_>> {
        Some(TxToken {
            queue: &mut self.tx,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.mtu + ETH_HEADER;
        caps.max_burst_size = Some(BURST);
        caps
    }
}

impl Port for DpdkPort {
    fn mac(&self) -> [u8; 6] {
        self.mac
    }

    fn flush(&mut self) {
        if !self.tx.pending.is_empty() {
            self.tx.flush();
        }
    }

    fn wait_fd(&self) -> Option<RawFd> {
        None
    }

    fn counters(&self) -> Counters {
        Counters {
            rx_frames: self.rx_counters.rx_frames,
            rx_dropped: self.rx_counters.rx_dropped,
            tx_frames: self.tx.counters.tx_frames,
            tx_dropped: self.tx.counters.tx_dropped,
            looped: 0,
        }
    }

    fn buffers_in_use(&self) -> Option<u32> {
        Some(self.mbufs_in_use())
    }

    /// Flushes, frees what is held, stops and closes the port, checks that no mbuf is
    /// still taken, frees the pool and cleans the EAL up.
    fn close(mut self) -> Result<(), Error> {
        self.flush();
        for &m in &self.rx[self.rx_pos..self.rx_len] {
            drop(Mbuf(m));
        }
        self.rx_pos = self.rx_len;
        // SAFETY: the port is started; after stop and close the driver holds no mbuf.
        unsafe {
            rte::rte_eth_dev_stop(self.port);
            rte::rte_eth_dev_close(self.port);
        }
        let in_use = self.mbufs_in_use();
        if in_use == 0 {
            // SAFETY: a pool with no mbuf out can be freed; with a leak it is left alone
            // (freeing it would free memory something still points to).
            unsafe { rte::rte_mempool_free(self.pool) };
        }
        eal_cleanup(self.run_dir.take());
        if in_use == 0 {
            Ok(())
        } else {
            Err(Error::MbufLeak(in_use))
        }
    }
}
