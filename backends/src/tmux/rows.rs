//! The pane row cohort asks tmux for (`list-panes -F`), and its parsing.

use super::*;

/// Fields of one pane row, parsed by [`parse_pane_row`].
pub(super) const PANE_FIELDS: [&str; 22] = [
    "#{pane_id}",
    "#{window_id}",
    "#{window_name}",
    "#{pane_title}",
    "#{pane_width}",
    "#{pane_height}",
    "#{pane_active}",
    "#{pane_current_command}",
    "#{pane_dead}",
    "#{@cohort_id}",
    "#{@cohort_name}",
    "#{@cohort_agent}",
    "#{@cohort_team}",
    "#{pane_pid}",
    "#{@cohort_key}",
    "#{@cohort_anchor}",
    "#{@cohort_announces}",
    "#{@cohort_command}",
    "#{pane_dead_status}",
    "#{@cohort_recording}",
    "#{@cohort_broadcast}",
    "#{@cohort_hidden}",
];

pub(super) fn pane_format() -> String {
    PANE_FIELDS.join(&SEP.to_string())
}

/// Parses a row of [`PANE_FIELDS`] into the pane and its process id.
pub(super) fn parse_pane_row(line: &str) -> Option<(PaneInfo, Option<u32>)> {
    let f: Vec<&str> = line.split(SEP).collect();
    if f.len() != PANE_FIELDS.len() {
        return None;
    }
    let pid = f[13].parse::<u32>().ok().filter(|p| *p > 0);
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let identity = non_empty(f[9]).map(|id| Identity {
        id,
        name: f[10].to_string(),
        agent: non_empty(f[11]),
        team: non_empty(f[12]),
        key: non_empty(f[14]),
        anchor: non_empty(f[15]),
        announces_start: f[16] == "1",
    });
    let info = PaneInfo {
        id: PaneId(f[0].to_string()),
        window: WindowId(f[1].to_string()),
        window_name: f[2].to_string(),
        title: f[3].to_string(),
        size: Size {
            cols: f[4].parse().ok()?,
            rows: f[5].parse().ok()?,
        },
        active: f[6] == "1",
        // A dead pane's command is tmux's first word of what started it (cohort's
        // wrapper around the command): the command as it was given reads better.
        command: match (f[8] == "1", f[17]) {
            (true, given) if !given.is_empty() => given.to_string(),
            _ => f[7].to_string(),
        },
        dead: f[8] == "1",
        exit_status: (f[8] == "1").then(|| f[18].parse().ok()).flatten(),
        recording: non_empty(f[19]),
        identity,
        hidden: f[21] == "1",
    };
    Some((info, pid))
}
