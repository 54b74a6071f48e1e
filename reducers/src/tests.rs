//! Invariants over every recorded fixture.
