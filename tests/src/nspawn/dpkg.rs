//! The package's dependencies against what a container has: the container has no network,
//! so `dpkg -i` must succeed with what minbase + systemd installed. Checking `Depends:` first
//! turns a dependency problem into a message naming the package and the version, instead of
//! dpkg's "leaving unconfigured".

use std::path::Path;
use std::process::Command;

use super::container::Container;

/// One alternative of a `Depends:` entry: `name` or `name (op version)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The package name (without an architecture qualifier).
    pub name: String,
    /// `(">=", "2.34")` when versioned.
    pub version: Option<(String, String)>,
}

/// A `Depends:` field: every entry must hold, an entry holds when one alternative does.
pub fn parse_depends(field: &str) -> Vec<Vec<Dependency>> {
    field
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|entry| {
            entry
                .split('|')
                .map(|alt| parse_alternative(alt.trim()))
                .collect()
        })
        .collect()
}

fn parse_alternative(alt: &str) -> Dependency {
    let (name, version) = match alt.split_once('(') {
        Some((name, rest)) => {
            let inner = rest.trim_end_matches(')').trim();
            let split = inner
                .find(|c: char| !matches!(c, '<' | '>' | '='))
                .unwrap_or(inner.len());
            let (op, ver) = inner.split_at(split);
            (name.trim(), Some((op.to_string(), ver.trim().to_string())))
        }
        None => (alt, None),
    };
    let name = name.split(':').next().unwrap_or(name).to_string();
    Dependency { name, version }
}

/// A control field of a `.deb` on the host (`dpkg-deb -f`), empty when absent.
pub fn control_field(deb: &Path, field: &str) -> String {
    let out = Command::new("dpkg-deb")
        .arg("-f")
        .arg(deb)
        .arg(field)
        .output()
        .expect("dpkg-deb runs");
    assert!(
        out.status.success(),
        "dpkg-deb -f {} {field}: {}",
        deb.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The entries of `depends` that no installed package of the container satisfies, each with
/// what is installed instead.
pub fn unsatisfied(container: &Container, depends: &[Vec<Dependency>]) -> Vec<String> {
    depends
        .iter()
        .filter_map(|entry| {
            let mut seen = Vec::new();
            for alt in entry {
                let installed = installed_version(container, &alt.name);
                let ok = match (&installed, &alt.version) {
                    (None, _) => false,
                    (Some(_), None) => true,
                    (Some(have), Some((op, want))) => container
                        .exec(&["dpkg", "--compare-versions", have, op_word(op), want])
                        .status
                        .success(),
                };
                if ok {
                    return None;
                }
                seen.push(format!(
                    "{} {}",
                    alt.name,
                    installed.as_deref().unwrap_or("not installed")
                ));
            }
            Some(format!("{entry:?} (found: {})", seen.join(", ")))
        })
        .collect()
}

/// The installed version of `package` in the container, if it is installed.
pub fn installed_version(container: &Container, package: &str) -> Option<String> {
    let out = container.exec(&[
        "dpkg-query",
        "-W",
        "-f=${db:Status-Abbrev}|${Version}",
        package,
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (status, version) = text.split_once('|')?;
    (out.status.success() && status.starts_with("ii")).then(|| version.trim().to_string())
}

/// dpkg's relation operators as `--compare-versions` spells them.
fn op_word(op: &str) -> &'static str {
    match op {
        ">=" => "ge",
        "<=" => "le",
        ">>" => "gt",
        "<<" => "lt",
        _ => "eq",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(name: &str, version: Option<(&str, &str)>) -> Dependency {
        Dependency {
            name: name.into(),
            version: version.map(|(o, v)| (o.into(), v.into())),
        }
    }

    #[test]
    fn versioned_entries_and_alternatives_are_parsed() {
        let parsed = parse_depends("libc6 (>= 2.34), libgcc-s1 (>=4.2), adduser | passwd:any");
        assert_eq!(
            parsed,
            vec![
                vec![dep("libc6", Some((">=", "2.34")))],
                vec![dep("libgcc-s1", Some((">=", "4.2")))],
                vec![dep("adduser", None), dep("passwd", None)],
            ]
        );
        assert!(parse_depends("").is_empty());
    }

    #[test]
    fn relation_operators_map_to_compare_versions_words() {
        assert_eq!(op_word(">="), "ge");
        assert_eq!(op_word("<<"), "lt");
        assert_eq!(op_word("="), "eq");
    }
}
