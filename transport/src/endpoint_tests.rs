//! Endpoint internals a `Server` relies on: once it stopped accepting, reloading the
//! certificate must not start accepting again (nobody would serve those connections).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, SanType,
};

use super::*;
use crate::identity::cert_names;

/// A CA and a coordinator leaf for `id` under it, as transport reads them.
fn material(ca: &(String, Issuer<'static, KeyPair>), id: u64) -> TlsMaterial {
    let names = cert_names(Role::Coordinator, id);
    let mut params = CertificateParams::new(vec![names.dns]).unwrap();
    params
        .subject_alt_names
        .push(SanType::URI(names.uri.as_str().try_into().unwrap()));
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.1).unwrap();
    TlsMaterial::new(ca.0.clone(), cert.pem(), key.serialize_pem())
}

fn new_ca() -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

fn cfg() -> TransportConfig {
    TransportConfig {
        connect_timeout: Duration::from_secs(2),
        ..TransportConfig::default()
    }
}

/// Whether `server` surfaces an incoming connection while `client` dials it.
async fn accepts_a_dial(server: &Endpoint, client: &Endpoint) -> bool {
    let addr = server.local_addr().unwrap();
    let dial = client.connect(addr, PeerIdentity::coordinator(1), Service::Raft);
    let accept = tokio::time::timeout(cfg().connect_timeout, server.quic().accept());
    let (accepted, _dialed) = tokio::join!(accept, dial);
    match accepted {
        Ok(Some(incoming)) => {
            incoming.refuse();
            true
        }
        _ => false,
    }
}

#[tokio::test]
async fn reload_after_the_server_stopped_accepting_keeps_it_stopped() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = new_ca();
    let loopback: SocketAddr = (Ipv4Addr::LOCALHOST, 0).into();
    let server = Endpoint::server(loopback, &material(&ca, 1), &[Service::Raft], cfg()).unwrap();
    let client = Endpoint::client_on(loopback, &material(&ca, 2), cfg()).unwrap();
    // The check itself works: a serving endpoint surfaces the dial.
    assert!(accepts_a_dial(&server, &client).await);

    server.stop_accepting();
    server.reload(&material(&ca, 1)).unwrap();
    assert!(!accepts_a_dial(&server, &client).await);
}
