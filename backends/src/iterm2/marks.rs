//! Signed prompt marks on iTerm2.
//!
//! iTerm2 parses OSC 133 itself and tells API clients of marks through its prompt
//! monitor (PROMPT, COMMAND_START, COMMAND_END) without the mark's parameters, so a
//! `D` that a program prints looks like the shell's. cohort's integration in an
//! iTerm2 pane ([`super::shell`]) therefore reports each of its `B`, `C` and `D`
//! marks a second way, one that only the shell can use:
//!
//! - right before the mark it sets the iTerm2 user variable `cohortMark`
//!   (`OSC 1337 ; SetUserVar=cohortMark=<base64> BEL`) to the mark as the shell
//!   signs it: `B;cohort=<token>`, `C;cohort=<token>`, `D;cohort=<token>`, or
//!   `D;cohort=<token>;exit` as the shell exits, with the next one-time token of its
//!   pad ([`crate::pad`]), which only the shell has;
//! - right after the mark it unsets it (`OSC 1337 ; SetUserVar=cohortMark BEL`).
//!
//! iTerm2 decodes the value into the session variable `user.cohortMark`, and a
//! VariableMonitor on it for every session reports each change. A token verifies
//! once, against the anchor stamped on the session (see `events`): a signature a
//! program replays (from a session log, a recording) is never taken. (iTerm2
//! reports a variable back to a program, `OSC 1337 ; ReportVariable`, only when the
//! user allows it, and the variable is unset right after each mark.)
//!
//! Panes made before marks were signed with one-time tokens sign with a per-pane
//! key instead (`user.cohort_key`); their signatures are compared with it.
//!
//! **Pairing.** A signature *arms* its session: the next prompt notification of the
//! same kind (PROMPT for `B`, COMMAND_START for `C`, COMMAND_END for `D`) is the
//! shell's mark and is reported with the signature's [`MarkParams`]; the unset that
//! follows, or any other value, disarms it. Every other prompt notification is
//! reported unsigned, so the engine does not take it for the shell's. Each mark is
//! reported once, from its prompt notification: the variable only qualifies it.
//!
//! **Order.** iTerm2 carries out what the output asks (set a variable, record a
//! prompt mark) in the order the output asks it, and sends the notifications this
//! causes from there, in that order, on each connection; the backend handles one
//! connection's notifications one at a time, in the order they came. The shell
//! prints nothing between a signature and its mark, so the signature is armed when
//! the mark's notification is handled, and disarmed before anything printed after
//! the mark is. The mark keeps its place in the output as every prompt notification
//! does: the text before the mark's position is reported first (see `events`).

use crate::event::{MarkParams, PromptMark};
use crate::stream::mark_body;

/// The session variable holding the signature of the mark about to be printed.
pub(super) const VARIABLE: &str = "user.cohortMark";

/// A signature read from the variable, waiting for its mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Armed {
    mark: PromptMark,
    params: MarkParams,
}

/// The signature a change of [`VARIABLE`] arms, from its new value as iTerm2 reports
/// it (JSON; `null` once unset). Anything else than a signed `B`, `C` or `D` arms
/// nothing.
pub(super) fn armed(json_value: Option<&str>) -> Option<Armed> {
    let value: String = serde_json::from_str(json_value?).ok()?;
    let (mark, params) = mark_body(value.as_bytes())?;
    params.key.is_some().then_some(Armed { mark, params })
}

/// The parameters of a prompt notification reported as `mark`: the armed signature's
/// when it is for this kind of mark (which disarms it), none otherwise.
pub(super) fn take(armed: &mut Option<Armed>, mark: &PromptMark) -> MarkParams {
    // iTerm2 announces a prompt when input starts (`B`); cohort reports it as the
    // prompt's start, at the prompt's position.
    let kind = |m: &PromptMark| match m {
        PromptMark::PromptStart | PromptMark::InputStart => 'B',
        PromptMark::CommandStart => 'C',
        PromptMark::CommandFinished { .. } => 'D',
    };
    match armed {
        Some(a) if kind(&a.mark) == kind(mark) => {
            armed.take().map(|a| a.params).unwrap_or_default()
        }
        _ => MarkParams::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_qualifies_the_next_mark_of_its_kind_only() {
        let json = |s: &str| serde_json::Value::from(s).to_string();
        let mut armed = super::armed(Some(&json("D;cohort=k1;exit")));
        assert!(armed.is_some());
        let end = PromptMark::CommandFinished {
            exit_status: Some(3),
        };
        // Another kind of mark is not the one it signs.
        assert_eq!(
            take(&mut armed, &PromptMark::CommandStart),
            MarkParams::default()
        );
        let params = take(&mut armed, &end);
        assert_eq!(
            params,
            MarkParams {
                key: Some("k1".into()),
                exiting: true
            }
        );
        // Once.
        assert_eq!(take(&mut armed, &end), MarkParams::default());
        // B signs the prompt iTerm2 announces.
        let mut armed = super::armed(Some(&json("B;cohort=k1")));
        assert_eq!(
            take(&mut armed, &PromptMark::PromptStart).key.as_deref(),
            Some("k1")
        );
        // Unset, unsigned, or not a mark: nothing is armed.
        for value in ["null", "\"D;0\"", "\"hello\"", "7"] {
            assert_eq!(super::armed(Some(value)), None, "{value}");
        }
        assert_eq!(super::armed(None), None);
    }
}
