//! The output journal: what a pane wrote, with absolute positions, in bounded memory
//! and bounded disk.
//!
//! Bytes are appended as they arrive from the backend's event stream. The most
//! recent part stays in memory (a bounded tail); everything is also appended to
//! spill files on disk, so long output stays readable (`seq 1 2000000` is fully
//! readable afterwards) while memory stays bounded. The spill files are segments of
//! half the pane's disk cap each; past the cap the oldest segment is deleted, and
//! what it held is *dropped*: reads before the journal's [`Journal::floor`] say so
//! and why. When writing to disk fails (a full disk, a deleted directory) the
//! journal goes on in memory alone, dropping its oldest bytes as memory fills, and
//! says why in [`Journal::spill_error`]: memory stays bounded either way.
//!
//! Positions are absolute byte offsets from the moment cohort started following the
//! pane; lines are `\n`-terminated runs of bytes, numbered from 0, found through a
//! sparse index (one checkpoint every [`CHECKPOINT_EVERY`] lines). The floor always
//! sits on a checkpoint, so every line from it on can be found and counted.
//!
//! Chunks arrive cut on UTF-8 character boundaries and line starts follow a `\n`, so
//! every position a reader is handed is a character boundary.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Lines between two checkpoints of the line index.
pub const CHECKPOINT_EVERY: u64 = 256;

/// Bytes of recent output kept in memory per pane by default. Everything older is
/// read back from the spill files, which the page cache holds as long as memory is
/// plentiful: a read of a megabyte from there takes a fraction of a millisecond,
/// while every pane that once printed a big output kept a whole budget of memory
/// for as long as it lived (eight busy agents held 8 MiB at 1 MiB each).
pub const DEFAULT_MEMORY: usize = 128 * 1024;

/// Bytes of output kept on disk per pane by default (`COHORT_JOURNAL_CAP_MB`).
pub const DEFAULT_DISK_CAP: u64 = 512 << 20;

/// The smallest disk cap (two segments of 1 MiB).
const MIN_DISK_CAP: u64 = 2 << 20;

/// One pane's output history.
#[derive(Debug)]
pub struct Journal {
    /// Absolute offset of `tail[0]`.
    tail_start: u64,
    tail: Vec<u8>,
    memory: usize,
    /// Total bytes appended.
    len: u64,
    /// The oldest offset still readable (0 until something was dropped).
    floor: u64,
    /// Why bytes before the floor were dropped.
    dropped_why: Option<String>,
    /// Number of `\n` seen.
    newlines: u64,
    /// `checkpoints[i]` is the offset where line `i * CHECKPOINT_EVERY` starts.
    checkpoints: Vec<u64>,
    spill: Spill,
}

/// The spill files: segments in order, the last one being written.
#[derive(Debug)]
struct Spill {
    base: PathBuf,
    segments: VecDeque<Segment>,
    writer: Option<BufWriter<File>>,
    /// Bytes of a segment before the next one starts (half the disk cap).
    segment_size: u64,
    /// Bytes written to disk so far (all of them unless writing failed).
    written: u64,
    failed: Option<String>,
    next_index: u64,
}

#[derive(Debug)]
struct Segment {
    /// Absolute offset of the segment's first byte.
    start: u64,
    path: PathBuf,
    /// A handle for reads.
    file: File,
}

impl Spill {
    fn open_segment(&mut self, start: u64) -> io::Result<()> {
        let path = self.base.with_extension(format!("log.{}", self.next_index));
        self.next_index += 1;
        let file = crate::private::file_options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        let reader = file.try_clone()?;
        if let Some(mut old) = self.writer.take() {
            old.flush()?;
        }
        // Every session has one: 16 KiB batches a big output's chunks into a few
        // writes without half a megabyte for eight idle shells.
        self.writer = Some(BufWriter::with_capacity(16 * 1024, file));
        self.segments.push_back(Segment {
            start,
            path,
            file: reader,
        });
        Ok(())
    }

    fn fail(&mut self, what: &str, e: io::Error) {
        self.failed = Some(format!("{what} {}: {e}", self.base.display()));
        self.writer = None;
    }
}

impl Journal {
    /// A journal spilling to files named after `path` (`<path>.0`, `<path>.1`, …),
    /// keeping `memory` bytes in memory and about `disk_cap` on disk. When the files
    /// cannot be made, the journal keeps what fits in memory and says why.
    pub fn create(path: &Path, memory: usize, disk_cap: u64) -> Journal {
        let mut spill = Spill {
            base: path.to_path_buf(),
            segments: VecDeque::new(),
            writer: None,
            segment_size: disk_cap.max(MIN_DISK_CAP) / 2,
            written: 0,
            failed: None,
            next_index: 0,
        };
        let made = match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir),
            None => Ok(()),
        };
        if let Err(e) = made.and_then(|()| spill.open_segment(0)) {
            tracing::warn!(target: "cohort::engine", error = %e, path = %path.display(), "the journal cannot spill to disk; keeping the last output in memory only");
            spill.fail("creating", e);
        }
        Journal {
            tail_start: 0,
            tail: Vec::new(),
            memory: memory.max(4096),
            len: 0,
            floor: 0,
            dropped_why: None,
            newlines: 0,
            checkpoints: vec![0],
            spill,
        }
    }

    /// Appends bytes.
    pub fn append(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        for (i, _) in bytes.iter().enumerate().filter(|(_, b)| **b == b'\n') {
            self.newlines += 1;
            if self.newlines.is_multiple_of(CHECKPOINT_EVERY) {
                self.checkpoints.push(self.len + i as u64 + 1);
            }
        }
        self.len += bytes.len() as u64;
        self.spill_out(bytes);
        // Room is made before the bytes go in, so that the tail's allocation never
        // grows past the budget (growing a full one would double it); of a chunk
        // bigger than half the budget only its end stays.
        let mut bytes = bytes;
        if self.tail.len() + bytes.len() > self.memory {
            let let_go = self.shrink_tail(bytes.len());
            bytes = &bytes[let_go..];
        }
        let needed = self.tail.len() + bytes.len();
        if needed > self.tail.capacity() {
            // Doubling, as a vector grows, but never past the budget.
            let capacity = (self.tail.capacity() * 2).clamp(needed, self.memory.max(needed));
            self.tail.reserve_exact(capacity - self.tail.len());
        }
        self.tail.extend_from_slice(bytes);
    }

    /// Writes `bytes` to the current segment, starting a new one (and deleting the
    /// oldest past the cap) when it is full.
    fn spill_out(&mut self, bytes: &[u8]) {
        let Some(writer) = &mut self.spill.writer else {
            return;
        };
        if let Err(e) = writer.write_all(bytes) {
            self.spill.fail("writing", e);
            return;
        }
        self.spill.written += bytes.len() as u64;
        let current = self.spill.segments.back().map_or(0, |s| s.start);
        if self.spill.written - current < self.spill.segment_size {
            return;
        }
        if let Err(e) = self.spill.open_segment(self.spill.written) {
            self.spill.fail("starting a new segment of", e);
            return;
        }
        while self.spill.segments.len() > 2 {
            let Some(old) = self.spill.segments.pop_front() else {
                break;
            };
            let _ = std::fs::remove_file(&old.path);
            let kept_from = self.spill.segments.front().map_or(self.len, |s| s.start);
            self.drop_before(
                kept_from,
                format!(
                    "the pane's journal keeps about {} MiB of output on disk; older output was dropped",
                    (self.spill.segment_size * 2) >> 20
                ),
            );
        }
    }

    /// Lets the in-memory tail, with the `incoming` bytes about to be added (already
    /// handed to the spill file), go back down to half its budget: the bytes it lets
    /// go are on disk, or (when writing failed) dropped. Returns how many of the
    /// incoming bytes it let go (some when they alone are more than half the budget).
    fn shrink_tail(&mut self, incoming: usize) -> usize {
        let on_disk = if self.spill.writer.is_some() {
            match self.spill.writer.as_mut().map(|w| w.flush()) {
                Some(Ok(())) => Some(self.spill.written),
                Some(Err(e)) => {
                    self.spill.fail("writing", e);
                    None
                }
                None => None,
            }
        } else {
            None
        };
        let excess = (self.tail.len() + incoming).saturating_sub(self.memory / 2);
        let drop = match on_disk {
            Some(written) => excess.min(written.saturating_sub(self.tail_start) as usize),
            // Nothing more reaches the disk: memory stays bounded by dropping.
            None => excess,
        };
        let from_tail = drop.min(self.tail.len());
        self.tail.drain(..from_tail);
        self.tail_start += drop as u64;
        if on_disk.is_none() {
            let why = format!(
                "writing output to disk failed ({}), so only the last {} KiB are kept",
                self.spill.failed.as_deref().unwrap_or("no spill file"),
                self.memory >> 10
            );
            self.drop_before(self.tail_start, why);
        }
        drop - from_tail
    }

    /// Raises the floor to the first line checkpoint at or after `offset`, saying why.
    fn drop_before(&mut self, offset: u64, why: String) {
        let at = self.checkpoints.partition_point(|c| *c < offset);
        let floor = self.checkpoints.get(at).copied().unwrap_or(self.len);
        if floor > self.floor {
            self.floor = floor;
            self.dropped_why = Some(why);
        }
    }

    /// Total bytes appended (the position of the next byte).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was appended yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The oldest offset still readable.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Why output before [`Journal::floor`] was dropped, when some was.
    pub fn dropped_why(&self) -> Option<&str> {
        self.dropped_why.as_deref()
    }

    /// Number of lines: complete ones, plus the unterminated last one if any.
    pub fn line_count(&self) -> u64 {
        let last_start = self.line_start_unchecked(self.newlines).unwrap_or(self.len);
        self.newlines + u64::from(self.len > last_start)
    }

    /// Bytes held in memory.
    pub fn memory_used(&self) -> usize {
        self.tail.capacity()
    }

    /// Why the spill files stopped, if they did.
    pub fn spill_error(&self) -> Option<&str> {
        self.spill.failed.as_deref()
    }

    /// Bytes `[start, end)`, clamped to what exists; an error for a range that begins
    /// before the floor (see [`Journal::dropped_why`]).
    pub fn read(&mut self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        let end = end.min(self.len);
        if start >= end {
            return Ok(Vec::new());
        }
        if start < self.floor {
            return Err(io::Error::other(self.dropped_message()));
        }
        let mut out = vec![0u8; (end - start) as usize];
        self.peek(start, end, &mut out)?;
        Ok(out)
    }

    fn dropped_message(&self) -> String {
        format!(
            "output before byte {} was dropped: {}",
            self.floor,
            self.dropped_why
                .as_deref()
                .unwrap_or("it is no longer kept")
        )
    }

    /// Offset where line `n` starts; `None` past the last line start or before the
    /// floor.
    pub fn line_start(&self, n: u64) -> Option<u64> {
        self.line_start_unchecked(n).filter(|o| *o >= self.floor)
    }

    fn line_start_unchecked(&self, n: u64) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        if n > self.newlines {
            return None;
        }
        let checkpoint = (n / CHECKPOINT_EVERY) as usize;
        let mut offset = self.checkpoints[checkpoint];
        let mut remaining = n - checkpoint as u64 * CHECKPOINT_EVERY;
        if remaining == 0 {
            return Some(offset);
        }
        if offset < self.floor {
            return None;
        }
        // Scan forward from the checkpoint (at most CHECKPOINT_EVERY lines).
        let mut buf = vec![0u8; 64 * 1024];
        while offset < self.len {
            let end = (offset + buf.len() as u64).min(self.len);
            let chunk = self.peek(offset, end, &mut buf).ok()?;
            for (i, b) in chunk.iter().enumerate() {
                if *b == b'\n' {
                    remaining -= 1;
                    if remaining == 0 {
                        return Some(offset + i as u64 + 1);
                    }
                }
            }
            offset = end;
        }
        None
    }

    /// The first line still readable (the line at the floor).
    pub fn first_line(&mut self) -> u64 {
        self.line_of(self.floor)
    }

    /// The line that contains byte `offset` (the line count at that point); offsets
    /// before the floor count from the floor's line.
    pub fn line_of(&mut self, offset: u64) -> u64 {
        // Binary search the checkpoints, then count newlines up to the offset.
        let offset = offset.clamp(self.floor, self.len);
        let idx = match self.checkpoints.binary_search(&offset) {
            Ok(i) => return i as u64 * CHECKPOINT_EVERY,
            Err(i) => i - 1,
        };
        let mut line = idx as u64 * CHECKPOINT_EVERY;
        let from = self.checkpoints[idx];
        if let Ok(bytes) = self.read(from, offset) {
            line += bytes.iter().filter(|b| **b == b'\n').count() as u64;
        }
        line
    }

    /// Reads into `buf` without allocating when the range is in memory.
    fn peek<'a>(&self, start: u64, end: u64, buf: &'a mut [u8]) -> io::Result<&'a [u8]> {
        let n = (end - start) as usize;
        if start >= self.tail_start {
            let a = (start - self.tail_start) as usize;
            buf[..n].copy_from_slice(&self.tail[a..a + n]);
            return Ok(&buf[..n]);
        }
        // Below the tail everything was flushed to a segment before it left memory.
        let on_disk_end = self.tail_start.min(end);
        let mut at = start;
        while at < on_disk_end {
            let segment = self
                .spill
                .segments
                .iter()
                .rev()
                .find(|s| s.start <= at)
                .ok_or_else(|| io::Error::other(self.dropped_message()))?;
            let segment_end = self
                .spill
                .segments
                .iter()
                .find(|s| s.start > at)
                .map_or(on_disk_end, |next| next.start.min(on_disk_end));
            let from = (at - start) as usize;
            let to = (segment_end - start) as usize;
            segment
                .file
                .read_exact_at(&mut buf[from..to], at - segment.start)?;
            at = segment_end;
        }
        let in_file = (on_disk_end - start) as usize;
        if in_file < n {
            let rest = n - in_file;
            buf[in_file..n].copy_from_slice(&self.tail[..rest]);
        }
        Ok(&buf[..n])
    }

    /// Flushes buffered bytes to the spill file.
    pub fn flush(&mut self) -> io::Result<()> {
        if let Some(writer) = &mut self.spill.writer {
            writer.flush()?;
        }
        Ok(())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.spill.writer = None;
        for segment in &self.spill.segments {
            let _ = std::fs::remove_file(&segment.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(memory: usize) -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::create(&dir.path().join("p.log"), memory, DEFAULT_DISK_CAP);
        (dir, j)
    }

    #[test]
    fn everything_is_readable_with_a_small_memory_budget() {
        let (_dir, mut j) = journal(4096);
        let mut all = Vec::new();
        for i in 0..20_000 {
            let line = format!("{i}\n");
            j.append(line.as_bytes());
            all.extend_from_slice(line.as_bytes());
        }
        assert!(j.memory_used() < 64 * 1024);
        assert_eq!(j.read(0, j.len()).unwrap(), all);
        assert_eq!(j.line_count(), 20_000);
        for n in [0u64, 1, 255, 256, 257, 1000, 19_999] {
            let start = j.line_start(n).unwrap();
            let end = j.line_start(n + 1).unwrap_or(j.len());
            assert_eq!(
                j.read(start, end).unwrap(),
                format!("{n}\n").as_bytes(),
                "line {n}"
            );
            assert_eq!(j.line_of(start), n);
        }
        assert_eq!(j.line_start(20_001), None);
    }

    #[test]
    fn partial_last_line_counts() {
        let (_dir, mut j) = journal(4096);
        j.append(b"a\nb");
        assert_eq!(j.line_count(), 2);
        j.append(b"c\n");
        assert_eq!(j.line_count(), 2);
        assert_eq!(j.line_start(1), Some(2));
        assert_eq!(j.read(2, 100).unwrap(), b"bc\n");
    }

    #[test]
    fn past_the_disk_cap_the_oldest_output_is_dropped_and_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::create(&dir.path().join("p.log"), 64 << 10, MIN_DISK_CAP);
        let mut lines = 0u64;
        // 8 MiB of numbered lines through a 2 MiB cap.
        while j.len() < 8 << 20 {
            j.append(format!("line {lines:09}\n").as_bytes());
            lines += 1;
        }
        j.flush().unwrap();
        let on_disk: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.metadata().unwrap().len())
            .sum();
        assert!(
            on_disk <= MIN_DISK_CAP + (64 << 10),
            "{on_disk} bytes on disk"
        );
        assert!(j.floor() > 0 && j.dropped_why().unwrap().contains("dropped"));
        assert!(j.read(0, 10).is_err());
        // From the floor on, every line reads back, numbered as before.
        let first = j.first_line();
        let start = j.line_start(first).unwrap();
        assert_eq!(start, j.floor());
        let text = String::from_utf8(j.read(start, j.len()).unwrap()).unwrap();
        let numbers: Vec<u64> = text
            .lines()
            .map(|l| l.trim_start_matches("line ").parse().unwrap())
            .collect();
        assert_eq!(numbers.first(), Some(&first));
        assert_eq!(numbers.last(), Some(&(lines - 1)));
        assert_eq!(numbers.len() as u64, lines - first);
        assert_eq!(j.line_count(), lines);
    }

    #[test]
    fn the_tail_never_holds_more_than_its_budget() {
        let memory = 64 << 10;
        let (_dir, mut j) = journal(memory);
        let mut all = Vec::new();
        // Chunks of every size, as the backend hands them on: one at a time, joined,
        // and one bigger than the whole budget.
        for (i, size) in (1..400)
            .map(|i| (i, (i * 997) % 9000 + 1))
            .chain([(400, 3 * memory)])
        {
            let chunk: Vec<u8> = (0..size)
                .map(|k| {
                    if k % 80 == 79 {
                        b'\n'
                    } else {
                        b'a' + (i % 26) as u8
                    }
                })
                .collect();
            j.append(&chunk);
            all.extend_from_slice(&chunk);
            assert!(
                j.memory_used() <= memory,
                "{} bytes after a chunk of {size}",
                j.memory_used()
            );
            // The chunk's last bytes are the ones kept in memory, and read back.
            let end = j.len();
            let from = end - (size as u64).min(100);
            assert_eq!(j.read(from, end).unwrap(), all[from as usize..]);
        }
        j.append(b"after\n");
        all.extend_from_slice(b"after\n");
        assert!(j.memory_used() <= memory, "{} bytes", j.memory_used());
        assert_eq!(j.read(0, j.len()).unwrap(), all);
        assert_eq!(
            j.line_count(),
            all.iter().filter(|b| **b == b'\n').count() as u64
        );
    }

    #[test]
    fn a_failed_spill_keeps_memory_bounded_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::create(&dir.path().join("p.log"), 16 << 10, DEFAULT_DISK_CAP);
        j.append(b"first line\n");
        // The disk goes away: as a full disk would refuse the writes.
        j.spill
            .fail("writing", io::Error::other("No space left on device"));
        for i in 0..100_000 {
            j.append(format!("row {i}\n").as_bytes());
        }
        assert!(j.memory_used() <= 64 << 10, "{} bytes", j.memory_used());
        assert!(j.spill_error().unwrap().contains("No space left"));
        assert!(j
            .dropped_why()
            .unwrap()
            .contains("writing output to disk failed"));
        let tail = String::from_utf8(j.read(j.floor(), j.len()).unwrap()).unwrap();
        assert!(tail.ends_with("row 99999\n"));
        assert!(j.read(0, 5).is_err());
        // A chunk bigger than the budget: its end is kept, from a line start.
        let big: String = (0..5000).map(|i| format!("big {i}\n")).collect();
        j.append(big.as_bytes());
        assert!(j.memory_used() <= 16 << 10, "{} bytes", j.memory_used());
        let tail = String::from_utf8(j.read(j.floor(), j.len()).unwrap()).unwrap();
        assert!(
            tail.starts_with("big ") && tail.ends_with("big 4999\n"),
            "{tail}"
        );
    }
}
