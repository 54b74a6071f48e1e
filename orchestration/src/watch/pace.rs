//! Pacing a watcher's hits, so that a flood of matching lines costs bounded work.
//!
//! A watcher on a busy log can match thousands of lines a second, and a watcher whose
//! action prints what it watches for sets itself off forever. Every hit goes through
//! its watcher's [`Pace`] before anything acts on it:
//!
//! - **One firing at a time, in order.** Hits wait in a queue with room for as many
//!   entries as the rate allows to fire now (at least one, at most [`QUEUE_MAX`]); a
//!   hit that finds no room is folded into the last entry, which counts it. A
//!   watcher therefore holds at most one running action and a bounded queue,
//!   whatever the output does, and what waits fires within one [`INTERVAL`].
//! - **A bounded rate.** [`BURST`] entries fire at once, then one per [`INTERVAL`].
//!   Each notification says how many further hits it stands for; the lines
//!   themselves stay in the session's output, so nothing is lost, only not repeated.
//! - **Loops stopped.** A hit on a pane the watcher's own action typed into, after
//!   that action began and within [`LOOP_WINDOW`] of its end, is the action's doing.
//!   [`LOOP_LIMIT`] such firings in a row stop the watcher, and the caller says why.
//!
//! The pace is plain data driven by the caller's clock (`now` is passed in), so its
//! rules are tested without a terminal or a timer.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Entries a watcher's queue holds; later hits are folded into the last one.
pub const QUEUE_MAX: usize = 10;

/// Notifications a watcher may leave at once.
pub const BURST: u32 = 10;

/// After the burst, one notification per this long.
pub const INTERVAL: Duration = Duration::from_secs(2);

/// How long after its action's end a hit on the pane it typed into counts as its doing.
pub const LOOP_WINDOW: Duration = Duration::from_secs(10);

/// Firings in a row set off by the watcher's own action that stop it.
pub const LOOP_LIMIT: u32 = 3;

/// One hit waiting to fire, with the hits folded into it.
#[derive(Debug)]
struct Entry<H, P> {
    hit: H,
    pane: Option<P>,
    arrived: Instant,
    folded: u64,
}

/// What a watcher's last action did, to tell its own doing from the world's.
#[derive(Debug)]
struct LastAction<P> {
    began: Instant,
    ended: Option<Instant>,
    typed_into: Vec<P>,
}

/// What to do next with a watcher.
#[derive(Debug, PartialEq)]
pub enum Next<H> {
    /// Fire this hit: act, then leave one notification for it and the `folded` hits
    /// after it. Call [`Pace::finished`] when done.
    Fire {
        /// The hit.
        hit: H,
        /// Hits folded into it (not notified one by one).
        folded: u64,
    },
    /// The watcher's own action set it off `in_a_row` times in a row: stop it.
    Stop {
        /// Firings in a row the action caused.
        in_a_row: u32,
        /// Hits dropped with it (this one and those folded into it or still queued).
        dropped: u64,
    },
    /// Nothing to fire now (see [`Pace::due`]).
    Wait,
}

/// One watcher's pacing: its queue, its rate and its loop count.
#[derive(Debug)]
pub struct Pace<H, P> {
    queue: VecDeque<Entry<H, P>>,
    firing: bool,
    tokens: u32,
    refilled: Instant,
    last: Option<LastAction<P>>,
    in_a_row: u32,
}

impl<H, P: PartialEq> Pace<H, P> {
    /// A pace with a full burst, as of `now`.
    pub fn new(now: Instant) -> Self {
        Pace {
            queue: VecDeque::new(),
            firing: false,
            tokens: BURST,
            refilled: now,
            last: None,
            in_a_row: 0,
        }
    }

    /// Takes a hit that arrived at `now` on `pane` (if it came from a pane).
    pub fn offer(&mut self, hit: H, pane: Option<P>, now: Instant) {
        self.refill(now);
        let room = usize::try_from(self.tokens)
            .unwrap_or(QUEUE_MAX)
            .clamp(1, QUEUE_MAX);
        if self.queue.len() < room {
            self.queue.push_back(Entry {
                hit,
                pane,
                arrived: now,
                folded: 0,
            });
        } else if let Some(last) = self.queue.back_mut() {
            last.folded += 1;
        }
    }

    /// Hits waiting (entries and those folded into them).
    pub fn waiting(&self) -> u64 {
        self.queue.iter().map(|e| 1 + e.folded).sum()
    }

    /// Whether an action is running.
    pub fn firing(&self) -> bool {
        self.firing
    }

    /// What to do at `now`.
    pub fn next(&mut self, now: Instant) -> Next<H> {
        if self.firing || self.queue.is_empty() {
            return Next::Wait;
        }
        self.refill(now);
        if self.tokens == 0 {
            return Next::Wait;
        }
        let Some(entry) = self.queue.pop_front() else {
            return Next::Wait;
        };
        if self.set_off_by_own_action(&entry) {
            self.in_a_row += 1;
        } else {
            self.in_a_row = 0;
        }
        if self.in_a_row >= LOOP_LIMIT {
            let dropped = 1 + entry.folded + self.waiting();
            self.queue.clear();
            return Next::Stop {
                in_a_row: self.in_a_row,
                dropped,
            };
        }
        self.tokens -= 1;
        self.firing = true;
        self.last = Some(LastAction {
            began: now,
            ended: None,
            typed_into: Vec::new(),
        });
        Next::Fire {
            hit: entry.hit,
            folded: entry.folded,
        }
    }

    /// The firing ended at `now`; its action typed into `typed_into`.
    pub fn finished(&mut self, typed_into: Vec<P>, now: Instant) {
        self.firing = false;
        if let Some(last) = &mut self.last {
            last.ended = Some(now);
            last.typed_into = typed_into;
        }
    }

    /// When [`Pace::next`] may fire next, if something waits only for the rate.
    pub fn due(&self) -> Option<Instant> {
        if self.firing || self.queue.is_empty() || self.tokens > 0 {
            return None;
        }
        Some(self.refilled + INTERVAL)
    }

    /// Adds the tokens earned since the last refill.
    fn refill(&mut self, now: Instant) {
        if self.tokens >= BURST {
            self.refilled = now;
            return;
        }
        let earned = now.saturating_duration_since(self.refilled).as_nanos() / INTERVAL.as_nanos();
        if earned == 0 {
            return;
        }
        let earned = u32::try_from(earned).unwrap_or(u32::MAX);
        self.tokens = self.tokens.saturating_add(earned).min(BURST);
        self.refilled = if self.tokens >= BURST {
            now
        } else {
            self.refilled + INTERVAL * earned
        };
    }

    /// Whether `entry` came from the pane the last action typed into, while or
    /// shortly after it did.
    fn set_off_by_own_action(&self, entry: &Entry<H, P>) -> bool {
        let (Some(last), Some(pane)) = (&self.last, &entry.pane) else {
            return false;
        };
        let within = entry.arrived >= last.began
            && last
                .ended
                .is_none_or(|ended| entry.arrived <= ended + LOOP_WINDOW);
        within && last.typed_into.contains(pane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn fire(pace: &mut Pace<u32, &'static str>, now: Instant) -> (u32, u64) {
        match pace.next(now) {
            Next::Fire { hit, folded } => (hit, folded),
            other => panic!("expected a firing, got {other:?}"),
        }
    }

    #[test]
    fn hits_fire_one_at_a_time_in_order() {
        let t = Instant::now();
        let mut pace = Pace::new(t);
        pace.offer(1, Some("a"), t);
        pace.offer(2, Some("a"), t);
        assert_eq!(fire(&mut pace, t), (1, 0));
        assert_eq!(pace.next(t), Next::Wait, "the first is still acting");
        pace.finished(vec![], t + MS);
        assert_eq!(fire(&mut pace, t + MS), (2, 0));
    }

    #[test]
    fn a_flood_is_folded_into_a_bounded_queue_and_counted() {
        let t = Instant::now();
        let mut pace = Pace::new(t);
        for hit in 0..10_000 {
            pace.offer(hit, Some("a"), t);
        }
        assert_eq!(pace.queue.len(), QUEUE_MAX);
        assert_eq!(pace.waiting(), 10_000);
        let mut notified = 0;
        let mut seen = 0;
        while let Next::Fire { folded, .. } = pace.next(t) {
            notified += 1;
            seen += 1 + folded;
            pace.finished(vec![], t);
        }
        assert_eq!(notified, QUEUE_MAX);
        assert_eq!(seen, 10_000, "every hit is counted in some notification");
    }

    #[test]
    fn after_the_burst_one_fires_per_interval() {
        let t = Instant::now();
        let mut pace = Pace::new(t);
        for hit in 0..(BURST + 3) {
            pace.offer(hit, None, t);
            if let Next::Fire { .. } = pace.next(t) {
                pace.finished(vec![], t);
            }
        }
        // Past the burst, what comes waits in one entry that counts the rest.
        assert_eq!(pace.waiting(), 3);
        assert_eq!(pace.queue.len(), 1);
        assert_eq!(pace.next(t), Next::Wait);
        assert_eq!(pace.due(), Some(t + INTERVAL));
        assert_eq!(pace.next(t + INTERVAL - MS), Next::Wait);
        assert_eq!(fire(&mut pace, t + INTERVAL), (BURST, 2));
        pace.finished(vec![], t + INTERVAL);
        assert_eq!(pace.next(t + INTERVAL), Next::Wait);
        // Idle time earns the burst back, no more.
        let later = t + INTERVAL * 100;
        pace.offer(BURST + 3, None, later);
        pace.offer(BURST + 4, None, later);
        assert_eq!(fire(&mut pace, later).0, BURST + 3);
        pace.finished(vec![], later);
        assert_eq!(fire(&mut pace, later).0, BURST + 4);
        assert_eq!(pace.tokens, BURST - 2);
    }

    #[test]
    fn an_action_that_sets_off_its_own_watcher_stops_it() {
        let t = Instant::now();
        let mut pace = Pace::new(t);
        pace.offer(0, Some("log"), t);
        let mut now = t;
        let mut fired = 0;
        loop {
            match pace.next(now) {
                Next::Fire { .. } => {
                    fired += 1;
                    // The action types into the watched pane, and what it prints
                    // matches again a moment later.
                    now += 5 * MS;
                    pace.finished(vec!["log"], now);
                    now += 20 * MS;
                    pace.offer(fired, Some("log"), now);
                }
                Next::Stop { in_a_row, dropped } => {
                    assert_eq!((in_a_row, dropped), (LOOP_LIMIT, 1));
                    break;
                }
                Next::Wait => panic!("a loop waits on nothing"),
            }
        }
        assert_eq!(fired, LOOP_LIMIT, "the first hit and two of its own");
    }

    #[test]
    fn hits_from_elsewhere_or_later_are_not_the_actions_doing() {
        let t = Instant::now();
        let mut pace = Pace::new(t);
        let mut now = t;
        for round in 0..(LOOP_LIMIT * 3) {
            // Alternate: another pane, then the typed-into pane after the window.
            let (pane, gap) = if round % 2 == 0 {
                ("other", MS)
            } else {
                ("log", LOOP_WINDOW + MS)
            };
            now += gap + INTERVAL;
            pace.offer(round, Some(pane), now);
            assert_eq!(fire(&mut pace, now).0, round);
            pace.finished(vec!["log"], now);
        }
    }

    #[test]
    fn a_hit_that_came_before_the_action_began_is_not_its_doing() {
        let t = Instant::now();
        let mut pace = Pace::new(t);
        for hit in 0..(LOOP_LIMIT + 2) {
            pace.offer(hit, Some("log"), t);
        }
        let mut now = t;
        for hit in 0..(LOOP_LIMIT + 2) {
            now += MS;
            assert_eq!(fire(&mut pace, now).0, hit);
            pace.finished(vec!["log"], now);
        }
    }
}
