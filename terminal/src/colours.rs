//! Team colours and the appearance of many sessions at once.
//!
//! Every team gets a colour of its own from a max-gap hue distributor: the first
//! team 180°, each new one the middle of the largest gap left on the colour wheel
//! (0°, 90°, 270°, 45°, …), so eight teams are 45° apart and any number stay as far
//! apart as the wheel allows. A team's hue is kept in the registry: it never changes,
//! and every process shows the same. A pane of a team shows it: on iTerm2 as its tab
//! colour and a badge with the team's name, on tmux on the pane's border (see the
//! backends).

use cohort_backends::{Appearance, PaneId};
use futures_util::future::join_all;

use crate::targets::Delivery;
use crate::{Terminal, TerminalError};

/// The hue the next team gets, given the hues taken (degrees): 180 for the first,
/// then the middle of the largest gap on the wheel (the first such gap going round
/// from 0° on a tie).
pub fn next_hue(taken: &[f64]) -> f64 {
    let mut hues: Vec<f64> = taken
        .iter()
        .filter(|h| h.is_finite())
        .map(|h| h.rem_euclid(360.0))
        .collect();
    if hues.is_empty() {
        return 180.0;
    }
    hues.sort_by(f64::total_cmp);
    let mut best = (0.0, hues[0]);
    for (i, start) in hues.iter().enumerate() {
        let end = if i + 1 < hues.len() {
            hues[i + 1]
        } else {
            hues[0] + 360.0
        };
        let gap = end - start;
        if gap > best.0 + 1e-9 {
            best = (gap, *start);
        }
    }
    (best.1 + best.0 / 2.0).rem_euclid(360.0)
}

/// A hue (degrees) as `#rrggbb`, at a saturation and lightness that read on dark and
/// light terminals alike.
pub fn hue_hex(hue: f64) -> String {
    let (s, l) = (0.65, 0.55);
    let c = (1.0 - (2.0 * l - 1.0_f64).abs()) * s;
    let h = hue.rem_euclid(360.0) / 60.0;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let byte = |v: f64| ((v + m).clamp(0.0, 1.0) * 255.0).round() as u8;
    format!("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b))
}

/// The smallest distance between two hues, in degrees (0-180).
pub fn hue_distance(a: f64, b: f64) -> f64 {
    let d = (a - b).rem_euclid(360.0);
    d.min(360.0 - d)
}

/// A team's colour.
#[derive(Clone, Debug, PartialEq)]
pub struct TeamColour {
    /// The team.
    pub team: String,
    /// Its hue in degrees.
    pub hue: f64,
    /// As `#rrggbb`.
    pub hex: String,
}

/// A change of appearance for many sessions.
#[derive(Clone, Debug, Default)]
pub struct AppearanceChange {
    /// Title, badge, colours, active, reset.
    pub look: Appearance,
    /// Bring the session to the front for a human.
    pub focus: bool,
    /// Show the team colour of the agent working there.
    pub team_colour: bool,
}

/// `#rrggbb`.
fn is_colour(text: &str) -> bool {
    text.len() == 7 && text.starts_with('#') && text[1..].chars().all(|c| c.is_ascii_hexdigit())
}

impl Terminal {
    /// `team`'s colour (given one the first time it is asked for).
    pub async fn team_colour(&self, team: &str) -> Result<TeamColour, TerminalError> {
        crate::names::check(crate::names::NameKind::Team, team)?;
        let name = team.to_string();
        let hue = self.db(move |r| r.team_hue(&name, next_hue)).await?;
        Ok(TeamColour {
            team: team.to_string(),
            hue,
            hex: hue_hex(hue),
        })
    }

    /// Shows `team`'s colour (and its name as a badge) on `pane`, as far as the
    /// backend can.
    pub async fn show_team(&self, pane: &PaneId, team: &str) -> Result<TeamColour, TerminalError> {
        let colour = self.team_colour(team).await?;
        let caps = self.backend.capabilities();
        let look = Appearance {
            tab_color: caps.tab_colors.then(|| colour.hex.clone()),
            badge: caps.badges.then(|| team.to_string()),
            ..Appearance::default()
        };
        if look.tab_color.is_some() || look.badge.is_some() {
            self.backend.set_appearance(pane, &look).await?;
        }
        Ok(colour)
    }

    /// Shows `team`'s colour on a pane that just joined it; a backend that cannot
    /// show it (or a failure) leaves the pane as it is, which is logged.
    pub(crate) async fn show_team_on_join(&self, pane: &PaneId, team: &str) {
        if let Err(e) = self.show_team(pane, team).await {
            tracing::debug!(target: "cohort::colours", "team {team}'s colour is not shown on {pane}: {e}");
        }
    }

    /// Changes the appearance of every session the targets reach, each answered on
    /// its own.
    pub async fn set_appearance_many(
        &self,
        targets: &[String],
        change: &AppearanceChange,
    ) -> Result<Vec<Delivery>, TerminalError> {
        let look = &change.look;
        if let Some(c) = look.cursor_color.as_deref().filter(|c| !is_colour(c)) {
            return Err(TerminalError::InvalidArgument(format!(
                "cursor_color {c:?} is not a colour: use #rrggbb, e.g. #1e90ff"
            )));
        }
        if look.cursor_color.is_some() && !self.backend.capabilities().cursor_colors {
            return Err(TerminalError::InvalidArgument(format!(
                "the {} backend cannot show cursor colours; nothing was changed",
                self.backend.kind().name()
            )));
        }
        let nothing = *look == Appearance::default() && !change.focus && !change.team_colour;
        if nothing {
            return Err(TerminalError::InvalidArgument(
                "nothing to change: give title, badge, tab_color, background, cursor_color, focus, active, reset or team_colour".into(),
            ));
        }
        if targets.is_empty() {
            return Err(TerminalError::InvalidArgument(
                "no targets: name sessions, agents or teams".into(),
            ));
        }
        // A mistyped name refuses the batch before anything changes.
        let expanded = self.expand_targets_or_refuse(targets).await?;
        let jobs = expanded.into_iter().map(|(label, pane)| async move {
            let session = pane
                .identity
                .as_ref()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| pane.window_name.clone());
            let mut meta = Vec::new();
            let result: Result<(), TerminalError> = async {
                if *look != Appearance::default() {
                    self.set_appearance(&pane.id, look).await?;
                }
                if change.team_colour {
                    match pane.identity.as_ref().and_then(|i| i.team.clone()) {
                        Some(team) => {
                            let colour = self.show_team(&pane.id, &team).await?;
                            meta.push(format!("team {team}: {} ({:.0}°)", colour.hex, colour.hue));
                        }
                        None => meta.push("no team: no team colour".into()),
                    }
                }
                if change.focus {
                    self.focus(&pane.id).await?;
                }
                Ok(())
            }
            .await;
            Delivery {
                target: label,
                session,
                error: result.err().map(|e| e.to_string()),
                text: None,
                meta: (!meta.is_empty()).then(|| meta.join("; ")),
            }
        });
        Ok(join_all(jobs).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hues_bisect_the_largest_gap_from_180() {
        let mut taken = Vec::new();
        for _ in 0..8 {
            let hue = next_hue(&taken);
            taken.push(hue);
        }
        assert_eq!(taken, [180.0, 0.0, 90.0, 270.0, 45.0, 135.0, 225.0, 315.0]);
        let closest = taken
            .iter()
            .enumerate()
            .flat_map(|(i, a)| taken[i + 1..].iter().map(move |b| hue_distance(*a, *b)))
            .fold(f64::MAX, f64::min);
        assert!(closest >= 40.0, "{closest}");
        // Taken hues in any order give the same next one.
        assert_eq!(
            next_hue(&[270.0, 0.0, 180.0]),
            next_hue(&[0.0, 180.0, 270.0])
        );
        assert_eq!(next_hue(&[10.0]), 190.0);
    }

    #[test]
    fn hues_become_distinct_colours() {
        assert_eq!(hue_hex(0.0), "#d74242");
        assert_eq!(hue_hex(120.0), "#42d742");
        assert_eq!(hue_hex(240.0), "#4242d7");
        assert_ne!(hue_hex(180.0), hue_hex(135.0));
        assert_eq!(hue_distance(350.0, 10.0), 20.0);
    }
}
