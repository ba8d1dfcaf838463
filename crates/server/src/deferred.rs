//! One socket write per round trip.
//!
//! pgwire's default extended-protocol handlers `send` (write and flush) each reply on its own: ParseComplete,
//! BindComplete, CommandComplete and ReadyForQuery went out as four `send()` calls per prepared statement, each
//! waking the client. PostgreSQL flushes only at Sync, at Flush, or when its output buffer fills. [`Deferred`]
//! gives the handlers a client whose flush only queues, so the replies of Parse, Bind, Describe and Execute go
//! out together with Sync's ReadyForQuery. A full buffer is still written at once (the framed sink's
//! back-pressure in `poll_ready`), so long results keep streaming.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Sink;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, SessionExtensions};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, ProtocolVersion};

/// A client whose flushes wait for the next real one.
pub struct Deferred<'a, C>(pub &'a mut C);

impl<C: Sink<PgWireBackendMessage> + Unpin> Sink<PgWireBackendMessage> for Deferred<'_, C> {
    type Error = C::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut *self.0).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> Result<(), Self::Error> {
        Pin::new(&mut *self.0).start_send(item)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut *self.0).poll_close(cx)
    }
}

impl<C: ClientPortalStore> ClientPortalStore for Deferred<'_, C> {
    type PortalStore = C::PortalStore;

    fn portal_store(&self) -> &Self::PortalStore {
        self.0.portal_store()
    }
}

impl<C: ClientInfo> ClientInfo for Deferred<'_, C> {
    fn socket_addr(&self) -> SocketAddr {
        self.0.socket_addr()
    }
    fn is_secure(&self) -> bool {
        self.0.is_secure()
    }
    fn protocol_version(&self) -> ProtocolVersion {
        self.0.protocol_version()
    }
    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.0.set_protocol_version(version)
    }
    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.0.pid_and_secret_key()
    }
    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.0.set_pid_and_secret_key(pid, secret_key)
    }
    fn state(&self) -> PgWireConnectionState {
        self.0.state()
    }
    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.0.set_state(new_state)
    }
    fn transaction_status(&self) -> TransactionStatus {
        self.0.transaction_status()
    }
    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.0.set_transaction_status(new_status)
    }
    fn metadata(&self) -> &HashMap<String, String> {
        self.0.metadata()
    }
    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.0.metadata_mut()
    }
    fn session_extensions(&self) -> &SessionExtensions {
        self.0.session_extensions()
    }
    fn sni_server_name(&self) -> Option<&str> {
        self.0.sni_server_name()
    }
    fn client_certificates<'a>(&self) -> Option<&[pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer<'a>]> {
        self.0.client_certificates()
    }
}
