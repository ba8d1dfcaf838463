//! The engine's compaction hook: what the table options hide is removed from disk as files are compacted.

use super::*;

/// The compaction filter: drops versions beyond `max_versions`, expired versions, and rows nothing of which
/// is visible any more. Each compaction takes the tables' rules and the clock as they are at its start.
pub(super) struct VersionFilter {
    pub(super) rules: Arc<RwLock<HashMap<u32, VersionRules>>>,
    pub(super) clock: Arc<dyn Clock>,
}

impl CompactionFilterFactory for VersionFilter {
    fn create(&self) -> CompactionFilter {
        let (rules, now_ms) = (self.rules.read().clone(), self.clock.now_ms());
        Box::new(move |key, value| {
            let Some(id) = key.get(..4).map(|b| u32::from_be_bytes(b.try_into().unwrap())) else { return Decision::Keep };
            // A table this filter does not know is kept: at open, the engine may compact before the catalog
            // is loaded, and a dropped table's rows are removed by its range deletion anyway.
            //
            // A value out of line is kept: its row may still hold the cell (rows and values are compacted
            // at different times), and an index computes the row's old entry from it. Once its row no longer
            // holds it, a sweep (`engine/sweep.rs`) removes it.
            if keys::is_outside(key) {
                return Decision::Keep;
            }
            let Some(rules) = rules.get(&id) else { return Decision::Keep };
            match row::compact(value, *rules, now_ms) {
                row::Compacted::Keep => Decision::Keep,
                row::Compacted::Remove => Decision::Remove,
                row::Compacted::Change(v) => Decision::Change(v),
            }
        })
    }
}
