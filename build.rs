//! Generates the gRPC API (`src/grpc/`) from `proto/cohort.proto` with tonic's code
//! generator. The schema is parsed by protox, a protobuf compiler written in Rust,
//! so building needs no `protoc` on the machine. The code goes to `OUT_DIR` and is
//! included by `src/grpc/proto.rs`.

use std::path::Path;

fn main() {
    let schema = Path::new("proto/cohort.proto");
    println!("cargo:rerun-if-changed={}", schema.display());
    println!("cargo:rerun-if-changed=build.rs");
    let descriptors = match protox::compile([schema], ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(e) => fail(&format!("cannot parse {}: {e:?}", schema.display())),
    };
    // The client is generated too (without a transport of its own), for programs
    // and tests written in Rust; the server is what `cohort serve --grpc` runs.
    let generated = tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        .compile_fds(descriptors);
    if let Err(e) = generated {
        fail(&format!(
            "cannot generate code from {}: {e}",
            schema.display()
        ));
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}
