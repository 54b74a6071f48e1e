//! How much to reduce.

use crate::rules::UserRules;

/// Settings for [`reduce`](crate::reduce). `Options::default()` is what cohort uses for an
/// ordinary read.
#[derive(Clone, Debug)]
pub struct Options {
    /// Bypass everything: the text is the raw output decoded lossily, nothing hidden.
    pub raw: bool,
    /// Elide the middle when more lines than this remain after reduction; `None` never
    /// elides. Default 60.
    pub max_lines: Option<usize>,
    /// Lines kept from the start when eliding. Default 25.
    pub head: usize,
    /// Lines kept from the end when eliding. Default 25.
    pub tail: usize,
    /// Clip lines wider than this many terminal columns (head and tail of the line kept, on
    /// character boundaries); `None` never clips. Default 300.
    pub max_line_width: Option<usize>,
    /// Error and warning lines kept from an elided middle; beyond this they are counted in
    /// the elision marker. Lines a reducer marks as essential (a failing test's name and
    /// reason) are always kept. Default 100.
    pub max_signal_lines: usize,
    /// User-defined reducers, tried before the built-in ones.
    pub user_rules: Option<UserRules>,
    /// Every line as the terminal showed it (escapes removed, progress bars at their last
    /// state, blank runs collapsed), with nothing folded, elided or clipped and no
    /// per-command reducer: for reading back the lines a marker or the meta line named.
    pub exact: bool,
    /// Raw lines before this output, for the line numbers markers in the text name: a
    /// read from the middle of a longer output numbers its lines as that output does, so
    /// `… 40 lines hidden (1201-1240)` is the range to read back. Default 0.
    pub line_base: usize,
    /// Machine-readable output (`--porcelain`, `-z`, JSON) of at most this many bytes
    /// is returned byte for byte; larger output is reduced. 0 reduces it always.
    /// Default 32 KiB.
    pub machine_max: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            raw: false,
            max_lines: Some(60),
            head: 25,
            tail: 25,
            max_line_width: Some(300),
            max_signal_lines: 100,
            user_rules: None,
            exact: false,
            line_base: 0,
            machine_max: crate::machine::MACHINE_MAX,
        }
    }
}
