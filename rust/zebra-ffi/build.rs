fn main() {
    // Generates the C++ side of the bridge; cxx-build also links it under
    // target/cxxbridge/ so cpp-shim/Makefile can include `zebra-ffi/src/lib.rs.h`.
    cxx_build::bridge("src/lib.rs").std("c++17").compile("zebra-ffi-bridge");
    println!("cargo:rerun-if-changed=src/lib.rs");
}
