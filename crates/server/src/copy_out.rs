//! COPY TO STDOUT on the wire, and the Simple Query loop that sends it.
//!
//! pgwire's `send_copy_out_response` ends a COPY TO with `COPY n`, n the number of CopyData messages other
//! than a bare binary trailer: a CSV `HEADER` line was counted as a row, and a binary COPY of no rows (its
//! header and trailer in one message, as PostgreSQL sends them) said `COPY 1`. PostgreSQL counts rows, and
//! so do psycopg's `rowcount` and pgx's `CopyTo`. Here the data stream of a [`CopyResponse`] follows one
//! convention, which [`crate::handler`] builds from the session's `Output::CopyOut`:
//!
//! ```text
//! item:   prefix | row 1 | row 2 | ... | row n | suffix
//! sent:   prefix + row 1 | row 2 | ... | row n | suffix        (prefix + suffix when n = 0)
//! ```
//!
//! The prefix is the binary signature or the text `HEADER` line, the suffix the binary trailer; either may
//! be empty, and an empty message is not sent. The prefix travels in one message with the first row, as
//! PostgreSQL sends it: psycopg reads a row right after the binary signature.

use std::fmt::Debug;

use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::copy::send_copy_in_response;
use pgwire::api::query::{send_execution_response, send_query_response, send_ready_for_query, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyOutResponse};
use pgwire::messages::response::EmptyQueryResponse;
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;

/// Sends a COPY TO's data as the module draws it, and `COPY n` with n the rows sent.
pub async fn send_copy_out<C>(client: &mut C, resp: CopyResponse) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let column_formats = resp.column_formats();
    let CopyResponse { format, columns, mut data_stream, .. } = resp;
    client.send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(format, columns as i16, column_formats))).await?;
    // One item is held back until the next arrives: the prefix waits for the first row, and whatever
    // comes last is the suffix.
    let mut held: Option<Vec<u8>> = None;
    let mut items = 0usize;
    while let Some(item) = data_stream.next().await {
        let data = match item {
            Ok(d) => d.data,
            Err(e) => {
                client.send(PgWireBackendMessage::CopyFail(CopyFail::new(e.to_string()))).await?;
                return Err(e);
            }
        };
        items += 1;
        held = Some(match held.take() {
            None => data.to_vec(),
            Some(mut prefix) if items == 2 => {
                prefix.extend_from_slice(&data);
                prefix
            }
            Some(previous) => {
                feed_data(client, previous).await?;
                data.to_vec()
            }
        });
    }
    if let Some(last) = held {
        feed_data(client, last).await?;
    }
    client.send(PgWireBackendMessage::CopyDone(CopyDone::new())).await?;
    let tag = Tag::new("COPY").with_rows(items.saturating_sub(2));
    client.send(PgWireBackendMessage::CommandComplete(tag.into())).await?;
    Ok(())
}

async fn feed_data<C>(client: &mut C, data: Vec<u8>) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !data.is_empty() {
        client.feed(PgWireBackendMessage::CopyData(CopyData::new(data.into()))).await?;
    }
    Ok(())
}

/// pgwire's default `on_query` (`SimpleQueryHandler::_on_query`), with COPY TO sent by [`send_copy_out`].
/// Cancellation is Tabula's own (a flag per running statement), not pgwire's connection handle, so there is
/// no cancel receiver to wait on here.
pub async fn on_query<H, C>(handler: &H, client: &mut C, query: Query) -> PgWireResult<()>
where
    H: SimpleQueryHandler,
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
        return Err(PgWireError::NotReadyForQuery);
    }
    let mut status = client.transaction_status();
    client.set_state(PgWireConnectionState::QueryInProgress);
    // Only semicolons and blanks: no statement, which PostgreSQL answers with EmptyQueryResponse.
    if query.query.chars().all(|c| c == ';' || c.is_whitespace()) {
        client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?;
    } else {
        for response in handler.do_query(client, &query.query).await? {
            match response {
                Response::EmptyQuery => client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?,
                Response::Query(results) => send_query_response(client, results, true).await?,
                Response::Execution(tag) => send_execution_response(client, tag).await?,
                Response::TransactionStart(tag) => {
                    send_execution_response(client, tag).await?;
                    status = status.to_in_transaction_state();
                }
                Response::TransactionEnd(tag) => {
                    send_execution_response(client, tag).await?;
                    status = status.to_idle_state();
                }
                Response::Error(e) => {
                    client.feed(PgWireBackendMessage::ErrorResponse((*e).into())).await?;
                    status = status.to_error_state();
                }
                Response::CopyIn(result) => {
                    send_copy_in_response(client, result).await?;
                    client.set_state(PgWireConnectionState::CopyInProgress(false));
                }
                Response::CopyOut(result) => send_copy_out(client, result).await?,
                Response::CopyBoth(_) => return Err(PgWireError::ApiError("COPY BOTH is not a statement's result".into())),
            }
        }
    }
    // A COPY FROM STDIN under way answers ReadyForQuery at its CopyDone or CopyFail.
    if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        send_ready_for_query(client, status).await?;
    }
    Ok(())
}
