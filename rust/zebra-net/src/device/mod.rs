//! The devices under the stack: each is a smoltcp [`Device`] plus what the network thread
//! needs around `Interface::poll` ([`Port`]).

#[cfg(dpdk)]
pub(crate) mod dpdk;
pub(crate) mod raw;
pub(crate) mod selfloop;

use std::os::fd::RawFd;

use smoltcp::phy::Device;

/// Frame counters of a device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub rx_frames: u64,
    pub tx_frames: u64,
    /// Frames that could not be sent (device queue full, no buffer) or received whole.
    pub tx_dropped: u64,
    pub rx_dropped: u64,
    /// Frames the stack sent to itself, which never reached the device ([`selfloop`]).
    pub looped: u64,
}

pub(crate) trait Port: Device {
    /// The Ethernet address frames go out with.
    fn mac(&self) -> [u8; 6];
    /// Sends what `transmit` tokens queued (a burst).
    fn flush(&mut self);
    /// A descriptor that becomes readable when a frame arrives, if the device has one.
    fn wait_fd(&self) -> Option<RawFd>;
    fn counters(&self) -> Counters;
    /// Packet buffers of the device's pool in use (DPDK mbufs), if it has a pool.
    fn buffers_in_use(&self) -> Option<u32> {
        None
    }
    /// Releases the device; an error if resources leaked.
    fn close(self) -> Result<(), crate::Error>;
}
