//! The fuzz targets' bodies: any bytes in, no panic out, and the invariants each
//! parser or decoder promises. The cargo-fuzz binaries in `fuzz_targets/` call these;
//! `tests/replay.rs` calls them on stable Rust over the committed seeds and a seeded
//! stream of mutated inputs, so CI needs neither nightly nor cargo-fuzz.

#![deny(missing_docs)]

use cohort_backends::stream::{OutputSplitter, Piece};
use cohort_backends::tmux::parse::{unescape, Event, Notification, Parser};
use cohort_reducers::{estimate_tokens, reduce as reduce_output, Options};

/// A target's body: any bytes in.
pub type Target = fn(&[u8]);

/// The targets by name, for the replay and for naming corpus directories.
pub const TARGETS: &[(&str, Target)] = &[
    ("control_mode", control_mode),
    ("output_stream", output_stream),
    ("iterm2_message", iterm2_message),
    ("tool_arguments", tool_arguments),
    ("reduce", reduce),
];

/// tmux control mode: the input is tmux's stdout, fed line by line to the parser.
/// Checks: unescaping never grows a payload; a block that closed was opened by a
/// `%begin` with the same number.
pub fn control_mode(data: &[u8]) {
    let mut parser = Parser::new();
    for line in data.split(|&b| b == b'\n') {
        let escaped_len = line.len();
        assert!(unescape(line).len() <= escaped_len);
        match parser.feed_line(line) {
            Some(Event::Notification(Notification::Output { pane, data })) => {
                assert!(data.len() <= escaped_len, "{pane}: output grew");
            }
            Some(Event::Reply(reply)) => {
                assert!(
                    !parser.in_block(),
                    "a closed block left the parser inside one"
                );
                let guard = format!("%end {}", reply.number);
                let closing = String::from_utf8_lossy(line);
                assert!(
                    closing.contains(&reply.number.to_string())
                        || closing.starts_with(&guard)
                        || closing.starts_with("%error"),
                    "block {} closed by {closing:?}",
                    reply.number
                );
            }
            _ => {}
        }
    }
}

/// The OSC 133 / UTF-8 output splitter. The first byte picks how the rest is cut into
/// pieces. Checks: the bytes come out as they went in (marks stay in the stream;
/// only custom control sequences, the signals, are taken out), the same however the
/// stream was cut; the marks and signals found do not depend on how it was cut;
/// valid UTF-8 in gives pieces that are valid UTF-8 on their own.
pub fn output_stream(data: &[u8]) {
    let Some((&cut, stream)) = data.split_first() else {
        return;
    };
    let whole = split(stream, &[stream.len().max(1)]);
    let sizes: Vec<usize> = (0..8)
        .map(|i| 1 + ((cut as usize >> i) & 7) * (i + 1))
        .collect();
    let pieces = split(stream, &sizes);
    let bytes = |run: &[Piece]| -> Vec<u8> {
        run.iter()
            .filter_map(|p| match p {
                Piece::Bytes(b) => Some(b.as_slice()),
                Piece::Mark(..) | Piece::Signal { .. } => None,
            })
            .collect::<Vec<_>>()
            .concat()
    };
    assert_eq!(
        bytes(&whole),
        bytes(&pieces),
        "the bytes depend on where the stream was cut"
    );
    let has_signal = stream
        .windows(b"\x1b]1337;Custom=".len())
        .any(|w| w == b"\x1b]1337;Custom=");
    if !has_signal {
        assert_eq!(bytes(&whole), stream, "bytes were lost or invented");
    } else {
        assert!(bytes(&whole).len() <= stream.len(), "bytes were invented");
    }
    let marks = |run: &[Piece]| -> Vec<Piece> {
        run.iter()
            .filter(|p| matches!(p, Piece::Mark(..) | Piece::Signal { .. }))
            .cloned()
            .collect()
    };
    assert_eq!(
        marks(&whole),
        marks(&pieces),
        "the marks depend on where the stream was cut"
    );
    if std::str::from_utf8(stream).is_ok() {
        for p in &pieces {
            if let Piece::Bytes(b) = p {
                assert!(
                    std::str::from_utf8(b).is_ok(),
                    "a piece cut a character: {b:?}"
                );
            }
        }
    }
}

/// Feeds `stream` to a splitter in pieces of `sizes` (cycled), then flushes.
fn split(stream: &[u8], sizes: &[usize]) -> Vec<Piece> {
    let mut splitter = OutputSplitter::default();
    let mut out = Vec::new();
    let mut rest = stream;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at((*size).min(rest.len()));
        splitter.push(head, &mut out);
        rest = tail;
    }
    if let Some(held) = splitter.flush() {
        out.push(Piece::Bytes(held));
    }
    out
}

/// iTerm2's protobuf messages, both directions. Checks: whatever decodes re-encodes
/// to bytes that decode to the same message.
pub fn iterm2_message(data: &[u8]) {
    use cohort_backends::iterm2::proto::{ClientOriginatedMessage, ServerOriginatedMessage};
    use prost::Message;
    if let Ok(message) = ServerOriginatedMessage::decode(data) {
        let again = ServerOriginatedMessage::decode(message.encode_to_vec().as_slice())
            .expect("a re-encoded server message decodes");
        assert_eq!(again, message);
    }
    if let Ok(message) = ClientOriginatedMessage::decode(data) {
        let again = ClientOriginatedMessage::decode(message.encode_to_vec().as_slice())
            .expect("a re-encoded client message decodes");
        assert_eq!(again, message);
    }
}

/// Tool arguments as the server decodes them: the first byte picks the type, the rest
/// is JSON. Covers the argument types the crate exposes, the split tree (validated and
/// planned when it decodes), the JSON-RPC message itself, key names, session names,
/// the tripwire and input sanitising.
pub fn tool_arguments(data: &[u8]) {
    use cohort::mcp::{KeyArgs, OpenArgs, ReadArgs, RunArgs, SendArgs, StatusArgs, TargetArgs};
    use cohort_terminal::layout::{plan, SplitTree};
    let Some((&which, json)) = data.split_first() else {
        return;
    };
    fn decode<T: serde::de::DeserializeOwned>(json: &[u8]) -> Option<T> {
        serde_json::from_slice(json).ok()
    }
    match which % 10 {
        0 => {
            if let Some(tree) = decode::<SplitTree>(json) {
                if let Ok(count) = tree.validate() {
                    assert!((1..=16).contains(&count));
                    let steps = plan(&tree);
                    assert_eq!(steps.len(), count, "a plan makes every pane once");
                }
            }
        }
        1 => {
            let _ = decode::<OpenArgs>(json);
        }
        2 => {
            let _ = decode::<SendArgs>(json);
        }
        3 => {
            let _ = decode::<RunArgs>(json);
        }
        4 => {
            let _ = decode::<ReadArgs>(json);
        }
        5 => {
            if let Some(args) = decode::<KeyArgs>(json) {
                for key in &args.keys {
                    let _ = key.parse::<cohort_backends::Key>();
                }
            }
        }
        6 => {
            let _ = decode::<StatusArgs>(json);
            let _ = decode::<TargetArgs>(json);
        }
        7 => {
            let _ = decode::<rmcp::model::ClientJsonRpcMessage>(json);
        }
        _ => {
            let text = String::from_utf8_lossy(json);
            let _ = cohort_terminal::validate_name(&text);
            let _ = cohort_terminal::tripwire::check_command(&text);
            let clean = cohort_terminal::sanitize::sanitize_input(&text);
            assert!(
                !clean.contains('\u{1b}'),
                "an escape survived sanitising: {clean:?}"
            );
        }
    }
}

/// `cohort_reducers::reduce`: the first byte picks a command (and tight or default
/// limits), the rest is its output. Checks the invariants that need no fixture: never
/// more tokens than the raw output, hidden ranges inside it, honest figures.
pub fn reduce(data: &[u8]) {
    const COMMANDS: &[&str] = &[
        "",
        "git status",
        "git log",
        "git status -s",
        "git status --porcelain=v2 --branch",
        "git log --oneline --graph",
        "git log --format='%h %an %ad %s'",
        "git diff",
        "grep -rn x .",
        "rg x",
        "pytest",
        "cargo build",
        "cargo test",
        "cargo nextest run",
        "npm install",
        "npx jest",
        "vitest run",
        "tsc",
        "eslint .",
        "go test ./...",
        "go build",
        "make",
        "ls -la",
        "find .",
        "tree",
        "du -a",
        "df -h",
        "ps aux",
        "docker build .",
        "pip install x",
        "journalctl",
        "tail -f app.log",
        "sudo env A=1 uv run python -m pytest | tail -5",
        "a && b; c",
    ];
    let Some((&selector, raw)) = data.split_first() else {
        return;
    };
    let command = COMMANDS[selector as usize % COMMANDS.len()];
    let options = if selector & 0x80 != 0 {
        Options {
            max_lines: Some(8),
            head: 3,
            tail: 3,
            max_line_width: Some(40),
            max_signal_lines: 2,
            ..Options::default()
        }
    } else {
        Options::default()
    };
    let r = reduce_output(command, raw, &options);
    assert!(
        r.shown_tokens <= r.raw_tokens,
        "{} > {}",
        r.shown_tokens,
        r.raw_tokens
    );
    assert_eq!(r.shown_tokens, estimate_tokens(&r.text));
    for h in &r.hidden {
        assert!(
            h.lines.start < h.lines.end && h.lines.end <= r.raw_lines,
            "{h:?} of {}",
            r.raw_lines
        );
        assert!(
            h.count >= 1 && h.count <= h.lines.len() && h.signal <= h.count,
            "{h:?}"
        );
    }
    if std::str::from_utf8(raw).is_err() {
        assert!(!r.notices.is_empty());
    }
    let _ = r.meta_line();
}
