//! Split trees: the layout of a window as a tree of panes.
//!
//! Both backends report layouts in this one shape. tmux's `#{window_layout}` string
//! (`b25d,80x24,0,0{40x24,0,0,1,39x24,41,0,2}`) is parsed by [`parse_tmux_layout`].

use serde::{Deserialize, Serialize};

use crate::error::{BackendError, Result};
use crate::types::{PaneId, SplitDirection};

/// A cell rectangle inside a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rect {
    /// Left column.
    pub x: u16,
    /// Top row.
    pub y: u16,
    /// Width in columns.
    pub cols: u16,
    /// Height in rows.
    pub rows: u16,
}

/// A node of a window's split tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum LayoutNode {
    /// A leaf: one pane.
    Pane {
        /// The pane.
        id: PaneId,
        /// Where it sits.
        rect: Rect,
    },
    /// Children laid out side by side (`Horizontal`) or stacked (`Vertical`).
    Split {
        /// Direction of the split.
        direction: SplitDirection,
        /// Where the whole split sits.
        rect: Rect,
        /// Children, left to right or top to bottom.
        children: Vec<LayoutNode>,
    },
}

impl LayoutNode {
    /// Every pane in the tree, in reading order.
    pub fn panes(&self) -> Vec<&PaneId> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a PaneId>) {
        match self {
            LayoutNode::Pane { id, .. } => out.push(id),
            LayoutNode::Split { children, .. } => children.iter().for_each(|c| c.collect(out)),
        }
    }

    /// The rectangle this node covers.
    pub fn rect(&self) -> Rect {
        match self {
            LayoutNode::Pane { rect, .. } | LayoutNode::Split { rect, .. } => *rect,
        }
    }
}

/// Parses tmux's `#{window_layout}`; pane numbers become `%N` ids.
pub fn parse_tmux_layout(layout: &str) -> Result<LayoutNode> {
    let bad = |why: &str| BackendError::Protocol(format!("tmux layout {layout:?}: {why}"));
    let body = match layout.split_once(',') {
        Some((checksum, body)) if checksum.len() == 4 => body,
        _ => return Err(bad("no checksum")),
    };
    let mut parser = LayoutParser {
        s: body.as_bytes(),
        pos: 0,
    };
    let node = parser.node().map_err(|e| bad(&e))?;
    if parser.pos != parser.s.len() {
        return Err(bad("trailing characters"));
    }
    Ok(node)
}

struct LayoutParser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl LayoutParser<'_> {
    fn number(&mut self) -> std::result::Result<u16, String> {
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("expected a number at {start}"))
    }

    fn expect(&mut self, byte: u8) -> std::result::Result<(), String> {
        if self.s.get(self.pos) == Some(&byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at {}", byte as char, self.pos))
        }
    }

    fn node(&mut self) -> std::result::Result<LayoutNode, String> {
        let cols = self.number()?;
        self.expect(b'x')?;
        let rows = self.number()?;
        self.expect(b',')?;
        let x = self.number()?;
        self.expect(b',')?;
        let y = self.number()?;
        let rect = Rect { x, y, cols, rows };
        match self.s.get(self.pos) {
            Some(b',') => {
                self.pos += 1;
                let id = self.number()?;
                Ok(LayoutNode::Pane {
                    id: PaneId(format!("%{id}")),
                    rect,
                })
            }
            Some(&open @ (b'{' | b'[')) => {
                self.pos += 1;
                let (close, direction) = if open == b'{' {
                    (b'}', SplitDirection::Horizontal)
                } else {
                    (b']', SplitDirection::Vertical)
                };
                let mut children = vec![self.node()?];
                while self.s.get(self.pos) == Some(&b',') {
                    self.pos += 1;
                    children.push(self.node()?);
                }
                self.expect(close)?;
                Ok(LayoutNode::Split {
                    direction,
                    rect,
                    children,
                })
            }
            _ => Err(format!("expected a pane id or a split at {}", self.pos)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_pane() {
        let node = parse_tmux_layout("aafd,120x40,0,0,0").unwrap();
        assert_eq!(
            node,
            LayoutNode::Pane {
                id: PaneId::new("%0"),
                rect: Rect {
                    x: 0,
                    y: 0,
                    cols: 120,
                    rows: 40
                }
            }
        );
    }

    #[test]
    fn nested_splits() {
        let node = parse_tmux_layout(
            "5e5d,200x50,0,0{100x50,0,0,1,99x50,101,0[99x25,101,0,2,99x24,101,26,3]}",
        )
        .unwrap();
        let ids: Vec<_> = node
            .panes()
            .iter()
            .map(|p| p.as_str().to_string())
            .collect();
        assert_eq!(ids, ["%1", "%2", "%3"]);
        match node {
            LayoutNode::Split {
                direction,
                children,
                ..
            } => {
                assert_eq!(direction, SplitDirection::Horizontal);
                assert!(matches!(
                    children[1],
                    LayoutNode::Split {
                        direction: SplitDirection::Vertical,
                        ..
                    }
                ));
            }
            _ => panic!("expected a split"),
        }
    }

    #[test]
    fn malformed_layouts_are_errors() {
        for bad in [
            "",
            "abcd",
            "abcd,80x24",
            "abcd,80x24,0,0{1x1,0,0,1",
            "abcd,80x24,0,0,1x",
        ] {
            assert!(parse_tmux_layout(bad).is_err(), "{bad:?}");
        }
    }
}
