//! What a statement returns ([`Output`]), and the streams its rows come in ([`RowStream`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::plan::OutputColumn;
use crate::types::DatumRef;
use crate::types::SqlRow;

/// Where a streamed result's rows come from, a batch at a time.
pub trait RowSource: Send {
    /// Lends the next rows, in order, to `f`: as many as come at once (an engine page, say), each valid only
    /// during its call. `Ok(false)` once there are no more.
    fn next_rows(&mut self, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool>;
}

/// Rows of an iterator, lent one by one.
struct IterSource<I>(I);

impl<I: Iterator<Item = Result<SqlRow>> + Send> RowSource for IterSource<I> {
    fn next_rows(&mut self, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
        lend_owned(self.0.next(), f)
    }
}

/// Lends an owned row (`None`: there are no more) the way [`RowSource::next_rows`] lends rows.
pub(crate) fn lend_owned(row: Option<Result<SqlRow>>, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
    let Some(row) = row else { return Ok(false) };
    let row = row?;
    let refs: smallvec::SmallVec<[DatumRef<'_>; 8]> = row.iter().map(DatumRef::from).collect();
    f(&refs)?;
    Ok(true)
}

/// Rows read as they are consumed: a key-value scan's cursor or an analytic statement's stream. The wire
/// encodes them as they are lent ([`RowStream::next_rows`]); as an iterator it yields owned rows.
pub struct RowStream {
    source: Box<dyn RowSource>,
    owned: std::collections::VecDeque<Result<SqlRow>>,
    done: bool,
    /// Set when the stream ends in an error: the session's transaction then fails, as it would had the
    /// error come before the first row (see [`Session::execute`]).
    failed: Option<Arc<AtomicBool>>,
    /// Run when the stream is dropped: its statement is over (the session goes idle in pg_stat_activity).
    ended: Option<Box<dyn FnOnce() + Send>>,
}

impl Drop for RowStream {
    fn drop(&mut self) {
        if let Some(f) = self.ended.take() {
            f();
        }
    }
}

impl RowStream {
    pub fn new(source: impl RowSource + 'static) -> Self {
        RowStream { source: Box::new(source), owned: Default::default(), done: false, failed: None, ended: None }
    }

    pub(crate) fn flag_errors(mut self, flag: Arc<AtomicBool>) -> Self {
        self.failed = Some(flag);
        self
    }

    /// Runs `f` when the stream is dropped, after what was to run then already.
    pub fn on_drop(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        let before = self.ended.take();
        self.ended = Some(Box::new(move || {
            if let Some(before) = before {
                before();
            }
            f();
        }));
        self
    }

    fn note_failure(&self) {
        if let Some(f) = &self.failed {
            f.store(true, Ordering::Relaxed);
        }
    }

    pub fn from_rows(rows: impl Iterator<Item = Result<SqlRow>> + Send + 'static) -> Self {
        RowStream::new(IterSource(rows))
    }

    /// See [`RowSource::next_rows`].
    pub fn next_rows(&mut self, f: &mut dyn FnMut(&[DatumRef<'_>]) -> Result<()>) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let more = self.source.next_rows(f);
        self.done = !matches!(more, Ok(true));
        if more.is_err() {
            self.note_failure();
        }
        more
    }
}

impl Iterator for RowStream {
    type Item = Result<SqlRow>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.owned.pop_front() {
                return Some(r);
            }
            if self.done {
                return None;
            }
            let owned = &mut self.owned;
            let more = self.source.next_rows(&mut |row| {
                owned.push_back(Ok(row.iter().map(|d| d.to_datum()).collect()));
                Ok(())
            });
            match more {
                Ok(true) => {}
                Ok(false) => self.done = true,
                Err(e) => {
                    self.done = true;
                    self.note_failure();
                    self.owned.push_back(Err(e));
                }
            }
        }
    }
}

impl std::fmt::Debug for RowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RowStream")
    }
}

/// What a statement returns.
#[derive(Debug)]
pub enum Output {
    /// Rows produced as the client reads them (a streaming scan).
    Stream {
        columns: Vec<OutputColumn>,
        cursor: RowStream,
    },
    Rows {
        columns: Vec<OutputColumn>,
        rows: Vec<SqlRow>,
        tag: String,
    },
    Command {
        tag: String,
    },
    /// A setting changed: the server reports it to the client.
    Set {
        tag: String,
        name: String,
        value: String,
    },
    /// `DEALLOCATE`: the protocol layer drops the named statement (`None`: all of them).
    Deallocate(Option<String>),
    /// COPY FROM STDIN started: the client sends `columns` columns of COPY data next.
    CopyIn {
        columns: usize,
        binary: bool,
    },
    /// COPY TO STDOUT: the data, one row per chunk, after `prefix` (the binary format's signature, or a
    /// text `HEADER` line) and before `suffix` (the binary trailer); either may be empty. The protocol
    /// layer reports the rows, not the chunks.
    CopyOut {
        columns: usize,
        binary: bool,
        prefix: Vec<u8>,
        rows: Vec<Vec<u8>>,
        suffix: Vec<u8>,
    },
    Empty,
}

/// A NOTICE a statement sends the client before its result, as PostgreSQL's `ereport(NOTICE, ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// `NOTICE`, `WARNING` or `INFO`.
    pub severity: &'static str,
    pub sqlstate: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    Idle,
    InTransaction,
    Failed,
}
