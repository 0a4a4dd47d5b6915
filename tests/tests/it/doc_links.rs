//! Every relative link and every repository path that README.md and the files of docs/ name
//! exists: a renamed file or a moved section cannot leave the docs pointing at nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking

use std::path::{Path, PathBuf};

use pvefleet_tests::doc_links::{Named, named};

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_link_and_path_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = vec![root.join("README.md")];
    markdown_under(&root.join("docs"), &mut files);
    files.sort();
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = file.parent().unwrap();
        for n in named(&text) {
            checked += 1;
            let (target, said) = match &n {
                Named::Link(t) => (dir.join(t), format!("link ({t})")),
                Named::Path(p) => (root.join(p), format!("path `{p}`")),
            };
            if !target.exists() {
                missing.push(format!(
                    "{}: {said} does not exist",
                    file.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links and paths found: the reader is broken"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
