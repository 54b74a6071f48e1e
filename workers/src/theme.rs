//! Human names and colours for workers, so a person watching tells them apart.
//!
//! Names come from themed sets (no name is given to two live workers); colours from
//! the max-gap hue distributor of [`cohort_terminal::colours`] (a team's workers take
//! the team's colour), read back to hues here.

/// The themed sets of names, by theme.
pub const THEMES: &[(&str, &[&str])] = &[
    ("marx", &["Groucho", "Harpo", "Chico", "Zeppo", "Gummo"]),
    ("beatles", &["John", "Paul", "George", "Ringo"]),
    (
        "scientists",
        &[
            "Curie", "Turing", "Lovelace", "Hopper", "Noether", "Darwin", "Faraday", "Meitner",
        ],
    ),
    (
        "greek",
        &[
            "Athena", "Apollo", "Artemis", "Hermes", "Hera", "Ares", "Demeter", "Hestia",
        ],
    ),
    (
        "painters",
        &[
            "Monet", "Kahlo", "Turner", "Vermeer", "Klimt", "Hokusai", "Goya", "Rothko",
        ],
    ),
];

/// Picks `count` names not in `taken`: from `theme` when given, else from the
/// first theme with enough free names, else from all themes, numbered past that.
pub fn pick_names(
    theme: Option<&str>,
    count: usize,
    taken: &[String],
) -> Result<Vec<String>, String> {
    let free = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|n| !taken.iter().any(|t| t.eq_ignore_ascii_case(n)))
            .map(|n| n.to_string())
            .collect()
    };
    if let Some(theme) = theme {
        let names = THEMES
            .iter()
            .find(|(t, _)| t.eq_ignore_ascii_case(theme))
            .map(|(_, n)| *n)
            .ok_or_else(|| {
                format!(
                    "unknown name theme {theme:?}: choose from {}",
                    THEMES
                        .iter()
                        .map(|(t, _)| *t)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        let mut out = free(names);
        extend_numbered(&mut out, names, count, taken);
        out.truncate(count);
        return Ok(out);
    }
    if let Some(names) = THEMES
        .iter()
        .map(|(_, n)| free(n))
        .find(|f| f.len() >= count)
    {
        return Ok(names.into_iter().take(count).collect());
    }
    let all: Vec<&str> = THEMES.iter().flat_map(|(_, n)| n.iter().copied()).collect();
    let mut out = free(&all);
    extend_numbered(&mut out, &all, count, taken);
    out.truncate(count);
    Ok(out)
}

/// Adds `Name-2`, `Name-3`… until there are `count` names.
fn extend_numbered(out: &mut Vec<String>, names: &[&str], count: usize, taken: &[String]) {
    let mut n = 2;
    while out.len() < count {
        for name in names {
            let candidate = format!("{name}-{n}");
            if !taken.iter().any(|t| t.eq_ignore_ascii_case(&candidate)) {
                out.push(candidate);
            }
            if out.len() >= count {
                return;
            }
        }
        n += 1;
    }
}

/// The hue of a `#rrggbb` colour.
pub fn colour_hue(colour: &str) -> Option<f64> {
    let hex = colour.strip_prefix('#').filter(|h| h.len() == 6)?;
    let v = |i: usize| {
        u8::from_str_radix(&hex[i..i + 2], 16)
            .ok()
            .map(|b| f64::from(b) / 255.0)
    };
    let (r, g, b) = (v(0)?, v(2)?, v(4)?);
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let d = max - min;
    if d == 0.0 {
        return Some(0.0);
    }
    let h = if max == r {
        ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        (b - r) / d + 2.0
    } else {
        (r - g) / d + 4.0
    };
    Some(h * 60.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_repeat_among_live_workers() {
        let taken = vec!["groucho".to_string()];
        let names = pick_names(Some("marx"), 6, &taken).unwrap();
        assert_eq!(names[..4], ["Harpo", "Chico", "Zeppo", "Gummo"]);
        assert_eq!(names[4], "Groucho-2");
        assert_eq!(names.len(), 6);
        assert_eq!(
            pick_names(None, 4, &[]).unwrap(),
            ["Groucho", "Harpo", "Chico", "Zeppo"]
        );
        // The first theme is short of names: the next one with enough is used.
        let busy: Vec<String> = ["Groucho", "Harpo", "Chico"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            pick_names(None, 3, &busy).unwrap(),
            ["John", "Paul", "George"]
        );
        assert!(pick_names(Some("nope"), 1, &[]).is_err());
        let many = pick_names(None, 40, &[]).unwrap();
        let mut unique = many.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 40);
    }

    #[test]
    fn colours_round_trip_to_their_hues() {
        use cohort_terminal::colours::hue_hex;
        for hue in [0.0, 30.0, 120.0, 180.0, 210.0, 300.0] {
            let back = colour_hue(&hue_hex(hue)).unwrap();
            assert!((back - hue).abs() < 2.0, "{hue} -> {back}");
        }
    }
}
