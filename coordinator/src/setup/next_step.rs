//! What `init` and `join` tell the operator to do next: start the member. On a packaged host
//! the systemd unit serves the data directory of `/etc/pvefleet/coordinator.toml` and waits
//! for its certificate, so enabling it is the step; any other directory (a test, a second
//! member on one machine) is started with `run`.

use std::path::Path;

use crate::config::file::DEFAULT_CONFIG_PATH;

/// The systemd unit of a coordinator member.
pub const UNIT: &str = "pvefleet-coordinator";

/// The command that starts the member in `data_dir`: enabling the unit when it serves that
/// directory (`unit_data_dir`: the `data_dir` of [`DEFAULT_CONFIG_PATH`]), else `run` with
/// the directory and the configuration (`config`, if not the default) spelled out.
pub fn start_command(data_dir: &Path, unit_data_dir: &Path, config: Option<&Path>) -> String {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let default_config = config.is_none_or(|c| same(c, Path::new(DEFAULT_CONFIG_PATH)));
    if default_config && same(data_dir, unit_data_dir) {
        return format!("systemctl enable --now {UNIT}");
    }
    let mut command = format!(
        "pvefleet-coordinator run --data-dir {}",
        shell_word(&data_dir.to_string_lossy())
    );
    if let Some(config) = config.filter(|_| !default_config) {
        command.push_str(&format!(
            " --config {}",
            shell_word(&config.to_string_lossy())
        ));
    }
    command
}

/// `word` as one POSIX shell word: unchanged when it has only safe characters, else in single
/// quotes.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:@%+=,".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_starts_the_member_only_in_the_directory_it_serves() {
        let unit = Path::new("/var/lib/pvefleet/coordinator");
        assert_eq!(
            start_command(unit, unit, None),
            "systemctl enable --now pvefleet-coordinator"
        );
        assert_eq!(
            start_command(unit, unit, Some(Path::new(DEFAULT_CONFIG_PATH))),
            "systemctl enable --now pvefleet-coordinator"
        );
        assert_eq!(
            start_command(Path::new("/tmp/c 1"), unit, None),
            "pvefleet-coordinator run --data-dir '/tmp/c 1'"
        );
        // Another configuration is not the unit's, whatever directory it names.
        assert_eq!(
            start_command(unit, unit, Some(Path::new("/tmp/c.toml"))),
            "pvefleet-coordinator run --data-dir /var/lib/pvefleet/coordinator --config \
             /tmp/c.toml"
        );
    }
}
