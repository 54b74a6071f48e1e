//! One-time tokens for prompt marks: what makes a mark the pane's own shell's.
//!
//! A pane's shell signs each prompt mark it prints with a token good for that one
//! mark (`ESC ] 133 ; D ; 0 ; cohort=<token> BEL`). The tokens are the links of a hash
//! chain, handed to the shell in reverse order:
//!
//! - cohort draws a random seed `c₀` and computes `cᵢ₊₁ = H(cᵢ)` up to `cₙ`, the
//!   *anchor*. Only the anchor is kept outside the shell (stamped on the pane, where any
//!   server that adopts the pane reads it); it reveals nothing about the tokens.
//! - The shell gets `cₙ₋₁, cₙ₋₂, …, c₀` (its *pad*) through a file that it reads and
//!   deletes at start, before any startup file of the user runs (see
//!   [`crate::shell`]). It keeps them in an unexported shell variable: nothing is in
//!   its environment, in a tmux option, in a prompt variable or on screen.
//! - A mark's token `t` verifies when `H(t)` is the last token verified (at first the
//!   anchor), which then becomes `t`. A token verifies at most once: a mark replayed
//!   from a recording, a typescript or a terminal log is never taken again, and the
//!   next token cannot be computed from the ones already printed (`H` is one-way).
//!
//! Marks can be lost on the way (output dropped under flow control), so a token a few
//! links further down the chain also verifies ([`Anchor::verify`] walks up to
//! `window` links back to the anchor).
//!
//! `H` is SHA-256 cut to 63 bits, so that a token is a positive 64-bit integer: the
//! POSIX `sh` integration keeps its tokens in numbered variables it can only index with
//! shell arithmetic.
//!
//! What remains: code running inside the shell process itself (the line typed at the
//! prompt, a file it sources) has the shell's own powers and can read the pad, and so
//! can a process allowed to read the shell's memory (a debugger of the same user where
//! the system permits it).

use std::fmt::{self, Write as _};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{BackendError, Result};

/// The environment variable naming the pad file a shell reads at start. It holds a
/// path, not a secret: the shell deletes the file before anything else runs.
pub const PAD_ENV: &str = "COHORT_MARK_PAD";

/// Tokens handed to an interactive shell: a command takes three (`C`, `D`, `A`), an
/// empty line one. When they run out, the shell's marks stop verifying and the pane is
/// read as a shell without marks.
pub const SHELL_PAD_LEN: u32 = 8192;

/// How far down the chain a token may be from the last one verified (marks lost on
/// the way) and still verify.
pub const WINDOW: u32 = 64;

/// Tokens are below 2⁶³, so that they are positive in 64-bit shell arithmetic.
const MASK: u64 = (1 << 63) - 1;

/// Digits of a token in its [`TokenForm::Base64`] form: zero-padded to a multiple of
/// three bytes, so that its base64 is a whole number of quads.
pub const BASE64_DIGITS: usize = 21;

/// How a pad writes its tokens: as the shell prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenForm {
    /// In decimal, as the mark carries them (`cohort=<token>`).
    Decimal,
    /// The base64 of the token's decimal zero-padded to [`BASE64_DIGITS`] digits. A
    /// terminal that takes a mark's signature as a base64 value (iTerm2's user
    /// variables) gets `base64(prefix) ‖ token` for a prefix of a multiple of three
    /// bytes (`D;cohort=`), which is the base64 of `prefix ‖ <padded decimal>`: the
    /// shell signs without an encoder. The padded decimal verifies as the token.
    Base64,
}

/// The next link of the chain: `H(token)`.
fn step(token: u64) -> u64 {
    let digest = Sha256::digest(token.to_be_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) & MASK
}

/// A fresh chain: the tokens for the shell and the anchor that verifies them.
#[derive(Clone)]
pub struct MarkChain {
    /// The tokens in the order the shell uses them (`cₙ₋₁` first).
    tokens: Vec<u64>,
    anchor: Anchor,
}

impl fmt::Debug for MarkChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The tokens are the secret: never in a log.
        f.debug_struct("MarkChain")
            .field("tokens", &self.tokens.len())
            .field("anchor", &self.anchor)
            .finish()
    }
}

impl MarkChain {
    /// Draws a chain of `len` tokens (at least one) from the system's random source.
    pub fn new(len: u32) -> Result<MarkChain> {
        Ok(MarkChain::from_seed(random()?, len))
    }

    /// The chain that starts at `seed`.
    fn from_seed(seed: u64, len: u32) -> MarkChain {
        let len = len.max(1);
        let mut tokens = Vec::with_capacity(len as usize);
        let mut link = (seed & MASK).max(1);
        for _ in 0..len {
            tokens.push(link);
            link = step(link);
        }
        tokens.reverse();
        MarkChain {
            tokens,
            anchor: Anchor {
                last: link,
                left: len,
            },
        }
    }

    /// The anchor to stamp on the pane.
    pub fn anchor(&self) -> Anchor {
        self.anchor
    }

    /// Writes the tokens in `form` ([`MarkChain::pad_text`]) to a new file in `dir`
    /// that only the user can read, and returns its path. `dir` is created private when
    /// missing.
    pub fn write_pad(&self, dir: &Path, form: TokenForm) -> Result<PathBuf> {
        create_private_dir(dir)?;
        let path = dir.join(pad_name()?);
        let mut file = private_file(&path)?;
        file.write_all(self.pad_text(form).as_bytes())
            .map_err(|e| BackendError::io(format!("writing {}", path.display()), e))?;
        Ok(path)
    }

    /// The tokens in `form`, space-separated on one line: what a pad file holds.
    pub fn pad_text(&self, form: TokenForm) -> String {
        let mut text = String::with_capacity(self.tokens.len() * 29);
        for (i, token) in self.tokens.iter().enumerate() {
            if i > 0 {
                text.push(' ');
            }
            match form {
                TokenForm::Decimal => {
                    let _ = write!(text, "{token}");
                }
                TokenForm::Base64 => {
                    let padded = format!("{token:0width$}", width = BASE64_DIGITS);
                    text.push_str(&base64(padded.as_bytes()));
                }
            }
        }
        text.push('\n');
        text
    }
}

/// A new pad file's name: random, so no one can tell the next pane's in advance.
pub fn pad_name() -> Result<String> {
    Ok(format!("pad-{:016x}{:016x}", random()?, random()?))
}

/// What verifies a pane's next mark: the last token verified (the chain's end at
/// first) and how many tokens the shell still has before it. Public: it is stamped on
/// the pane as `<last>:<left>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    last: u64,
    left: u32,
}

impl Anchor {
    /// Takes `token` when it is one of the next `window` links down the chain: it
    /// becomes the anchor, so it never verifies again, nor does any token before it.
    pub fn verify(&mut self, token: &str, window: u32) -> bool {
        let Ok(token) = token.parse::<u64>() else {
            return false;
        };
        if token == 0 || token > MASK {
            return false;
        }
        let mut link = token;
        for steps in 1..=window.min(self.left) {
            link = step(link);
            if link == self.last {
                self.last = token;
                self.left -= steps;
                return true;
            }
        }
        false
    }

    /// Takes `token` as [`Anchor::verify`] does, for a reader that follows the chain:
    /// `adopted` says the anchor was read back from the pane, where it may lag behind
    /// the tokens another reader saw, so the first token may be anywhere further down
    /// the chain; once one verifies, the usual window holds again.
    pub fn verify_next(&mut self, token: &str, adopted: &mut bool) -> bool {
        let window = match adopted {
            true => self.left,
            false => WINDOW,
        };
        let verified = self.verify(token, window);
        if verified {
            *adopted = false;
        }
        verified
    }

    /// An anchor no token verifies (for a stamp that cannot be read).
    pub fn spent() -> Anchor {
        Anchor { last: 0, left: 0 }
    }

    /// How many tokens the shell has left.
    pub fn left(&self) -> u32 {
        self.left
    }
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.last, self.left)
    }
}

impl std::str::FromStr for Anchor {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Anchor, String> {
        let bad = || format!("{s:?} is not a mark anchor (`<token>:<left>`)");
        let (last, left) = s.split_once(':').ok_or_else(bad)?;
        Ok(Anchor {
            last: last.parse().map_err(|_| bad())?,
            left: left.parse().map_err(|_| bad())?,
        })
    }
}

/// Standard base64 with padding (RFC 4648).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn random() -> Result<u64> {
    getrandom::u64().map_err(|e| {
        BackendError::io(
            "drawing random numbers for a pane's marks",
            std::io::Error::other(e.to_string()),
        )
    })
}

/// Creates `dir` (mode 0700 on Unix) when it is missing.
pub(crate) fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| BackendError::io(format!("creating {}", dir.display()), e))
}

/// Creates a new file (mode 0600 on Unix), failing when one is there.
pub(crate) fn private_file(path: &Path) -> Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map_err(|e| BackendError::io(format!("creating {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(chain: &MarkChain) -> Vec<String> {
        chain.tokens.iter().map(u64::to_string).collect()
    }

    #[test]
    fn each_token_verifies_once_in_order() {
        let chain = MarkChain::from_seed(42, 10);
        let mut anchor = chain.anchor();
        let tokens = tokens(&chain);
        for (i, token) in tokens.iter().enumerate() {
            assert!(anchor.verify(token, WINDOW), "token {i}");
            assert!(!anchor.verify(token, WINDOW), "token {i} replayed");
            assert_eq!(anchor.left(), 9 - i as u32);
        }
        // Every earlier token is spent too.
        for token in &tokens {
            assert!(!anchor.verify(token, WINDOW));
        }
    }

    #[test]
    fn lost_marks_are_skipped_within_the_window_only() {
        let chain = MarkChain::from_seed(7, 200);
        let tokens = tokens(&chain);
        let mut anchor = chain.anchor();
        assert!(anchor.verify(&tokens[5], WINDOW));
        assert_eq!(anchor.left(), 194);
        // The ones skipped are spent with it.
        assert!(!anchor.verify(&tokens[3], WINDOW));
        assert!(!anchor.verify(&tokens[6 + WINDOW as usize], WINDOW));
        assert!(anchor.verify(&tokens[6], WINDOW));
    }

    #[test]
    fn what_is_not_a_token_never_verifies() {
        let chain = MarkChain::from_seed(9, 4);
        let mut anchor = chain.anchor();
        for forged in [
            "",
            "0",
            "-1",
            "x",
            "9223372036854775808",
            "18446744073709551615",
        ] {
            assert!(!anchor.verify(forged, WINDOW), "{forged:?}");
        }
        // The anchor itself is public and is not a token.
        let public = anchor.to_string();
        let last = public.split(':').next().unwrap();
        assert!(!anchor.verify(last, WINDOW));
        assert_eq!(anchor.left(), 4);
    }

    #[test]
    fn anchors_round_trip_through_their_stamp() {
        let chain = MarkChain::from_seed(3, 5);
        let anchor = chain.anchor();
        assert_eq!(anchor.to_string().parse::<Anchor>(), Ok(anchor));
        assert!("12".parse::<Anchor>().is_err());
        assert!("a:b".parse::<Anchor>().is_err());
    }

    #[test]
    fn the_pad_is_a_private_file_of_tokens_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let chain = MarkChain::new(3).unwrap();
        let path = chain
            .write_pad(&dir.path().join("pads"), TokenForm::Decimal)
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{}\n", tokens(&chain).join(" ")));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&dir.path().join("pads")), 0o700);
        }
        assert!(!format!("{chain:?}").contains(&tokens(&chain)[0]));
    }

    #[test]
    fn base64_matches_the_standard_vectors() {
        // RFC 4648, section 10.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn a_base64_pad_signs_by_concatenation() {
        let dir = tempfile::tempdir().unwrap();
        let chain = MarkChain::from_seed(11, 3);
        let path = chain.write_pad(dir.path(), TokenForm::Base64).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let pad: Vec<&str> = text.trim_end().split(' ').collect();
        assert_eq!(pad.len(), 3);
        let mut anchor = chain.anchor();
        for (encoded, token) in pad.iter().zip(tokens(&chain)) {
            // What the shell prints, prefix and token side by side, is the base64 of
            // the signed mark; its token verifies with its zeros.
            let signed = format!("{}{encoded}{}", base64(b"D;cohort="), base64(b";exit"));
            let padded = format!("{token:0>21}");
            assert_eq!(signed, base64(format!("D;cohort={padded};exit").as_bytes()));
            assert!(anchor.verify(&padded, WINDOW));
        }
    }

    #[test]
    fn an_adopted_anchor_takes_its_first_token_anywhere_down_the_chain() {
        let chain = MarkChain::from_seed(5, 300);
        let tokens = tokens(&chain);
        let mut anchor = chain.anchor();
        let mut adopted = true;
        assert!(anchor.verify_next(&tokens[200], &mut adopted));
        assert!(!adopted);
        assert!(!anchor.verify_next(&tokens[201 + WINDOW as usize], &mut adopted));
        assert!(anchor.verify_next(&tokens[201], &mut adopted));
    }
}
