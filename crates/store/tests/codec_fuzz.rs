//! The key and row codecs read bytes from disk: whatever those bytes are (a torn write, a bug, a file from
//! elsewhere), decoding fails with an error and never panics or loops. Seeded: each run decodes the same
//! 20,000 inputs per codec, valid encodings with bytes flipped, cut, repeated or inserted, and random bytes.

use tabula_store::keys::{decode_pk, encode_pk, prefix_len};
use tabula_store::row::{compact, locate_latest, read_visible, value_at, ReadFilter, StoredRow, VersionRules};
use tabula_store::{PkType, PkValue, TimeRange, Value};

/// splitmix64: a fixed sequence from a seed, so that a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Fewer than `max` random bytes.
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max);
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A valid encoding damaged in one to three places.
fn mutate(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(3) {
        match rng.below(5) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = [0x00, 0xFF, 0x7F, 0x80][rng.below(4)];
            }
            2 => b.truncate(rng.below(b.len() + 1)),
            3 => {
                let i = rng.below(b.len() + 1);
                let extra = rng.bytes(9);
                b.splice(i..i, extra);
            }
            _ if !b.is_empty() => {
                let i = rng.below(b.len());
                let j = (i + 1 + rng.below(8)).min(b.len());
                let copy = b[i..j].to_vec();
                b.splice(j..j, copy);
            }
            _ => {}
        }
    }
    b
}

fn pk_value(rng: &mut Rng) -> PkValue {
    match rng.below(3) {
        0 => PkValue::Integer(rng.next() as i64),
        1 => PkValue::String((0..rng.below(6)).map(|_| ['a', 'z', '\0', 'é'][rng.below(4)]).collect()),
        _ => PkValue::Binary((0..rng.below(6)).map(|_| [0x00, 0x01, 0xFF, 0x42][rng.below(4)]).collect()),
    }
}

fn value(rng: &mut Rng) -> Value {
    match rng.below(5) {
        0 => Value::String("v".repeat(rng.below(40))),
        1 => Value::Integer(rng.next() as i64),
        2 => Value::Double(f64::from_bits(rng.next())),
        3 => Value::Boolean(rng.below(2) == 0),
        _ => Value::Binary(rng.bytes(20)),
    }
}

#[test]
fn damaged_keys_fail_to_decode_without_panicking() {
    let mut rng = Rng(0x5EED_0001);
    let mut errors = 0;
    for case in 0..20_000 {
        let key: Vec<PkValue> = (0..1 + rng.below(4)).map(|_| pk_value(&mut rng)).collect();
        let types: Vec<PkType> = key.iter().map(|v| v.pk_type()).collect();
        let mut buf = Vec::new();
        encode_pk(&mut buf, &key);
        assert_eq!(decode_pk(&buf, &types).unwrap(), key, "case {case}: a valid key decodes to itself");
        let damaged = if case % 10 == 0 { rng.bytes(40) } else { mutate(&mut rng, buf) };
        // Decoded under its own types and under others: an error or some key, never a panic.
        let other: Vec<PkType> = (0..1 + rng.below(4)).map(|_| [PkType::Integer, PkType::String, PkType::Binary][rng.below(3)]).collect();
        for t in [&types, &other] {
            if decode_pk(&damaged, t).is_err() {
                errors += 1;
            }
            let _ = prefix_len(&damaged, t, rng.below(t.len() + 1));
        }
    }
    assert!(errors > 1_000, "the damaged keys were refused ({errors} errors)");
}

#[test]
fn damaged_rows_fail_to_decode_without_panicking() {
    let mut rng = Rng(0x5EED_0002);
    let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let mut errors = 0;
    for case in 0..20_000 {
        let mut row = StoredRow { marker: 1_000 + rng.below(100) as i64, columns: vec![] };
        for name in &names[..rng.below(4)] {
            for _ in 0..1 + rng.below(3) {
                row.put_cell(name, rng.below(2_000) as i64, value(&mut rng), 3);
            }
        }
        let buf = row.encode();
        // Compared as bytes: a NaN is not equal to itself.
        assert_eq!(StoredRow::decode(&buf).unwrap().encode(), buf, "case {case}: a valid row decodes to itself");
        let damaged = if case % 10 == 0 { rng.bytes(80) } else { mutate(&mut rng, buf) };
        // Every reader of stored rows, over the damaged bytes.
        match StoredRow::decode(&damaged) {
            Ok(r) => assert_eq!(StoredRow::decode(&r.encode()).unwrap().encode(), r.encode(), "case {case}: what decodes re-encodes"),
            Err(_) => errors += 1,
        }
        let rules = VersionRules::new([-1, 1, 5][rng.below(3)], 1 + rng.below(3) as u32);
        let now = 1_000 + rng.below(10_000) as i64;
        let columns = (rng.below(2) == 0).then_some(&names[..2]);
        let time_range = (rng.below(2) == 0).then_some(TimeRange::Range { start: 100, end: 1_500 });
        let _ = read_visible(&damaged, &ReadFilter { rules, now_ms: now, columns, max_versions: 2, time_range }, &mut Vec::new());
        let mut cells = Vec::new();
        if locate_latest(&damaged, rules, now, &names, &mut cells).is_ok() {
            for c in cells.into_iter().flatten() {
                let _ = value_at(&damaged, c);
            }
        }
        let _ = compact(&damaged, rules, now);
    }
    assert!(errors > 1_000, "the damaged rows were refused ({errors} errors)");
}
