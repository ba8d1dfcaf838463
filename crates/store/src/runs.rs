//! Sorted runs: how a bulk load larger than memory should hold is kept until its commit.
//!
//! A load gathers rows in memory; past a threshold it sorts them and writes them to a run file, then starts
//! over. At commit the runs and the rows still in memory are merged into one ascending stream, which is what
//! the duplicate check and the table file both need.
//!
//! A run file is a sequence of entries, each:
//!
//! ```text
//! key length: u32 LE | key | value length: u32 LE | value | position in the load: u64 LE
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use crate::error::{Result, StoreError};

/// A row of a load: encoded key, stored row, position in the load.
pub(crate) type Entry = (Vec<u8>, Vec<u8>, usize);

/// A run file, deleted when dropped.
pub(crate) struct Run {
    path: PathBuf,
    /// Its smallest and largest keys.
    pub first: Vec<u8>,
    pub last: Vec<u8>,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn io(e: std::io::Error) -> StoreError {
    StoreError::storage(format!("bulk load spill file: {e}"))
}

/// Sorts entries by key, then position (so a repeated key's first occurrence comes first).
pub(crate) fn sort(entries: &mut [Entry]) {
    entries.sort_unstable_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
}

/// Sorts `entries` and writes them to a new run file at `path`, leaving `entries` empty.
pub(crate) fn spill(path: PathBuf, entries: &mut Vec<Entry>) -> Result<Run> {
    sort(entries);
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Err(StoreError::Storage("an empty bulk-load run".into()));
    };
    let run = Run { first: first.0.clone(), last: last.0.clone(), path };
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&run.path).map_err(io)?);
    for (k, v, pos) in entries.drain(..) {
        write_entry(&mut w, &k, &v, pos)?;
    }
    w.into_inner().map_err(|e| io(e.into_error()))?;
    Ok(run)
}

fn write_entry(w: &mut impl Write, k: &[u8], v: &[u8], pos: usize) -> Result<()> {
    w.write_all(&(k.len() as u32).to_le_bytes()).map_err(io)?;
    w.write_all(k).map_err(io)?;
    w.write_all(&(v.len() as u32).to_le_bytes()).map_err(io)?;
    w.write_all(v).map_err(io)?;
    w.write_all(&(pos as u64).to_le_bytes()).map_err(io)
}

/// A run written an entry at a time, in the order given, which must be ascending: the keys of the rows a
/// load streams into a table file. Held in memory they grew with the load (2.4 GB of keys for 97M rows);
/// written here, the load's memory stays bounded.
pub(crate) struct RunWriter {
    run: Run,
    w: BufWriter<File>,
    empty: bool,
}

impl RunWriter {
    pub fn create(path: PathBuf) -> Result<RunWriter> {
        let w = BufWriter::with_capacity(1 << 20, File::create(&path).map_err(io)?);
        Ok(RunWriter { run: Run { path, first: Vec::new(), last: Vec::new() }, w, empty: true })
    }

    pub fn push(&mut self, key: &[u8], value: &[u8], pos: usize) -> Result<()> {
        if self.empty {
            self.run.first = key.to_vec();
            self.empty = false;
        }
        self.run.last.clear();
        self.run.last.extend_from_slice(key);
        write_entry(&mut self.w, key, value, pos)
    }

    /// The largest key written so far.
    pub fn last(&self) -> &[u8] {
        &self.run.last
    }

    pub fn finish(self) -> Result<Run> {
        let RunWriter { run, w, .. } = self;
        w.into_inner().map_err(|e| io(e.into_error()))?;
        Ok(run)
    }
}

struct RunReader(BufReader<File>);

impl RunReader {
    fn next(&mut self) -> Result<Option<Entry>> {
        if self.0.fill_buf().map_err(io)?.is_empty() {
            return Ok(None);
        }
        let key = self.bytes()?;
        let value = self.bytes()?;
        let mut pos = [0u8; 8];
        self.0.read_exact(&mut pos).map_err(io)?;
        Ok(Some((key, value, u64::from_le_bytes(pos) as usize)))
    }

    fn bytes(&mut self) -> Result<Vec<u8>> {
        let mut len = [0u8; 4];
        self.0.read_exact(&mut len).map_err(io)?;
        let mut b = vec![0; u32::from_le_bytes(len) as usize];
        self.0.read_exact(&mut b).map_err(io)?;
        Ok(b)
    }
}

enum Source {
    Memory(std::vec::IntoIter<Entry>),
    File(RunReader),
}

impl Source {
    fn next(&mut self) -> Result<Option<Entry>> {
        match self {
            Source::Memory(it) => Ok(it.next()),
            Source::File(r) => r.next(),
        }
    }
}

/// A source's next entry as the merge orders it: key, position in the load, source, value.
type Head = (Vec<u8>, usize, usize, Vec<u8>);

/// The entries of every run and of `memory` (already sorted by [`sort`]), merged in ascending (key,
/// position) order.
pub(crate) struct Merge {
    sources: Vec<Source>,
    /// The next entry of each source that has one, smallest on top.
    heap: BinaryHeap<Reverse<Head>>,
}

impl Merge {
    pub fn new(runs: &[Run], memory: Vec<Entry>) -> Result<Merge> {
        let mut sources = vec![Source::Memory(memory.into_iter())];
        for r in runs {
            sources.push(Source::File(RunReader(BufReader::with_capacity(256 << 10, File::open(&r.path).map_err(io)?))));
        }
        let mut m = Merge { sources, heap: BinaryHeap::new() };
        for i in 0..m.sources.len() {
            m.refill(i)?;
        }
        Ok(m)
    }

    fn refill(&mut self, i: usize) -> Result<()> {
        if let Some((k, v, pos)) = self.sources[i].next()? {
            self.heap.push(Reverse((k, pos, i, v)));
        }
        Ok(())
    }

    pub fn next(&mut self) -> Result<Option<Entry>> {
        let Some(Reverse((k, pos, i, v))) = self.heap.pop() else { return Ok(None) };
        self.refill(i)?;
        Ok(Some((k, v, pos)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_memory_merge_in_key_then_position_order() {
        let dir = tempfile::tempdir().unwrap();
        let e = |k: &str, pos: usize| (k.as_bytes().to_vec(), format!("v{pos}").into_bytes(), pos);
        let mut a = vec![e("m", 0), e("c", 1), e("x", 2)];
        let mut b = vec![e("c", 3), e("a", 4)];
        let runs = vec![spill(dir.path().join("a.run"), &mut a).unwrap(), spill(dir.path().join("b.run"), &mut b).unwrap()];
        assert!(a.is_empty() && b.is_empty());
        assert_eq!((runs[0].first.as_slice(), runs[0].last.as_slice()), (&b"c"[..], &b"x"[..]));
        let mut m = Merge::new(&runs, vec![e("b", 6), e("c", 5)]).unwrap(); // sorted, as the caller keeps it
        let mut got = Vec::new();
        while let Some((k, v, pos)) = m.next().unwrap() {
            assert_eq!(v, format!("v{pos}").into_bytes());
            got.push((String::from_utf8(k).unwrap(), pos));
        }
        let want: Vec<(String, usize)> =
            [("a", 4), ("b", 6), ("c", 1), ("c", 3), ("c", 5), ("m", 0), ("x", 2)].iter().map(|(k, p)| (k.to_string(), *p)).collect();
        assert_eq!(got, want);
        let paths: Vec<PathBuf> = runs.iter().map(|r| r.path.clone()).collect();
        drop(m);
        drop(runs);
        assert!(paths.iter().all(|p| !p.exists()), "run files are removed with their runs");
    }
}
