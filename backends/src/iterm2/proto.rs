//! iTerm2's API messages (package `iterm2`, proto2), generated from cohort's schema of
//! the part of iTerm2's API it uses, `backends/proto/iterm2.proto`, by prost-build
//! with the protox compiler (`tools/protogen`), and checked in (`proto_generated.rs`).
//!
//! What proto2 means for the generated types:
//!
//! - every optional field is an `Option`, because iTerm2 branches on presence
//!   (`LineRange` counts which of its fields are set, not their values);
//! - non-zero defaults come from the schema (`CodePointsPerCell.num_code_points` = 1,
//!   `LineContents.continuation` = `CONTINUATION_HARD_EOL`,
//!   `InvokeFunctionRequest.timeout` = -1, `status` = OK in several replies): the
//!   accessor of the same name returns the default when the field is absent;
//! - repeated scalars and enums are unpacked, as proto2 encodes them;
//! - unknown fields (from a newer iTerm2) are skipped on decode.
//!
//! Enum variants keep the schema's names in Rust case (`CONTINUATION_SOFT_EOL` is
//! `ContinuationSoftEol`). `backends/tests/iterm2_golden.rs` checks the encodings
//! against bytes made with the official client's compiled schema.

#![allow(missing_docs, clippy::all, rustdoc::all)]

include!("proto_generated.rs");
