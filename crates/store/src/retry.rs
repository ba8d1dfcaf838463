//! The one policy for retrying work that lost an optimistic write conflict, used by the store's
//! auto-commit writes and by the SQL layer's auto-commit statements alike.
//!
//! Up to [`ATTEMPTS`] more tries, the n-th after n × [`BACKOFF`] (at most about a quarter of a second of
//! waiting in all): a conflict between auto-commit writes of the same rows in one process is prevented
//! by the store's row-lock stripes, so what is left is contention with explicit transactions and with
//! bulk ingestion, which clears in milliseconds. PostgreSQL would make such a writer wait for the lock;
//! waiting a little and trying again is the optimistic equivalent, and 40001 reaches the client only
//! when the budget is spent.

use std::time::Duration;

/// More tries after the first.
pub const ATTEMPTS: u32 = 100;
/// The wait before the n-th retry is n times this.
pub const BACKOFF: Duration = Duration::from_micros(50);

/// Runs `f` until it succeeds, fails with an error `conflict` does not accept, or the budget is spent.
pub fn on_conflict<T, E>(mut f: impl FnMut() -> Result<T, E>, conflict: impl Fn(&E) -> bool) -> Result<T, E> {
    let mut attempt = 0;
    loop {
        match f() {
            Err(e) if conflict(&e) && attempt < ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(BACKOFF * attempt);
            }
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_conflicts_within_the_budget_and_nothing_else() {
        let mut calls = 0;
        let r: Result<u32, &str> = on_conflict(
            || {
                calls += 1;
                if calls < 3 {
                    Err("conflict")
                } else {
                    Ok(calls)
                }
            },
            |e| *e == "conflict",
        );
        assert_eq!(r, Ok(3));
        let mut calls = 0;
        let r: Result<(), &str> = on_conflict(
            || {
                calls += 1;
                Err("other")
            },
            |e| *e == "conflict",
        );
        assert_eq!((r, calls), (Err("other"), 1));
        let mut calls = 0;
        let r: Result<(), &str> = on_conflict(
            || {
                calls += 1;
                Err("conflict")
            },
            |e| *e == "conflict",
        );
        assert_eq!((r, calls), (Err("conflict"), ATTEMPTS + 1));
    }
}
