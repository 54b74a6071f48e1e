//! cargo-fuzz entry point for [`cohort_fuzz::reduce`]; the checks live in the library so
//! the stable replay (`cargo test` in this directory) runs the same code.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cohort_fuzz::reduce(data));
