//! Functions whose answer is the session's or its statement's own, made for each statement:
//! `pg_backend_pid()`, where the connection runs (`inet_client_addr()`, `inet_client_port()`,
//! `inet_server_addr()`, `inet_server_port()`), and `pg_sleep(seconds)`, which the statement's cancel,
//! timeout or vanished client stop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    create_udf, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};

use super::stop::Watch;
use super::SessionInfo;

/// The session's constants. The addresses are NULL where the session has no TCP connection (as
/// PostgreSQL's are over a Unix socket); PostgreSQL types them `inet`, and they travel here as text.
pub fn constants(info: &SessionInfo) -> Vec<ScalarUDF> {
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
pub fn pg_sleep(watch: Watch) -> ScalarUDF {
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
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait)?,
            _ => wait()?,
        }
        let out: StringArray = (0..seconds.len()).map(|i| (!seconds.is_null(i)).then_some("")).collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}
