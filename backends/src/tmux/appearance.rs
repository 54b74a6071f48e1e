//! What a human sees of a tmux pane: a badge, a tab colour, a background and a
//! cursor colour, as tmux can show them.
//!
//! tmux has no tabs or badges, so each maps to what it does have:
//!
//! - the **tab colour** colours the pane's border (`pane-border-style` and
//!   `pane-active-border-style` read the pane's `@cohort_tab_color`, so each pane of
//!   a window keeps its own) and the window's entry in the status line;
//! - the **badge** is written on the pane's top border, in the tab colour, before
//!   its title (`pane-border-status top`, `pane-border-format`);
//! - the **background** is the pane's `window-style`, the **cursor colour** its
//!   `cursor-colour`.
//!
//! The values live in pane options (`@cohort_badge`, `@cohort_tab_color`; never
//! window options, which every pane of the window would inherit), so any cohort
//! process reads them back; a reset unsets them and the window's status colours.

use crate::types::{Appearance, PaneId};

use super::quote;

/// The border styles: the pane's tab colour when it has one, tmux's own otherwise.
const BORDER_STYLE: &str = "#{?@cohort_tab_color,fg=#{@cohort_tab_color},default}";
const ACTIVE_BORDER_STYLE: &str =
    "#{?@cohort_tab_color,fg=#{@cohort_tab_color}#,bold,#{?pane_in_mode,fg=yellow,fg=green}}";

/// The border line: the badge in the tab colour, then the title; a title that begins
/// with the badge already (a team's pane titled `Team :: agent`, badged `Team`) is
/// drawn in the tab colour instead, so the name is not written twice.
const BORDER_FORMAT: &str = concat!(
    "#{?@cohort_badge,",
    "#{?@cohort_tab_color,#[fg=#{@cohort_tab_color}#,bold],#[bold]}",
    "#{?#{m:#{@cohort_badge} *,#{pane_title}},",
    "#{pane_title}#[default],",
    "#{@cohort_badge}#[default] #{pane_title}},",
    "#{pane_title}}"
);

/// Checks a colour for a tmux style: `#rrggbb` only.
fn colour(value: &str) -> Option<&str> {
    let hex = value.strip_prefix('#')?;
    (hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(value)
}

/// The tmux commands that give `pane` this appearance (the title is set apart), or
/// why a value cannot be shown.
pub(super) fn commands(pane: &PaneId, look: &Appearance) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    let set_pane = |option: &str, value: &str| {
        format!("set-option -p -t {pane} {option} {}", quote::single(value))
    };
    let set_window = |option: &str, value: &str| {
        format!("set-option -w -t {pane} {option} {}", quote::single(value))
    };
    if look.reset {
        for option in [
            "@cohort_tab_color",
            "@cohort_badge",
            "window-style",
            "cursor-colour",
        ] {
            lines.push(format!("set-option -p -u -t {pane} {option}"));
        }
        for option in ["window-status-style", "window-status-current-style"] {
            lines.push(format!("set-option -w -u -t {pane} {option}"));
        }
    }
    let checked = |what: &str, value: &Option<String>| -> Result<Option<String>, String> {
        match value {
            None => Ok(None),
            Some(v) => colour(v)
                .map(|c| Some(c.to_string()))
                .ok_or_else(|| format!("{what} {v:?} is not a colour: use #rrggbb")),
        }
    };
    if let Some(tab) = checked("tab colour", &look.tab_color)? {
        lines.push(set_pane("@cohort_tab_color", &tab));
        lines.push(set_window("pane-border-style", BORDER_STYLE));
        lines.push(set_window("pane-active-border-style", ACTIVE_BORDER_STYLE));
        lines.push(set_window("window-status-style", &format!("fg={tab}")));
        lines.push(set_window(
            "window-status-current-style",
            &format!("fg={tab},bold"),
        ));
    }
    if let Some(badge) = &look.badge {
        if !quote::is_plain(badge) {
            return Err("a badge is one line of printable text".into());
        }
        // The border line draws `#[…]` as a style: a `#` the badge holds is doubled.
        lines.push(set_pane("@cohort_badge", &badge.replace('#', "##")));
        lines.push(set_window("pane-border-status", "top"));
        lines.push(set_window("pane-border-format", BORDER_FORMAT));
        if look.tab_color.is_none() {
            lines.push(set_window("pane-border-style", BORDER_STYLE));
        }
    }
    if let Some(bg) = checked("background", &look.background)? {
        lines.push(set_pane("window-style", &format!("bg={bg}")));
    }
    if let Some(cursor) = checked("cursor colour", &look.cursor_color)? {
        lines.push(set_pane("cursor-colour", &cursor));
    }
    if look.active {
        lines.push(format!("select-pane -t {pane}"));
    }
    Ok(lines)
}

/// The `display-message` fields that read an appearance back.
pub(super) const READ_FIELDS: [&str; 4] = [
    "#{@cohort_badge}",
    "#{@cohort_tab_color}",
    "#{window-style}",
    "#{cursor-colour}",
];

/// An appearance from the values of [`READ_FIELDS`].
pub(super) fn parse(values: &[String]) -> Appearance {
    let some = |v: &str| (!v.is_empty() && v != "none" && v != "default").then(|| v.to_string());
    let background = values
        .get(2)
        .and_then(|style| {
            style
                .split(',')
                .find_map(|part| part.trim().strip_prefix("bg="))
                .map(str::to_string)
        })
        .and_then(|bg| some(&bg));
    Appearance {
        badge: values
            .first()
            .and_then(|b| some(b))
            .map(|b| b.replace("##", "#")),
        tab_color: values.get(1).and_then(|t| some(t)),
        background,
        cursor_color: values.get(3).and_then(|c| some(c)),
        ..Appearance::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appearance_maps_to_pane_options_and_back() {
        let pane = PaneId::new("%4");
        let look = Appearance {
            badge: Some("web #1".into()),
            tab_color: Some("#ff8800".into()),
            background: Some("#101010".into()),
            cursor_color: Some("#00ff00".into()),
            reset: true,
            ..Appearance::default()
        };
        let lines = commands(&pane, &look).unwrap();
        assert!(lines[0].starts_with("set-option -p -u -t %4 @cohort_tab_color"));
        assert!(lines.contains(&"set-option -p -t %4 @cohort_badge 'web ##1'".to_string()));
        assert!(lines.contains(&"set-option -p -t %4 window-style 'bg=#101010'".to_string()));
        let back = parse(&[
            "web ##1".into(),
            "#ff8800".into(),
            "bg=#101010".into(),
            "#00ff00".into(),
        ]);
        assert_eq!(back.badge.as_deref(), Some("web #1"));
        assert_eq!(back.tab_color.as_deref(), Some("#ff8800"));
        assert_eq!(back.background.as_deref(), Some("#101010"));
        assert_eq!(back.cursor_color.as_deref(), Some("#00ff00"));
        let unset = parse(&["".into(), "".into(), "default".into(), "none".into()]);
        assert_eq!(unset, Appearance::default());
        assert!(commands(
            &pane,
            &Appearance {
                tab_color: Some("red; kill-server".into()),
                ..Appearance::default()
            }
        )
        .is_err());
    }
}
