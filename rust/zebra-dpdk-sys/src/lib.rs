//! Raw bindings to the system DPDK, for `zebra-net`'s DPDK device.
//!
//! Built from the installed `libdpdk-dev` (>= 22.11, found with pkg-config): bindgen over
//! an allow-list of EAL, ethdev and mbuf functions, plus `wrapper/zd.c` for what DPDK
//! defines as `static inline` or as a per-lcore variable (`rte_eth_rx_burst`,
//! `rte_pktmbuf_alloc`, `rte_errno`, …), named `zd_*`. No DPDK is vendored.
//!
//! When DPDK is not installed the crate is empty and [`FOUND`] is false, so the workspace
//! still builds; dependents' build scripts read `DEP_DPDK_FOUND`.

#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_debug_implementations
)]
#![allow(unsafe_code, clippy::all)]

/// Whether this build is bound to a system DPDK.
pub const FOUND: bool = cfg!(dpdk_found);

#[cfg(dpdk_found)]
include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

#[cfg(all(test, dpdk_found))]
mod tests {
    use super::*;

    #[test]
    fn wrapper_constants_come_from_the_installed_build() {
        // SAFETY: these wrappers only return compile-time constants of the DPDK build.
        let (ports, buf, headroom) = unsafe {
            (
                zd_max_ethports(),
                zd_mbuf_default_buf_size(),
                zd_pktmbuf_headroom(),
            )
        };
        assert!(ports >= 1);
        assert!(
            buf > headroom,
            "mbuf buffer {buf} must exceed its headroom {headroom}"
        );
        assert_eq!(usize::from(ports), RTE_MAX_ETHPORTS as usize);
    }
}
