//! The few etcd v3 gRPC calls the comparison makes (KV `Put`, `DeleteRange`, `Range`;
//! Maintenance `Status`) over tonic. The messages are written out from etcd's
//! `api/etcdserverpb/rpc.proto` and `api/mvccpb/kv.proto` with the field numbers used there;
//! fields the bench does not use are left out (protobuf skips unknown fields), so building the
//! bench needs no `protoc`.

use std::time::Duration;

use http::uri::PathAndQuery;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Request, Status};

/// Every response's header.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ResponseHeader {
    #[prost(uint64, tag = "1")]
    pub(crate) cluster_id: u64,
    /// The member that answered.
    #[prost(uint64, tag = "2")]
    pub(crate) member_id: u64,
    /// The store's revision when the request was served.
    #[prost(int64, tag = "3")]
    pub(crate) revision: i64,
    #[prost(uint64, tag = "4")]
    pub(crate) raft_term: u64,
}

/// One key as stored (`mvccpb.KeyValue`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct KeyValue {
    #[prost(bytes = "vec", tag = "1")]
    pub(crate) key: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub(crate) mod_revision: i64,
    #[prost(bytes = "vec", tag = "5")]
    pub(crate) value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PutRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub(crate) key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub(crate) value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PutResponse {
    #[prost(message, optional, tag = "1")]
    pub(crate) header: Option<ResponseHeader>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DeleteRangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub(crate) key: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DeleteRangeResponse {
    #[prost(message, optional, tag = "1")]
    pub(crate) header: Option<ResponseHeader>,
    /// How many keys were deleted.
    #[prost(int64, tag = "2")]
    pub(crate) deleted: i64,
}

/// One key; `serializable` false (the default) asks for a linearizable read.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub(crate) key: Vec<u8>,
    #[prost(bool, tag = "7")]
    pub(crate) serializable: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RangeResponse {
    #[prost(message, optional, tag = "1")]
    pub(crate) header: Option<ResponseHeader>,
    #[prost(message, repeated, tag = "2")]
    pub(crate) kvs: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StatusRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StatusResponse {
    #[prost(message, optional, tag = "1")]
    pub(crate) header: Option<ResponseHeader>,
    /// The server's version (`3.4.23`).
    #[prost(string, tag = "2")]
    pub(crate) version: String,
    /// The leader's member id (0: none known).
    #[prost(uint64, tag = "4")]
    pub(crate) leader: u64,
}

/// The client side of etcd's client mutual TLS: the CA that signed the members' certificates
/// and the client's own certificate and key (PEM).
#[derive(Clone, Debug)]
pub(crate) struct ClientTls {
    pub(crate) ca_pem: String,
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One HTTP/2 connection to one etcd member.
#[derive(Clone, Debug)]
pub(crate) struct EtcdClient {
    grpc: tonic::client::Grpc<Channel>,
}

impl EtcdClient {
    /// Connects to `url` (`http://` or, with `tls`, `https://`; the members' certificates name
    /// `localhost` and 127.0.0.1).
    pub(crate) async fn connect(url: &str, tls: Option<&ClientTls>) -> Result<Self, String> {
        let mut endpoint = Endpoint::from_shared(url.to_string())
            .map_err(|e| format!("{url}: {e}"))?
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(CALL_TIMEOUT);
        if let Some(tls) = tls {
            let config = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(&tls.ca_pem))
                .identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem))
                .domain_name("localhost");
            endpoint = endpoint
                .tls_config(config)
                .map_err(|e| format!("{url}: TLS configuration: {e}"))?;
        }
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| format!("connecting to {url}: {e:?}"))?;
        Ok(Self {
            grpc: tonic::client::Grpc::new(channel),
        })
    }

    async fn unary<Q, R>(&mut self, path: &'static str, request: Q) -> Result<R, Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        R: prost::Message + Default + Send + Sync + 'static,
    {
        self.grpc
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("channel not ready: {e}")))?;
        let codec = tonic_prost::ProstCodec::<Q, R>::default();
        let reply = self
            .grpc
            .unary(
                Request::new(request),
                PathAndQuery::from_static(path),
                codec,
            )
            .await?;
        Ok(reply.into_inner())
    }

    /// `KV.Put`.
    pub(crate) async fn put(&mut self, key: &str, value: &str) -> Result<PutResponse, Status> {
        let request = PutRequest {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
        };
        self.unary("/etcdserverpb.KV/Put", request).await
    }

    /// `KV.DeleteRange` of one key.
    pub(crate) async fn delete(&mut self, key: &str) -> Result<DeleteRangeResponse, Status> {
        let request = DeleteRangeRequest {
            key: key.as_bytes().to_vec(),
        };
        self.unary("/etcdserverpb.KV/DeleteRange", request).await
    }

    /// `KV.Range` of one key, linearizable (`serializable = false`, etcd's default).
    pub(crate) async fn get(&mut self, key: &str) -> Result<RangeResponse, Status> {
        let request = RangeRequest {
            key: key.as_bytes().to_vec(),
            serializable: false,
        };
        self.unary("/etcdserverpb.KV/Range", request).await
    }

    /// `Maintenance.Status` of the member this client is connected to.
    pub(crate) async fn status(&mut self) -> Result<StatusResponse, Status> {
        self.unary("/etcdserverpb.Maintenance/Status", StatusRequest {})
            .await
    }
}
