//! What the project's Markdown says exists: the targets of its relative links
//! (`[text](path#anchor)`) and the repository paths it names in backticks (`lab/src/chaos.rs`),
//! so a test can check each one (tests/tests/it/doc_links.rs). Pure.

/// The workspace's top-level folders: a backticked path that starts with one of them is a
/// path of this repository (others, such as PVE's `src/PVE/HA/Manager.pm`, are not ours).
pub const TOP: [&str; 18] = [
    "bootstrap",
    "cli",
    "client",
    "coordinator",
    "daemon",
    "docs",
    "examples",
    "fleet",
    "lab",
    "lab-cli",
    "node-agent",
    "packaging",
    "protocol",
    "pve",
    "pve-sim",
    "raft",
    "tests",
    "transport",
];

/// A thing the text says exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A relative link's target, relative to the file's folder (anchor dropped).
    Link(String),
    /// A repository path in backticks, relative to the repository's root.
    Path(String),
}

/// Everything `text` names, in order. Links to a URL (`scheme:`), to an anchor of the same
/// file (`#...`) and to an absolute path are not relative links; fenced code blocks are left out.
pub fn named(text: &str) -> Vec<Named> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split('#').next().unwrap_or_default().trim();
            rest = &rest[end..];
            if !target.is_empty() && !target.contains(':') && !target.starts_with('/') {
                out.push(Named::Link(target.to_string()));
            }
        }
        let mut parts = line.split('`');
        // Odd pieces are inside backticks.
        parts.next();
        while let Some(inside) = parts.next() {
            if is_repo_path(inside) {
                out.push(Named::Path(inside.to_string()));
            }
            parts.next();
        }
    }
    out
}

/// Whether `s` is a path of this repository: a top-level folder, then at least one more part,
/// no spaces, wildcards or placeholders.
fn is_repo_path(s: &str) -> bool {
    let Some((first, more)) = s.split_once('/') else {
        return false;
    };
    TOP.contains(&first)
        && !more.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'))
        && !s.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links_and_repository_paths_are_named_and_the_rest_is_not() {
        let text = "See [the design](design/vips.md#splits), [PVE](https://pve.proxmox.com/x.md), \
                    [above](#top) and `lab/src/chaos.rs`, not `src/PVE/HA/Manager.pm`, \
                    `tests/scenarios/*.toml` or `make verify`.\n\
                    ```text\n[no](inside/a/block.md) `lab/none.rs`\n```\n\
                    Then `docs/`.";
        assert_eq!(
            named(text),
            [
                Named::Link("design/vips.md".into()),
                Named::Path("lab/src/chaos.rs".into()),
            ]
        );
    }
}
