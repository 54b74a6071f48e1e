//! Hidden panes on tmux: a hidden pane gets a window of its own (broken out of the
//! window it shared), marked `@cohort_hidden` and left out of the status line's
//! window list; its program runs on, and cohort reads, types and waits on it as
//! before. Shown again, the window is listed once more (it stays a window of its
//! own, as a disinterred iTerm2 session comes back in a window of its own).

use super::*;

/// The window option marking a hidden pane's window.
const HIDDEN_OPTION: &str = "@cohort_hidden";

impl TmuxBackend {
    /// Hides `pane` or shows it again.
    pub(super) async fn hide(&self, pane: &PaneId, hidden: bool) -> Result<()> {
        check_pane_id(pane)?;
        let mut lines = Vec::new();
        if hidden {
            let facts = self
                .display(pane, &["#{window_panes}", "#{@cohort_name}"])
                .await?;
            if facts[0].parse::<u32>().unwrap_or(1) > 1 {
                // Out of the window it shares, into one of its own, named as the
                // session; `-d` leaves the person where they are.
                let name = match facts[1].as_str() {
                    "" => String::new(),
                    name => format!(" -n {}", quote::single(name)),
                };
                lines.push(format!("break-pane -d -s {pane}{name}"));
            }
            lines.push(format!("set -w -t {pane} {HIDDEN_OPTION} 1"));
            lines.push(format!("set -w -t {pane} window-status-format ''"));
            lines.push(format!("set -w -t {pane} window-status-current-format ''"));
            lines.push(format!("set -w -t {pane} window-status-separator ''"));
        } else {
            for option in [
                HIDDEN_OPTION,
                "window-status-format",
                "window-status-current-format",
                "window-status-separator",
            ] {
                lines.push(format!("set -w -t {pane} -u {option}"));
            }
        }
        self.pane_pipeline(pane, &lines).await.map(|_| ())
    }
}
