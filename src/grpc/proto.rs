//! The messages, the service trait and the client, generated from
//! `proto/cohort.proto` by `tools/protogen` and checked in (`proto_generated.rs`).

#![allow(missing_docs, clippy::all, clippy::pedantic)]

include!("proto_generated.rs");
