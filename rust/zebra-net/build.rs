//! Sets the `dpdk` cfg when the `dpdk` feature is on and zebra-dpdk-sys found a system
//! DPDK (its build script exports `DEP_DPDK_FOUND`).

fn main() {
    println!("cargo:rustc-check-cfg=cfg(dpdk)");
    println!("cargo:rerun-if-env-changed=DEP_DPDK_FOUND");
    if std::env::var("DEP_DPDK_FOUND").as_deref() == Ok("1") {
        println!("cargo:rustc-cfg=dpdk");
    }
}
