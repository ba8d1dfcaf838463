//! Advisory locks, as PostgreSQL's session-level ones: `pg_advisory_lock(key)` waits for the key,
//! `pg_try_advisory_lock(key)` answers whether it got it, `pg_advisory_unlock(key)` and
//! `pg_advisory_unlock_all()` let go. A session may take a key it holds again, and holds it until it lets
//! go as many times or ends. Rails and other migration tools take one around their migrations.
//!
//! A key is one bigint, or two integers, which PostgreSQL keeps apart from every bigint key. The locks
//! live in the server's memory, like PostgreSQL's: a restart releases them all, as it ends every session.

use std::collections::HashMap;

use parking_lot::Mutex;

/// A lock's key: `(value, 1)` for a bigint, `(a << 32 | b, 2)` for two integers, as PostgreSQL tells them
/// apart (its `objsubid`).
pub type Key = (i64, u8);

/// The key of `pg_advisory_lock(a, b)`.
pub fn pair_key(a: i32, b: i32) -> Key {
    ((i64::from(a) << 32) | i64::from(b as u32), 2)
}

/// The key of `pg_advisory_lock(key)`.
pub fn bigint_key(k: i64) -> Key {
    (k, 1)
}

/// Every advisory lock held: its key, the session holding it and how many times.
#[derive(Debug, Default)]
pub struct AdvisoryLocks {
    held: Mutex<HashMap<Key, (u64, u32)>>,
}

impl AdvisoryLocks {
    /// Takes `key` for `session` if no other session holds it; whether it did.
    pub fn try_lock(&self, session: u64, key: Key) -> bool {
        let mut held = self.held.lock();
        match held.get_mut(&key) {
            Some((owner, count)) if *owner == session => {
                *count += 1;
                true
            }
            Some(_) => false,
            None => {
                held.insert(key, (session, 1));
                true
            }
        }
    }

    /// Lets go of `key` once; false if `session` does not hold it.
    pub fn unlock(&self, session: u64, key: Key) -> bool {
        let mut held = self.held.lock();
        match held.get_mut(&key) {
            Some((owner, count)) if *owner == session => {
                *count -= 1;
                if *count == 0 {
                    held.remove(&key);
                }
                true
            }
            _ => false,
        }
    }

    /// Lets go of every key `session` holds (`pg_advisory_unlock_all()`, and the session's end).
    pub fn unlock_all(&self, session: u64) {
        self.held.lock().retain(|_, (owner, _)| *owner != session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_held_by_one_session_as_many_times_as_it_took_it() {
        let locks = AdvisoryLocks::default();
        assert!(locks.try_lock(1, bigint_key(7)));
        assert!(locks.try_lock(1, bigint_key(7)));
        assert!(!locks.try_lock(2, bigint_key(7)));
        assert!(locks.try_lock(2, pair_key(0, 7)), "two integers are another key than a bigint of the same value");
        assert!(locks.unlock(1, bigint_key(7)));
        assert!(!locks.try_lock(2, bigint_key(7)), "still held once");
        assert!(locks.unlock(1, bigint_key(7)));
        assert!(!locks.unlock(1, bigint_key(7)), "no longer held");
        assert!(locks.try_lock(2, bigint_key(7)));
        locks.unlock_all(2);
        assert!(locks.try_lock(1, bigint_key(7)));
        assert!(locks.try_lock(1, pair_key(0, 7)));
    }
}
