//! Finds the system DPDK with pkg-config. When it is there (>= 22.11): generates the
//! bindings for the allow-listed API with bindgen, compiles `wrapper/zd.c`, links the four
//! DPDK libraries Zebra calls, and sets the `dpdk_found` cfg (and `DEP_DPDK_FOUND=1` for the
//! build scripts of dependent crates). When it is not: the crate is empty, and the build
//! says why in a warning.

use std::env;
use std::path::PathBuf;

const MIN_VERSION: &str = "22.11";
/// The libraries whose symbols the bindings and wrapper use; everything else DPDK ships
/// (drivers such as net_af_packet included) is loaded by the EAL at run time.
const LIBS: [&str; 4] = ["rte_eal", "rte_ethdev", "rte_mbuf", "rte_mempool"];
const FUNCTIONS: &str =
    "rte_eal_init|rte_eal_cleanup|rte_eal_get_runtime_dir|rte_strerror|rte_socket_id\
    |rte_eth_dev_count_avail|rte_eth_dev_configure|rte_eth_dev_info_get|rte_eth_rx_queue_setup\
    |rte_eth_tx_queue_setup|rte_eth_dev_start|rte_eth_dev_stop|rte_eth_dev_close\
    |rte_eth_macaddr_get|rte_eth_dev_socket_id|rte_eth_dev_get_name_by_port|rte_eth_stats_get\
    |rte_eth_promiscuous_enable|rte_eth_dev_get_mtu|rte_pktmbuf_pool_create|rte_mempool_free\
    |rte_mempool_avail_count|rte_mempool_in_use_count|zd_.*";

fn main() {
    println!("cargo:rustc-check-cfg=cfg(dpdk_found)");
    println!("cargo:rerun-if-changed=wrapper/zd.h");
    println!("cargo:rerun-if-changed=wrapper/zd.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let lib = match pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .cargo_metadata(false)
        .probe("libdpdk")
    {
        Ok(lib) => lib,
        Err(e) => {
            println!(
                "cargo:warning=zebra-dpdk-sys: no DPDK >= {MIN_VERSION} found with pkg-config ({}); \
                 building without DPDK (install libdpdk-dev to enable ZEBRA_NET=dpdk)",
                e.to_string()
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("not found")
                    .to_owned()
            );
            println!("cargo:found=0");
            return;
        }
    };
    let cflags = cflags();
    build_wrapper(&lib, &cflags);
    generate_bindings(&lib, &cflags);
    for dir in &lib.link_paths {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for name in LIBS {
        println!("cargo:rustc-link-lib=dylib={name}");
    }
    println!("cargo:rustc-cfg=dpdk_found");
    println!("cargo:found=1");
    println!("cargo:version={}", lib.version);
}

/// The compiler flags pkg-config gives besides include paths (`-include rte_config.h`,
/// `-march=...`), which DPDK's headers need.
fn cflags() -> Vec<String> {
    let out =
        std::process::Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
            .args(["--cflags-only-other", "libdpdk"])
            .output()
            .expect("pkg-config ran a moment ago");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn build_wrapper(lib: &pkg_config::Library, cflags: &[String]) {
    let mut build = cc::Build::new();
    build
        .file("wrapper/zd.c")
        .includes(&lib.include_paths)
        .warnings(true);
    for flag in pair_flags(cflags) {
        build.flag(&flag);
    }
    build.compile("zebra_dpdk_wrapper");
}

/// `-include X` comes as two words; cc and clang take it as one `-includeX`.
fn pair_flags(cflags: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = cflags.iter();
    while let Some(w) = words.next() {
        if w == "-include" {
            if let Some(file) = words.next() {
                out.push(format!("-include{file}"));
            }
        } else {
            out.push(w.clone());
        }
    }
    out
}

fn generate_bindings(lib: &pkg_config::Library, cflags: &[String]) {
    let mut builder = bindgen::Builder::default()
        .header("wrapper/zd.h")
        .allowlist_function(FUNCTIONS)
        .allowlist_var("RTE_ETH_.*|RTE_MAX_ETHPORTS|SOCKET_ID_ANY")
        .opaque_type("rte_mbuf|rte_mempool")
        .derive_default(true)
        .generate_comments(false)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for dir in &lib.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    for flag in pair_flags(cflags) {
        builder = builder.clang_arg(flag);
    }
    let bindings = builder.generate().expect("bindgen over wrapper/zd.h");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("write bindings.rs");
}
