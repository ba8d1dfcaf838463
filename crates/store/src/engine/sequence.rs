//! The table-wide sequence of a generated partition-key column (an ORM's `id bigserial PRIMARY KEY`).
//!
//! A generated column after the partition key counts per partition-key value, inside the writing
//! transaction (`write.rs`). A generated column *in* the partition key has no partition to count in: its
//! values come from one sequence per table, as PostgreSQL's `nextval`:
//! - unique and increasing as this server hands them out, never rolled back (an insert that fails or rolls
//!   back leaves a gap, as in PostgreSQL);
//! - drawn from a block of values this server has reserved, so drawing one is a mutex and an add, and
//!   concurrent inserts do not serialise on a counter (Tablestore forbids an auto-increment partition key
//!   because sequential keys make one partition hot; the hash prefix the SQL layer gives such a table
//!   spreads them, and the reserved block keeps the counter itself from being the hot spot);
//! - the reservation is the catalog record `"a" table_id` (the highest value reserved by any server),
//!   moved in a transaction of its own. Its commit goes into the engine's log before the commit of any row
//!   that uses one of its values, so after a crash no value already written is handed out again; values
//!   reserved and not used are skipped (PostgreSQL likewise skips up to 32 values after a crash).
//!
//! Whether a value was drawn since the sequence was made or restarted (PostgreSQL's `is_called`) is kept
//! with the reservation: `restart` writes it with a ninth byte, 0, that the next reservation drops.
//!
//! The block starts at 32 values (PostgreSQL's `SEQ_LOG_VALS`) and doubles at each reservation up to
//! 4096, so a bulk insert of a million generated keys reserves a few hundred times, not 30,000 times.

use super::*;

const FIRST_BLOCK: i64 = 32;
const MAX_BLOCK: i64 = 4096;

/// Values this server may hand out: `next..=end` (empty when `next > end`).
#[derive(Debug)]
struct Block {
    next: i64,
    end: i64,
    size: i64,
    /// Whether a value was drawn since the block was set (`None`: not known before the reservation is
    /// read, on the first use after the server started).
    called: Option<bool>,
}

#[derive(Debug)]
pub(crate) struct Sequence {
    key: Vec<u8>,
    block: Mutex<Block>,
}

impl Sequence {
    pub(super) fn new(table_id: u32) -> Sequence {
        Sequence {
            key: catalog::autoinc_key(table_id, &[]),
            block: Mutex::new(Block { next: 1, end: 0, size: FIRST_BLOCK / 2, called: None }),
        }
    }

    /// The next value.
    pub(super) fn next(&self, kv: &dyn Engine) -> Result<i64> {
        let mut b = self.block.lock();
        if b.next > b.end {
            let from = b.next;
            self.reserve(kv, &mut b, from)?;
        }
        let v = b.next;
        b.next += 1;
        b.called = Some(true);
        Ok(v)
    }

    /// The last value drawn and `true`, or the next to be drawn and `false` when none was since the
    /// sequence was made or restarted: PostgreSQL's `last_value` and `is_called`. After the server
    /// restarted, the last value is the highest reserved (values reserved and not used are skipped).
    pub(super) fn state(&self, kv: &dyn Engine) -> Result<(i64, bool)> {
        let b = self.block.lock();
        match b.called {
            Some(true) => return Ok((b.next - 1, true)),
            Some(false) => return Ok((b.next, false)),
            None => {}
        }
        Ok(match kv.meta_get(&self.key)? {
            None => (1, false),
            Some(v) => {
                let reserved = decode_reservation(&v)?;
                match v.get(8) {
                    Some(0) => (reserved + 1, false),
                    _ => (reserved, true),
                }
            }
        })
    }

    /// A value given for the column: later values are drawn above it, so that none collides with it.
    pub(super) fn raise(&self, kv: &dyn Engine, given: i64) -> Result<()> {
        let mut b = self.block.lock();
        if given < b.next {
            return Ok(());
        }
        let after = given.checked_add(1).ok_or_else(overflow)?;
        if given <= b.end {
            b.next = after;
            return Ok(());
        }
        self.reserve(kv, &mut b, after)
    }

    /// Sets where the sequence goes on: the next value this server draws is `next`, below values handed
    /// out before if so asked (PostgreSQL's `setval`). Other servers keep the blocks they reserved, as
    /// other sessions keep their cached values of a PostgreSQL sequence. `called`: the value before `next`
    /// counts as drawn (`setval(s, v, true)`), for [`Sequence::state`].
    pub(super) fn restart(&self, kv: &dyn Engine, next: i64, called: bool) -> Result<()> {
        let mut b = self.block.lock();
        let reserved = next.checked_sub(1).ok_or_else(overflow)?;
        crate::retry::on_conflict(
            || {
                let txn = kv.begin(false);
                txn.get_for_update(Space::Meta, &self.key)?;
                // The ninth byte: nothing drawn since.
                let mut value = reserved.to_be_bytes().to_vec();
                if !called {
                    value.push(0);
                }
                txn.put(Space::Meta, &self.key, &value)?;
                txn.commit()?;
                Ok(())
            },
            |e| matches!(e, StoreError::Conflict),
        )?;
        // Empty: the next draw reserves a block from `next` on.
        *b = Block { next, end: reserved, size: b.size, called: Some(called) };
        Ok(())
    }

    /// Reserves a new block whose first value is at least `from`, above every block reserved before.
    fn reserve(&self, kv: &dyn Engine, b: &mut Block, from: i64) -> Result<()> {
        let size = (b.size * 2).min(MAX_BLOCK);
        let (next, end) = crate::retry::on_conflict(
            || {
                let txn = kv.begin(false);
                let reserved = match txn.get_for_update(Space::Meta, &self.key)? {
                    Some(v) => decode_reservation(&v)?,
                    None => 0,
                };
                let base = reserved.max(from - 1);
                // Below i64::MAX, so that the value after the block's last never overflows.
                let end = base.checked_add(size).filter(|e| *e < i64::MAX).ok_or_else(overflow)?;
                txn.put(Space::Meta, &self.key, &end.to_be_bytes())?;
                txn.commit()?;
                Ok((base + 1, end))
            },
            |e| matches!(e, StoreError::Conflict),
        )?;
        *b = Block { next, end, size, called: b.called };
        Ok(())
    }
}

impl Store {
    /// The next value of the table's generated partition-key column (`nextval` of its sequence), drawn
    /// outside any transaction: a rollback does not hand it out again.
    pub fn sequence_next(&self, table: &str) -> Result<i64> {
        let t = self.inner.table(table)?;
        sequence_of(&t, table)?.next(&*self.inner.kv)
    }

    /// The table sequence's last value drawn and `true`, or its next value and `false` when none was drawn
    /// since it was made or restarted.
    pub fn sequence_state(&self, table: &str) -> Result<(i64, bool)> {
        let t = self.inner.table(table)?;
        sequence_of(&t, table)?.state(&*self.inner.kv)
    }

    /// Makes `next` the next value drawn from the table's sequence (`setval`); `called`: the one before it
    /// counts as the last drawn ([`Store::sequence_state`]).
    pub fn sequence_restart(&self, table: &str, next: i64, called: bool) -> Result<()> {
        let t = self.inner.table(table)?;
        sequence_of(&t, table)?.restart(&*self.inner.kv, next, called)
    }
}

fn sequence_of<'t>(t: &'t Table, name: &str) -> Result<&'t Sequence> {
    if t.seq_columns.is_empty() {
        return Err(StoreError::NotSupported(format!("table \"{name}\" has no generated partition-key column, and so no sequence")));
    }
    Ok(&t.seq)
}

/// The highest value reserved: the first eight bytes (big-endian), and a ninth after a restart.
fn decode_reservation(v: &[u8]) -> Result<i64> {
    let bytes = v.get(..8).filter(|_| v.len() <= 9).ok_or_else(|| StoreError::Corrupt("sequence reservation".into()))?;
    Ok(i64::from_be_bytes(bytes.try_into().expect("eight bytes")))
}

fn overflow() -> StoreError {
    StoreError::IncrementOverflow("sequence of a generated key".into())
}
