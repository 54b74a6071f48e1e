//! Hidden panes on tmux: a hidden pane gets a window of its own (broken out of the
//! window it shared, which it remembers, and pinned to that window's size as every
//! cohort window is), marked `@cohort_hidden` and left out of the status line's
//! window list; whoever was looking at a window that is hidden is moved to the
//! lobby window. Its program runs on, and cohort reads, types and waits on it as
//! before. Shown again, it goes back into the window it left when that is still
//! there (as iTerm2 puts a disinterred session back in its tab), else its window
//! is listed once more. A person can still reach a hidden window by number or
//! `choose-tree`: it is out of sight, not locked away.

use super::*;

/// The window option marking a hidden pane's window.
const HIDDEN_OPTION: &str = "@cohort_hidden";

/// The pane option naming the window a hidden pane left.
const FROM_OPTION: &str = "@cohort_hidden_from";

/// The window options that keep a hidden window out of the status line.
const STATUS_OPTIONS: [&str; 3] = [
    "window-status-format",
    "window-status-current-format",
    "window-status-separator",
];

impl TmuxBackend {
    /// Hides `pane` or shows it again.
    pub(super) async fn hide(&self, pane: &PaneId, hidden: bool) -> Result<()> {
        check_pane_id(pane)?;
        if hidden {
            self.hide_pane(pane).await
        } else {
            self.show_pane(pane).await
        }
    }

    async fn hide_pane(&self, pane: &PaneId) -> Result<()> {
        let facts = self
            .display(
                pane,
                &[
                    "#{window_panes}",
                    "#{@cohort_name}",
                    "#{window_id}",
                    "#{window_width}",
                    "#{window_height}",
                    &format!("#{{{HIDDEN_OPTION}}}"),
                ],
            )
            .await?;
        if facts[5] == "1" {
            return Ok(());
        }
        let mut lines = Vec::new();
        if facts[0].parse::<u32>().unwrap_or(1) > 1 {
            // Out of the window it shares, into one of its own named as the
            // session; `-d` leaves the person where they are. Checked before the
            // options below, which would otherwise hide the shared window.
            let name = match facts[1].as_str() {
                "" => String::new(),
                name => format!(" -n {}", quote::single(name)),
            };
            self.pane_cmd(pane, &format!("break-pane -d -s {pane}{name}"))
                .await?;
            lines.push(format!(
                "resize-window -t {pane} -x {} -y {}",
                facts[3], facts[4]
            ));
            lines.push(format!("set -p -t {pane} {FROM_OPTION} {}", facts[2]));
        } else {
            // The window itself goes out of sight: whoever looks at it is moved to
            // the lobby.
            let window = &facts[2];
            let sessions = self
                .cmd(&format!(
                    "list-sessions -F {}",
                    quote::single(&format!("#{{session_id}}{SEP}#{{window_id}}"))
                ))
                .await?;
            for row in sessions.lines.iter().map(|l| String::from_utf8_lossy(l)) {
                if let Some((session, current)) = row.split_once(SEP) {
                    if current == window {
                        lines.push(format!(
                            "select-window -t {}",
                            quote::single(&format!("{session}:={LOBBY_WINDOW}"))
                        ));
                    }
                }
            }
        }
        lines.push(format!("set -w -t {pane} {HIDDEN_OPTION} 1"));
        for option in STATUS_OPTIONS {
            lines.push(format!("set -w -t {pane} {option} ''"));
        }
        self.pane_pipeline(pane, &lines).await.map(|_| ())
    }

    async fn show_pane(&self, pane: &PaneId) -> Result<()> {
        let facts = self
            .display(pane, &[&format!("#{{{FROM_OPTION}}}"), "#{window_id}"])
            .await?;
        let mut lines: Vec<String> = [HIDDEN_OPTION]
            .into_iter()
            .chain(STATUS_OPTIONS)
            .map(|option| format!("set -w -t {pane} -u {option}"))
            .collect();
        lines.push(format!("set -p -t {pane} -u {FROM_OPTION}"));
        self.pane_pipeline(pane, &lines).await?;
        let from = &facts[0];
        if from.is_empty() || *from == facts[1] {
            return Ok(());
        }
        // Back beside the panes it left, when their window is still there.
        let windows = self
            .cmd(&format!(
                "list-windows -t {} -F {}",
                quote::single(&format!("={}", self.inner.config.session)),
                quote::single(&format!("#{{window_id}}{SEP}#{{{HIDDEN_OPTION}}}"))
            ))
            .await?;
        // Not into a window that was hidden since.
        let still_there = windows.lines.iter().any(|l| {
            let row = String::from_utf8_lossy(l);
            row.split_once(SEP)
                .is_some_and(|(id, hidden)| id == from && hidden.trim() != "1")
        });
        if still_there && from.starts_with('@') && from[1..].bytes().all(|b| b.is_ascii_digit()) {
            self.pane_cmd(pane, &format!("join-pane -d -h -s {pane} -t {from}"))
                .await?;
        }
        Ok(())
    }
}
