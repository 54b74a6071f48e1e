//! Lays out the release binary with the functions a session runs together.
//!
//! Most of a `cohort mcp` server's resident memory is its own program text: the kernel
//! maps 64 KiB around each page of code first run, and the functions a session runs are
//! spread over the whole binary, so nearly all of it ends up mapped. The list in
//! `packaging/symbol-order/<target>.txt` names them (`packaging/symbol_order.py` makes
//! it by running a release build); lld places them first (`--symbol-ordering-file`),
//! and the rest of the program is never mapped.
//!
//! Symbol names carry hashes of the toolchain, profile and dependencies: a list made
//! with another toolchain matches nothing and changes nothing (lld is told not to warn).
//! The list is applied to release builds of a target that has one, and only where a
//! probe shows the linker takes the flag: lld does (the Rust toolchain's default on
//! x86_64 Linux since 1.90); GNU ld, which a distribution's rustc or a user's
//! configuration may choose, does not, and the build goes on in the linker's order.
//! `COHORT_SYMBOL_ORDER=FILE` links with another list (the release script's, made
//! from the very build it orders); `COHORT_SYMBOL_ORDER=` with none.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=COHORT_SYMBOL_ORDER");
    // `release` for every profile that inherits from it (`bench` too).
    if env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    let target = env::var("TARGET").unwrap_or_default();
    let list = match env::var_os("COHORT_SYMBOL_ORDER") {
        Some(path) if path.is_empty() => return,
        // A list named and missing is a mistake worth stopping for.
        Some(path) => {
            let list = PathBuf::from(&path);
            println!("cargo:rerun-if-changed={}", list.display());
            list.canonicalize()
                .unwrap_or_else(|error| panic!("COHORT_SYMBOL_ORDER={}: {error}", list.display()))
        }
        // A target without a list keeps the linker's order. The directory is watched
        // (a missing file watched would run this script, and link again, every build).
        None => {
            let dir = Path::new("packaging/symbol-order");
            println!("cargo:rerun-if-changed={}", dir.display());
            match dir.join(format!("{target}.txt")).canonicalize() {
                Ok(list) => list,
                Err(_) => return,
            }
        }
    };
    let flags = [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
    ];
    if links_with(&flags, &target) {
        for flag in flags {
            println!("cargo:rustc-link-arg-bin=cohort={flag}");
        }
    } else {
        println!(
            "cargo:warning=the linker does not take lld's --symbol-ordering-file: cohort keeps \
             the linker's order, and a server maps more of its program (several MiB more \
             resident memory)"
        );
    }
}

/// Whether an empty program links for `target` with `flags`, by the same rustc, flags
/// and linker as the build itself.
fn links_with(flags: &[String], target: &str) -> bool {
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("symbol_order_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let mut probe = Command::new(env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc")));
    probe
        .args(["--crate-type=bin", "--target", target, "-o"])
        .arg(out.join("symbol_order_probe"))
        .arg(&source);
    if let Ok(encoded) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        probe.args(encoded.split('\x1f').filter(|flag| !flag.is_empty()));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        let mut flag = OsString::from("linker=");
        flag.push(linker);
        probe.arg("-C").arg(flag);
    }
    for flag in flags {
        probe.arg("-C").arg(format!("link-arg={flag}"));
    }
    probe
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
