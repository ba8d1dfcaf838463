//! Any bytes, read as a stored row by every reader of stored rows (decode, the visibility filter, the
//! latest-value lookup, compaction): an error or an answer, never a panic, and a row that decodes
//! re-encodes to bytes that decode to the same row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tabula_store::row::{compact, locate_latest, read_visible, value_at, ReadFilter, StoredRow, VersionRules};
use tabula_store::TimeRange;

fuzz_target!(|data: &[u8]| {
    // The first byte chooses the rules and the read; the rest is the row.
    let Some((&choice, row)) = data.split_first() else { return };
    if let Ok(r) = StoredRow::decode(row) {
        let bytes = r.encode();
        assert_eq!(StoredRow::decode(&bytes).map(|r| r.encode()).ok(), Some(bytes), "what decodes re-encodes");
    }
    let rules = VersionRules::new([-1, 1, 5, 3600][(choice & 3) as usize], 1 + (choice >> 2 & 3) as u32);
    let now = 1_000 + i64::from(choice) * 37;
    let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let columns = (choice & 16 != 0).then_some(&names[..2]);
    let time_range = (choice & 32 != 0).then_some(TimeRange::Range { start: 100, end: 1_500 });
    let _ = read_visible(row, &ReadFilter { rules, now_ms: now, columns, max_versions: 2, time_range }, &mut Vec::new());
    let mut cells = Vec::new();
    if locate_latest(row, rules, now, &names, &mut cells).is_ok() {
        for c in cells.into_iter().flatten() {
            let _ = value_at(row, c);
        }
    }
    let _ = compact(row, rules, now);
});
