//! Patterns callers give (`until`, a read filter): bounded, so a 10 MB "regex" is
//! refused at the door instead of costing hundreds of megabytes to parse.

use regex::{Regex, RegexBuilder};

/// The longest pattern, in characters.
pub const PATTERN_MAX: usize = 4096;

/// Compiles `pattern` (named `what` in errors) as a regular expression, within
/// [`PATTERN_MAX`] characters and a bounded compiled size. Rust's regex engine runs in
/// time linear in the text, so no pattern can take exponential time.
pub fn compile(what: &str, pattern: &str) -> Result<Regex, String> {
    check_length(what, pattern)?;
    RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .dfa_size_limit(2 << 20)
        .build()
        .map_err(|e| {
            format!("`{what}` is not a usable regex ({e}); simplify it, or match it as plain text")
        })
}

/// Refuses a pattern (literal or regex) over [`PATTERN_MAX`] characters.
pub fn check_length(what: &str, pattern: &str) -> Result<(), String> {
    let length = pattern.chars().count();
    if length > PATTERN_MAX {
        return Err(format!(
            "`{what}` is {length} characters long; at most {PATTERN_MAX}: wait for or filter on a shorter text"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_and_invalid_patterns_are_refused_with_the_reason() {
        assert!(compile("until", ">>> ").is_ok());
        let huge = "(x+x+)+y".repeat(2000);
        assert!(compile("until", &huge)
            .unwrap_err()
            .contains("at most 4096"));
        assert!(compile("filter", "(")
            .unwrap_err()
            .contains("not a usable regex"));
        // Short to type, huge once compiled: refused by the size limit.
        let big = r"(?:\w{100}){100}";
        assert!(compile("filter", big)
            .unwrap_err()
            .contains("not a usable regex"));
    }
}
