//! Panics in connection threads: caught where a message is handled, logged once, and answered to that
//! client alone.
//!
//! A panic is a bug, but it must cost one connection, never the server: the connection's message loop
//! catches it, logs it once with the statement that raised it, sends the client a FATAL XX000 and ends the
//! connection (its session is dropped, which rolls its transaction back; its connection slot is a guard
//! that unwinding releases). The process-wide hook installed here keeps the standard library from printing
//! a second report for connection threads: it records where the panic happened for that one log line.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Once;

/// The name every connection thread's name starts with.
pub const CONNECTION_THREAD: &str = "tabula-conn-";

thread_local! {
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the hook once per process; panics in other threads are reported as before.
pub fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let ours = std::thread::current().name().is_some_and(|n| n.starts_with(CONNECTION_THREAD));
            if ours {
                let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
                LOCATION.with(|l| *l.borrow_mut() = Some(at));
            } else {
                previous(info);
            }
        }));
    });
}

/// A caught panic as one line: its message and, when the hook saw it, where it was raised.
pub fn describe(payload: &(dyn Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into());
    match LOCATION.with(|l| l.borrow_mut().take()) {
        Some(at) if !at.is_empty() => format!("{message} (at {at})"),
        _ => message,
    }
}
