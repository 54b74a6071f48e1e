//! The token estimate shared by every figure the crate reports.

/// Estimates how many tokens `text` costs a language model: its length in Unicode scalar
/// values divided by four, rounded up.
///
/// This is the convention the peers use (aiterm-mcp, rtk), so figures compare across tools.
/// It is an estimate, not a tokenizer: real tokenizers merge runs of spaces and split rare
/// words, so use it for ratios, not for billing.
///
/// ```
/// assert_eq!(cohort_reducers::estimate_tokens(""), 0);
/// assert_eq!(cohort_reducers::estimate_tokens("abcd"), 1);
/// assert_eq!(cohort_reducers::estimate_tokens("abcde"), 2);
/// assert_eq!(cohort_reducers::estimate_tokens("héllo 世界"), 2);
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    char_count(text).div_ceil(4)
}

/// Counts Unicode scalar values without decoding (the standard library counts the bytes
/// that do not continue a multi-byte sequence, a word at a time).
pub(crate) fn char_count(text: &str) -> usize {
    text.chars().count()
}
