//! Layouts: several named sessions in one window, arranged by a split tree.
//!
//! Presets (`single`, `horizontal`, `vertical`, `quad`, `triple_vertical`,
//! `triple_bottom`, `grid` R×C) are shorthands for a [`SplitTree`]; callers can also
//! give the tree itself, with sizes. The tree is carried out with the backend's
//! `spawn` and `split` only: the first leaf opens the window, every other leaf is a
//! split of the pane that still covers it.

use serde::{Deserialize, Serialize};

use cohort_backends::{SplitDirection, SplitSize};

/// Which way a split goes, as layouts spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Side by side.
    Horizontal,
    /// Stacked.
    Vertical,
}

impl From<Direction> for SplitDirection {
    fn from(d: Direction) -> Self {
        match d {
            Direction::Horizontal => SplitDirection::Horizontal,
            Direction::Vertical => SplitDirection::Vertical,
        }
    }
}

/// The most panes one layout makes.
pub const MAX_PANES: usize = 16;

/// A split tree: leaves are panes, numbered in reading order.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SplitTree {
    /// A split of the area into children.
    Split {
        /// "horizontal" (side by side) or "vertical" (stacked).
        split: Direction,
        /// The children, left to right or top to bottom.
        children: Vec<Child>,
    },
    /// One pane (its index in the pane list).
    Pane {
        /// Index into the layout's pane list, in reading order.
        pane: usize,
    },
}

/// A child of a split, with an optional share of its parent.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct Child {
    /// The child's subtree.
    #[serde(flatten)]
    pub tree: SplitTree,
    /// Share of the parent in percent (the rest is divided evenly among children
    /// without a size).
    #[serde(default)]
    pub size: Option<u8>,
}

impl SplitTree {
    fn leaf(pane: usize) -> Child {
        Child {
            tree: SplitTree::Pane { pane },
            size: None,
        }
    }

    fn split(direction: Direction, children: Vec<Child>) -> SplitTree {
        SplitTree::Split {
            split: direction,
            children,
        }
    }

    /// The tree of a named preset.
    pub fn preset(name: &str, rows: Option<u16>, cols: Option<u16>) -> Result<SplitTree, String> {
        use Direction::{Horizontal as H, Vertical as V};
        let row = |first: usize, n: usize| Child {
            tree: SplitTree::split(H, (first..first + n).map(SplitTree::leaf).collect()),
            size: None,
        };
        Ok(match name {
            "single" => SplitTree::Pane { pane: 0 },
            "horizontal" => SplitTree::split(H, vec![SplitTree::leaf(0), SplitTree::leaf(1)]),
            "vertical" => SplitTree::split(V, vec![SplitTree::leaf(0), SplitTree::leaf(1)]),
            "quad" => SplitTree::split(V, vec![row(0, 2), row(2, 2)]),
            "triple_vertical" => SplitTree::split(H, (0..3).map(SplitTree::leaf).collect()),
            "triple_bottom" => SplitTree::split(V, vec![SplitTree::leaf(0), row(1, 2)]),
            "grid" => {
                let (r, c) = match (rows, cols) {
                    (Some(r), Some(c)) if (1..=8).contains(&r) && (1..=8).contains(&c) => (r as usize, c as usize),
                    _ => return Err("grid needs rows and cols, each 1 to 8".into()),
                };
                SplitTree::split(V, (0..r).map(|i| row(i * c, c)).collect())
            }
            other => {
                return Err(format!(
                    "unknown layout {other:?}: use single, horizontal, vertical, quad, triple_vertical, triple_bottom, grid (with rows and cols), or give a tree"
                ))
            }
        })
    }

    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        match self {
            SplitTree::Pane { .. } => 1,
            SplitTree::Split { children, .. } => children.iter().map(|c| c.tree.leaves()).sum(),
        }
    }

    /// Checks that leaves are numbered 0..n exactly once and sizes add up.
    pub fn validate(&self) -> Result<usize, String> {
        let mut seen = Vec::new();
        self.collect(&mut seen)?;
        let n = seen.len();
        seen.sort_unstable();
        if seen != (0..n).collect::<Vec<_>>() {
            return Err(format!(
                "the tree's panes must be numbered 0 to {} once each, found {seen:?}",
                n - 1
            ));
        }
        Ok(n)
    }

    /// Collects the leaves' pane numbers, stopping as soon as there are more than
    /// [`MAX_PANES`] (a huge tree is refused without walking all of it).
    fn collect(&self, out: &mut Vec<usize>) -> Result<(), String> {
        match self {
            SplitTree::Pane { pane } => {
                out.push(*pane);
                if out.len() > MAX_PANES {
                    return Err(format!(
                        "more than {MAX_PANES} panes in one window: use at most {MAX_PANES}"
                    ));
                }
            }
            SplitTree::Split { children, .. } => {
                if children.len() < 2 {
                    return Err("a split needs at least two children".into());
                }
                let fixed: u32 = children.iter().filter_map(|c| c.size.map(u32::from)).sum();
                let free = children.iter().filter(|c| c.size.is_none()).count() as u32;
                if fixed > 100
                    || (free == 0 && fixed != 100 && fixed != 0)
                    || children.iter().any(|c| c.size == Some(0))
                {
                    return Err(format!(
                        "the sizes of a split must add up to 100 (found {fixed}) and none may be 0"
                    ));
                }
                for c in children {
                    c.tree.collect(out)?;
                }
            }
        }
        Ok(())
    }
}

/// One step of carrying out a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Leaf `pane` is the window's first pane.
    First {
        /// Leaf index.
        pane: usize,
    },
    /// Split the pane holding leaf `from` to make room for leaf `pane`.
    Split {
        /// Leaf whose pane is split.
        from: usize,
        /// The new leaf.
        pane: usize,
        /// Direction.
        direction: SplitDirection,
        /// Size of the new pane, as a share of the pane being split.
        size: SplitSize,
    },
}

/// The backend calls that produce `tree`, in order.
pub fn plan(tree: &SplitTree) -> Vec<Step> {
    let mut steps = vec![Step::First {
        pane: first_leaf(tree),
    }];
    realize(tree, &mut steps);
    steps
}

fn first_leaf(tree: &SplitTree) -> usize {
    match tree {
        SplitTree::Pane { pane } => *pane,
        SplitTree::Split { children, .. } => first_leaf(&children[0].tree),
    }
}

/// `tree` occupies the pane currently holding its first leaf.
fn realize(tree: &SplitTree, steps: &mut Vec<Step>) {
    let SplitTree::Split { split, children } = tree else {
        return;
    };
    let fixed: u32 = children.iter().filter_map(|c| c.size.map(u32::from)).sum();
    let free = children.iter().filter(|c| c.size.is_none()).count() as u32;
    let share = |c: &Child| -> f64 {
        match c.size {
            Some(s) => s as f64,
            None => (100 - fixed.min(100)) as f64 / free.max(1) as f64,
        }
    };
    // Carve children off one by one: the pane that covers children i.. is split so
    // the new pane covers children i+1.. with their share of what remains.
    let mut remaining: f64 = children.iter().map(share).sum();
    for i in 0..children.len() - 1 {
        let rest: f64 = remaining - share(&children[i]);
        let percent = ((rest / remaining) * 100.0).round().clamp(1.0, 99.0) as u8;
        steps.push(Step::Split {
            from: first_leaf(&children[i].tree),
            pane: first_leaf(&children[i + 1].tree),
            direction: (*split).into(),
            size: SplitSize::Percent(percent),
        });
        remaining = rest;
    }
    for child in children {
        realize(&child.tree, steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_the_right_pane_counts() {
        for (name, n) in [
            ("single", 1),
            ("horizontal", 2),
            ("vertical", 2),
            ("quad", 4),
            ("triple_vertical", 3),
            ("triple_bottom", 3),
        ] {
            let tree = SplitTree::preset(name, None, None).unwrap();
            assert_eq!(tree.validate().unwrap(), n, "{name}");
            assert_eq!(plan(&tree).len(), n, "{name}");
        }
        let grid = SplitTree::preset("grid", Some(2), Some(3)).unwrap();
        assert_eq!(grid.validate().unwrap(), 6);
        assert!(SplitTree::preset("grid", Some(0), Some(3)).is_err());
        assert!(SplitTree::preset("hexagon", None, None).is_err());
    }

    #[test]
    fn thirds_are_even() {
        let tree = SplitTree::preset("triple_vertical", None, None).unwrap();
        let sizes: Vec<SplitSize> = plan(&tree)
            .into_iter()
            .filter_map(|s| match s {
                Step::Split { size, .. } => Some(size),
                _ => None,
            })
            .collect();
        assert_eq!(sizes, vec![SplitSize::Percent(67), SplitSize::Percent(50)]);
    }

    #[test]
    fn trees_parse_from_json_and_are_checked() {
        let tree: SplitTree = serde_json::from_str(
            r#"{"split":"horizontal","children":[{"pane":0,"size":30},{"split":"vertical","children":[{"pane":1},{"pane":2}]}]}"#,
        )
        .unwrap();
        assert_eq!(tree.validate().unwrap(), 3);
        let bad: SplitTree =
            serde_json::from_str(r#"{"split":"vertical","children":[{"pane":0},{"pane":0}]}"#)
                .unwrap();
        assert!(bad.validate().is_err());
        let sizes: SplitTree = serde_json::from_str(
            r#"{"split":"vertical","children":[{"pane":0,"size":80},{"pane":1,"size":30}]}"#,
        )
        .unwrap();
        assert!(sizes.validate().is_err());
    }
}
