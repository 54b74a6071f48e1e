//! The tmux control-mode protocol parser: lines of bytes in, replies and
//! notifications out.
//!
//! Pure and synchronous: [`Parser::feed_line`] takes one line (without its `\n`) and
//! returns what it completed. Reply blocks (`%begin … %end|%error`) are collected
//! whole; a block only closes on a guard line carrying its own command number, so
//! program output that happens to look like `%end …` cannot end it early. The one
//! exception to "notifications never appear inside a block": tmux 3.3a writes
//! `%pause`/`%continue` inside the block of the command that caused them. `%output`
//! payloads are unescaped (`\ooo`) to bytes and never decoded here: tmux splits UTF-8
//! characters across lines. Unknown `%` lines become [`Notification::Unknown`].

/// A finished reply block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// tmux's server-wide command number.
    pub number: u64,
    /// `true` when the command came from this client (flags bit 1).
    pub ours: bool,
    /// `false` for `%error` blocks.
    pub ok: bool,
    /// Output lines, raw.
    pub lines: Vec<Vec<u8>>,
}

impl Reply {
    /// The reply lines joined with `\n`, decoded lossily.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (i, line) in self.lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&String::from_utf8_lossy(line));
        }
        out
    }
}

/// A control-mode notification (a `%` line outside a reply block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    /// `%output %P data`: raw bytes the pane's program wrote.
    Output {
        /// Pane id, `%N`.
        pane: String,
        /// Unescaped bytes.
        data: Vec<u8>,
    },
    /// `%extended-output %P age : data` (with flow control on).
    ExtendedOutput {
        /// Pane id.
        pane: String,
        /// How long the output waited in tmux, in milliseconds.
        age_ms: u64,
        /// Unescaped bytes.
        data: Vec<u8>,
    },
    /// `%pause %P`: tmux stopped sending this pane's output.
    Pause {
        /// Pane id.
        pane: String,
    },
    /// `%continue %P`: output resumes.
    Continue {
        /// Pane id.
        pane: String,
    },
    /// `%layout-change @W layout visible-layout flags`.
    LayoutChange {
        /// Window id.
        window: String,
        /// Layout string.
        layout: String,
    },
    /// `%window-add @W`.
    WindowAdd {
        /// Window id.
        window: String,
    },
    /// `%window-close @W` or `%unlinked-window-close @W`.
    WindowClose {
        /// Window id.
        window: String,
    },
    /// `%window-renamed @W name`.
    WindowRenamed {
        /// Window id.
        window: String,
        /// New name.
        name: String,
    },
    /// `%window-pane-changed @W %P`.
    WindowPaneChanged {
        /// Window id.
        window: String,
        /// Newly active pane.
        pane: String,
    },
    /// `%pane-mode-changed %P` (copy mode in or out).
    PaneModeChanged {
        /// Pane id.
        pane: String,
    },
    /// `%session-changed $S name`: this client is now attached to another session.
    SessionChanged {
        /// Session id.
        session: String,
        /// Session name.
        name: String,
    },
    /// `%sessions-changed`.
    SessionsChanged,
    /// `%session-window-changed $S @W`: a session's current window changed (a human
    /// chose another window, or a client selected one).
    SessionWindowChanged {
        /// Session id.
        session: String,
        /// Its current window now.
        window: String,
    },
    /// `%subscription-changed name $S @W idx %P : value`.
    SubscriptionChanged {
        /// Subscription name.
        name: String,
        /// Pane id (`-` for session/window subscriptions).
        pane: String,
        /// Formatted value.
        value: String,
    },
    /// `%exit [reason]`: the client is being detached.
    Exit {
        /// Reason, when given.
        reason: Option<String>,
    },
    /// Anything else, kept raw. Never an error: tmux adds notifications over time.
    Unknown(Vec<u8>),
}

/// What a line completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A reply block closed.
    Reply(Reply),
    /// A notification arrived.
    Notification(Notification),
}

/// Streaming parser state.
#[derive(Debug, Default)]
pub struct Parser {
    open: Option<Reply>,
}

impl Parser {
    /// A parser outside any block.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a reply block is open.
    pub fn in_block(&self) -> bool {
        self.open.is_some()
    }

    /// Feeds one line (without the trailing `\n`; a trailing `\r` is tolerated).
    pub fn feed_line(&mut self, line: &[u8]) -> Option<Event> {
        if let Some(block) = &mut self.open {
            if let Some((kind, number, _)) = guard(line) {
                if number == block.number && (kind == b"%end" || kind == b"%error") {
                    let mut reply = self.open.take().expect("block is open");
                    reply.ok = kind == b"%end";
                    return Some(Event::Reply(reply));
                }
            }
            // tmux writes %pause/%continue synchronously while running the command
            // that caused them (refresh-client -A), inside that command's block.
            if let Some(flow) = flow_control_line(line) {
                return Some(Event::Notification(flow));
            }
            block.lines.push(line.to_vec());
            return None;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some((kind, number, flags)) = guard(line) {
            if kind == b"%begin" {
                self.open = Some(Reply {
                    number,
                    ours: flags & 1 == 1,
                    ok: true,
                    lines: Vec::new(),
                });
                return None;
            }
        }
        if line.is_empty() {
            return None;
        }
        Some(Event::Notification(parse_notification(line)))
    }
}

/// `%pause %N` or `%continue %N`, exactly.
fn flow_control_line(line: &[u8]) -> Option<Notification> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (name, pane) = word(line);
    let is_pane = pane.len() > 1 && pane[0] == b'%' && pane[1..].iter().all(u8::is_ascii_digit);
    match name {
        b"%pause" if is_pane => Some(Notification::Pause { pane: text(pane) }),
        b"%continue" if is_pane => Some(Notification::Continue { pane: text(pane) }),
        _ => None,
    }
}

/// Parses `%begin|%end|%error <time> <number> <flags>`.
fn guard(line: &[u8]) -> Option<(&[u8], u64, u64)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.split(|&b| b == b' ');
    let kind = parts.next()?;
    if !matches!(kind, b"%begin" | b"%end" | b"%error") {
        return None;
    }
    let _time: u64 = ascii_number(parts.next()?)?;
    let number = ascii_number(parts.next()?)?;
    let flags = ascii_number(parts.next()?)?;
    if parts.next().is_some() {
        return None;
    }
    Some((kind, number, flags))
}

fn ascii_number(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn text(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

/// Splits off the first space-separated word.
fn word(s: &[u8]) -> (&[u8], &[u8]) {
    match s.iter().position(|&b| b == b' ') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &[]),
    }
}

impl Notification {
    /// How many bytes of output it carries (0 for anything but output).
    pub fn output_len(&self) -> usize {
        match self {
            Notification::Output { data, .. } | Notification::ExtendedOutput { data, .. } => {
                data.len()
            }
            _ => 0,
        }
    }

    /// Appends `next` to this output when both are one pane's output, handing it back
    /// otherwise: tmux cuts a pane's output where its reads of the pane happened to
    /// end, so one notification for the bytes of several says the same, for one
    /// wake-up of everything that follows the pane instead of one each.
    pub fn join(&mut self, next: Notification) -> Option<Notification> {
        use Notification::{ExtendedOutput, Output};
        match (self, next) {
            (Output { pane, data }, Output { pane: p, data: d }) if *pane == p => {
                data.extend_from_slice(&d);
                None
            }
            (
                ExtendedOutput { pane, age_ms, data },
                ExtendedOutput {
                    pane: p,
                    age_ms: a,
                    data: d,
                },
            ) if *pane == p => {
                data.extend_from_slice(&d);
                *age_ms = (*age_ms).max(a);
                None
            }
            (_, next) => Some(next),
        }
    }
}

fn parse_notification(line: &[u8]) -> Notification {
    let unknown = || Notification::Unknown(line.to_vec());
    let (name, rest) = word(line);
    match name {
        b"%output" => {
            let (pane, data) = word(rest);
            if pane.first() != Some(&b'%') {
                return unknown();
            }
            Notification::Output {
                pane: text(pane),
                data: unescape(data),
            }
        }
        b"%extended-output" => {
            let (pane, rest) = word(rest);
            let (age, rest) = word(rest);
            // Further fields may be added before the colon in later versions.
            let Some(colon) = rest
                .windows(2)
                .position(|w| w == b": ")
                .map(|i| i + 2)
                .or_else(|| (rest == b":").then_some(1))
            else {
                return unknown();
            };
            let Some(age_ms) = ascii_number(age) else {
                return unknown();
            };
            Notification::ExtendedOutput {
                pane: text(pane),
                age_ms,
                data: unescape(&rest[colon..]),
            }
        }
        b"%pause" => Notification::Pause {
            pane: text(word(rest).0),
        },
        b"%continue" => Notification::Continue {
            pane: text(word(rest).0),
        },
        b"%layout-change" => {
            let (window, rest) = word(rest);
            let (layout, _) = word(rest);
            Notification::LayoutChange {
                window: text(window),
                layout: text(layout),
            }
        }
        b"%window-add" => Notification::WindowAdd {
            window: text(word(rest).0),
        },
        b"%window-close" | b"%unlinked-window-close" => Notification::WindowClose {
            window: text(word(rest).0),
        },
        b"%window-renamed" => {
            let (window, name) = word(rest);
            Notification::WindowRenamed {
                window: text(window),
                name: text(name),
            }
        }
        b"%window-pane-changed" => {
            let (window, rest) = word(rest);
            Notification::WindowPaneChanged {
                window: text(window),
                pane: text(word(rest).0),
            }
        }
        b"%pane-mode-changed" => Notification::PaneModeChanged {
            pane: text(word(rest).0),
        },
        b"%session-changed" => {
            let (session, name) = word(rest);
            Notification::SessionChanged {
                session: text(session),
                name: text(name),
            }
        }
        b"%sessions-changed" => Notification::SessionsChanged,
        b"%session-window-changed" => {
            let (session, rest) = word(rest);
            Notification::SessionWindowChanged {
                session: text(session),
                window: text(word(rest).0),
            }
        }
        b"%subscription-changed" => {
            // name $S @W idx %P : value
            let (sub, rest) = word(rest);
            let (_session, rest) = word(rest);
            let (_window, rest) = word(rest);
            let (_index, rest) = word(rest);
            let (pane, rest) = word(rest);
            let Some(value) = rest
                .strip_prefix(b": ")
                .or_else(|| (rest == b":").then_some(&[][..]))
            else {
                return unknown();
            };
            Notification::SubscriptionChanged {
                name: text(sub),
                pane: text(pane),
                value: text(value),
            }
        }
        b"%exit" => Notification::Exit {
            reason: (!rest.is_empty()).then(|| text(rest)),
        },
        _ => unknown(),
    }
}

/// Undoes tmux's `%output` escaping: `\ooo` (three octal digits) becomes one byte;
/// everything else is taken as is.
pub fn unescape(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if b == b'\\' && i + 3 < data.len() {
            let digits = &data[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let value = (digits[0] - b'0') as u32 * 64
                    + (digits[1] - b'0') as u32 * 8
                    + (digits[2] - b'0') as u32;
                if value <= 0xff {
                    out.push(value as u8);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_panes_output_joins_and_nothing_else_does() {
        let output = |pane: &str, data: &[u8]| Notification::Output {
            pane: pane.into(),
            data: data.to_vec(),
        };
        let mut joined = output("%1", b"ab");
        assert_eq!(joined.join(output("%1", b"c\n")), None);
        assert_eq!(joined, output("%1", b"abc\n"));
        assert_eq!(joined.output_len(), 4);
        let mut first = output("%1", b"a");
        assert_eq!(first.join(output("%2", b"b")), Some(output("%2", b"b")));
        assert_eq!(first, output("%1", b"a"));
        let extended = |age_ms, data: &[u8]| Notification::ExtendedOutput {
            pane: "%3".into(),
            age_ms,
            data: data.to_vec(),
        };
        let mut slow = extended(5, b"x");
        assert_eq!(slow.join(extended(2, b"y")), None);
        assert_eq!(slow, extended(5, b"xy"));
        let pause = Notification::Pause { pane: "%1".into() };
        assert_eq!(pause.output_len(), 0);
        assert_eq!(first.join(pause.clone()), Some(pause));
    }

    fn feed_all(input: &[u8]) -> Vec<Event> {
        let mut parser = Parser::new();
        input
            .split(|&b| b == b'\n')
            .filter_map(|line| parser.feed_line(line))
            .collect()
    }

    #[test]
    fn unescapes_octal() {
        assert_eq!(unescape(br"a\015\012b\134c"), b"a\r\nb\\c");
        assert_eq!(unescape(br"\033[31m"), b"\x1b[31m");
        assert_eq!(unescape(br"\9"), br"\9");
        assert_eq!(unescape(br"tail\01"), br"tail\01");
        assert_eq!(unescape("é".as_bytes()), "é".as_bytes());
    }

    #[test]
    fn reply_blocks_keep_every_line() {
        let events = feed_all(b"%begin 1 10 1\none\ntwo\n%end 1 10 1\n");
        assert_eq!(
            events,
            vec![Event::Reply(Reply {
                number: 10,
                ours: true,
                ok: true,
                lines: vec![b"one".to_vec(), b"two".to_vec()],
            })]
        );
    }

    #[test]
    fn a_guard_with_another_number_is_data() {
        let events = feed_all(b"%begin 1 10 1\n%end 1 9 1\n%end 1 10 1\n");
        match &events[0] {
            Event::Reply(r) => assert_eq!(r.lines, vec![b"%end 1 9 1".to_vec()]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn flow_control_inside_a_block_is_a_notification() {
        let events = feed_all(b"%begin 1 7 1\n%continue %3\n%end 1 7 1\n");
        assert_eq!(
            events,
            vec![
                Event::Notification(Notification::Continue { pane: "%3".into() }),
                Event::Reply(Reply {
                    number: 7,
                    ours: true,
                    ok: true,
                    lines: vec![]
                }),
            ]
        );
    }

    #[test]
    fn unknown_lines_are_kept() {
        let events = feed_all(b"%config-error x\n%paste-buffer-changed buffer0\n");
        assert!(
            matches!(&events[0], Event::Notification(Notification::Unknown(l)) if l == b"%config-error x")
        );
        assert_eq!(events.len(), 2);
    }

    #[test]
    fn extended_output_and_subscriptions() {
        let events = feed_all(b"%extended-output %3 12 : hi\\015\\012\n%subscription-changed st $0 @1 0 %3 : 0|0|bash\n");
        assert_eq!(
            events[0],
            Event::Notification(Notification::ExtendedOutput {
                pane: "%3".into(),
                age_ms: 12,
                data: b"hi\r\n".to_vec()
            })
        );
        assert_eq!(
            events[1],
            Event::Notification(Notification::SubscriptionChanged {
                name: "st".into(),
                pane: "%3".into(),
                value: "0|0|bash".into()
            })
        );
    }
}
