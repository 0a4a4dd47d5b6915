//! `pve-sim`: serve a simulated PVE cluster over HTTPS (thin main).
//!
//! `pve-sim serve` binds the listener(s), writes the certificate, the first API token and the
//! root password into the state directory, prints one JSON line when ready and serves until
//! Ctrl-C or SIGTERM. `pve-sim print-config` prints the default configuration as TOML. The
//! hidden `--generate man|complete-bash|complete-zsh` prints its man page or a completion
//! script (for the lab package).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, CommandFactory, Parser, Subcommand};
use daemon::generate::{self, Generate, ManExtras};
use pve_sim::server::{CertSource, Server, ServerConfig, TlsIdentity};
use pve_sim::{Sim, SimConfig};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(name = "pve-sim", version, about = "A simulated Proxmox VE cluster")]
struct Cli {
    /// Print the man page or a completion script on stdout (for packaging).
    #[arg(long, hide = true, value_enum, value_name = "KIND")]
    generate: Option<Generate>,
    #[command(subcommand)]
    command: Command,
}

/// The man page's ENVIRONMENT and SEE ALSO.
const MAN: ManExtras = ManExtras {
    files: &[],
    environment: &[(
        "RUST_LOG",
        "Log filter for the messages on stderr (default: warn).",
    )],
    see_also: &["pvefleet-lab(1)", "pvefleet-agent(1)"],
};

#[derive(Subcommand)]
enum Command {
    /// Serve the simulated cluster over HTTPS.
    Serve(ServeArgs),
    /// Print the default configuration (TOML).
    PrintConfig,
}

#[derive(Args)]
struct ServeArgs {
    /// Cluster configuration (TOML, see `print-config`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address of the main listener (it acts as the first node).
    #[arg(long, default_value = "127.0.0.1:8006")]
    listen: SocketAddr,
    /// Also serve every node on its own port: BASEPORT + index of the node (0 = any free
    /// port).
    #[arg(long, value_name = "BASEPORT")]
    per_node_listen: Option<u16>,
    /// Where the certificate, token and password files go (default: a fresh temp directory).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Task duration multiplier (0 = instant).
    #[arg(long)]
    time_scale: Option<f64>,
    /// Emit PVE's known type drift (numbers as strings).
    #[arg(long)]
    quirks: bool,
}

fn write_private(path: &Path, content: &str) -> Result<()> {
    std::fs::write(path, content).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("chmod {}", path.display()))?;
    }
    Ok(())
}

fn load_config(args: &ServeArgs) -> Result<SimConfig> {
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => SimConfig::default(),
    };
    if let Some(scale) = args.time_scale {
        config.time_scale = scale;
    }
    config.quirks |= args.quirks;
    Ok(config)
}

async fn serve(args: ServeArgs) -> Result<()> {
    let config = load_config(&args)?;
    let state_dir = match &args.state_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("pve-sim-{}", std::process::id())),
    };
    std::fs::create_dir_all(&state_dir)
        .with_context(|| format!("creating {}", state_dir.display()))?;
    let sim = Sim::new(config.clone()).context("building the simulated cluster")?;
    let nodes = sim.node_names();
    let Some(first) = nodes.first().cloned() else {
        bail!("the configuration has no nodes");
    };
    let identity = TlsIdentity::self_signed(&nodes, Some(&state_dir))?;

    let mut listeners = vec![(args.listen, first.clone())];
    if let Some(base) = args.per_node_listen {
        for (i, node) in nodes.iter().enumerate() {
            // Base port 0: every node listener gets its own free port.
            let port = if base == 0 {
                0
            } else {
                base.checked_add(u16::try_from(i).context("too many nodes")?)
                    .context("port out of range")?
            };
            listeners.push((SocketAddr::new(args.listen.ip(), port), node.clone()));
        }
    }
    let mut bound = Vec::new();
    for (listen, node) in listeners {
        let cert = CertSource::Identity(identity.clone());
        let server = Server::new(sim.clone(), ServerConfig { listen, node, cert });
        bound.push(server.bind().await?);
    }

    let token_file = match config.tokens.first() {
        Some(t) => {
            let path = state_dir.join("token");
            write_private(&path, &format!("{}!{}={}", t.userid, t.tokenid, t.secret))?;
            Some(path)
        }
        None => None,
    };
    let password_file = state_dir.join("root-password");
    write_private(&password_file, &config.root_password)?;

    let main = &bound[0];
    let per_node: Vec<serde_json::Value> = bound[1..]
        .iter()
        .map(|b| serde_json::json!({ "node": b.node(), "listen": b.local_addr().to_string() }))
        .collect();
    let mut ready = serde_json::json!({
        "listen": main.local_addr().to_string(),
        "node": main.node(),
        "cert": identity.cert_path().map(|p| p.display().to_string()),
        "fingerprint": identity.fingerprint_sha256(),
        "token_file": token_file.map(|p| p.display().to_string()),
        "password_file": password_file.display().to_string(),
    });
    if !per_node.is_empty() {
        ready["nodes"] = serde_json::Value::Array(per_node);
    }
    println!("{ready}");

    let shutdown = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    for b in bound {
        tasks.spawn(b.run(shutdown.clone()));
    }
    wait_for_signal().await?;
    shutdown.cancel();
    while let Some(done) = tasks.join_next().await {
        done.context("listener task")??;
    }
    Ok(())
}

async fn wait_for_signal() -> Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    Ok(())
}

fn main() -> ExitCode {
    if let Some(kind) = generate::requested::<Cli>("generate") {
        return generate::print(kind, Cli::command(), "pve-sim", &MAN);
    }
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:?}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match cli.command {
        Command::PrintConfig => {
            print!("{}", toml::to_string_pretty(&SimConfig::default())?);
            Ok(())
        }
        Command::Serve(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the runtime")?;
            runtime.block_on(serve(args))
        }
    }
}
