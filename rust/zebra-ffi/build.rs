fn main() {
    // Generates the C++ side of the bridge; cxx-build also links it under
    // target/cxxbridge/ so cpp-shim/Makefile can include `zebra-ffi/src/lib.rs.h` and `native.rs.h`.
    cxx_build::bridges(["src/lib.rs", "src/native.rs"])
        .std("c++17")
        .compile("zebra-ffi-bridge");
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=src/native.rs");
}
