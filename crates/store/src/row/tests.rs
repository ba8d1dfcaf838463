use super::*;

#[test]
fn tablestore_ttl_example() {
    // ttl 86400, version 2016-07-20 00:00:00 UTC: expired exactly at 2016-07-21 00:00:00 UTC.
    let rules = VersionRules::new(86400, 1);
    assert!(!rules.expired(1468944000000, 1469030399999));
    assert!(rules.expired(1468944000000, 1469030400000));
    let forever = VersionRules::new(-1, 1);
    assert!(!forever.expired(0, i64::MAX));
}

#[test]
fn read_visible_equals_decode_visible_select() {
    let mut row = StoredRow { marker: 50, columns: vec![] };
    for (col, versions) in [("a", vec![10, 20, 30, 40]), ("b", vec![5, 60]), ("c", vec![70]), ("d", vec![1])] {
        for v in versions {
            row.put_cell(col, v, Value::String(format!("{col}{v}")), 10);
        }
    }
    let raw = row.encode();
    let names = ["a".to_string(), "c".to_string(), "z".to_string()];
    let reversed = ["c".to_string(), "a".to_string()];
    for ttl_ms in [-1000, 0, 15, 35, 45, 55, 65, 75, 1000] {
        for table_max in [1, 2, 3] {
            for cols in [None, Some(&names[..]), Some(&names[2..]), Some(&reversed[..])] {
                for read_max in [1, 2, 5] {
                    for tr in [None, Some(TimeRange::Range { start: 20, end: 61 })] {
                        let rules = VersionRules::new(if ttl_ms < 0 { -1 } else { 1 }, table_max);
                        let now = 1000 + ttl_ms;
                        let expected = StoredRow::decode(&raw).unwrap().visible(rules, now).map(|mut r| {
                            r.select(cols, Some(read_max), tr);
                            r.resolve(|_, _| unreachable!()).unwrap().columns
                        });
                        let full = StoredRow::decode(&raw).unwrap().visible(rules, now);
                        let kept = full.as_ref().is_some_and(|r| r.columns.iter().map(|(_, c)| c.len()).sum::<usize>() == 8);
                        assert_eq!(!has_hidden(&raw, rules, now).unwrap(), kept, "ttl {ttl_ms} max {table_max}");
                        let f = ReadFilter { rules, now_ms: now, columns: cols, max_versions: read_max, time_range: tr };
                        assert_eq!(
                            read_visible(&raw, &f, &mut Vec::new()).unwrap(),
                            expected,
                            "ttl {ttl_ms} max {table_max} cols {cols:?} read {read_max} {tr:?}"
                        );
                        // The latest-cells read is the one-version read, slotted by the asked order.
                        if let (Some(cols), 1, None) = (cols, read_max, tr) {
                            let mut at = Vec::new();
                            let alive = locate_latest(&raw, rules, now, cols, &mut at).unwrap();
                            let slots: Vec<Option<Cell>> = at
                                .iter()
                                .map(|c| c.map(|c| Cell { version: c.version, value: value_at(&raw, c).unwrap().to_value() }))
                                .collect();
                            let want = expected.as_ref().map(|found| {
                                cols.iter()
                                    .map(|c| found.iter().find(|(n, _)| n == c).map(|(_, cells)| cells[0].clone()))
                                    .collect::<Vec<_>>()
                            });
                            assert_eq!(alive.then_some(slots), want, "latest: ttl {ttl_ms} max {table_max} cols {cols:?}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn values_past_the_inline_size_go_out_of_line_and_come_back() {
    let mut row = StoredRow { marker: 10, columns: vec![] };
    row.put_cell("big", 9, Value::String("x".repeat(100)), 3);
    row.put_cell("big", 8, Value::Binary(vec![7; 50]), 3);
    row.put_cell("int", 9, Value::Integer(5), 3);
    row.put_cell("small", 9, Value::String("s".into()), 3);
    let mut spilled = std::collections::BTreeMap::new();
    let raw = row
        .clone()
        .into_stored()
        .encode_spilling(10, |c, v, bytes| {
            spilled.insert((c.to_string(), v), bytes.to_vec());
            Ok(())
        })
        .unwrap();
    assert!(raw.len() < 100, "the row keeps only references: {} bytes", raw.len());
    assert_eq!(outside_cells(&raw).unwrap(), vec![("big".to_string(), 9, 100), ("big".to_string(), 8, 50)]);
    let fetch = |c: &str, v: i64| Ok(spilled.get(&(c.to_string(), v)).cloned());
    // Decoded, kept as references; re-encoded, the same bytes; resolved, the row written.
    let stored = StoredRow::decode(&raw).unwrap();
    assert!(stored.has_outside());
    assert_eq!(stored.encode(), raw);
    assert_eq!(stored.clone().resolve(fetch).unwrap(), row);
    // A read fills the out-of-line slots after.
    let f = ReadFilter { rules: VersionRules::new(-1, 3), now_ms: 20, columns: None, max_versions: 3, time_range: None };
    let mut outside = Vec::new();
    let mut columns = read_visible(&raw, &f, &mut outside).unwrap().unwrap();
    assert_eq!(outside.len(), 2);
    fill_outside(&mut columns, &outside, fetch).unwrap();
    assert_eq!(columns, row.columns);
    // The latest-value lookup says which cell is out of line.
    let mut at = Vec::new();
    locate_latest(&raw, f.rules, 20, &["big".to_string(), "int".to_string()], &mut at).unwrap();
    assert_eq!(outside_at(&raw, at[0].unwrap()), Some(1));
    assert_eq!(outside_at(&raw, at[1].unwrap()), None);
    assert_eq!(value_at(&raw, at[1].unwrap()).unwrap(), ValueRef::Integer(5));
    // A missing value is an error, never an empty answer.
    assert!(fill_outside(&mut columns, &outside, |_, _| Ok(None)).is_err());
}

#[test]
fn encode_round_trip_and_visibility() {
    let mut row = StoredRow { marker: 10, columns: vec![] };
    row.put_cell("b", 5, Value::Integer(1), 3);
    row.put_cell("b", 7, Value::Integer(2), 3);
    row.put_cell("b", 6, Value::Double(1.5), 3);
    row.put_cell("b", 4, Value::Boolean(true), 3);
    row.put_cell("a", 9, Value::Binary(vec![0, 1]), 3);
    row.put_cell("a", 9, Value::String("x".into()), 3);
    let decoded = StoredRow::decode(&row.encode()).unwrap();
    assert_eq!(decoded, row.clone().into_stored());
    assert_eq!(row.column("b").unwrap().iter().map(|c| c.version).collect::<Vec<_>>(), vec![7, 6, 5]);
    assert_eq!(row.column("a").unwrap().len(), 1);
    let vis = row.clone().visible(VersionRules::new(1, 2), 1006).unwrap();
    assert_eq!(vis.column("b").unwrap().iter().map(|c| c.version).collect::<Vec<_>>(), vec![7]);
    assert!(vis.column("a").is_some());
    assert!(row.visible(VersionRules::new(0, 2), 100).is_none());
}
