//! Memory budgets for analytic statements: one per statement, under one for the whole server.
//!
//! DataFusion's operators reserve what they buffer (a join's build side, a sort's runs, an aggregate's
//! groups, a recursive query's work table) from the memory pool of the statement's runtime. Each
//! statement gets its own [`StatementPool`] with the per-statement budget (PostgreSQL's `work_mem` is
//! the model, though there it bounds one operation and here the whole statement). Every reservation is
//! also counted against the server's ceiling ([`ServerMemory`]), so many statements together cannot
//! exhaust the machine either. When a reservation does not fit, a sort or an aggregate spills to disk;
//! an operator that cannot spill (a hash join's build side, a cross join) fails the statement with
//! 53200 `out_of_memory`, and the server and every other session go on.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{FairSpillPool, MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation};

/// Per-statement budget when the server's configuration does not say.
pub const DEFAULT_STATEMENT_BYTES: usize = 1 << 30;
/// Server-wide ceiling when the server's configuration does not say.
pub const DEFAULT_SERVER_BYTES: usize = 4 << 30;

/// What all analytic statements of the server hold together, and how much they may.
#[derive(Debug)]
pub struct ServerMemory {
    statement_limit: AtomicUsize,
    server_limit: AtomicUsize,
    used: AtomicUsize,
}

impl Default for ServerMemory {
    fn default() -> Self {
        ServerMemory {
            statement_limit: AtomicUsize::new(DEFAULT_STATEMENT_BYTES),
            server_limit: AtomicUsize::new(DEFAULT_SERVER_BYTES),
            used: AtomicUsize::new(0),
        }
    }
}

impl ServerMemory {
    /// Sets both limits (bytes); the statement's is capped at the server's.
    pub fn set_limits(&self, statement: usize, server: usize) {
        self.server_limit.store(server, Ordering::Relaxed);
        self.statement_limit.store(statement.min(server), Ordering::Relaxed);
    }

    pub fn statement_limit(&self) -> usize {
        self.statement_limit.load(Ordering::Relaxed)
    }

    pub fn server_limit(&self) -> usize {
        self.server_limit.load(Ordering::Relaxed)
    }

    /// Bytes reserved now by all running analytic statements.
    #[cfg(test)]
    fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// A pool for one statement.
    pub fn statement_pool(self: &Arc<Self>) -> StatementPool {
        let limit = self.statement_limit();
        let reserve_size = limit / 8;
        StatementPool {
            server: self.clone(),
            limit,
            inner: FairSpillPool::new(limit - reserve_size),
            reserve: Default::default(),
            reserve_size,
        }
    }
}

/// The rows a key-value statement holds at once (to sort them, or its whole result when it does not
/// stream), counted against the same budgets as an analytic statement's memory: over either, 53200 before
/// more is held. Given back when dropped.
#[derive(Debug)]
pub struct HeldRows {
    server: Arc<ServerMemory>,
    limit: usize,
    held: usize,
}

impl HeldRows {
    pub fn new(server: Arc<ServerMemory>) -> HeldRows {
        HeldRows { limit: server.statement_limit(), server, held: 0 }
    }

    /// Counts `bytes` more; the error says which budget they would exceed.
    pub fn add(&mut self, bytes: usize) -> std::result::Result<(), String> {
        if self.held + bytes > self.limit {
            return Err(format!(
                "out of memory: the rows this statement holds need {bytes} more bytes, over the statement's memory budget (statement_memory) of {} bytes ({} held)",
                self.limit, self.held
            ));
        }
        let server_limit = self.server.server_limit();
        let taken = self
            .server
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| used.checked_add(bytes).filter(|t| *t <= server_limit));
        if taken.is_err() {
            return Err(format!(
                "out of memory: the rows this statement holds need {bytes} more bytes, over the server's memory limit (memory_limit) of {server_limit} bytes"
            ));
        }
        self.held += bytes;
        Ok(())
    }

    /// Gives back `bytes` of rows no longer held.
    pub fn release(&mut self, bytes: usize) {
        let bytes = bytes.min(self.held);
        self.held -= bytes;
        self.server.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for HeldRows {
    fn drop(&mut self) {
        self.server.used.fetch_sub(self.held, Ordering::Relaxed);
    }
}

/// One statement's memory pool, each byte of it also taken from the server's ceiling.
///
/// Within the statement's budget, DataFusion's fair spill pool holds all but a reserve: operators that
/// spill (sorts, aggregates) share what those that cannot leave them, in equal parts. The reserve (an
/// eighth) is for operators that cannot spill and start after a spilling one has taken its share (a
/// merge of sorted outputs, a join above an aggregate): they take from it once the fair pool refuses
/// them, where the fair pool alone would fail the statement though the sort could have spilled.
#[derive(Debug)]
pub struct StatementPool {
    server: Arc<ServerMemory>,
    limit: usize,
    inner: FairSpillPool,
    /// Bytes taken from the reserve, by consumer id.
    reserve: parking_lot::Mutex<HashMap<usize, usize>>,
    reserve_size: usize,
}

impl StatementPool {
    /// Takes `additional` bytes from the reserve for an operator that cannot spill.
    fn take_reserve(&self, reservation: &MemoryReservation, additional: usize) -> bool {
        let mut reserve = self.reserve.lock();
        let taken: usize = reserve.values().sum();
        if taken + additional > self.reserve_size {
            return false;
        }
        *reserve.entry(reservation.consumer().id()).or_default() += additional;
        true
    }

    /// Gives back `n` bytes of a consumer: first what it took from the reserve.
    fn give_back(&self, reservation: &MemoryReservation, n: usize) {
        let id = reservation.consumer().id();
        let mut reserve = self.reserve.lock();
        let from_reserve = match reserve.get_mut(&id) {
            Some(held) => {
                let back = (*held).min(n);
                *held -= back;
                if *held == 0 {
                    reserve.remove(&id);
                }
                back
            }
            None => 0,
        };
        drop(reserve);
        if n > from_reserve {
            self.inner.shrink(reservation, n - from_reserve);
        }
    }

    fn exhausted(&self, reservation: &MemoryReservation, additional: usize, what: &str, limit: usize) -> DataFusionError {
        DataFusionError::ResourcesExhausted(format!(
            "out of memory: {} needs {} more bytes, over the {what} of {limit} bytes ({} in use by this statement)",
            reservation.consumer().name(),
            additional,
            self.reserved(),
        ))
    }
}

impl MemoryPool for StatementPool {
    fn name(&self) -> &str {
        "statement"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.inner.register(consumer)
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.inner.unregister(consumer)
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.inner.grow(reservation, additional);
        self.server.used.fetch_add(additional, Ordering::Relaxed);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.give_back(reservation, shrink);
        self.server.used.fetch_sub(shrink, Ordering::Relaxed);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        let granted = self.inner.try_grow(reservation, additional).is_ok()
            || (!reservation.consumer().can_spill() && self.take_reserve(reservation, additional));
        if !granted {
            return Err(self.exhausted(reservation, additional, "statement's memory budget (statement_memory)", self.limit));
        }
        let server_limit = self.server.server_limit();
        let server = self
            .server
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| used.checked_add(additional).filter(|total| *total <= server_limit));
        if server.is_err() {
            self.give_back(reservation, additional);
            return Err(self.exhausted(reservation, additional, "server's memory limit (memory_limit)", server_limit));
        }
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.inner.reserved() + self.reserve.lock().values().sum::<usize>()
    }

    fn memory_limit(&self) -> MemoryLimit {
        MemoryLimit::Finite(self.limit)
    }
}

impl fmt::Display for StatementPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "statement pool ({} of {} bytes)", self.reserved(), self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_is_held_to_its_budget_and_the_server_to_its_ceiling() {
        let server = Arc::new(ServerMemory::default());
        // Each statement: 70 bytes of fair pool and 10 of reserve.
        server.set_limits(80, 100);
        let a: Arc<dyn MemoryPool> = Arc::new(server.statement_pool());
        let b: Arc<dyn MemoryPool> = Arc::new(server.statement_pool());
        let ra = MemoryConsumer::new("join").register(&a);
        let rb = MemoryConsumer::new("join").register(&b);
        ra.try_grow(60).unwrap();
        let err = ra.try_grow(25).unwrap_err();
        assert!(err.to_string().contains("statement_memory"), "{err}");
        rb.try_grow(40).unwrap();
        let err = rb.try_grow(1).unwrap_err();
        assert!(matches!(err, DataFusionError::ResourcesExhausted(_)), "{err}");
        assert!(err.to_string().contains("memory_limit"), "{err}");
        assert_eq!(server.used(), 100);
        drop(ra);
        assert_eq!(server.used(), 40, "a dropped reservation gives its bytes back to the server");
        rb.try_grow(20).unwrap();
        drop(rb);
        assert_eq!(server.used(), 0);
    }

    #[test]
    fn an_operator_that_cannot_spill_takes_the_reserve_after_one_that_can() {
        let server = Arc::new(ServerMemory::default());
        server.set_limits(80, 1000);
        let pool: Arc<dyn MemoryPool> = Arc::new(server.statement_pool());
        let sort = MemoryConsumer::new("sort").with_can_spill(true).register(&pool);
        let merge = MemoryConsumer::new("merge").register(&pool);
        sort.try_grow(70).unwrap();
        assert!(sort.try_grow(1).is_err(), "the sort spills past the fair pool");
        merge.try_grow(10).unwrap();
        assert!(merge.try_grow(1).is_err(), "the reserve is spent");
        assert_eq!((pool.reserved(), server.used()), (80, 80));
        merge.shrink(4);
        sort.shrink(70);
        assert_eq!((pool.reserved(), server.used()), (6, 6));
        merge.try_grow(4).unwrap();
        drop(merge);
        drop(sort);
        assert_eq!((pool.reserved(), server.used()), (0, 0));
    }
}
