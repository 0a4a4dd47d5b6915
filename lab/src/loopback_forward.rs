//! How an agent in a network namespace of its own reaches its PVE process, which listens on
//! the lab's loopback: the same port of the namespace's loopback is forwarded to it. A thread
//! moves into the namespace only to make the listener (a socket belongs to the namespace it
//! was made in, for good); the lab's runtime accepts on it and dials the simulator from the
//! lab's own namespace, so the agent's `https://127.0.0.1:PORT` and the simulator's
//! certificate work unchanged, and a partition between hosts never cuts a node from its own
//! API (as on a real PVE host).
//!
//! ```text
//!  host namespace: agent ─▶ 127.0.0.1:PORT (listener made in the namespace)
//!                                 │ accepted by the lab's runtime
//!  lab namespace:                 └─▶ 127.0.0.1:PORT pve-sim (copied both ways)
//! ```

use std::net::{Ipv4Addr, SocketAddr, TcpListener};

use tokio::task::JoinHandle;

use crate::error::LabError;
use crate::netns::enter;

/// A forward of one port; it ends (its listener closed, its connections cut) when dropped.
#[derive(Debug)]
pub struct LoopbackForward {
    netns: String,
    port: u16,
    task: JoinHandle<()>,
}

impl LoopbackForward {
    /// Forwards `127.0.0.1:port` of the namespace `netns` to `127.0.0.1:port` of the calling
    /// thread's namespace. Needs a Tokio runtime.
    ///
    /// # Errors
    /// [`LabError::Enter`] if the namespace cannot be entered, [`LabError::Spawn`] if the
    /// listener cannot be made there.
    pub fn start(netns: &str, port: u16) -> Result<LoopbackForward, LabError> {
        let at = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let name = netns.to_string();
        let made = std::thread::scope(|s| {
            s.spawn(|| -> Result<TcpListener, LabError> {
                enter(&name)?;
                let listener = TcpListener::bind(at).map_err(|source| LabError::Spawn {
                    what: format!("a forward of {at} in {name}"),
                    source,
                })?;
                listener
                    .set_nonblocking(true)
                    .map_err(|source| LabError::Spawn {
                        what: format!("a forward of {at} in {name}"),
                        source,
                    })?;
                Ok(listener)
            })
            .join()
        });
        let listener = made.map_err(|_| {
            LabError::NoSuchPart(format!("the thread making a forward in {netns} panicked"))
        })??;
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|source| LabError::Spawn {
                what: format!("a forward of {at} in {netns}"),
                source,
            })?;
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    // Out of descriptors or the like: no spinning while it lasts.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                };
                conns.spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(at).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                // Finished copies are reaped as new connections come.
                while conns.try_join_next().is_some() {}
            }
        });
        Ok(LoopbackForward {
            netns: netns.to_string(),
            port,
            task,
        })
    }

    /// The namespace and the port.
    pub fn forwards(&self) -> (&str, u16) {
        (&self.netns, self.port)
    }
}

impl Drop for LoopbackForward {
    fn drop(&mut self) {
        // Aborting the task drops the listener and the JoinSet, which aborts every copy.
        self.task.abort();
    }
}
