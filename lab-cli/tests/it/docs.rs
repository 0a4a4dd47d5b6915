//! The `pvefleet-lab` binary's man page and completion scripts (`--generate`, for the lab
//! package): one page documents every subcommand, hidden flags stay hidden, bash and zsh
//! completions load.

use std::process::{Command, Output};

const LAB: &str = env!("CARGO_BIN_EXE_pvefleet-lab");

fn generated(kind: &str) -> String {
    let out: Output = Command::new(LAB)
        .args(["--generate", kind])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pvefleet-lab --generate {kind}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_man_page_documents_every_subcommand_on_one_page() {
    let page = generated("man");
    assert!(page.contains(".TH pvefleet-lab 1"), "{page}");
    for sub in ["demo", "sim run", "sim chaos"] {
        let heading = format!(".SS \"pvefleet\\-lab {sub}\"");
        assert!(page.contains(&heading), "{heading} missing:\n{page}");
    }
    assert!(
        page.contains("pvefleet\\fR(1)"),
        "SEE ALSO names the CLI:\n{page}"
    );
    assert!(!page.contains("\\-\\-generate"), "{page}");
    assert_eq!(page.matches(".ds Aq").count(), 2, "one preamble");
}

#[test]
fn completions_are_generated_for_bash_and_zsh() {
    let bash = generated("complete-bash");
    // clap_complete spells the function's `-` as `__`.
    assert!(bash.contains("_pvefleet__lab() {"), "{bash}");
    assert!(
        bash.contains("complete -F _pvefleet__lab ") && bash.contains(" pvefleet-lab\n"),
        "{bash}"
    );
    let zsh = generated("complete-zsh");
    assert!(zsh.starts_with("#compdef pvefleet-lab\n"), "{zsh}");
}
