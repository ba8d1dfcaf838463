//! Execute, with rows streamed to the client as the portal yields them.
//!
//! pgwire's default Execute (`_on_execute`) pulls every row the portal will return into a vector before
//! sending the first: a `SELECT` of ten million rows over the extended protocol (JDBC, psycopg, node-postgres
//! with parameters) held all ten million encoded rows in the server at once, where the simple protocol
//! streamed them. PostgreSQL sends rows as it produces them; so does this, up to Execute's row limit, after
//! which the portal stays suspended for the next Execute.

use std::fmt::Debug;
use std::ops::DerefMut;

use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::copy;
use pgwire::api::portal::PortalExecutionState;
use pgwire::api::query::{send_execution_response, ExtendedQueryHandler};
use pgwire::api::results::{Response, Tag};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::extendedquery::{Execute, PortalSuspended};
use pgwire::messages::response::EmptyQueryResponse;
use pgwire::messages::PgWireBackendMessage;

/// Runs (or resumes) the portal `message` names and sends its rows and completion to `client`. The same
/// protocol as pgwire's `_on_execute`, but rows go to the client one by one instead of being collected first.
pub async fn execute<H, C>(handler: &H, client: &mut C, message: Execute) -> PgWireResult<()>
where
    H: ExtendedQueryHandler,
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore<Statement = H::Statement>,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
        return Err(PgWireError::NotReadyForQuery);
    }
    let mut transaction_status = client.transaction_status();
    client.set_state(PgWireConnectionState::QueryInProgress);
    let portal_name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
    let max_rows = message.max_rows.max(0) as usize;
    let portal = match client.portal_store().get_portal(portal_name) {
        Some(Entry::Value(portal)) => portal,
        Some(Entry::Empty) => {
            // An empty query string: never planned, and valid for repeated Execute.
            client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?;
            client.set_state(PgWireConnectionState::ReadyForQuery);
            return Ok(());
        }
        None => return Err(PgWireError::PortalNotFound(portal_name.to_owned())),
    };

    let initial = matches!(*portal.state().lock().await, PortalExecutionState::Initial);
    let has_rows = if initial {
        match handler.do_query(client, portal.as_ref(), max_rows).await? {
            Response::Query(results) => {
                portal.start(results).await;
                true
            }
            Response::EmptyQuery => {
                client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?;
                false
            }
            Response::Execution(tag) => {
                send_execution_response(client, tag).await?;
                false
            }
            Response::TransactionStart(tag) => {
                send_execution_response(client, tag).await?;
                transaction_status = transaction_status.to_in_transaction_state();
                false
            }
            Response::TransactionEnd(tag) => {
                send_execution_response(client, tag).await?;
                transaction_status = transaction_status.to_idle_state();
                // The unnamed portal does not outlive its transaction.
                client.portal_store().rm_portal(DEFAULT_NAME);
                false
            }
            Response::Error(err) => {
                client.send(PgWireBackendMessage::ErrorResponse((*err).into())).await?;
                transaction_status = transaction_status.to_error_state();
                false
            }
            Response::CopyIn(result) => {
                client.set_state(PgWireConnectionState::CopyInProgress(true));
                copy::send_copy_in_response(client, result).await?;
                false
            }
            Response::CopyOut(result) => {
                crate::copy_out::send_copy_out(client, result).await?;
                false
            }
            Response::CopyBoth(result) => {
                client.set_state(PgWireConnectionState::CopyInProgress(true));
                copy::send_copy_both_response(client, result).await?;
                false
            }
        }
    } else {
        // Suspended by an earlier Execute's row limit, or finished: resume it.
        true
    };

    if has_rows {
        let state = portal.state();
        let mut state = state.lock().await;
        let (tag, sent, suspended) = match state.deref_mut() {
            PortalExecutionState::Initial => return Err(PgWireError::PortalNotStarted),
            PortalExecutionState::Finished => (String::new(), 0, false),
            PortalExecutionState::Suspended(response) => {
                let tag = response.command_tag().to_owned();
                let rows = response.data_rows();
                let mut sent = 0;
                let mut suspended = true;
                while max_rows == 0 || sent < max_rows {
                    match rows.next().await {
                        Some(row) => {
                            client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                            sent += 1;
                        }
                        None => {
                            // Run to the end. The portal keeps its tag with an empty stream (the cursor
                            // is released now), so a later Execute completes the same command with no
                            // rows (`SELECT 0`), as in PostgreSQL.
                            *rows = Box::pin(futures::stream::empty());
                            suspended = false;
                            break;
                        }
                    }
                }
                (tag, sent, suspended)
            }
        };
        if suspended {
            client.feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new())).await?;
        } else {
            client.feed(PgWireBackendMessage::CommandComplete(Tag::new(&tag).with_rows(sent).into())).await?;
        }
    }

    if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(transaction_status);
    }
    Ok(())
}
