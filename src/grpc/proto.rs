//! The messages, the service trait and the client, generated from
//! `proto/cohort.proto` by the build script (see `build.rs`).

#![allow(missing_docs, clippy::all, clippy::pedantic)]

include!(concat!(env!("OUT_DIR"), "/cohort.v1.rs"));
