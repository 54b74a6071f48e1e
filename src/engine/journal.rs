//! The output journal: every byte a pane wrote, with absolute positions.
//!
//! Bytes are appended as they arrive from the backend's event stream. The most
//! recent part stays in memory (a bounded tail); everything is also appended to a
//! spill file, so long output is never lost (`seq 1 2000000` is fully readable
//! afterwards) while memory stays bounded. Positions are absolute byte offsets from
//! the moment cohort started following the pane; lines are `\n`-terminated runs of
//! bytes, numbered from 0, and found through a sparse index (one checkpoint every
//! [`CHECKPOINT_EVERY`] lines) so the index stays small too.
//!
//! Chunks arrive cut on UTF-8 character boundaries and line starts follow a `\n`, so
//! every position a reader is handed is a character boundary.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Lines between two checkpoints of the line index.
pub const CHECKPOINT_EVERY: u64 = 256;

/// Bytes of recent output kept in memory per pane by default.
pub const DEFAULT_MEMORY: usize = 512 * 1024;

/// One pane's output history.
#[derive(Debug)]
pub struct Journal {
    /// Absolute offset of `tail[0]`.
    tail_start: u64,
    tail: Vec<u8>,
    memory: usize,
    /// Total bytes appended.
    len: u64,
    /// Number of `\n` seen.
    newlines: u64,
    /// `checkpoints[i]` is the offset where line `i * CHECKPOINT_EVERY` starts.
    checkpoints: Vec<u64>,
    spill: Spill,
}

#[derive(Debug)]
struct Spill {
    path: PathBuf,
    writer: Option<BufWriter<File>>,
    /// Bytes written to the file so far (all of them unless writing failed).
    written: u64,
    failed: Option<String>,
}

impl Journal {
    /// A journal spilling to `path` (created, truncated).
    pub fn create(path: &Path, memory: usize) -> io::Result<Journal> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(path)?;
        Ok(Journal {
            tail_start: 0,
            tail: Vec::new(),
            memory: memory.max(4096),
            len: 0,
            newlines: 0,
            checkpoints: vec![0],
            spill: Spill {
                path: path.to_path_buf(),
                writer: Some(BufWriter::with_capacity(64 * 1024, file)),
                written: 0,
                failed: None,
            },
        })
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
        if let Some(writer) = &mut self.spill.writer {
            match writer.write_all(bytes) {
                Ok(()) => self.spill.written += bytes.len() as u64,
                Err(e) => {
                    self.spill.failed = Some(format!("writing {}: {e}", self.spill.path.display()));
                    self.spill.writer = None;
                }
            }
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > self.memory {
            // Only bytes safely in the file may leave memory: flush, then keep the
            // newest half of the budget.
            let flushed = match self.spill.writer.as_mut().map(|w| w.flush()) {
                Some(Ok(())) => true,
                Some(Err(e)) => {
                    self.spill.failed = Some(format!("writing {}: {e}", self.spill.path.display()));
                    self.spill.writer = None;
                    false
                }
                None => false,
            };
            if flushed {
                let drop = (self.tail.len() - self.memory / 2)
                    .min(self.spill.written.saturating_sub(self.tail_start) as usize);
                self.tail.drain(..drop);
                self.tail_start += drop as u64;
            }
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

    /// Number of lines: complete ones, plus the unterminated last one if any.
    pub fn line_count(&self) -> u64 {
        self.newlines + u64::from(self.len > self.line_start(self.newlines).unwrap_or(self.len))
    }

    /// Bytes held in memory.
    pub fn memory_used(&self) -> usize {
        self.tail.capacity()
    }

    /// Why the spill file stopped, if it did (older output is then unavailable).
    pub fn spill_error(&self) -> Option<&str> {
        self.spill.failed.as_deref()
    }

    /// Bytes `[start, end)`, clamped to what exists.
    pub fn read(&mut self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        let end = end.min(self.len);
        if start >= end {
            return Ok(Vec::new());
        }
        if start >= self.tail_start {
            let a = (start - self.tail_start) as usize;
            let b = (end - self.tail_start) as usize;
            return Ok(self.tail[a..b].to_vec());
        }
        if self.spill.writer.is_none() {
            return Err(io::Error::other(
                self.spill
                    .failed
                    .clone()
                    .unwrap_or_else(|| "spill file closed".into()),
            ));
        }
        let mut out = vec![0u8; (end - start) as usize];
        self.peek(start, end, &mut out)?;
        Ok(out)
    }

    /// Offset where line `n` starts; `None` past the last line start.
    pub fn line_start(&self, n: u64) -> Option<u64> {
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

    /// The line that contains byte `offset` (the line count at that point).
    pub fn line_of(&mut self, offset: u64) -> u64 {
        // Binary search the checkpoints, then count newlines up to the offset.
        let offset = offset.min(self.len);
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
        // Below the tail everything was flushed before it left memory.
        let file = self
            .spill
            .writer
            .as_ref()
            .map(|w| w.get_ref())
            .ok_or_else(|| io::Error::other("spill file closed"))?;
        let in_file = (self.tail_start.min(end) - start) as usize;
        file.read_exact_at(&mut buf[..in_file], start)?;
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

    /// Path of the spill file.
    pub fn spill_path(&self) -> &Path {
        &self.spill.path
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.spill.writer = None;
        let _ = std::fs::remove_file(&self.spill.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(memory: usize) -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::create(&dir.path().join("p.log"), memory).unwrap();
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
}
