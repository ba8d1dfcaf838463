//! Functions whose answer is the session's or its statement's own, made for each statement:
//! `pg_backend_pid()`, where the connection runs (`inet_client_addr()`, `inet_client_port()`,
//! `inet_server_addr()`, `inet_server_port()`), `pg_sleep(seconds)`, which the statement's cancel,
//! timeout or vanished client stop, and the advisory locks' functions (`crate::advisory`).

use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray, BooleanArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    create_udf, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};

use super::stop::Watch;
use super::Source;
use crate::advisory::{bigint_key, pair_key, Key};
use crate::settings::Settings;

/// What a statement needs from its session besides the read context.
pub struct SessionInfo {
    pub settings: Settings,
    /// `current_user` (SET ROLE) and `session_user`.
    pub user: String,
    pub session_user: String,
    /// What the session drew of each sequence, which `currval` and `lastval` answer.
    pub sequences: crate::sequences::SessionSequences,
    /// `pg_backend_pid()`.
    pub pid: i32,
    /// The session's number among the server's: the owner of its advisory locks and temporary tables.
    pub number: u64,
    /// Where the client connects from, and the address it connected to (`None`: no TCP connection).
    pub client: Option<std::net::SocketAddr>,
    pub server: Option<std::net::SocketAddr>,
}

/// Every function of this module, for one statement of the session `info` describes.
pub fn all(info: &SessionInfo, db: &Weak<dyn Source>, watch: Watch) -> Vec<ScalarUDF> {
    let mut v = constants(info);
    v.push(pg_sleep(watch.clone()));
    for kind in [Advisory::Lock, Advisory::TryLock, Advisory::Unlock, Advisory::UnlockAll] {
        let signature = match kind {
            Advisory::UnlockAll => Signature::nullary(Volatility::Volatile),
            _ => Signature::one_of(vec![TypeSignature::Any(1), TypeSignature::Any(2)], Volatility::Volatile),
        };
        v.push(ScalarUDF::new_from_impl(AdvisoryUdf { kind, signature, db: db.clone(), session: info.number, watch: watch.clone() }));
    }
    v
}

/// Runs `wait` off the runtime's worker where there is a multi-threaded runtime (`block_in_place`), so
/// that a waiting statement holds up no one else's.
fn waiting<T>(wait: impl FnOnce() -> Result<T>) -> Result<T> {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

/// The session's constants. The addresses are NULL where the session has no TCP connection (as
/// PostgreSQL's are over a Unix socket); PostgreSQL types them `inet`, and they travel here as text.
fn constants(info: &SessionInfo) -> Vec<ScalarUDF> {
    let addr = |a: Option<SocketAddr>| ScalarValue::Utf8(a.map(|a| a.ip().to_canonical().to_string()));
    let port = |a: Option<SocketAddr>| ScalarValue::Int32(a.map(|a| i32::from(a.port())));
    vec![
        // The pid the client was given (the catalog library's own answers 1).
        constant("pg_backend_pid", ScalarValue::Int32(Some(info.pid))),
        constant("inet_client_addr", addr(info.client)),
        constant("inet_client_port", port(info.client)),
        constant("inet_server_addr", addr(info.server)),
        constant("inet_server_port", port(info.server)),
    ]
}

fn constant(name: &str, value: ScalarValue) -> ScalarUDF {
    let ty = value.data_type();
    let answer = move |_: &[ColumnarValue]| Ok(ColumnarValue::Scalar(value.clone()));
    create_udf(name, vec![], ty, Volatility::Stable, Arc::new(answer))
}

/// `pg_sleep(seconds)`: sleeps that long for each row, checking the statement's flags every 10 ms. It
/// answers an empty value, as PostgreSQL's `void` prints. The sleep leaves the runtime's worker to its
/// other tasks (`block_in_place`), so sleeping sessions do not hold up anyone else's statements.
fn pg_sleep(watch: Watch) -> ScalarUDF {
    ScalarUDF::new_from_impl(PgSleep {
        watch,
        signature: Signature::one_of(
            // An untyped literal is text here: `pg_sleep('0.5')` as PostgreSQL reads it.
            vec![TypeSignature::Uniform(1, vec![DataType::Float64]), TypeSignature::Exact(vec![DataType::Utf8])],
            Volatility::Volatile,
        ),
    })
}

#[derive(Debug)]
struct PgSleep {
    watch: Watch,
    signature: Signature,
}

impl PartialEq for PgSleep {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for PgSleep {}

impl std::hash::Hash for PgSleep {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "pg_sleep".hash(state)
    }
}

impl ScalarUDFImpl for PgSleep {
    fn name(&self) -> &str {
        "pg_sleep"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let seconds = args.args[0].to_array(args.number_rows)?;
        let strict = datafusion::arrow::compute::CastOptions { safe: false, ..Default::default() };
        let seconds = datafusion::arrow::compute::cast_with_options(&seconds, &DataType::Float64, &strict)?;
        let seconds = seconds.as_primitive::<Float64Type>();
        let wait = || -> Result<()> {
            for s in seconds.iter().flatten().filter(|s| *s > 0.0) {
                let until = Instant::now() + Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX / 2);
                loop {
                    self.watch.check()?;
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(Duration::from_millis(10)));
                }
            }
            Ok(())
        };
        waiting(wait)?;
        let out: StringArray = (0..seconds.len()).map(|i| (!seconds.is_null(i)).then_some("")).collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Advisory {
    Lock,
    TryLock,
    Unlock,
    UnlockAll,
}

/// `pg_advisory_lock`, `pg_try_advisory_lock`, `pg_advisory_unlock` (of one bigint key or two integers)
/// and `pg_advisory_unlock_all()`, for one session.
#[derive(Debug)]
struct AdvisoryUdf {
    kind: Advisory,
    signature: Signature,
    db: Weak<dyn Source>,
    session: u64,
    watch: Watch,
}

impl PartialEq for AdvisoryUdf {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.session == other.session
    }
}

impl Eq for AdvisoryUdf {}

impl std::hash::Hash for AdvisoryUdf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.kind, self.session).hash(state)
    }
}

impl AdvisoryUdf {
    /// Each row's key; `None` for a NULL argument (the function answers NULL, as PostgreSQL's strict ones).
    fn keys(args: &[ColumnarValue], rows: usize) -> Result<Vec<Option<Key>>> {
        let strict = datafusion::arrow::compute::CastOptions { safe: false, ..Default::default() };
        let columns = args
            .iter()
            .map(|a| datafusion::arrow::compute::cast_with_options(&a.to_array(rows)?, &DataType::Int64, &strict).map_err(Into::into))
            .collect::<Result<Vec<_>>>()?;
        let int = |v: i64| i32::try_from(v).map_err(|_| datafusion::error::DataFusionError::Execution("integer out of range".into()));
        (0..rows)
            .map(|i| {
                let values: Option<Vec<i64>> =
                    columns.iter().map(|c| c.is_valid(i).then(|| c.as_primitive::<Int64Type>().value(i))).collect();
                Ok(match values.as_deref() {
                    Some([k]) => Some(bigint_key(*k)),
                    Some([a, b]) => Some(pair_key(int(*a)?, int(*b)?)),
                    _ => None,
                })
            })
            .collect()
    }
}

impl ScalarUDFImpl for AdvisoryUdf {
    fn name(&self) -> &str {
        match self.kind {
            Advisory::Lock => "pg_advisory_lock",
            Advisory::TryLock => "pg_try_advisory_lock",
            Advisory::Unlock => "pg_advisory_unlock",
            Advisory::UnlockAll => "pg_advisory_unlock_all",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        // `void` prints empty, as pg_sleep's.
        Ok(if matches!(self.kind, Advisory::TryLock | Advisory::Unlock) { DataType::Boolean } else { DataType::Utf8 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let db = self.db.upgrade().ok_or_else(|| datafusion::error::DataFusionError::Execution("the database is shut down".into()))?;
        let locks = db.advisory();
        let rows = args.number_rows;
        if self.kind == Advisory::UnlockAll {
            locks.unlock_all(self.session);
            return Ok(ColumnarValue::Array(Arc::new((0..rows).map(|_| Some("")).collect::<StringArray>())));
        }
        let keys = Self::keys(&args.args, rows)?;
        let out: Arc<dyn Array> = match self.kind {
            Advisory::TryLock => Arc::new(keys.iter().map(|k| k.map(|k| locks.try_lock(self.session, k))).collect::<BooleanArray>()),
            Advisory::Unlock => Arc::new(keys.iter().map(|k| k.map(|k| locks.unlock(self.session, k))).collect::<BooleanArray>()),
            _ => {
                // Waits for the key, as long as the statement runs (its cancel and timeout stop it).
                waiting(|| {
                    for k in keys.iter().flatten() {
                        while !locks.try_lock(self.session, *k) {
                            self.watch.check()?;
                            std::thread::sleep(Duration::from_millis(10));
                        }
                    }
                    Ok(())
                })?;
                Arc::new(keys.iter().map(|k| k.map(|_| "")).collect::<StringArray>())
            }
        };
        Ok(ColumnarValue::Array(out))
    }
}
