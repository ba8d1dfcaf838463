//! Model-based property test: random writes, deletes, conditions, increments, option changes and clock
//! moves run against the engine and a plain in-memory model; every read must agree.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use tabula_store::*;

#[derive(Debug, Clone)]
enum Op {
    Put {
        k: i64,
        cells: Vec<(u8, i64, Option<i64>)>,
        cond: u8,
    },
    Update {
        k: i64,
        ops: Vec<(u8, UOp)>,
        cond: u8,
        col_cond: Option<(u8, i64)>,
    },
    Delete {
        k: i64,
        cond: u8,
    },
    Options {
        ttl: i64,
        max_versions: u32,
    },
    Advance(i64),
    /// A compaction at this moment: it must change no answer, now or later.
    Compact,
}

#[derive(Debug, Clone)]
enum UOp {
    Put(i64, Option<i64>),
    DeleteVersion(i64),
    DeleteAll,
    Increment(i64),
    PutText,
}

const COLS: [&str; 3] = ["a", "b", "c"];

fn op() -> impl Strategy<Value = Op> {
    let ver = prop_oneof![Just(None), (-5i64..5).prop_map(|d| Some(d * 1000))];
    let uop = prop_oneof![
        (-3i64..3, ver.clone()).prop_map(|(v, ver)| UOp::Put(v, ver)),
        (-5i64..5).prop_map(|d| UOp::DeleteVersion(d * 1000)),
        Just(UOp::DeleteAll),
        (-2i64..3).prop_map(UOp::Increment),
        Just(UOp::PutText),
    ];
    prop_oneof![
        (0i64..6, proptest::collection::vec((0u8..3, -3i64..3, ver), 0..3), 0u8..3).prop_map(|(k, cells, cond)| Op::Put { k, cells, cond }),
        (0i64..6, proptest::collection::vec((0u8..3, uop), 1..3), 0u8..3, proptest::option::of((0u8..3, -3i64..3)))
            .prop_map(|(k, ops, cond, col_cond)| Op::Update { k, ops, cond, col_cond }),
        (0i64..6, 0u8..3).prop_map(|(k, cond)| Op::Delete { k, cond }),
        (prop_oneof![Just(-1i64), 1i64..8], 1u32..4).prop_map(|(ttl, max_versions)| Op::Options { ttl, max_versions }),
        (0i64..4000).prop_map(Op::Advance),
        Just(Op::Compact),
    ]
}

/// The model: rows as plain maps, with Tablestore's rules written out again.
#[derive(Default, Clone, Debug)]
struct MRow {
    marker: i64,
    cols: BTreeMap<String, Vec<(i64, Value)>>,
}

struct Model {
    rows: BTreeMap<i64, MRow>,
    ttl: i64,
    max_versions: u32,
    offset: i64,
    /// What an earlier ttl had expired stays expired after the ttl is raised.
    hidden_before: i64,
}

impl Model {
    fn expired(&self, v: i64, now: i64) -> bool {
        v <= self.hidden_before || (self.ttl >= 0 && v + self.ttl * 1000 <= now)
    }

    fn visible(&self, k: i64, now: i64) -> Option<BTreeMap<String, Vec<(i64, Value)>>> {
        let r = self.rows.get(&k)?;
        let mut out = BTreeMap::new();
        for (c, cells) in &r.cols {
            let vis: Vec<_> = cells.iter().take(self.max_versions as usize).filter(|(v, _)| !self.expired(*v, now)).cloned().collect();
            if !vis.is_empty() {
                out.insert(c.clone(), vis);
            }
        }
        if out.is_empty() && self.expired(r.marker, now) {
            None
        } else {
            Some(out)
        }
    }

    fn put_cell(&self, row: &mut MRow, c: &str, v: i64, val: Value) {
        let cells = row.cols.entry(c.to_string()).or_default();
        match cells.iter().position(|(x, _)| *x <= v) {
            Some(i) if cells[i].0 == v => cells[i].1 = val,
            Some(i) => cells.insert(i, (v, val)),
            None => cells.push((v, val)),
        }
        cells.truncate(self.max_versions as usize);
    }

    fn check_version(&self, v: i64, now: i64) -> bool {
        let mut start = now - self.offset * 1000;
        if self.ttl >= 0 {
            start = start.max(now - self.ttl * 1000 + 1);
        }
        start = start.max(self.hidden_before.saturating_add(1));
        v >= start && v < now + self.offset * 1000
    }

    fn cond(&self, k: i64, cond: u8, now: i64) -> Result<(), &'static str> {
        let exists = self.visible(k, now).is_some();
        match (cond, exists) {
            (1, false) => Err("RowNotFound"),
            (2, true) => Err("RowExists"),
            _ => Ok(()),
        }
    }
}

/// A cell's value: an integer, or for negative numbers a string of one, three or five bytes, so that with
/// the store's inline size at 2 some values are stored in the row and some out of line.
fn value(v: i64) -> Value {
    if v < 0 {
        Value::String("x".repeat(2 * (-v) as usize - 1))
    } else {
        Value::Integer(v)
    }
}

fn cond_of(c: u8) -> Condition {
    match c {
        1 => Condition::expect_exist(),
        2 => Condition::expect_not_exist(),
        _ => Condition::ignore(),
    }
}

fn kind(e: &StoreError) -> &'static str {
    match e {
        StoreError::RowNotFound => "RowNotFound",
        StoreError::RowExists => "RowExists",
        StoreError::ConditionFailed(_) => "ConditionFailed",
        StoreError::VersionOutOfWindow { .. } => "VersionOutOfWindow",
        StoreError::IncrementNonInteger { .. } => "IncrementNonInteger",
        StoreError::IncrementOverflow(_) => "IncrementOverflow",
        _ => "other",
    }
}

fn apply(model: &mut Model, store: &Store, clock: &ManualClock, op: &Op) -> Result<(), TestCaseError> {
    let now = clock.now_ms();
    match op {
        Op::Advance(ms) => clock.advance(*ms),
        Op::Compact => store.compact().unwrap(),
        Op::Options { ttl, max_versions } => {
            // Hidden data never comes back: a raised ttl keeps hiding what the old one had expired, and a raised
            // max_versions shows only versions written since (the surplus is gone from every row).
            if model.ttl >= 0 && *ttl != model.ttl {
                model.hidden_before = model.hidden_before.max(now - model.ttl * 1000);
            }
            if *max_versions > model.max_versions {
                let old = model.max_versions as usize;
                for row in model.rows.values_mut() {
                    for cells in row.cols.values_mut() {
                        cells.truncate(old);
                    }
                }
            }
            model.ttl = *ttl;
            model.max_versions = *max_versions;
            let options =
                TableOptions { ttl: *ttl, max_versions: *max_versions, max_version_offset: model.offset, ..TableOptions::default() };
            store.set_options("m", options).unwrap();
        }
        Op::Put { k, cells, cond } => {
            let writes: Vec<CellWrite> = cells
                .iter()
                .map(|(c, v, ver)| CellWrite { column: COLS[*c as usize].into(), value: value(*v), version: ver.map(|d| now + d) })
                .collect();
            let got = store.put_row("m", &[Some(int(*k))], &writes, &cond_of(*cond));
            let expected = (|| {
                // A row lives as long as the newest version written, or a ttl from now without cells.
                let marker = writes.iter().map(|w| w.version.unwrap_or(now)).max().unwrap_or(now);
                let mut row = MRow { marker, cols: BTreeMap::new() };
                for w in &writes {
                    if let Some(v) = w.version {
                        if !model.check_version(v, now) {
                            return Err("VersionOutOfWindow");
                        }
                    }
                    model.put_cell(&mut row, &w.column, w.version.unwrap_or(now), w.value.clone());
                }
                model.cond(*k, *cond, now)?;
                Ok(row)
            })();
            match (&got, expected) {
                (Ok(_), Ok(row)) => {
                    model.rows.insert(*k, row);
                }
                (Err(e), Err(m)) => prop_assert_eq!(kind(e), m),
                (g, e) => prop_assert!(false, "put mismatch: engine {:?}, model {:?}", g, e.map(|_| ())),
            }
        }
        Op::Update { k, ops, cond, col_cond } => {
            let uops: Vec<(String, UpdateOp)> = ops
                .iter()
                .map(|(c, o)| {
                    let name = COLS[*c as usize].to_string();
                    let op = match o {
                        UOp::Put(v, ver) => UpdateOp::Put { value: value(*v), version: ver.map(|d| now + d) },
                        UOp::PutText => UpdateOp::Put { value: Value::String(format!("text written at {now}")), version: None },
                        UOp::DeleteVersion(d) => UpdateOp::DeleteVersion(now + d),
                        UOp::DeleteAll => UpdateOp::DeleteAll,
                        UOp::Increment(d) => UpdateOp::Increment(*d),
                    };
                    (name, op)
                })
                .collect();
            let mut condition = cond_of(*cond);
            if let Some((c, v)) = col_cond {
                condition.column = Some(ColumnCondition::Single {
                    column: COLS[*c as usize].into(),
                    op: CompareOp::Ge,
                    value: Value::Integer(*v),
                    pass_if_missing: true,
                    latest_version_only: true,
                });
            }
            let got = store.update_row("m", &[int(*k)], &uops, &condition);
            let expected = (|| {
                model.cond(*k, *cond, now)?;
                let visible = model.visible(*k, now);
                if let Some((c, v)) = col_cond {
                    let latest =
                        visible.as_ref().and_then(|r| r.get(COLS[*c as usize])).and_then(|cells| cells.first()).map(|(_, v)| v.clone());
                    let pass = match latest {
                        None => true,
                        Some(Value::Integer(x)) => x >= *v,
                        Some(_) => false,
                    };
                    if !pass {
                        return Err("ConditionFailed");
                    }
                }
                // An update builds on what is visible: hidden versions are dropped, never shown again.
                let mut row = match &visible {
                    Some(cols) => MRow { marker: model.rows[k].marker, cols: cols.clone() },
                    None => MRow::default(),
                };
                let mut newest_written: Option<i64> = None;
                // Versions the server assigns come after every version the row holds.
                let newest = row.cols.values().filter_map(|c| c.first().map(|(v, _)| *v)).max();
                let assigned = newest.map_or(now, |v| now.max(v + 1));
                let mut incs: Vec<(String, i64)> = Vec::new();
                for (name, op) in &uops {
                    match op {
                        UpdateOp::Put { value, version } => {
                            if let Some(v) = version {
                                if !model.check_version(*v, now) {
                                    return Err("VersionOutOfWindow");
                                }
                            }
                            let version = version.unwrap_or(assigned);
                            model.put_cell(&mut row, name, version, value.clone());
                            newest_written = newest_written.max(Some(version));
                        }
                        UpdateOp::DeleteVersion(v) => {
                            if let Some(cells) = row.cols.get_mut(name) {
                                cells.retain(|(x, _)| x != v);
                            }
                        }
                        UpdateOp::DeleteAll => {
                            row.cols.remove(name);
                        }
                        UpdateOp::Increment(d) | UpdateOp::Add(d) => {
                            let earlier = incs.iter().rev().find(|(c, _)| c == name).map(|(_, v)| *v);
                            let cur = match (earlier, visible.as_ref().and_then(|r| r.get(name)).and_then(|c| c.first())) {
                                (Some(v), _) => v,
                                (None, Some((_, Value::Integer(i)))) => *i,
                                (None, Some(_)) => return Err("IncrementNonInteger"),
                                (None, None) if matches!(op, UpdateOp::Increment(_)) => 0,
                                (None, None) => continue,
                            };
                            let next = cur + d;
                            model.put_cell(&mut row, name, assigned, Value::Integer(next));
                            newest_written = newest_written.max(Some(assigned));
                            incs.push((name.clone(), next));
                        }
                    }
                }
                row.marker = row.marker.max(newest_written.unwrap_or(now));
                row.cols.retain(|_, c| !c.is_empty());
                Ok(row)
            })();
            match (&got, expected) {
                (Ok(_), Ok(row)) => {
                    model.rows.insert(*k, row);
                }
                (Err(e), Err(m)) => prop_assert_eq!(kind(e), m),
                (g, e) => prop_assert!(false, "update mismatch: engine {:?}, model {:?}", g, e.map(|_| ())),
            }
        }
        Op::Delete { k, cond } => {
            let got = store.delete_row("m", &[int(*k)], &cond_of(*cond));
            match (&got, model.cond(*k, *cond, now)) {
                (Ok(_), Ok(())) => {
                    model.rows.remove(k);
                }
                (Err(e), Err(m)) => prop_assert_eq!(kind(e), m),
                (g, e) => prop_assert!(false, "delete mismatch: engine {:?}, model {:?}", g, e),
            }
        }
    }
    Ok(())
}

fn check_reads(model: &Model, store: &Store, clock: &ManualClock) -> Result<(), TestCaseError> {
    let now = clock.now_ms();
    let spec = ReadSpec { max_versions: Some(100), ..ReadSpec::default() };
    let as_map = |r: &Row| {
        r.columns
            .iter()
            .map(|(c, cells)| (c.clone(), cells.iter().map(|c| (c.version, c.value.clone())).collect::<Vec<_>>()))
            .collect::<BTreeMap<_, _>>()
    };
    for k in 0..6 {
        let got = store.get_row("m", &[int(k)], &spec).unwrap();
        prop_assert_eq!(got.as_ref().map(as_map), model.visible(k, now), "get_row of key {}", k);
    }
    let mut req = RangeRequest::full(Direction::Forward);
    req.read = spec.clone();
    let range: Vec<(i64, BTreeMap<_, _>)> = store
        .get_range("m", &req)
        .unwrap()
        .rows
        .iter()
        .map(|r| {
            (
                match r.pk[0] {
                    PkValue::Integer(i) => i,
                    _ => unreachable!(),
                },
                as_map(r),
            )
        })
        .collect();
    let expected: Vec<(i64, BTreeMap<_, _>)> = (0..6).filter_map(|k| model.visible(k, now).map(|v| (k, v))).collect();
    prop_assert_eq!(range, expected.clone());
    // Latest values of named columns (one the model never writes among them), in the asked order.
    let names: Vec<String> = ["c", "zz", "a", "b"].map(String::from).to_vec();
    let mut req = RangeRequest::full(Direction::Forward);
    req.read = ReadSpec { columns: Some(names.clone()), ..ReadSpec::default() };
    let page = store.get_range_latest("m", &req).unwrap();
    prop_assert_eq!((page.key_len, page.width, page.len()), (1, names.len(), expected.len()));
    let latest_keys: Vec<PkValue> = page.keys;
    let latest: Vec<Option<(i64, Value)>> = page.cells.into_iter().map(|c| c.map(|c| (c.version, c.value))).collect();
    let expected_keys: Vec<PkValue> = expected.iter().map(|(k, _)| int(*k)).collect();
    prop_assert_eq!(latest_keys, expected_keys);
    let expected_latest: Vec<Option<(i64, Value)>> =
        expected.iter().flat_map(|(_, cols)| names.iter().map(|n| cols.get(n).map(|cells| cells[0].clone()))).collect();
    prop_assert_eq!(latest, expected_latest);
    let keys: Vec<Vec<PkValue>> = (0..6).map(|k| vec![int(k)]).collect();
    let batch = store.batch_get("m", &keys, &spec).unwrap();
    for (k, got) in batch.iter().enumerate() {
        prop_assert_eq!(got.as_ref().map(as_map), model.visible(k as i64, now));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn engine_agrees_with_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(NOW));
        // Strings longer than 2 bytes go out of line: every path meets both kinds of cell.
        let store = open_with(dir.path(), StoreConfig { clock: clock.clone(), maintenance_interval: None, inline_value_bytes: 2, ..StoreConfig::default() });
        let offset = 3;
        store.create_table(table("m", &[("k", PkType::Integer)], TableOptions { ttl: -1, max_versions: 2, max_version_offset: offset, ..TableOptions::default() })).unwrap();
        let mut model = Model { rows: BTreeMap::new(), ttl: -1, max_versions: 2, offset, hidden_before: i64::MIN };
        for op in &ops {
            apply(&mut model, &store, &clock, op)?;
            check_reads(&model, &store, &clock)?;
        }
        // Deleting every row leaves no value out of line behind.
        for k in 0..6 {
            store.delete_row("m", &[int(k)], &Condition::ignore()).unwrap();
        }
        prop_assert_eq!(store.outside_values("m").unwrap(), 0);
    }
}
