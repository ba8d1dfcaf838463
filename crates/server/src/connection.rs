//! One client connection, from TLS negotiation to the last message.
//!
//! pgwire's `process_socket` reads through tokio: after each reply the connection's task goes back to its
//! runtime, which waits in `epoll_wait` and then reads the socket. A connection here has a thread of its own
//! (see `server`), so once the client is authenticated nothing else can run on that thread anyway, and a
//! plain TCP connection switches to blocking reads, as a PostgreSQL backend does: the thread sleeps in
//! `recv` itself, and a round trip is two system calls (`recv`, `send`) instead of three, with the kernel
//! waking the reader directly rather than through epoll.
//!
//! Before it sleeps, the thread busy-polls the socket for a short while ([`Spin`]), which on a virtual
//! machine saves most of a one-client round trip's cost.
//!
//! Startup and authentication stay asynchronous, under pgwire's startup timeout; so do TLS connections
//! (rustls needs its own reads and writes). The message loop is pgwire's, over either kind of socket.
//!
//! Every message, from the startup packet on, is read through [`Checked`], which passes on only whole
//! messages whose layout holds, so that pgwire's decoders never see a malformed one; and every message is
//! handled under a catch of panics (see `panics`), so that a bug costs only this connection.

use std::io::{self, Write};
use std::mem::MaybeUninit;
use std::net::TcpStream as StdTcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message, MaybeTls, PgWireMessageServerCodec};
use pgwire::tokio::TlsAcceptor;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::codec::{Framed, FramedParts};
use tracing::{error, warn};

use crate::frames::{Checked, Refusal};
use crate::panics;

/// How long a client may take from connecting to being authenticated (pgwire's own limit).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// What the server asks of every connection.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// How long a thread busy-polls its socket before each read sleeps (see [`Spin`]; zero: never).
    pub busy_poll: Duration,
    /// No message may be longer than this (bytes).
    pub max_message: usize,
    /// The client authenticates with SCRAM (its first message is checked by SCRAM's layout).
    pub sasl: bool,
    /// A client that did not negotiate TLS is refused at its startup message (as pg_hba's `hostssl`).
    pub require_tls: bool,
}

/// Serves one accepted connection until the client leaves. To end it from outside, shut the socket down
/// (through a clone): nothing else wakes a thread asleep in `recv`.
pub async fn serve(
    socket: tokio::net::TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: impl PgWireServerHandlers,
    policy: &Policy,
) -> io::Result<()> {
    let Policy { busy_poll, max_message, sasl, require_tls } = *policy;
    let handlers = HandlerSet {
        startup: handlers.startup_handler(),
        simple: handlers.simple_query_handler(),
        extended: handlers.extended_query_handler(),
        copy: handlers.copy_handler(),
        cancel: handlers.cancel_handler(),
        error: handlers.error_handler(),
    };
    let startup = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup);
    let negotiated = tokio::select! {
        _ = &mut startup => return Ok(()),
        s = negotiate_tls(socket, tls) => s?,
    };
    // A client that asked for TLS directly on a server without it.
    let Some(framed) = negotiated else { return Ok(()) };
    let plain = matches!(framed.get_ref(), MaybeTls::Plain(_));
    // What pgwire read while negotiating is checked with the rest.
    let parts = framed.into_parts();
    let checked = Checked::new(parts.io, parts.read_buf, true, max_message, sasl);
    let mut framed = Framed::from_parts(with_io(checked, parts.codec, BytesMut::new(), parts.write_buf));
    while matches!(framed.state(), PgWireConnectionState::AwaitingStartup | PgWireConnectionState::AuthenticationInProgress) {
        let msg = tokio::select! {
            _ = &mut startup => return Ok(()),
            msg = framed.next() => msg,
        };
        if let (true, true, Some(Ok(PgWireFrontendMessage::Startup(startup)))) = (require_tls, plain, &msg) {
            let user = startup.parameters.get("user").map_or("", String::as_str);
            let info = ErrorInfo::new(
                "FATAL".into(),
                "28000".into(),
                format!("connection of user \"{user}\" without TLS refused: this server requires TLS (sslmode=require)"),
            );
            warn!(peer = %framed.socket_addr(), user, "connection without TLS refused");
            let _ = framed.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
            return Ok(());
        }
        if !handlers.handle(&mut framed, msg).await? {
            return Ok(());
        }
    }
    let parts = framed.into_parts();
    let (io, checked) = parts.io.into_inner();
    match io {
        MaybeTls::Plain(tcp) => {
            let std = tcp.into_std()?;
            std.set_nonblocking(false)?;
            let socket = checked.with(BlockingSocket { tcp: std, spin: Spin::new(busy_poll), running: false });
            handlers.run(Framed::from_parts(with_io(socket, parts.codec, parts.read_buf, parts.write_buf))).await
        }
        io => handlers.run(Framed::from_parts(with_io(checked.with(io), parts.codec, parts.read_buf, parts.write_buf))).await,
    }
}

/// What a connection says before it ends on input it refused.
fn refusal_error(refusal: &Refusal) -> ErrorInfo {
    match refusal {
        Refusal::Violation(m) => ErrorInfo::new("FATAL".into(), "08P01".into(), m.clone()),
        too_long => ErrorInfo::new("FATAL".into(), "54000".into(), too_long.to_string()),
    }
}

/// A message's kind, for the log line of a panic it caused.
fn message_name(msg: &PgWireFrontendMessage) -> &'static str {
    match msg {
        PgWireFrontendMessage::Startup(_) => "Startup",
        PgWireFrontendMessage::PasswordMessageFamily(_) => "PasswordMessage",
        PgWireFrontendMessage::Query(_) => "Query",
        PgWireFrontendMessage::Parse(_) => "Parse",
        PgWireFrontendMessage::Bind(_) => "Bind",
        PgWireFrontendMessage::Describe(_) => "Describe",
        PgWireFrontendMessage::Execute(_) => "Execute",
        PgWireFrontendMessage::Close(_) => "Close",
        PgWireFrontendMessage::Sync(_) => "Sync",
        PgWireFrontendMessage::CopyData(_) | PgWireFrontendMessage::CopyDone(_) | PgWireFrontendMessage::CopyFail(_) => "COPY data",
        _ => "message",
    }
}

fn with_io<S, ST>(
    io: S,
    codec: PgWireMessageServerCodec<ST>,
    read_buf: BytesMut,
    write_buf: BytesMut,
) -> FramedParts<S, PgWireMessageServerCodec<ST>> {
    let mut parts = FramedParts::new::<PgWireBackendMessage>(io, codec);
    parts.read_buf = read_buf;
    parts.write_buf = write_buf;
    parts
}

/// The handlers of one connection, taken once rather than per message.
struct HandlerSet<A, Q, EQ, C, CR, E> {
    startup: Arc<A>,
    simple: Arc<Q>,
    extended: Arc<EQ>,
    copy: Arc<C>,
    cancel: Arc<CR>,
    error: Arc<E>,
}

impl<A, Q, EQ, C, CR, E> HandlerSet<A, Q, EQ, C, CR, E>
where
    A: StartupHandler,
    Q: SimpleQueryHandler,
    EQ: ExtendedQueryHandler,
    C: CopyHandler,
    CR: CancelHandler,
    E: ErrorHandler,
{
    /// The message loop after startup.
    async fn run<S>(&self, mut framed: Framed<S, PgWireMessageServerCodec<EQ::Statement>>) -> io::Result<()>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        loop {
            let msg = framed.next().await;
            if !self.handle(&mut framed, msg).await? {
                return Ok(());
            }
        }
    }

    /// Handles one message (or the end of the stream, `None`) as pgwire's own loop does. Returns whether the
    /// connection goes on.
    async fn handle<S>(
        &self,
        socket: &mut Framed<S, PgWireMessageServerCodec<EQ::Statement>>,
        msg: Option<Result<PgWireFrontendMessage, PgWireError>>,
    ) -> io::Result<bool>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    {
        let msg = match msg {
            Some(Ok(msg)) => msg,
            Some(Err(PgWireError::IoError(e))) => {
                if let Some(refusal) = Refusal::of(&e) {
                    warn!(peer = %socket.socket_addr(), "connection closed: {refusal}");
                    let info = refusal_error(refusal);
                    let _ = socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
                }
                return Ok(false);
            }
            _ => return Ok(false),
        };
        // Terminate: the client is leaving, and some clients wait for the server to close the socket.
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            return Ok(false);
        }
        let is_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        // A CancelRequest comes on a connection of its own, which ends with it.
        let is_cancel_request = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        // The text, for the log line of a panic: a Bind or Execute names a statement parsed before.
        let statement: std::borrow::Cow<'static, str> = match &msg {
            PgWireFrontendMessage::Query(q) => q.query.clone().into(),
            PgWireFrontendMessage::Parse(p) => p.query.clone().into(),
            other => message_name(other).into(),
        };
        let handled = std::panic::AssertUnwindSafe(process_message(
            msg,
            socket,
            self.startup.clone(),
            self.simple.clone(),
            self.extended.clone(),
            self.copy.clone(),
            self.cancel.clone(),
        ))
        .catch_unwind()
        .await;
        let handled = match handled {
            Ok(handled) => handled,
            Err(payload) => {
                let panic = panics::describe(payload.as_ref());
                error!(%statement, "internal error, connection closed: {panic}");
                let info = ErrorInfo::new("FATAL".into(), "XX000".into(), format!("internal error: {panic}"));
                let _ = socket.send(PgWireBackendMessage::ErrorResponse(info.into())).await;
                return Ok(false);
            }
        };
        if let Err(mut e) = handled {
            self.error.on_error(socket, &mut e);
            // A FATAL error ends the session, as in PostgreSQL.
            let fatal = e.is_fatal();
            process_error(socket, e, is_extended_query).await?;
            if fatal {
                return Ok(false);
            }
        }
        Ok(!is_cancel_request)
    }
}

/// A TCP socket in blocking mode behind tokio's I/O traits: every poll completes at once, having waited
/// in the kernel if it had to. Only for a thread that serves this socket alone.
struct BlockingSocket {
    tcp: StdTcpStream,
    spin: Spin,
    /// Counted in [`RUNNING`]: the last read returned data, and the thread has not come back to read since.
    running: bool,
}

impl AsyncRead for BlockingSocket {
    fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let fd = self.tcp.as_raw_fd();
        // This thread's statement is done: it no longer counts as running one.
        if std::mem::take(&mut self.running) {
            RUNNING.fetch_sub(1, Ordering::AcqRel);
        }
        // SAFETY: recv writes at most `unfilled.len()` bytes into the buffer, and exactly the `n` it returns
        // are then marked initialised.
        let unfilled = unsafe { buf.unfilled_mut() };
        let n = match self.spin.read(fd, unfilled) {
            Some(r) => r?,
            None => loop {
                match recv(fd, unfilled, 0) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            },
        };
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        self.running = true;
        RUNNING.fetch_add(1, Ordering::AcqRel);
        Poll::Ready(Ok(()))
    }
}

impl Drop for BlockingSocket {
    fn drop(&mut self) {
        if self.running {
            RUNNING.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl AsyncWrite for BlockingSocket {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            match (&self.tcp).write(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return Poll::Ready(r),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.tcp.shutdown(std::net::Shutdown::Write))
    }
}

fn recv(fd: RawFd, into: &mut [MaybeUninit<u8>], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `into` is valid for writes of its length.
    let n = unsafe { libc::recv(fd, into.as_mut_ptr().cast(), into.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Busy polling: after a reply, the connection's thread keeps trying the socket for a short window before it
/// sleeps in `recv`.
///
/// On a virtual machine most of a one-client round trip is not the statement but the sleeping and waking
/// around it: a profile of a prepared point select at one client put 22 % of the server's time in the
/// switch back to a thread woken from `recv` (the virtual CPU leaving its idle halt) and 23 % in waking the
/// client. A client that sends its next statement within the window finds the thread awake, and both
/// sides skip one of those wake-ups; one-client throughput roughly doubled in measurements (BENCHMARKS.md).
///
/// Spinning costs CPU, so it is kept to where it pays:
/// - a thread spins only while the connections running statements and the threads spinning leave a CPU
///   free for the clients (all CPUs but one): under load, CPU time goes to statements;
/// - the spin yields the CPU at each turn, and gives up when a yield took long (another thread wanted the
///   CPU);
/// - a connection whose spin ran out without a message (a client that thinks longer than the window, a
///   remote client) skips spinning for its next 1, 3, 7, ... up to 1023 reads, and starts over after a hit.
struct Spin {
    window: Duration,
    /// Spins in a row that ran out, and reads left to skip before the next try.
    misses: u32,
    skip: u32,
}

/// A yield that takes longer than this ran another thread: the CPU is wanted elsewhere.
const CONTENDED: Duration = Duration::from_micros(20);

/// Threads spinning now, across connections.
static SPINNING: AtomicUsize = AtomicUsize::new(0);
/// Connections (on blocking sockets) whose thread is running a statement: between a read that returned data
/// and the next read.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

impl Spin {
    fn new(window: Duration) -> Self {
        Spin { window, misses: 0, skip: 0 }
    }

    /// Whether the next read should spin first, by this connection's recent luck.
    fn wanted(&mut self) -> bool {
        if self.window.is_zero() {
            return false;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    fn hit(&mut self) {
        self.misses = 0;
    }

    fn miss(&mut self) {
        self.misses = (self.misses + 1).min(10);
        self.skip = (1 << self.misses) - 1;
    }

    /// Reads from `fd` without sleeping, for up to the window. `None` when it did not spin or nothing came.
    fn read(&mut self, fd: RawFd, into: &mut [MaybeUninit<u8>]) -> Option<io::Result<usize>> {
        if !self.wanted() {
            return None;
        }
        let _slot = SpinSlot::take()?;
        let started = Instant::now();
        let mut contended = false;
        loop {
            match recv(fd, into, libc::MSG_DONTWAIT) {
                Ok(n) => {
                    self.hit();
                    return Some(Ok(n));
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(e) => return Some(Err(e)),
            }
            if contended || started.elapsed() >= self.window {
                self.miss();
                return None;
            }
            let turn = Instant::now();
            // SAFETY: no arguments, no memory.
            unsafe { libc::sched_yield() };
            contended = turn.elapsed() > CONTENDED;
        }
    }
}

/// A place among the spinning threads, given back on drop.
struct SpinSlot;

impl SpinSlot {
    fn take() -> Option<SpinSlot> {
        static MAX: OnceLock<usize> = OnceLock::new();
        let max = *MAX.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1)));
        if SPINNING.fetch_add(1, Ordering::AcqRel) + RUNNING.load(Ordering::Acquire) < max {
            Some(SpinSlot)
        } else {
            SPINNING.fetch_sub(1, Ordering::AcqRel);
            None
        }
    }
}

impl Drop for SpinSlot {
    fn drop(&mut self) {
        SPINNING.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_backs_off_after_misses_and_resumes_after_a_hit() {
        let mut spin = Spin::new(Duration::from_micros(100));
        assert!(spin.wanted());
        spin.miss();
        // One read skipped after the first miss, three after the second, then seven.
        let pattern: Vec<bool> = (0..2).map(|_| spin.wanted()).collect();
        assert_eq!(pattern, [false, true]);
        spin.miss();
        let pattern: Vec<bool> = (0..4).map(|_| spin.wanted()).collect();
        assert_eq!(pattern, [false, false, false, true]);
        spin.miss();
        assert_eq!((0..8).filter(|_| spin.wanted()).count(), 1);
        spin.hit();
        spin.miss();
        let pattern: Vec<bool> = (0..2).map(|_| spin.wanted()).collect();
        assert_eq!(pattern, [false, true], "a hit starts the back-off over");
        for _ in 0..20 {
            spin.miss();
        }
        assert_eq!(spin.skip, 1023, "the back-off is bounded");
    }

    #[test]
    fn a_zero_window_never_spins() {
        let mut spin = Spin::new(Duration::ZERO);
        assert!(!spin.wanted());
    }

    #[test]
    fn a_spin_returns_what_arrives_within_the_window_and_gives_up_after_it() {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = StdTcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let mut spin = Spin::new(Duration::from_millis(50));
        let mut buf = [MaybeUninit::<u8>::uninit(); 16];
        // Nothing sent: the spin runs out and counts a miss.
        assert!(spin.read(server.as_raw_fd(), &mut buf).is_none());
        assert_eq!(spin.misses, 1);
        client.write_all(b"hello").unwrap();
        spin.skip = 0;
        let n = spin.read(server.as_raw_fd(), &mut buf).expect("data within the window").unwrap();
        assert_eq!(n, 5);
        assert_eq!(spin.misses, 0);
        // The end of the stream is a read of 0 bytes, as from a blocking recv.
        drop(client);
        assert_eq!(spin.read(server.as_raw_fd(), &mut buf).unwrap().unwrap(), 0);
        let _ = (&server).read(&mut [0u8; 1]);
    }
}
