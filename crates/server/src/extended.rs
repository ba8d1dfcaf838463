//! The extended query protocol: Parse, Bind, Describe and Execute on the connection's session. Their
//! replies leave with Sync's ([`Deferred`]); Execute sends rows as the portal yields them ([`execute`]).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{send_describe_response, ExtendedQueryHandler};
use pgwire::api::results::{DescribePortalResponse, FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{Bind, Describe, Execute, Parse, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT};
use pgwire::messages::PgWireBackendMessage;
use tabula_query::types::Zone;
use tabula_query::{Datum, Output, Prepared, QueryError, SqlType};
use tracing::info_span;

use crate::deferred::Deferred;
use crate::errors::{error_info, to_pgwire};
use crate::execute;
use crate::handler::{command_tag, report_parameter, send_notices, to_response, Connection};
use crate::wire;

/// Parses statements for the extended protocol; needs the connection's session for its transaction state.
pub struct StatementParser {
    pub(crate) conn: std::sync::Weak<Connection>,
}

#[async_trait]
impl QueryParser for StatementParser {
    type Statement = Arc<Prepared>;

    async fn parse_sql<C>(&self, client: &C, sql: &str, types: &[Option<Type>]) -> PgWireResult<Option<Self::Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let conn = self.conn.upgrade().ok_or_else(|| PgWireError::IoError(std::io::Error::other("connection closed")))?;
        let types: Vec<Option<SqlType>> = types.iter().map(|t| t.as_ref().and_then(wire::sql_type)).collect();
        let p = conn.with_session(client, |s| s.prepare(sql, &types)).map_err(to_pgwire)?;
        if p.is_empty() {
            return Ok(None);
        }
        Ok(Some(Arc::new(p)))
    }

    fn get_parameter_types(&self, stmt: &Self::Statement) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types.iter().map(|t| wire::pg_type(*t)).collect())
    }

    fn get_result_schema(&self, stmt: &Self::Statement, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        Ok(wire::fields(&stmt.columns, format))
    }
}

pub struct Extended {
    pub(crate) conn: Arc<Connection>,
    pub(crate) parser: Arc<StatementParser>,
}

#[async_trait]
impl ExtendedQueryHandler for Extended {
    type Statement = Arc<Prepared>;
    type QueryParser = StatementParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    // Parse, Bind, Describe and Execute reply through `Deferred`: their replies leave with Sync's.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(name) = message.name.as_ref().filter(|n| !n.is_empty()) {
            self.conn.named.lock().unwrap_or_else(|p| p.into_inner()).insert(name.clone());
        }
        DefaultReplies(self).on_parse(&mut Deferred::new(client), message).await
    }

    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        DefaultReplies(self).on_bind(&mut Deferred::new(client), message).await
    }

    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // A cursor DECLAREd in SQL is a portal too: psycopg describes it by name to learn its columns.
        if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            let name = message.name.as_deref().unwrap_or_default();
            if !name.is_empty() && client.portal_store().get_portal(name).is_none() {
                if let Some(columns) = self.conn.with_session(client, |s| s.cursor_columns(name)) {
                    let described = DescribePortalResponse::new(wire::fields(&columns, None));
                    return send_describe_response(&mut Deferred::new(client), &described).await;
                }
            }
        }
        // A statement that returns no rows is described as ParameterDescription then NoData, as PostgreSQL
        // describes it. (pgwire sends an empty RowDescription once there are parameters, and pgjdbc's
        // executeBatch then reports 0 rows changed by each INSERT or UPDATE.)
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name) {
                if stmt.statement.columns.is_empty() {
                    let described = self.do_describe_statement(client, &stmt).await?;
                    let oids = described.parameters.iter().map(|t| t.oid()).collect();
                    let mut deferred = Deferred::new(client);
                    deferred.send(PgWireBackendMessage::ParameterDescription(ParameterDescription::new(oids))).await?;
                    deferred.send(PgWireBackendMessage::NoData(NoData::new())).await?;
                    return Ok(());
                }
            }
        }
        self._on_describe(&mut Deferred::new(client), message).await
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        execute::execute(self, &mut Deferred::new(client), message).await?;
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            // The client sends COPY data only after it has seen CopyInResponse.
            client.flush().await?;
        }
        Ok(())
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Self::Statement>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let span = info_span!("statement", conn = self.conn.id, protocol = "extended");
        let _e = span.enter();
        let prepared = &portal.statement.statement;
        let started = std::time::Instant::now();
        // Parameters are read in the session's zone (a timestamptz's text), under the one session lock
        // the statement takes.
        let decode = |zone: &Zone| -> Result<Vec<Datum>, QueryError> {
            let mut params = Vec::with_capacity(portal.parameter_len());
            for (i, raw) in portal.parameters.iter().enumerate() {
                // The type the client declared at Parse, else the one the planner inferred.
                let ty = portal
                    .statement
                    .parameter_types
                    .get(i)
                    .cloned()
                    .flatten()
                    .and_then(|t| wire::sql_type(&t))
                    .or_else(|| prepared.param_types.get(i).copied())
                    .unwrap_or(SqlType::Text);
                params.push(wire::decode_param(raw.as_deref(), ty, portal.parameter_format.is_binary(i), zone)?);
            }
            Ok(params)
        };
        let (result, notices, zone) = self.conn.with_session(client, |s| {
            let zone = s.zone();
            match decode(&zone) {
                Ok(params) => (Ok(s.execute(prepared, &params)), s.take_notices(), s.zone()),
                Err(e) => (Err(e), Vec::new(), zone),
            }
        });
        let result = result.map_err(to_pgwire)?;
        let result = self.conn.timed(&prepared.sql, started, result);
        send_notices(client, notices).await?;
        match result {
            Ok(Output::Set { name, value, tag }) => {
                report_parameter(client, &name, &value, &[]).await?;
                Ok(Response::Execution(command_tag(&tag)))
            }
            Ok(Output::Deallocate(name)) => Ok(self.conn.deallocate(client, name)),
            Ok(o) => to_response(o, Some(&portal.result_column_format), zone),
            Err(e) => Ok(Response::Error(Box::new(error_info(&e)))),
        }
    }
}

/// `Extended` with pgwire's default Parse and Bind replies, which its own overrides wrap.
struct DefaultReplies<'a>(&'a Extended);

#[async_trait]
impl ExtendedQueryHandler for DefaultReplies<'_> {
    type Statement = Arc<Prepared>;
    type QueryParser = StatementParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.0.parser.clone()
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Self::Statement>, max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.0.do_query(client, portal, max_rows).await
    }
}
