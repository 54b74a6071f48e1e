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
    let (text, counts) = decode_counting(raw);
    let (binary, notices) = counts.verdict();
    Decoded {
        text,
        binary,
        notices,
    }
}

/// What decoding found wrong with some bytes; counts of consecutive pieces add up to
/// those of the whole when the pieces are cut after a newline (no UTF-8 sequence holds
/// one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Bytes decoded.
    pub len: usize,
    /// NUL bytes.
    pub nul: usize,
    /// Invalid UTF-8 sequences, and the bytes in them.
    pub invalid_seqs: usize,
    pub invalid_bytes: usize,
}

impl Counts {
    /// Adds the counts of the next piece.
    pub fn add(&mut self, other: Counts) {
        self.len += other.len;
        self.nul += other.nul;
        self.invalid_seqs += other.invalid_seqs;
        self.invalid_bytes += other.invalid_bytes;
    }

    /// Whether the bytes look binary, and what to tell the caller about them.
    pub fn verdict(&self) -> (bool, Vec<String>) {
        let binary = self.nul > 0 || (self.len >= 64 && self.invalid_bytes * 10 > self.len);
        let notices = if binary {
            vec![format!(
                "output looks binary ({} bytes, {} NUL, {} invalid UTF-8): shown as lossy text",
                self.len, self.nul, self.invalid_bytes
            )]
        } else if self.invalid_seqs > 0 {
            vec![format!(
                "output is not valid UTF-8: {} invalid sequence(s) shown as U+FFFD",
                self.invalid_seqs
            )]
        } else {
            Vec::new()
        };
        (binary, notices)
    }
}

/// `raw` as text (borrowed when it is valid UTF-8, the usual case: one validation pass,
/// no copy) and what was wrong with it.
pub(crate) fn decode_counting(raw: &[u8]) -> (Cow<'_, str>, Counts) {
    let (text, invalid_seqs, invalid_bytes) = match std::str::from_utf8(raw) {
        Ok(s) => (Cow::Borrowed(s), 0, 0),
        Err(_) => {
            let (s, seqs, bytes) = lossy(raw);
            (Cow::Owned(s), seqs, bytes)
        }
    };
    let nul = if raw.contains(&0) { count_nul(raw) } else { 0 };
    let counts = Counts {
        len: raw.len(),
        nul,
        invalid_seqs,
        invalid_bytes,
    };
    (text, counts)
}

/// Lossy UTF-8: valid stretches are validated by the standard library's fast path and
/// copied whole; each invalid sequence becomes one U+FFFD. Returns the text, the number of
/// invalid sequences and of invalid bytes.
fn lossy(raw: &[u8]) -> (String, usize, usize) {
    let mut s = String::with_capacity(raw.len() + 16);
    let (mut seqs, mut bytes) = (0, 0);
    let mut rest = raw;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                s.push_str(valid);
                return (s, seqs, bytes);
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                s.push_str(std::str::from_utf8(valid).unwrap_or_default());
                // An incomplete sequence at the very end has no error length: all of it.
                let bad = e.error_len().unwrap_or(after.len());
                seqs += 1;
                bytes += bad;
                s.push(char::REPLACEMENT_CHARACTER);
                rest = &after[bad..];
            }
        }
    }
}

/// Counts NUL bytes in blocks whose per-block sum fits a byte, so the loop vectorises.
fn count_nul(raw: &[u8]) -> usize {
    raw.chunks(255)
        .map(|block| {
            usize::from(
                block
                    .iter()
                    .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == 0))),
            )
        })
        .sum()
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
    fn lossy_matches_the_standard_library() {
        for raw in [
            &b"caf\xe9 cr\xe8me\n"[..],
            b"\xff\xfe\x00abc\xe2\x82",
            b"ok \xf0\x9f\x8e",
            b"\xc0\xafx\xed\xa0\x80y",
        ] {
            let (s, seqs, bytes) = lossy(raw);
            assert_eq!(s, String::from_utf8_lossy(raw));
            let chunks: Vec<_> = raw
                .utf8_chunks()
                .filter(|c| !c.invalid().is_empty())
                .collect();
            assert_eq!(seqs, chunks.len());
            assert_eq!(
                bytes,
                chunks.iter().map(|c| c.invalid().len()).sum::<usize>()
            );
        }
        assert_eq!(count_nul(&[0u8; 1000]), 1000);
    }

    #[test]
    fn nul_bytes_mean_binary() {
        let d = decode(b"\x7fELF\x02\x01\x00\x00abc");
        assert!(d.binary);
        assert!(d.notices[0].starts_with("output looks binary"));
    }
}
