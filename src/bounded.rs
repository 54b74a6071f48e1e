//! Error text bounded before it reaches a client.
//!
//! Errors quote what was wrong (`invalid type: string "…"`, ``no session named `…` ``)
//! so the caller can see it. A caller that sent a 10 MB value must not get the 10 MB
//! back: every quoted stretch longer than [`QUOTE_MAX`] characters is cut to a prefix
//! that says how long the whole was, and the message as a whole to [`ERROR_MAX`].

use std::borrow::Cow;

/// The longest quotation an error keeps whole, in characters.
pub const QUOTE_MAX: usize = 80;

/// The longest error text a client receives, in characters.
pub const ERROR_MAX: usize = 4_000;

/// What a quotation is cut to.
const QUOTE_KEPT: usize = 60;

/// `text` with long quotations cut to a prefix and the whole to [`ERROR_MAX`]
/// characters; borrowed unchanged when nothing needed cutting.
pub fn error_text(text: &str) -> Cow<'_, str> {
    if text.len() <= QUOTE_MAX {
        return Cow::Borrowed(text);
    }
    let quotes_cut = cut_quotations(text);
    let total = quotes_cut.chars().count();
    if total <= ERROR_MAX {
        return quotes_cut;
    }
    let kept: String = quotes_cut.chars().take(ERROR_MAX).collect();
    Cow::Owned(format!(
        "{kept}… (the error went on for {} more characters)",
        total - ERROR_MAX
    ))
}

/// Cuts each stretch between a pair of `"` or `` ` `` (or from an opening quote to
/// the end) that is longer than [`QUOTE_MAX`] characters.
fn cut_quotations(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0; // bytes of `text` already in `out`
    let mut rest = text;
    let mut offset = 0;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = rest[open..].chars().next().unwrap_or('"');
        let inside_start = open + 1;
        let inside_len = rest[inside_start..]
            .find(quote)
            .unwrap_or(rest.len() - inside_start);
        let inside = &rest[inside_start..inside_start + inside_len];
        let chars = inside.chars().count();
        if chars > QUOTE_MAX {
            let kept_end = inside
                .char_indices()
                .nth(QUOTE_KEPT)
                .map_or(inside.len(), |(i, _)| i);
            out.push_str(&text[copied..offset + inside_start]);
            out.push_str(&inside[..kept_end]);
            out.push_str(&format!("… ({chars} characters in all)"));
            copied = offset + inside_start + inside_len;
        }
        // Step past the closing quote, if there is one.
        let next = (inside_start + inside_len + quote.len_utf8()).min(rest.len());
        offset += next;
        rest = &rest[next..];
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_errors_pass_unchanged() {
        let text = "no session named `api`; the sessions are `web`, `db`";
        assert!(matches!(error_text(text), Cow::Borrowed(_)));
        let long_but_plain = format!("{} `short` and \"also short\"", "word ".repeat(40));
        assert_eq!(error_text(&long_but_plain), long_but_plain);
    }

    #[test]
    fn a_long_quoted_value_keeps_a_prefix_and_its_length() {
        let value = "x".repeat(10_000_000);
        let text = format!("invalid type: string \"{value}\", expected u64 at line 1");
        let bounded = error_text(&text);
        assert!(bounded.len() < 200, "{bounded}");
        assert!(
            bounded.starts_with(&format!("invalid type: string \"{}…", "x".repeat(60))),
            "{bounded}"
        );
        assert!(
            bounded.ends_with("(10000000 characters in all)\", expected u64 at line 1"),
            "{bounded}"
        );
    }

    #[test]
    fn backticks_unclosed_quotes_and_wide_characters_are_cut_on_character_bounds() {
        let value = "é".repeat(500);
        let text = format!("no session named `{value}`; try `list`");
        let bounded = error_text(&text);
        assert!(
            bounded.contains("(500 characters in all)`; try `list`"),
            "{bounded}"
        );
        let text = format!("bad value \"{value}");
        let bounded = error_text(&text);
        assert!(bounded.ends_with("(500 characters in all)"), "{bounded}");
    }

    #[test]
    fn many_short_quotations_are_cut_as_a_whole() {
        let names: Vec<String> = (0..2_000).map(|i| format!("`session-{i}`")).collect();
        let text = names.join(", ");
        let bounded = error_text(&text);
        assert!(
            bounded.chars().count() < ERROR_MAX + 100,
            "{}",
            bounded.len()
        );
        assert!(bounded.contains("more characters)"), "{bounded}");
    }
}
