//! Scripted turns: what a turn does is chosen by `[[…]]` markers in the prompt, and
//! its answer carries a digest of the prompt so a test can prove it arrived whole.

/// How long a turn "works" when the prompt does not say.
pub const DEFAULT_WORK_MS: u64 = 150;

/// What one turn will do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Milliseconds of "work" (busy indicator shown) before the answer.
    pub work_ms: u64,
    /// Ask for approval of a shell command before finishing.
    pub approval: bool,
    /// End the turn with an API error.
    pub api_error: bool,
    /// Finish while background work is still running.
    pub background: bool,
    /// Die in the middle of the turn.
    pub crash: bool,
    /// Ask the user a question before finishing.
    pub ask: bool,
    /// Fire no hooks during this turn.
    pub no_hooks: bool,
    /// Hang mid-turn: alive, but no output, no hook and no key taken ever again.
    pub hang: bool,
}

impl Script {
    /// Reads the markers in `prompt`; unknown `[[…]]` text is ordinary prompt text.
    pub fn parse(prompt: &str) -> Script {
        let mut script = Script {
            work_ms: DEFAULT_WORK_MS,
            ..Script::default()
        };
        let mut rest = prompt;
        while let Some(open) = rest.find("[[") {
            let after = &rest[open + 2..];
            let Some(close) = after.find("]]") else { break };
            let marker = after[..close].trim();
            match marker {
                "approval" => script.approval = true,
                "api-error" => script.api_error = true,
                "background" => script.background = true,
                "crash" => script.crash = true,
                "ask" => script.ask = true,
                "no-hooks" => script.no_hooks = true,
                "hang" => script.hang = true,
                _ => {
                    if let Some(ms) = marker.strip_prefix("work ") {
                        if let Ok(ms) = ms.trim().parse::<u64>() {
                            script.work_ms = ms.min(3_600_000);
                        }
                    }
                }
            }
            rest = &after[close + 2..];
        }
        script
    }
}

/// FNV-1a, 64 bits: a stable hash any test can recompute.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The digest line every answer carries: `received <bytes> bytes, <lines> lines,
/// fnv1a64 <16 hex digits>`, computed over the prompt exactly as submitted.
pub fn digest(prompt: &str) -> String {
    format!(
        "received {} bytes, {} lines, fnv1a64 {:016x}",
        prompt.len(),
        prompt.lines().count().max(1),
        fnv1a64(prompt.as_bytes())
    )
}

/// The final assistant message of a finished turn.
pub fn answer(prompt: &str) -> String {
    format!("Done: {}.", digest(prompt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_read_anywhere_and_unknown_ones_ignored() {
        let s = Script::parse("do it [[approval]] then [[work 2000]] [[nope]] [[background]]");
        assert_eq!(
            s,
            Script {
                work_ms: 2000,
                approval: true,
                background: true,
                ..Script::default()
            }
        );
        assert_eq!(Script::parse("plain").work_ms, DEFAULT_WORK_MS);
        assert_eq!(Script::parse("[[work x]] [[").work_ms, DEFAULT_WORK_MS);
    }

    #[test]
    fn digest_is_fnv1a_of_the_exact_bytes() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(
            digest("a\nb"),
            format!(
                "received 3 bytes, 2 lines, fnv1a64 {:016x}",
                fnv1a64(b"a\nb")
            )
        );
    }
}
