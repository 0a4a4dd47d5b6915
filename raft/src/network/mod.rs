//! The Raft network over `transport` (`Service::Raft`): the RPC messages, the client openraft
//! calls ([`Network`]) and the server handlers ([`register`]).

mod client;
mod failure;
pub mod messages;
mod peers;
mod server;

pub use client::{Network, PeerClient};
pub use server::register;
