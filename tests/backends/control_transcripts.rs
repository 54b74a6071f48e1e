//! The control-mode parser and the output splitter against transcripts recorded
//! from real tmux (see `fixtures/tmux/README.md`).

use cohort_backends::stream::{OutputSplitter, Piece};
use cohort_backends::tmux::parse::{Event, Notification, Parser, Reply};

fn transcript(name: &str) -> Vec<Event> {
    let path = format!("{}/fixtures/tmux/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut parser = Parser::new();
    let events: Vec<Event> = bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| parser.feed_line(line))
        .collect();
    assert!(!parser.in_block(), "{name}: a reply block was left open");
    events
}

fn replies(events: &[Event]) -> Vec<&Reply> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Reply(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn output_of(events: &[Event], pane: &str) -> Vec<Vec<u8>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notification(Notification::Output { pane: p, data })
            | Event::Notification(Notification::ExtendedOutput { pane: p, data, .. })
                if p == pane =>
            {
                Some(data.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn escapes_are_undone_byte_exact() {
    let events = transcript("escapes");
    let output: Vec<u8> = output_of(&events, "%0").concat();
    let expected = b"tab\there\\back\x1b[31mred\x1b[0m\r\r\n";
    assert!(
        output.windows(expected.len()).any(|w| w == expected),
        "{:?}",
        String::from_utf8_lossy(&output)
    );
    // The attach block is not ours; the two send-keys replies are.
    let r = replies(&events);
    assert!(!r[0].ours);
    assert!(r[1..].iter().all(|r| r.ours && r.ok));
}

#[test]
fn split_utf8_is_reassembled() {
    let events = transcript("split_utf8");
    let pieces = output_of(&events, "%0");
    assert!(
        pieces.iter().any(|p| std::str::from_utf8(p).is_err()),
        "the transcript should contain characters split across lines"
    );
    let mut splitter = OutputSplitter::default();
    let mut shaped = Vec::new();
    for piece in &pieces {
        splitter.push(piece, &mut shaped);
    }
    let mut joined = Vec::new();
    for piece in &shaped {
        if let Piece::Bytes(b) = piece {
            assert!(
                std::str::from_utf8(b).is_ok(),
                "a shaped chunk is not valid UTF-8: {b:?}"
            );
            joined.extend_from_slice(b);
        }
    }
    assert_eq!(joined, pieces.concat());
    let text = String::from_utf8(joined).unwrap();
    // 1000 printed, plus the one in the echo of the typed command.
    assert_eq!(text.matches("日本語テキスト🎉éü").count(), 1001);
}

#[test]
fn reply_blocks_keep_every_line() {
    let events = transcript("reply_many_lines");
    let r = replies(&events);
    let capture = r
        .iter()
        .find(|r| r.lines.iter().any(|l| l == b"60"))
        .expect("capture-pane reply");
    let numbers: Vec<String> = capture
        .lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .filter(|l| l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty())
        .collect();
    let expected: Vec<String> = (1..=60).map(|n| n.to_string()).collect();
    assert_eq!(numbers, expected);
    let commands = r.last().unwrap();
    assert!(
        commands.lines.len() > 50,
        "list-commands has {} lines",
        commands.lines.len()
    );
    assert!(commands.lines.iter().any(|l| l.starts_with(b"send-keys")));
}

#[test]
fn errors_are_replies_that_keep_the_pairing() {
    let events = transcript("error");
    let ours: Vec<&Reply> = replies(&events).into_iter().filter(|r| r.ours).collect();
    assert_eq!(ours.len(), 3, "one reply per command, errors included");
    assert!(
        !ours[0].ok && ours[0].text().contains("unknown command"),
        "{}",
        ours[0].text()
    );
    assert!(ours[1].ok && ours[1].text() == "ok");
    assert!(
        !ours[2].ok && ours[2].text().contains("can't find pane"),
        "{}",
        ours[2].text()
    );
}

#[test]
fn pause_and_continue_are_reported() {
    let events = transcript("pause_continue");
    let notifications: Vec<&Notification> = events
        .iter()
        .filter_map(|e| match e {
            Event::Notification(n) => Some(n),
            _ => None,
        })
        .collect();
    let pause = notifications
        .iter()
        .position(|n| matches!(n, Notification::Pause { pane } if pane == "%0"))
        .expect("%pause");
    let cont = notifications
        .iter()
        .position(|n| matches!(n, Notification::Continue { pane } if pane == "%0"))
        .expect("%continue");
    assert!(pause < cont);
    assert!(notifications
        .iter()
        .any(|n| matches!(n, Notification::ExtendedOutput { pane, data, .. } if pane == "%0" && data.starts_with(b"flood"))));
}

#[test]
fn window_events_unknown_lines_and_exit() {
    let events = transcript("window_events_and_exit");
    let has = |f: &dyn Fn(&Notification) -> bool| {
        events
            .iter()
            .any(|e| matches!(e, Event::Notification(n) if f(n)))
    };
    assert!(has(&|n| matches!(n, Notification::WindowAdd { .. })));
    assert!(has(
        &|n| matches!(n, Notification::LayoutChange { layout, .. } if cohort_backends::layout::parse_tmux_layout(layout).is_ok())
    ));
    assert!(has(
        &|n| matches!(n, Notification::SubscriptionChanged { name, pane, .. } if name == "st" && pane.starts_with('%'))
    ));
    assert!(has(&|n| matches!(n, Notification::WindowClose { .. })));
    assert!(
        has(&|n| matches!(n, Notification::Unknown(_))),
        "3.3a sends lines cohort does not model"
    );
    assert!(matches!(
        events.last(),
        Some(Event::Notification(Notification::Exit { .. }))
    ));
}
