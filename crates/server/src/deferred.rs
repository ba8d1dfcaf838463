//! One socket write per round trip.
//!
//! pgwire's default extended-protocol handlers `send` (write and flush) each reply on its own: ParseComplete,
//! BindComplete, CommandComplete and ReadyForQuery went out as four `send()` calls per prepared statement, each
//! waking the client. PostgreSQL flushes only at Sync, at Flush, or when its output buffer fills. [`Deferred`]
//! gives the handlers a client whose flush only queues, so the replies of Parse, Bind, Describe and Execute go
//! out together with Sync's ReadyForQuery.
//!
//! Long results still stream, but in writes of [`WRITE_AT`] bytes rather than the framed sink's 8 KiB: on
//! loopback each write wakes the client, and a 1000-row scan took seven of them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Sink;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, SessionExtensions};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{Message, PgWireBackendMessage, ProtocolVersion};

/// Queued reply bytes at which they are written out, whether or not a flush came.
pub const WRITE_AT: usize = 64 << 10;

/// A client whose flushes wait for the next real one, or for [`WRITE_AT`] queued bytes.
pub struct Deferred<'a, C> {
    inner: &'a mut C,
    /// Bytes queued since the last write (DataRows counted exactly, other replies as small).
    queued: usize,
}

impl<'a, C> Deferred<'a, C> {
    pub fn new(inner: &'a mut C) -> Self {
        Deferred { inner, queued: 0 }
    }
}

impl<C: Sink<PgWireBackendMessage> + Unpin> Sink<PgWireBackendMessage> for Deferred<'_, C> {
    type Error = C::Error;

    // The framed sink's own `poll_ready` would write at 8 KiB; its `start_send` only appends to its buffer.
    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.queued >= WRITE_AT {
            std::task::ready!(Pin::new(&mut *self.inner).poll_flush(cx))?;
            self.queued = 0;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> Result<(), Self::Error> {
        self.queued += match &item {
            PgWireBackendMessage::DataRow(r) => r.message_length() + 1,
            _ => 64,
        };
        Pin::new(&mut *self.inner).start_send(item)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut *self.inner).poll_close(cx)
    }
}

impl<C: ClientPortalStore> ClientPortalStore for Deferred<'_, C> {
    type PortalStore = C::PortalStore;

    fn portal_store(&self) -> &Self::PortalStore {
        self.inner.portal_store()
    }
}

impl<C: ClientInfo> ClientInfo for Deferred<'_, C> {
    fn socket_addr(&self) -> SocketAddr {
        self.inner.socket_addr()
    }
    fn is_secure(&self) -> bool {
        self.inner.is_secure()
    }
    fn protocol_version(&self) -> ProtocolVersion {
        self.inner.protocol_version()
    }
    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.inner.set_protocol_version(version)
    }
    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.inner.pid_and_secret_key()
    }
    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.inner.set_pid_and_secret_key(pid, secret_key)
    }
    fn state(&self) -> PgWireConnectionState {
        self.inner.state()
    }
    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.inner.set_state(new_state)
    }
    fn transaction_status(&self) -> TransactionStatus {
        self.inner.transaction_status()
    }
    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.inner.set_transaction_status(new_status)
    }
    fn metadata(&self) -> &HashMap<String, String> {
        self.inner.metadata()
    }
    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.inner.metadata_mut()
    }
    fn session_extensions(&self) -> &SessionExtensions {
        self.inner.session_extensions()
    }
    fn sni_server_name(&self) -> Option<&str> {
        self.inner.sni_server_name()
    }
    fn client_certificates<'a>(&self) -> Option<&[pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer<'a>]> {
        self.inner.client_certificates()
    }
}
