//! One Tabula server per keyspace, for now: a lease in TiKV, as RocksDB's LOCK file is on one machine.
//!
//! The store keeps its catalog, partition statistics and uniqueness claims in its own memory, so a second
//! server over the same keyspace would answer from a stale catalog: a silent wrong answer. Until the
//! catalog is versioned and checked by every statement, the first server holds a lease and a second one is
//! refused at start with an error that says so.
//!
//! The lease is one key beside the database's two spaces, `root ++ 'l'`, whose value is the holder's id
//! and the PD time (milliseconds) it runs to:
//! ```text
//! +------------------+---------------------+
//! | holder (16 bytes) | expiry (u64, BE, ms) |
//! +------------------+---------------------+
//! ```
//! The holder renews it every [`RENEW`]; it lasts [`TERM`]. Time is PD's, the one clock of the cluster, so
//! servers' clocks do not matter. A holder that finds the lease taken by another (it was stopped longer
//! than a term) has lost it: every commit of it fails from then on, and the server must be restarted.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tabula_kv::{KvError, Result};
use tikv_client::TransactionClient;

use crate::{error, options, Shared};

const TERM: Duration = Duration::from_secs(15);
const RENEW: Duration = Duration::from_secs(5);

pub(crate) struct Lease {
    shared: Arc<Shared>,
    key: Vec<u8>,
    holder: [u8; 16],
    renewer: tokio::task::JoinHandle<()>,
}

/// Fails once the server has lost its lease.
pub(crate) fn check(shared: &Shared) -> Result<()> {
    if shared.lost.load(Ordering::Relaxed) {
        return Err(KvError::Storage("this server's lease on its TiKV keyspace was taken by another server; restart it".into()));
    }
    Ok(())
}

/// What one attempt at the lease found.
enum Outcome {
    Held,
    TakenUntil(i64),
}

async fn claim(client: &TransactionClient, key: &[u8], holder: [u8; 16], renewing: bool) -> tikv_client::Result<Outcome> {
    let mut t = client.begin_with_options(options()).await?;
    let now = t.start_timestamp().physical;
    if let Some(v) = t.get(key.to_vec()).await? {
        if v.len() == 24 && v[..16] != holder {
            let until = i64::from_be_bytes(v[16..24].try_into().expect("8 bytes"));
            if renewing || until > now {
                t.rollback().await?;
                return Ok(Outcome::TakenUntil(until));
            }
        }
    }
    let mut value = holder.to_vec();
    value.extend_from_slice(&(now + TERM.as_millis() as i64).to_be_bytes());
    t.put(key.to_vec(), value).await?;
    t.commit().await?;
    Ok(Outcome::Held)
}

impl Lease {
    pub(crate) fn take(shared: &Arc<Shared>) -> Result<Lease> {
        let mut key = shared.root.clone();
        key.push(b'l');
        let mut holder = [0u8; 16];
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        holder[..12].copy_from_slice(&nanos.to_be_bytes()[4..]);
        holder[12..].copy_from_slice(&std::process::id().to_be_bytes());
        let (client, k) = (shared.client.clone(), key.clone());
        match shared.run(async move { claim(&client, &k, holder, false).await }).map_err(error) {
            Ok(Outcome::Held) => {}
            Ok(Outcome::TakenUntil(until)) => {
                return Err(KvError::Storage(format!(
                    "another Tabula server serves this TiKV keyspace (its lease runs to PD time {until} ms; it is renewed while that \
                     server runs). Several servers over one keyspace are not supported yet: stop the other one, or give this one \
                     another keyspace (tikv://pd:port/another-prefix)"
                )))
            }
            Err(KvError::Conflict) => {
                return Err(KvError::Storage("another Tabula server took this TiKV keyspace's lease at the same moment".into()))
            }
            Err(e) => return Err(e),
        }
        let (client, k, lost) = (shared.client.clone(), key.clone(), shared.lost.clone());
        let renewer = shared.runtime.0.as_ref().expect("the engine's runtime").spawn(async move {
            loop {
                tokio::time::sleep(RENEW).await;
                match claim(&client, &k, holder, true).await {
                    Ok(Outcome::Held) => {}
                    Ok(Outcome::TakenUntil(_)) => {
                        lost.store(true, Ordering::Relaxed);
                        return;
                    }
                    // TiKV unreachable for a moment: the next round tries again, and the lease has two more
                    // rounds before it runs out.
                    Err(_) => {}
                }
            }
        });
        Ok(Lease { shared: shared.clone(), key, holder, renewer })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
        // Given back, so that a restart need not wait a term.
        let (client, key, holder) = (self.shared.client.clone(), self.key.clone(), self.holder);
        let _ = self.shared.run(async move {
            let mut t = client.begin_with_options(options()).await?;
            if t.get(key.clone()).await?.is_some_and(|v| v.len() == 24 && v[..16] == holder) {
                t.delete(key).await?;
                t.commit().await?;
            }
            Ok::<_, tikv_client::Error>(())
        });
    }
}
