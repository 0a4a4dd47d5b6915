//! The `pvefleet` binary's man page and completion scripts (`--generate`, for packaging): one
//! page documents every subcommand, hidden flags stay hidden, bash and zsh completions load.

use std::process::{Command, Output};

const CLI: &str = env!("CARGO_BIN_EXE_pvefleet");

fn generated(kind: &str) -> String {
    let out: Output = Command::new(CLI)
        .args(["--generate", kind])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pvefleet --generate {kind}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_man_page_documents_every_subcommand_on_one_page() {
    let cli = generated("man");
    assert!(cli.contains(".TH pvefleet 1"), "{cli}");
    for sub in [
        "cluster status",
        "member add",
        "token create",
        "admin ls",
        "admin add",
        "admin revoke",
        "vm apply",
        "vm explain",
        "pool ls",
        "range ls",
        "vip ls",
        "host ls",
        "events",
        "alloc vmid",
        "alloc release",
    ] {
        let heading = format!(".SS \"pvefleet {sub}\"");
        assert!(cli.contains(&heading), "{heading} missing:\n{cli}");
    }
    // Simulated fleets are the lab package's (`pvefleet-lab demo`, `pvefleet-lab sim ...`).
    for sub in ["demo", "sim run", "sim chaos"] {
        let heading = format!(".SS \"pvefleet {sub}\"");
        assert!(!cli.contains(&heading), "{heading} is the lab's:\n{cli}");
    }
    // Hidden flags stay hidden; no page is referred to that is not shipped.
    assert!(!cli.contains("\\-\\-generate"), "{cli}");
    assert!(!cli.contains("\\-help(1)"), "{cli}");
    assert_eq!(cli.matches(".ds Aq").count(), 2, "one preamble");
}

#[test]
fn completions_are_generated_for_bash_and_zsh() {
    let bash = generated("complete-bash");
    assert!(bash.contains("_pvefleet() {"), "{bash}");
    assert!(
        bash.contains("complete -F _pvefleet ") && bash.contains("pvefleet"),
        "{bash}"
    );
    let zsh = generated("complete-zsh");
    assert!(zsh.starts_with("#compdef pvefleet\n"), "{zsh}");
}
