//! Any bytes from a client, through the server's message check (`crates/server/src/frames.rs`) and then
//! pgwire's decoders, as a connection reads them: the check refuses what it must (an error ends the
//! connection), and pgwire's decoders never panic on what it lets through.
#![no_main]

#[path = "../../crates/server/src/frames.rs"]
#[allow(dead_code)]
mod frames;

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use pgwire::messages::{DecodeContext, PgWireFrontendMessage};
use tokio::io::AsyncReadExt;

fuzz_target!(|data: &[u8]| {
    // The first byte chooses SCRAM or not; the rest is what the client sends after its startup packet.
    let Some((&choice, sent)) = data.split_first() else { return };
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut passed = Vec::new();
    let mut checked = frames::Checked::new(sent, BytesMut::new(), false, 1 << 16, choice & 1 == 1);
    // Stops at the first refusal, as the connection does; what came before it was handed on.
    let _ = rt.block_on(checked.read_to_end(&mut passed));
    let mut ctx = DecodeContext::default();
    ctx.awaiting_frontend_ssl = false;
    ctx.awaiting_frontend_startup = false;
    let mut buf = BytesMut::from(&passed[..]);
    while let Ok(Some(_)) = PgWireFrontendMessage::decode(&mut buf, &ctx) {}
});
