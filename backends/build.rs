//! Generates the iTerm2 protocol messages from cohort's schema of iTerm2's API,
//! `proto/iterm2.proto`, with prost-build. The schema is parsed by protox, a
//! protobuf compiler written in Rust, so building needs no `protoc` on the machine.
//! The code goes to `OUT_DIR` and is included by `src/iterm2/proto.rs`.

use std::path::Path;

fn main() {
    let schema = Path::new("proto/iterm2.proto");
    println!("cargo:rerun-if-changed={}", schema.display());
    println!("cargo:rerun-if-changed=build.rs");
    let descriptors = match protox::compile([schema], ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(e) => fail(&format!("cannot parse {}: {e:?}", schema.display())),
    };
    let mut config = prost_build::Config::new();
    // Enum variants keep the schema's names (`CONTINUATION_HARD_EOL` becomes
    // `ContinuationHardEol`), so they can be found in the schema as written.
    config.retain_enum_prefix();
    if let Err(e) = config.compile_fds(descriptors) {
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
