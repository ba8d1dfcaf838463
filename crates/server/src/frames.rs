//! Frontend messages checked before pgwire decodes them.
//!
//! pgwire's decoders read a message's fields without holding them to the message's length: a count or a
//! length that runs past the end panics in `bytes` (or reads on into the next message), and a message's
//! whole body is buffered before any limit applies. So a connection reads through [`Checked`], which hands
//! pgwire only whole messages whose layout it has walked: every string terminated, every count and length
//! inside the body, the body ending exactly where its length says. What fails is a protocol violation
//! (08P01), which ends the connection, as PostgreSQL ends it.
//!
//! A message is at most `limit` bytes (`--max-statement-bytes` and room for names and parameters). One
//! over it is refused from its five header bytes: its body is read and dropped as it arrives, never
//! buffered, so a refused message costs no memory whatever its size; then the connection ends with 54000
//! (PostgreSQL ends it with 08P01 for a message over its own 1 GB bound). A statement text over
//! `--max-statement-bytes` but within the message limit is refused by the session, and the connection
//! goes on.
//!
//! The layouts, from PostgreSQL's protocol (`int16`/`int32` big-endian, `string` NUL-terminated):
//! ```text
//! startup   int32 len | int32 version | (string name, string value)* | 0        (no type byte, len <= 10000)
//! cancel    int32 len | int32 80877102 | int32 pid | key bytes                  (len 16 to 264)
//! 'Q'       string query
//! 'P'       string name | string query | int16 n | int32 type[n]
//! 'B'       string portal | string stmt | int16 nf | int16 fmt[nf]
//!           | int16 np | (int32 len (-1 = NULL) | byte[len])[np] | int16 nr | int16 fmt[nr]
//! 'D', 'C'  byte 'S'|'P' | string name
//! 'E'       string portal | int32 max_rows
//! 'p'       under SCRAM, the first: string mechanism | int32 len (-1 = none) | byte[len]; else bytes
//! 'S' 'H' 'c' 'X'   empty        'd' bytes        'f' string
//! ```

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// PostgreSQL's own bound on a startup packet (`MAX_STARTUP_PACKET_LENGTH`).
const MAX_STARTUP_BYTES: usize = 10_000;
const CANCEL_REQUEST_CODE: u32 = 80_877_102;
/// The SSL, GSS and direct-negotiation request codes: answered by pgwire before a startup packet.
const NEGOTIATION_CODES: [u32; 2] = [80_877_103, 80_877_104];

/// The frontend message types after startup.
const KNOWN_TYPES: &[u8] = b"QPBDCESHcXdfp";

/// Why a connection's input stopped: carried inside the `io::Error` pgwire's framing hands back.
#[derive(Debug)]
pub enum Refusal {
    /// The stream broke the protocol: the connection ends with 08P01.
    Violation(String),
    /// A message over the limit, read to its end and dropped: the connection ends with 54000.
    TooLong { kind: u8, len: usize, limit: usize },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Violation(m) => f.write_str(m),
            Refusal::TooLong { kind, len, limit, .. } => {
                write!(f, "message of type '{}' is too long: {len} bytes, the limit is {limit} (max_statement_bytes)", char::from(*kind))
            }
        }
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// The refusal an `io::Error` carries, if it came from [`Checked`].
    pub fn of(e: &io::Error) -> Option<&Refusal> {
        e.get_ref().and_then(|inner| inner.downcast_ref::<Refusal>())
    }

    fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }
}

/// A socket whose reads yield only whole, checked messages (see the module doc).
pub struct Checked<S> {
    inner: S,
    /// Read from the socket, not yet handed on; `ready` bytes at its front are whole checked messages.
    pending: BytesMut,
    ready: usize,
    /// Whether the next message is a startup packet (no type byte).
    startup: bool,
    /// Bytes of a refused message's body still to drop.
    skipping: usize,
    limit: usize,
    /// A refusal to report once the messages checked before it have been handed on.
    refused: Option<Refusal>,
    eof: bool,
    /// The next password message is SCRAM's first (SASLInitialResponse), which has a layout of its own.
    sasl_initial: bool,
}

impl<S> Checked<S> {
    /// `buffered`: bytes already read from the socket, checked like the rest. `startup`: whether a startup
    /// packet comes first. `sasl`: whether the client authenticates with SCRAM.
    pub fn new(inner: S, buffered: BytesMut, startup: bool, limit: usize, sasl: bool) -> Self {
        Checked { inner, pending: buffered, ready: 0, startup, skipping: 0, limit, refused: None, eof: false, sasl_initial: sasl }
    }

    /// The socket, and the checking state to go on with over another socket (`with`).
    pub fn into_inner(self) -> (S, Checked<()>) {
        let Checked { inner, pending, ready, startup, skipping, limit, refused, eof, sasl_initial } = self;
        (inner, Checked { inner: (), pending, ready, startup, skipping, limit, refused, eof, sasl_initial })
    }
}

impl Checked<()> {
    pub fn with<T>(self, inner: T) -> Checked<T> {
        let Checked { pending, ready, startup, skipping, limit, refused, eof, sasl_initial, .. } = self;
        Checked { inner, pending, ready, startup, skipping, limit, refused, eof, sasl_initial }
    }
}

impl<S> Checked<S> {
    /// Checks the messages at `pending[ready..]` that are complete, moving `ready` past them; stops at a
    /// refusal or an incomplete message.
    fn advance(&mut self) {
        while self.refused.is_none() && self.skipping == 0 {
            let rest = &self.pending[self.ready..];
            let (kind, header) = if self.startup { (None, 4) } else { (rest.first().copied(), 5) };
            if rest.len() < header {
                return;
            }
            let len = u32::from_be_bytes(rest[header - 4..header].try_into().expect("four bytes")) as usize;
            let min = if self.startup { 8 } else { 4 };
            let max = if self.startup { MAX_STARTUP_BYTES } else { self.limit };
            if kind.is_some_and(|k| !KNOWN_TYPES.contains(&k)) {
                self.refused = Some(Refusal::Violation(format!("invalid frontend message type {}", rest[0])));
                return;
            }
            if len < min {
                self.refused = Some(Refusal::Violation(format!("invalid message length {len}")));
                return;
            }
            if len > max {
                let Some(kind) = kind else {
                    self.refused = Some(Refusal::Violation(format!("invalid length of startup packet: {len} bytes")));
                    return;
                };
                // Drop the header and whatever of the body has arrived; the rest is dropped as it comes.
                let total = len + 1;
                let here = rest.len().min(total);
                let ready = self.ready;
                let tail = self.pending.split_off(ready + here);
                self.pending.truncate(ready);
                self.pending.unsplit(tail);
                self.skipping = total - here;
                self.refused = Some(Refusal::TooLong { kind, len, limit: max });
                return;
            }
            let total = len + header - 4;
            if rest.len() < total {
                // Room for the whole message, so it arrives in as few reads as it takes.
                self.pending.reserve(total - rest.len());
                return;
            }
            let body = &rest[header..total];
            let checked = match kind {
                None => check_startup(body).map(|negotiation| {
                    if !negotiation {
                        self.startup = false;
                    }
                }),
                Some(b'p') if self.sasl_initial => {
                    self.sasl_initial = false;
                    check_sasl_initial(body)
                }
                Some(kind) => check_body(kind, body),
            };
            if let Err(reason) = checked {
                self.refused = Some(Refusal::Violation(reason));
                return;
            }
            self.ready += total;
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Checked<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.ready > 0 {
                let n = this.ready.min(buf.remaining());
                buf.put_slice(&this.pending[..n]);
                this.pending.advance(n);
                this.ready -= n;
                return Poll::Ready(Ok(()));
            }
            if this.skipping > 0 && !this.pending.is_empty() {
                let n = this.skipping.min(this.pending.len());
                this.pending.advance(n);
                this.skipping -= n;
                continue;
            }
            if this.skipping == 0 {
                if let Some(refusal) = this.refused.take() {
                    return Poll::Ready(Err(refusal.into_io()));
                }
                this.advance();
                if this.ready > 0 || this.refused.is_some() {
                    continue;
                }
            }
            if this.eof {
                // What is left is an incomplete message: the end of the stream, as pgwire would see it.
                return Poll::Ready(Ok(()));
            }
            this.pending.reserve(8192);
            let mut read = ReadBuf::uninit(this.pending.spare_capacity_mut());
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    // SAFETY: the inner reader initialised these `n` bytes of the spare capacity.
                    unsafe { this.pending.set_len(this.pending.len() + n) };
                    this.eof = n == 0;
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Checked<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Reads a message body field by field; every read checks that the field is there.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if n > self.0.len() {
            return Err(format!("message field of {n} bytes runs past the end of the message"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn string(&mut self) -> Result<&[u8], String> {
        let end = self.0.iter().position(|&b| b == 0).ok_or("string in message is not terminated")?;
        let s = &self.0[..end];
        self.0 = &self.0[end + 1..];
        Ok(s)
    }

    fn int16(&mut self) -> Result<i16, String> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    fn int32(&mut self) -> Result<i32, String> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    fn count(&mut self) -> Result<usize, String> {
        usize::try_from(self.int16()?).map_err(|_| "negative count in message".to_string())
    }

    fn end(&self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("message has {} bytes past its last field", self.0.len()))
        }
    }
}

/// A typed message's body (see the module doc for the layouts).
fn check_body(kind: u8, body: &[u8]) -> Result<(), String> {
    let mut f = Fields(body);
    match kind {
        b'Q' | b'f' => {
            f.string()?;
        }
        b'P' => {
            f.string()?;
            f.string()?;
            let n = f.count()?;
            f.take(n * 4)?;
        }
        b'B' => {
            f.string()?;
            f.string()?;
            let formats = f.count()?;
            f.take(formats * 2)?;
            for _ in 0..f.count()? {
                match f.int32()? {
                    -1 => {}
                    len if len >= 0 => {
                        f.take(len as usize)?;
                    }
                    len => return Err(format!("invalid parameter length {len} in Bind message")),
                }
            }
            let results = f.count()?;
            f.take(results * 2)?;
        }
        b'D' | b'C' => {
            let target = f.take(1)?[0];
            if !matches!(target, b'S' | b'P') {
                let what = if kind == b'D' { "DESCRIBE" } else { "CLOSE" };
                return Err(format!("invalid {what} message subtype {target}"));
            }
            f.string()?;
        }
        b'E' => {
            f.string()?;
            f.int32()?;
        }
        b'S' | b'H' | b'c' | b'X' => {}
        b'd' | b'p' => return Ok(()),
        other => return Err(format!("invalid frontend message type {other}")),
    }
    f.end()
}

/// SCRAM's SASLInitialResponse: the mechanism's name, then its data with a length (-1: none).
fn check_sasl_initial(body: &[u8]) -> Result<(), String> {
    let mut f = Fields(body);
    f.string()?;
    match f.int32()? {
        -1 => {}
        len if len >= 0 => {
            f.take(len as usize)?;
        }
        len => return Err(format!("invalid SASL response length {len}")),
    }
    f.end()
}

/// A startup packet's body (after its length). Returns whether it was a negotiation request (SSL, GSS),
/// after which the startup packet is still to come.
fn check_startup(body: &[u8]) -> Result<bool, String> {
    let mut f = Fields(body);
    let code = f.int32()? as u32;
    if NEGOTIATION_CODES.contains(&code) {
        return f.end().map(|_| true);
    }
    if code == CANCEL_REQUEST_CODE {
        f.int32()?;
        return match f.0.len() {
            4..=256 => Ok(false),
            n => Err(format!("invalid length of cancel request key: {n} bytes")),
        };
    }
    if code >> 16 != 3 {
        return Err(format!("unsupported frontend protocol {}.{}", code >> 16, code & 0xffff));
    }
    loop {
        if f.string()?.is_empty() {
            break;
        }
        f.string()?;
    }
    f.end().map_err(|_| "invalid startup packet layout: expected terminator as last byte".to_string()).map(|_| false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn well_formed_bodies_pass_and_every_overrun_fails() {
        let bind = [b"\0s\0".as_slice(), &[0, 1, 0, 0], &[0, 2, 0, 0, 0, 2, b'4', b'2', 0xff, 0xff, 0xff, 0xff], &[0, 0]].concat();
        assert_eq!(check_body(b'B', &bind), Ok(()));
        // Every shorter prefix of a good message runs past its end somewhere.
        for n in 0..bind.len() {
            assert!(check_body(b'B', &bind[..n]).is_err(), "prefix of {n} bytes");
        }
        assert!(check_body(b'B', &[bind.as_slice(), &[0]].concat()).is_err(), "a byte past the last field");
        let parse = [b"\0select $1\0".as_slice(), &[0, 1, 0, 0, 0, 23]].concat();
        assert_eq!(check_body(b'P', &parse), Ok(()));
        assert!(check_body(b'P', &[b"\0select $1\0".as_slice(), &[0x7f, 0xff]].concat()).is_err());
        assert!(check_body(b'P', &[b"\0x\0".as_slice(), &[0xff, 0xff]].concat()).is_err(), "negative count");
        assert!(check_body(b'Q', b"select 1").is_err(), "unterminated");
        assert!(check_body(b'D', b"Xname\0").is_err());
        assert!(check_body(b'E', b"\0\0\0").is_err());
        assert!(check_body(b'Z', b"").is_err());
        assert_eq!(check_body(b'S', b""), Ok(()));
        assert_eq!(check_sasl_initial(&[b"SCRAM-SHA-256\0".as_slice(), &[0, 0, 0, 2], b"ab"].concat()), Ok(()));
        assert!(check_sasl_initial(&[b"SCRAM-SHA-256\0".as_slice(), &[0, 0, 0, 9], b"ab"].concat()).is_err());
        assert!(check_sasl_initial(b"SCRAM-SHA-256\0\0").is_err());
    }

    #[test]
    fn startup_packets_are_checked_as_postgresql_checks_them() {
        let good = [&196608u32.to_be_bytes()[..], b"user\0bob\0database\0x\0\0"].concat();
        assert_eq!(check_startup(&good), Ok(false));
        assert!(check_startup(&good[..good.len() - 1]).is_err());
        assert!(check_startup(&[&196608u32.to_be_bytes()[..], b"user\0bob\0"].concat()).is_err());
        assert_eq!(check_startup(&80_877_103u32.to_be_bytes()), Ok(true));
        assert!(check_startup(&[&2u32.to_be_bytes()[..], b"\0"].concat()).is_err());
        let cancel = [CANCEL_REQUEST_CODE.to_be_bytes(), 7u32.to_be_bytes(), 9u32.to_be_bytes()].concat();
        assert_eq!(check_startup(&cancel), Ok(false));
    }

    async fn read_all(input: Vec<u8>, limit: usize) -> (Vec<u8>, Option<String>) {
        let mut c = Checked::new(input.as_slice(), BytesMut::new(), false, limit, false);
        let mut out = Vec::new();
        let mut buf = [0u8; 7];
        loop {
            match c.read(&mut buf).await {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(Refusal::of(&e).expect("a refusal").to_string())),
            }
        }
    }

    #[tokio::test]
    async fn whole_messages_pass_and_a_bad_one_stops_the_stream_after_the_good_ones() {
        let good = [typed(b'Q', b"select 1\0"), typed(b'S', b"")].concat();
        assert_eq!(read_all(good.clone(), 1000).await, (good.clone(), None));
        let bad = [good.clone(), typed(b'E', b"\0\0"), typed(b'S', b"")].concat();
        let (out, refusal) = read_all(bad, 1000).await;
        assert_eq!(out, good);
        assert!(refusal.unwrap().contains("past the end"));
        // A length below the header's own four bytes.
        let (_, refusal) = read_all(vec![b'Q', 0, 0, 0, 3], 1000).await;
        assert!(refusal.unwrap().contains("invalid message length 3"));
    }

    #[tokio::test]
    async fn a_message_over_the_limit_is_skipped_without_buffering_and_the_next_one_passes() {
        let long = typed(b'Q', &[vec![b'x'; 1 << 20], vec![0]].concat());
        let next = typed(b'Q', b"select 2\0");
        let input = [long, next.clone()].concat();
        let mut c = Checked::new(input.as_slice(), BytesMut::new(), false, 100, false);
        let mut buf = [0u8; 64];
        let e = c.read(&mut buf).await.unwrap_err();
        assert!(matches!(Refusal::of(&e), Some(Refusal::TooLong { kind: b'Q', len: 1_048_581, limit: 100 })));
        assert!(c.pending.capacity() < 64 << 10, "the long body was never held whole");
        let n = c.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], next.as_slice());
    }
}
