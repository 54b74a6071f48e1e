//! Raw bytes to text: lossy UTF-8 and the binary check, with notices saying so.

use std::borrow::Cow;

/// Text decoded from a command's raw bytes.
pub(crate) struct Decoded<'a> {
    /// The bytes as UTF-8; invalid sequences replaced by U+FFFD.
    pub text: Cow<'a, str>,
    /// Whether the bytes look like binary data rather than text.
    pub binary: bool,
    /// What the caller should be told about the decoding.
    pub notices: Vec<String>,
}

/// Decodes `raw`, never failing: invalid UTF-8 becomes U+FFFD with a notice, and output with
/// NUL bytes or mostly invalid sequences is flagged as binary.
pub(crate) fn decode(raw: &[u8]) -> Decoded<'_> {
    let mut notices = Vec::new();
    let (text, invalid_seqs, invalid_bytes) = match std::str::from_utf8(raw) {
        Ok(s) => (Cow::Borrowed(s), 0, 0),
        Err(_) => {
            let mut s = String::with_capacity(raw.len() + 16);
            let (mut seqs, mut bytes) = (0, 0);
            for chunk in raw.utf8_chunks() {
                s.push_str(chunk.valid());
                if !chunk.invalid().is_empty() {
                    seqs += 1;
                    bytes += chunk.invalid().len();
                    s.push(char::REPLACEMENT_CHARACTER);
                }
            }
            (Cow::Owned(s), seqs, bytes)
        }
    };
    let nul = if raw.contains(&0) {
        raw.iter().filter(|&&b| b == 0).count()
    } else {
        0
    };
    let binary = nul > 0 || (raw.len() >= 64 && invalid_bytes * 10 > raw.len());
    if binary {
        notices.push(format!(
            "output looks binary ({} bytes, {} NUL, {} invalid UTF-8): shown as lossy text",
            raw.len(),
            nul,
            invalid_bytes
        ));
    } else if invalid_seqs > 0 {
        notices.push(format!(
            "output is not valid UTF-8: {invalid_seqs} invalid sequence(s) shown as U+FFFD"
        ));
    }
    Decoded {
        text,
        binary,
        notices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_utf8_is_borrowed_without_notice() {
        let d = decode("héllo\n".as_bytes());
        assert!(matches!(d.text, Cow::Borrowed(_)));
        assert!(!d.binary && d.notices.is_empty());
    }

    #[test]
    fn latin1_gets_a_notice() {
        let d = decode(b"caf\xe9 cr\xe8me\n");
        assert_eq!(d.text, "caf\u{fffd} cr\u{fffd}me\n");
        assert!(!d.binary);
        assert!(d.notices[0].contains("2 invalid"));
    }

    #[test]
    fn nul_bytes_mean_binary() {
        let d = decode(b"\x7fELF\x02\x01\x00\x00abc");
        assert!(d.binary);
        assert!(d.notices[0].starts_with("output looks binary"));
    }
}
