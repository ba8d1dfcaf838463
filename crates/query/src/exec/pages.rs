//! The one scan engine under every range and full scan, materialised ([`Executor::scan`]) or streamed
//! ([`crate::cursor::Cursor`]): a key range read a page at a time ([`Pages`]), and a full scan of a split
//! table fanned out over its partitions ([`FanOut`]).

use std::collections::VecDeque;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use tabula_store::LatestRow;

use super::*;

/// Rows per engine page. The streamed scans the benchmark suite measures (range scans of 10 to 1000 rows)
/// have read 512-row pages since they were written; the materialised path's 1024 was never measured apart.
pub const PAGE_ROWS: usize = 512;

/// How many pages each partition's reader may read ahead of the consumer: the memory a fanned-out scan
/// holds is this many pages per partition, whether its rows stream or are gathered.
const READ_AHEAD: usize = 2;

/// What a streamed or fanned-out scan reads from, on threads of its own: the store (the latest committed
/// data) or a transaction's snapshot ([`tabula_store::ReadView`]).
pub type Reader = Arc<dyn Access + Send + Sync>;

/// A page read by one engine call, and where the next one starts (`None`: the range is done).
pub type ReadPage<P> = fn(&dyn Access, &str, &RangeRequest) -> std::result::Result<(P, Option<Vec<PkValue>>), StoreError>;

/// Every version the read asks for, per row (`Access::get_range`).
pub fn all_versions(a: &dyn Access, table: &str, req: &RangeRequest) -> std::result::Result<(Vec<Row>, Option<Vec<PkValue>>), StoreError> {
    a.get_range(table, req).map(|r| (r.rows, r.next_start))
}

/// The newest value of each column read, rows laid flat (`Access::get_range_latest`).
pub fn latest(a: &dyn Access, table: &str, req: &RangeRequest) -> std::result::Result<(LatestRows, Option<Vec<PkValue>>), StoreError> {
    a.get_range_latest(table, req).map(|mut page| {
        let next = page.next_start.take();
        (page, next)
    })
}

/// Rows to ask the engine for: a page, or fewer when nothing filters and a limit wants fewer.
pub fn page_rows(filtered: bool, wanted: Option<u64>) -> usize {
    match (filtered, wanted) {
        (false, Some(n)) => (n.min(PAGE_ROWS as u64) as usize).max(1),
        _ => PAGE_ROWS,
    }
}

/// A key range read a page at a time, in either direction: the one page loop.
pub struct Pages {
    table: String,
    /// Where the next page starts; `None` once the range is read.
    next: Option<Vec<PkBound>>,
    end: Vec<PkBound>,
    direction: Direction,
    read: ReadSpec,
}

impl Pages {
    /// The range from `start` to `end` in `direction` (`start` is where the read begins: the high end
    /// when backward).
    pub fn new(table: &str, start: Vec<PkBound>, end: Vec<PkBound>, direction: Direction, read: ReadSpec) -> Pages {
        Pages { table: table.to_string(), next: Some(start), end, direction, read }
    }

    /// A range with nothing in it (a NULL bound).
    pub fn empty(table: &str, direction: Direction, read: ReadSpec) -> Pages {
        Pages { table: table.to_string(), next: None, end: vec![], direction, read }
    }

    /// The whole table in `direction`.
    pub fn all(table: &str, direction: Direction, read: ReadSpec) -> Pages {
        let (lo, hi) = (vec![PkBound::InfMin], vec![PkBound::InfMax]);
        match direction {
            Direction::Forward => Pages::new(table, lo, hi, direction, read),
            Direction::Backward => Pages::new(table, hi, lo, direction, read),
        }
    }

    pub fn more(&self) -> bool {
        self.next.is_some()
    }

    /// The same range, read from `start` on: where an earlier read of it stopped (`position`).
    pub fn resumed(self, start: Vec<PkBound>) -> Pages {
        Pages { next: self.next.map(|_| start), ..self }
    }

    /// Where the next page starts; `None` once the range is read.
    pub fn position(&self) -> Option<Vec<PkBound>> {
        self.next.clone()
    }

    /// Ends the read early (the consumer is done, or failed).
    pub fn stop(&mut self) {
        self.next = None;
    }

    fn request(&mut self, rows: usize) -> Option<RangeRequest> {
        let start = self.next.take()?;
        Some(RangeRequest {
            start,
            end: self.end.clone(),
            direction: self.direction,
            limit: Some(rows),
            read: self.read.clone(),
            budget_bytes: None,
        })
    }

    fn resume(&mut self, next: Option<Vec<PkValue>>) {
        self.next = next.map(|n| n.into_iter().map(PkBound::Value).collect());
    }

    /// The next page of at most `rows` rows, `None` once the range is read. Contradictory bounds
    /// (`k > 5 AND k < 3`) are an empty range.
    pub fn next_page<P>(&mut self, access: &dyn Access, interrupt: &Interrupt, rows: usize, read: ReadPage<P>) -> Result<Option<P>> {
        interrupt.check()?;
        let Some(req) = self.request(rows) else { return Ok(None) };
        match read(access, &self.table, &req) {
            Ok((page, next)) => {
                self.resume(next);
                Ok(Some(page))
            }
            Err(StoreError::InvalidRange(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The next page of at most `rows` rows, each lent to `visit` as the engine reads it
    /// (`Access::visit_range_latest`) until it returns false. `false` once the range is read.
    pub fn visit_page(
        &mut self,
        access: &dyn Access,
        interrupt: &Interrupt,
        rows: usize,
        visit: &mut dyn FnMut(&LatestRow<'_>) -> bool,
    ) -> Result<bool> {
        interrupt.check()?;
        let Some(req) = self.request(rows) else { return Ok(false) };
        match access.visit_range_latest(&self.table, &req, visit) {
            Ok(next) => {
                self.resume(next);
                Ok(true)
            }
            Err(StoreError::InvalidRange(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// A full scan of a table split into partitions: each partition's range read by a thread of its own, up
/// to `READ_AHEAD` pages ahead, the pages consumed in key order. A partition's reader stops when the
/// consumer goes away.
pub struct FanOut<P> {
    partitions: VecDeque<Receiver<Result<P>>>,
}

impl<P: Send + 'static> FanOut<P> {
    /// `None` when the table is one partition (or `reader` reads one way only, as a transaction does).
    pub fn start(
        reader: &Reader,
        table: &str,
        direction: Direction,
        spec: &ReadSpec,
        interrupt: &Interrupt,
        read: ReadPage<P>,
    ) -> Result<Option<FanOut<P>>> {
        let starts = reader.partition_starts(table)?;
        if starts.is_empty() {
            return Ok(None);
        }
        // A partition starts before every row under its first partition-key values.
        let bound = |vals: &Vec<PkValue>| {
            let mut b: Vec<PkBound> = vals.iter().cloned().map(PkBound::Value).collect();
            b.push(PkBound::InfMin);
            b
        };
        let mut ranges = Vec::with_capacity(starts.len() + 1);
        let mut lo = vec![PkBound::InfMin];
        for s in &starts {
            ranges.push((lo, bound(s)));
            lo = bound(s);
        }
        ranges.push((lo, vec![PkBound::InfMax]));
        if direction == Direction::Backward {
            ranges.reverse();
        }
        let mut partitions = VecDeque::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            let (tx, rx) = sync_channel(READ_AHEAD);
            let (start, end) = if direction == Direction::Forward { (lo, hi) } else { (hi, lo) };
            let mut pages = Pages::new(table, start, end, direction, spec.clone());
            let (reader, interrupt) = (reader.clone(), interrupt.clone());
            std::thread::Builder::new()
                .name("tabula-partition".into())
                .spawn(move || loop {
                    let page = pages.next_page(reader.as_ref(), &interrupt, PAGE_ROWS, read).transpose();
                    let failed = matches!(page, Some(Err(_)));
                    // Done, or the consumer went away.
                    if page.is_none_or(|p| tx.send(p).is_err()) || failed {
                        return;
                    }
                })
                .map_err(|e| QueryError::Internal(format!("cannot start a partition reader: {e}")))?;
            partitions.push_back(rx);
        }
        Ok(Some(FanOut { partitions }))
    }

    /// The next page in key order; `None` once every partition is read.
    pub fn next_page(&mut self) -> Option<Result<P>> {
        loop {
            match self.partitions.front()?.recv() {
                Ok(page) => return Some(page),
                // That partition's reader is done: go on with the next.
                Err(_) => {
                    self.partitions.pop_front();
                }
            }
        }
    }

    /// Stops every reader (they see the consumer gone).
    pub fn stop(&mut self) {
        self.partitions.clear();
    }

    pub fn more(&self) -> bool {
        !self.partitions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use tabula_kv::memory::MemoryEngine;
    use tabula_store::{Store, StoreConfig};

    use super::*;

    /// A store whose table `t (k bigint PRIMARY KEY, v text)` holds keys 0..rows, split into partitions
    /// when `split` (so that a full scan fans out).
    fn table(rows: i64, split: bool) -> Arc<Store> {
        let config = match split {
            true => StoreConfig { split_bytes: 8 * 1024, merge_bytes: 1024, maintenance_interval: None, ..StoreConfig::default() },
            false => StoreConfig { maintenance_interval: None, ..StoreConfig::default() },
        };
        let store = Arc::new(Store::open(Arc::new(MemoryEngine::new()), config).unwrap());
        let db = crate::Database::new(store.clone()).unwrap();
        let mut s = crate::Session::new(&db, "tabula", "tabula");
        let values: Vec<String> = (0..rows).map(|k| format!("({k}, '{}')", "x".repeat(30))).collect();
        for r in s.execute_sql(&format!("CREATE TABLE t (k bigint PRIMARY KEY, v text); INSERT INTO t VALUES {}", values.join(","))) {
            r.unwrap();
        }
        if split {
            for _ in 0..5 {
                store.run_maintenance().unwrap();
            }
            assert!(store.partition_starts("t").unwrap().len() > 1, "the table split");
        }
        store
    }

    fn keys(page: &LatestRows) -> Vec<i64> {
        page.keys
            .iter()
            .map(|k| match k {
                PkValue::Integer(i) => *i,
                k => panic!("{k:?}"),
            })
            .collect()
    }

    fn spec() -> ReadSpec {
        ReadSpec { columns: Some(vec!["v".into()]), max_versions: Some(1), time_range: None }
    }

    #[test]
    fn pages_cover_a_range_once_in_either_direction() {
        let store = table(1300, false);
        let stop = Interrupt::default();
        let read = |mut pages: Pages, rows| {
            let mut out = Vec::new();
            while let Some(page) = pages.next_page(store.as_ref(), &stop, rows, latest).unwrap() {
                assert!(page.len() <= rows);
                out.extend(keys(&page));
            }
            out
        };
        let all: Vec<i64> = (0..1300).collect();
        assert_eq!(read(Pages::all("t", Direction::Forward, spec()), PAGE_ROWS), all);
        assert_eq!(read(Pages::all("t", Direction::Backward, spec()), 100), all.iter().rev().copied().collect::<Vec<_>>());
        let b = |k: i64| vec![PkBound::Value(PkValue::Integer(k))];
        assert_eq!(read(Pages::new("t", b(10), b(20), Direction::Forward, spec()), 3), (10..20).collect::<Vec<_>>());
        // Contradictory bounds, and a NULL bound, are empty ranges.
        assert!(read(Pages::new("t", b(20), b(10), Direction::Forward, spec()), 3).is_empty());
        assert!(read(Pages::empty("t", Direction::Forward, spec()), 3).is_empty());
        // A limit without a filter bounds the page; with one, a whole page is read.
        assert_eq!(page_rows(false, Some(7)), 7);
        assert_eq!(page_rows(false, Some(0)), 1);
        assert_eq!(page_rows(true, Some(7)), PAGE_ROWS);
    }

    #[test]
    fn an_interrupted_read_stops() {
        let store = table(10, false);
        let stop = Interrupt::default();
        stop.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut pages = Pages::all("t", Direction::Forward, spec());
        let e = pages.next_page(store.as_ref(), &stop, PAGE_ROWS, latest).unwrap_err();
        assert_eq!(e.sqlstate(), "57014");
    }

    #[test]
    fn a_fan_out_gives_the_partitions_in_key_order() {
        let store = table(3000, true);
        let reader: Reader = store.clone();
        let stop = Interrupt::default();
        for direction in [Direction::Forward, Direction::Backward] {
            let mut parts = FanOut::start(&reader, "t", direction, &spec(), &stop, latest).unwrap().expect("several partitions");
            let mut got = Vec::new();
            while let Some(page) = parts.next_page() {
                got.extend(keys(&page.unwrap()));
            }
            let mut want: Vec<i64> = (0..3000).collect();
            if direction == Direction::Backward {
                want.reverse();
            }
            assert_eq!(got, want);
        }
        // A consumer that stops early ends the readers, which wait on it at most two pages ahead.
        let mut parts = FanOut::start(&reader, "t", Direction::Forward, &spec(), &stop, latest).unwrap().unwrap();
        assert_eq!(keys(&parts.next_page().unwrap().unwrap())[0], 0);
        parts.stop();
        assert!(!parts.more() && parts.next_page().is_none());
        // One partition: nothing to fan out.
        let one: Reader = table(10, false);
        assert!(FanOut::start(&one, "t", Direction::Forward, &spec(), &stop, latest).unwrap().is_none());
    }
}
