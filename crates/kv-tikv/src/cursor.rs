//! A cursor over a TiKV range, a page at a time.
//!
//! TiKV's scans return at most a given number of pairs, so a cursor holds one page: the pairs of an interval
//! `[start, end)` of its range, in ascending order, with a transaction's own writes in that interval laid
//! over them. Moving past either end of the page fetches the next interval on that side:
//! ```text
//!   lower                                                                      upper
//!     |----- page k-1 -----|----------- page k -----------|------ page k+1 ------|
//!                         start   (pairs, pos)           end
//! ```
//! A forward page starts where the last one ended and ends just after its last pair (or at `upper` when
//! TiKV returned fewer pairs than asked: nothing more is there). A backward page mirrors it. Pages abut, so
//! every key of the range, and every write of the overlay, falls in exactly one of them.

use std::collections::BTreeMap;
use std::ops::Bound;

use tabula_kv::{Cursor, KvError, Result, Space};

use crate::{ReadAt, FIRST_PAGE, MAX_PAGE};

/// A transaction's writes to the data space (`None`: deleted), by key.
pub(crate) type Overlay = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// Where pages come from: up to `limit` pairs of `[lower, upper)` from the lower end, or with `reverse`
/// from the upper end in descending order, as TiKV's scans answer.
pub(crate) trait Pages {
    fn page(&self, lower: &[u8], upper: &[u8], limit: u32, reverse: bool) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
}

impl Pages for ReadAt {
    fn page(&self, lower: &[u8], upper: &[u8], limit: u32, reverse: bool) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        ReadAt::page(self, Space::Data, lower, upper, limit, reverse)
    }
}

pub(crate) struct PagedCursor {
    at: Option<Box<dyn Pages>>,
    lower: Vec<u8>,
    upper: Vec<u8>,
    overlay: Overlay,
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    start: Vec<u8>,
    end: Vec<u8>,
    /// The position in `pairs`; `pairs.len()` when the cursor is nowhere.
    pos: usize,
    limit: u32,
    error: Option<KvError>,
}

impl PagedCursor {
    /// A cursor over `[lower, upper)` as read by `at`, with `overlay` (already cut to the range) laid over.
    pub(crate) fn new(at: impl Pages + 'static, lower: Vec<u8>, upper: Vec<u8>, overlay: Overlay) -> PagedCursor {
        PagedCursor {
            at: Some(Box::new(at)),
            start: lower.clone(),
            end: lower.clone(),
            lower,
            upper,
            overlay,
            pairs: Vec::new(),
            pos: 0,
            limit: FIRST_PAGE,
            error: None,
        }
    }

    /// A cursor that is nowhere and reports `e`.
    pub(crate) fn failed(e: KvError) -> PagedCursor {
        PagedCursor {
            at: None,
            lower: Vec::new(),
            upper: Vec::new(),
            overlay: Overlay::new(),
            pairs: Vec::new(),
            start: Vec::new(),
            end: Vec::new(),
            pos: 0,
            limit: FIRST_PAGE,
            error: Some(e),
        }
    }

    fn empty_range(&self) -> bool {
        self.lower >= self.upper
    }

    /// Loads the page that starts at `from` (forward) or ends at `to` (backward), skipping pages that the
    /// overlay emptied. Leaves the cursor nowhere on an error or at the range's end.
    fn load(&mut self, backward: bool, mut edge: Vec<u8>) {
        loop {
            let Some(at) = &self.at else { return self.nowhere() };
            let (lo, hi) = if backward { (self.lower.clone(), edge.clone()) } else { (edge.clone(), self.upper.clone()) };
            let mut page = match at.page(&lo, &hi, self.limit, backward) {
                Ok(p) => p,
                Err(e) => {
                    self.error = Some(e);
                    return self.nowhere();
                }
            };
            let more = page.len() == self.limit as usize;
            self.limit = (self.limit * 2).min(MAX_PAGE);
            if backward {
                page.reverse();
                self.start = if more { page[0].0.clone() } else { self.lower.clone() };
                self.end = hi;
            } else {
                self.start = lo;
                self.end = match page.last() {
                    Some((k, _)) if more => successor(k),
                    _ => self.upper.clone(),
                };
            }
            self.pairs = merge(page, &self.overlay, &self.start, &self.end);
            if !self.pairs.is_empty() {
                self.pos = if backward { self.pairs.len() - 1 } else { 0 };
                return;
            }
            // Every pair of the page was deleted by the transaction: go on to the next one, if any.
            if (backward && self.start == self.lower) || (!backward && self.end == self.upper) {
                return self.nowhere();
            }
            edge = if backward { self.start.clone() } else { self.end.clone() };
        }
    }

    fn nowhere(&mut self) {
        self.pairs.clear();
        self.pos = 0;
    }
}

/// The key just after `k`.
fn successor(k: &[u8]) -> Vec<u8> {
    let mut s = k.to_vec();
    s.push(0);
    s
}

/// The pairs of `[start, end)`: TiKV's, with the overlay's writes there applied.
fn merge(page: Vec<(Vec<u8>, Vec<u8>)>, overlay: &Overlay, start: &[u8], end: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut writes = overlay.range::<[u8], _>((Bound::Included(start), Bound::Excluded(end))).peekable();
    if writes.peek().is_none() {
        return page;
    }
    let mut rows: BTreeMap<Vec<u8>, Vec<u8>> = page.into_iter().collect();
    for (k, v) in writes {
        match v {
            Some(v) => rows.insert(k.clone(), v.clone()),
            None => rows.remove(k),
        };
    }
    rows.into_iter().collect()
}

impl Cursor for PagedCursor {
    fn seek_to_first(&mut self) {
        self.limit = FIRST_PAGE;
        if self.empty_range() {
            return self.nowhere();
        }
        self.load(false, self.lower.clone());
    }

    fn seek_to_last(&mut self) {
        self.limit = FIRST_PAGE;
        if self.empty_range() {
            return self.nowhere();
        }
        self.load(true, self.upper.clone());
    }

    fn valid(&self) -> bool {
        self.pos < self.pairs.len()
    }

    fn key(&self) -> &[u8] {
        self.pairs.get(self.pos).map_or(&[], |p| &p.0)
    }

    fn value(&self) -> &[u8] {
        self.pairs.get(self.pos).map_or(&[], |p| &p.1)
    }

    fn advance(&mut self, backward: bool) {
        if !self.valid() {
            return;
        }
        if backward {
            if self.pos > 0 {
                self.pos -= 1;
            } else if self.start == self.lower {
                self.nowhere();
            } else {
                self.load(true, self.start.clone());
            }
        } else if self.pos + 1 < self.pairs.len() {
            self.pos += 1;
        } else if self.end == self.upper {
            self.nowhere();
        } else {
            self.load(false, self.end.clone());
        }
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(keys: &[&str]) -> Vec<(Vec<u8>, Vec<u8>)> {
        keys.iter().map(|k| (k.as_bytes().to_vec(), b"v".to_vec())).collect()
    }

    /// Pages cut from a sorted map by TiKV's rules.
    struct Map(BTreeMap<Vec<u8>, Vec<u8>>);

    impl Pages for Map {
        fn page(&self, lower: &[u8], upper: &[u8], limit: u32, reverse: bool) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
            let range = self.0.range::<[u8], _>((Bound::Included(lower), Bound::Excluded(upper)));
            let pairs = range.map(|(k, v)| (k.clone(), v.clone()));
            Ok(if reverse { pairs.rev().take(limit as usize).collect() } else { pairs.take(limit as usize).collect() })
        }
    }

    fn walk(c: &mut PagedCursor, backward: bool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while c.valid() {
            out.push(c.key().to_vec());
            c.advance(backward);
        }
        out
    }

    /// Pages of 64, 128, ... pairs over 1,000 keys, in both directions, with a transaction's writes (a
    /// deleted run longer than a page among them), and turning back in the middle.
    #[test]
    fn pages_cover_the_range_once_in_both_directions() {
        let key = |i: u32| format!("k{i:05}").into_bytes();
        let map = || Map((0..1000).map(|i| (key(i), b"v".to_vec())).collect());
        let mut overlay = Overlay::new();
        for i in 100..300 {
            overlay.insert(key(i), None);
        }
        overlay.insert(key(500), None);
        overlay.insert(b"k00500x".to_vec(), Some(b"new".to_vec()));
        overlay.insert(b"k99999".to_vec(), Some(b"past the range".to_vec()));
        let expected: Vec<Vec<u8>> = (10..990)
            .filter(|i| !(100..300).contains(i) && *i != 500)
            .map(key)
            .chain([b"k00500x".to_vec()])
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let cut: Overlay = overlay.range(key(10)..key(990)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut c = PagedCursor::new(map(), key(10), key(990), cut.clone());
        c.seek_to_first();
        assert_eq!(walk(&mut c, false), expected);
        let mut c = PagedCursor::new(map(), key(10), key(990), cut.clone());
        c.seek_to_last();
        assert_eq!(walk(&mut c, true), expected.iter().rev().cloned().collect::<Vec<_>>());
        // Forward 400 rows (several pages), then back to the start.
        let mut c = PagedCursor::new(map(), key(10), key(990), cut);
        c.seek_to_first();
        for _ in 0..400 {
            c.advance(false);
        }
        let at = c.key().to_vec();
        assert_eq!(at, expected[400]);
        assert_eq!(walk(&mut c, true), expected[..=400].iter().rev().cloned().collect::<Vec<_>>());
        // An empty range, and a range the overlay empties.
        let mut c = PagedCursor::new(map(), key(5), key(5), Overlay::new());
        c.seek_to_first();
        assert!(!c.valid());
        let gone: Overlay = (100..300).map(|i| (key(i), None)).collect();
        let mut c = PagedCursor::new(map(), key(100), key(300), gone);
        c.seek_to_last();
        assert!(!c.valid() && c.status().is_ok());
    }

    #[test]
    fn the_overlay_applies_within_the_page_only() {
        let mut overlay = Overlay::new();
        overlay.insert(b"a".to_vec(), Some(b"new".to_vec()));
        overlay.insert(b"c".to_vec(), None);
        overlay.insert(b"e".to_vec(), Some(b"new".to_vec()));
        overlay.insert(b"z".to_vec(), Some(b"past the page".to_vec()));
        let merged = merge(pairs(&["b", "c", "d"]), &overlay, b"a", b"y");
        let keys: Vec<&[u8]> = merged.iter().map(|p| p.0.as_slice()).collect();
        assert_eq!(keys, [b"a".as_slice(), b"b", b"d", b"e"]);
        assert_eq!(merge(pairs(&["b"]), &Overlay::new(), b"a", b"c"), pairs(&["b"]));
    }
}
