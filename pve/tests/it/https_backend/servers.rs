//! Small HTTPS servers on 127.0.0.1: one answering through a handler and recording what it
//! saw, one misbehaving at the socket level (silent, closing, truncating).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hyper::body::{Body as _, Incoming};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: Option<String>,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: String,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

/// What the server answers: status, optional custom reason phrase, body.
pub(crate) struct Answer(
    pub(crate) u16,
    pub(crate) Option<&'static str>,
    pub(crate) String,
);

pub(crate) type Handler = Arc<dyn Fn(&Seen) -> Answer + Send + Sync>;

pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

pub(crate) async fn read_body(mut body: Incoming) -> String {
    let mut out = Vec::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        if let Ok(data) = frame.unwrap().into_data() {
            out.extend_from_slice(&data);
        }
    }
    String::from_utf8(out).unwrap()
}

/// An HTTPS server answering every request with `handler`.
pub(crate) async fn serve(acceptor: TlsAcceptor, handler: Handler) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, handler, log) = (acceptor.clone(), handler.clone(), log.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let (handler, log) = (handler.clone(), log.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let seen = Seen {
                            method: parts.method.to_string(),
                            path: parts.uri.path().to_string(),
                            query: parts.uri.query().map(str::to_string),
                            headers: parts.headers,
                            body: read_body(body).await,
                        };
                        let Answer(status, reason, body) = handler(&seen);
                        log.lock().unwrap().push(seen);
                        let mut resp = hyper::Response::new(body);
                        *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                        if let Some(reason) = reason {
                            resp.extensions_mut().insert(
                                hyper::ext::ReasonPhrase::try_from(reason.as_bytes()).unwrap(),
                            );
                        }
                        Ok::<_, std::convert::Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Server { addr, seen }
}

pub(crate) async fn serve_ok(acceptor: TlsAcceptor) -> Server {
    serve(
        acceptor,
        Arc::new(|_: &Seen| Answer(200, None, r#"{"data":{"version":"9.1.1"}}"#.into())),
    )
    .await
}

/// How a misbehaving server treats a request after the TLS handshake.
#[derive(Clone, Copy)]
pub(crate) enum Misbehave {
    NeverAnswer,
    CloseWithoutAnswer,
    TruncatedBody,
}

pub(crate) async fn serve_raw(acceptor: TlsAcceptor, how: Misbehave) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                match how {
                    Misbehave::NeverAnswer => {
                        // Hold the connection open until the client gives up.
                        while let Ok(n) = tls.read(&mut chunk).await {
                            if n == 0 {
                                return;
                            }
                        }
                    }
                    Misbehave::CloseWithoutAnswer => {
                        let _ = tls.shutdown().await;
                    }
                    Misbehave::TruncatedBody => {
                        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"data\":";
                        let _ = tls.write_all(head).await;
                        let _ = tls.flush().await;
                        let _ = tls.shutdown().await;
                    }
                }
            });
        }
    });
    addr
}
