//! Start-up errors of the DPDK back end: the EAL comes up (no hugepages, no PCI) but finds
//! no port, and the stack says so instead of running without one. One test per process
//! (the EAL starts once per process).

use zebra_net::testbed::{skip, NO_DPDK};

#[test]
#[ignore = "needs root and DPDK (scripts/test.sh runs it)"]
fn dpdk_without_a_port_is_a_clean_error() {
    if !zebra_net::sys::is_root() {
        skip("needs root");
        return;
    }
    if !zebra_net::DPDK_BUILT {
        skip(NO_DPDK);
        return;
    }
    let prefix = format!("zebra-noport-{}", std::process::id());
    let args = format!("--no-huge -m 128 --no-pci --no-shconf --file-prefix={prefix} -l 0 --log-level=lib.eal:error");
    let cfg = zebra_net::StackConfig::new(
        zebra_net::Backend::Dpdk { eal_args: args },
        [10, 1, 2, 3].into(),
        24,
    );
    let err = zebra_net::Stack::start(cfg).expect_err("no port");
    assert!(matches!(err, zebra_net::Error::NoPort(_)), "{err}");
    let run_dir = std::path::Path::new("/var/run/dpdk").join(&prefix);
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    let again = zebra_net::StackConfig::new(
        zebra_net::Backend::Dpdk {
            eal_args: "--no-huge".into(),
        },
        [10, 1, 2, 3].into(),
        24,
    );
    let err = zebra_net::Stack::start(again).expect_err("second EAL start");
    assert!(matches!(err, zebra_net::Error::Eal(_)), "{err}");
}
