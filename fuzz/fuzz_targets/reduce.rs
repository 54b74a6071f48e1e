//! cargo-fuzz entry point for [`cohort_fuzz_checks::reduce`]; the checks live in `checks/`, so
//! the stable replay (`cargo test` in this directory) runs the same code.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cohort_fuzz_checks::reduce(data));
