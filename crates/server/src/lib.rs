//! Tabula's PostgreSQL wire server: psql, drivers and BI tools talk to it over pgwire.
//!
//! A connection gets its own [`handler::Handlers`]: the startup handler (trust authentication), the simple
//! and extended query handlers over one SQL session, and the cancel handler. Errors go out as
//! ErrorResponses with the SQLSTATE each error knows ([`errors`]); values in text or binary as each
//! column's format asks ([`wire`]).

pub mod auth;
mod connection;
mod copy_out;
pub mod deferred;
pub mod errors;
pub mod execute;
pub mod extended;
mod frames;
pub mod handler;
mod panics;
pub mod server;
pub mod wire;

pub use server::{start, RunningServer, ServerConfig};
