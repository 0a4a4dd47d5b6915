//! Man pages and shell completions generated from the binaries' clap definitions, so they
//! can never disagree with `--help`: each binary takes a hidden `--generate KIND` (ripgrep's
//! model) and the packaging runs `<bin> --generate man > <bin>.1` and so on at build time.
//! `pvefleet`, `pvefleet-coordinator` and `pvefleet-agent` all use this one copy.
//!
//! The flag is declared in each binary's clap definition, but a required subcommand would
//! refuse it alone; so [`requested`] first parses the command line with the subcommand made
//! optional and only then does the binary parse it normally.

use std::io::Write;

use clap::{CommandFactory, ValueEnum};

/// What `--generate` writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// The man page (roff, section 1).
    Man,
    /// The bash completion script.
    CompleteBash,
    /// The zsh completion script (`_<bin>`).
    CompleteZsh,
}

/// The sections of a man page that clap does not know: files, environment, related pages.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManExtras {
    /// Files the program reads or writes: (path, what it is).
    pub files: &'static [(&'static str, &'static str)],
    /// Environment variables it reads: (name, what it does).
    pub environment: &'static [(&'static str, &'static str)],
    /// Related man pages, e.g. `pvefleet(1)`.
    pub see_also: &'static [&'static str],
}

/// The kind asked for when the command line is `--generate KIND` (with no subcommand needed);
/// `None` for any other command line, which the caller then parses as usual (so help and
/// errors come out exactly as without this flag).
pub fn requested<P: CommandFactory>(id: &str) -> Option<Generate> {
    let matches = P::command()
        .subcommand_required(false)
        .arg_required_else_help(false)
        .try_get_matches()
        .ok()?;
    matches.get_one::<Generate>(id).copied()
}

/// Renders `kind` for `cmd` (named `bin`).
pub fn render(kind: Generate, cmd: clap::Command, bin: &str, extras: &ManExtras) -> Vec<u8> {
    let mut cmd = cmd.bin_name(bin);
    let mut out = Vec::new();
    match kind {
        Generate::Man => out = man_page(cmd, extras).into_bytes(),
        Generate::CompleteBash => {
            clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, bin, &mut out);
        }
        Generate::CompleteZsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, bin, &mut out);
        }
    }
    out
}

/// Writes `kind` for `cmd` on stdout; the process's exit code (1 if stdout failed).
pub fn print(
    kind: Generate,
    cmd: clap::Command,
    bin: &str,
    extras: &ManExtras,
) -> std::process::ExitCode {
    let text = render(kind, cmd, bin, extras);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&text).and_then(|()| stdout.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The reader (e.g. `| head`) had enough: nothing to report.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// One page for the whole program: clap_mangen's sections of the top command, then a
/// COMMANDS section with every leaf subcommand's synopsis, description and options (clap_mangen
/// alone would refer to a page per subcommand, which is not shipped), then the extras.
fn man_page(cmd: clap::Command, extras: &ManExtras) -> String {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut roff = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render_title(&mut roff);
    let _ = man.render_name_section(&mut roff);
    let _ = man.render_synopsis_section(&mut roff);
    let _ = man.render_description_section(&mut roff);
    let _ = man.render_options_section(&mut roff);
    let mut page = String::from_utf8_lossy(&roff).into_owned();
    if cmd.has_subcommands() {
        page.push_str(".SH COMMANDS\n");
        commands_section(&cmd, &mut page);
    }
    page.push_str(&extra_sections(extras));
    without_repeated_preamble(&page)
}

/// Every visible leaf below `cmd` as a subsection named by its full command line. Options
/// shared by all (global ones, help) are listed once, under the top command.
fn commands_section(cmd: &clap::Command, page: &mut String) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.has_subcommands() {
            commands_section(sub, page);
            continue;
        }
        let path = sub.get_bin_name().unwrap_or_else(|| sub.get_name());
        page.push_str(&format!(".SS \"{}\"\n", escape(path)));
        let sub = sub.clone().mut_args(|arg| {
            let shared = arg.is_global_set() || matches!(arg.get_id().as_str(), "help" | "version");
            if shared { arg.hide(true) } else { arg }
        });
        let man = clap_mangen::Man::new(sub);
        let mut roff = Vec::new();
        let _ = man.render_synopsis_section(&mut roff);
        let _ = man.render_description_section(&mut roff);
        let _ = man.render_options_section(&mut roff);
        let text = String::from_utf8_lossy(&roff);
        // Their own section headings would end COMMANDS: paragraphs of the subsection instead.
        for line in text.lines() {
            page.push_str(if line.starts_with(".SH ") {
                ".PP"
            } else {
                line
            });
            page.push('\n');
        }
    }
}

/// roff's string definitions are written before each rendered part; once is enough.
fn without_repeated_preamble(page: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut out = String::with_capacity(page.len());
    for line in page.lines() {
        let preamble = line.starts_with(".ie \\n(.g .ds Aq") || line.starts_with(".el .ds Aq");
        if preamble && !seen.insert(line.to_string()) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// FILES, ENVIRONMENT and SEE ALSO in roff.
fn extra_sections(extras: &ManExtras) -> String {
    let mut roff = String::new();
    let mut section = |title: &str, items: &[(&str, &str)]| {
        if items.is_empty() {
            return;
        }
        roff.push_str(&format!(".SH {title}\n"));
        for (term, text) in items {
            roff.push_str(&format!(
                ".TP\n\\fB{}\\fR\n{}\n",
                escape(term),
                escape(text)
            ));
        }
    };
    section("FILES", extras.files);
    section("ENVIRONMENT", extras.environment);
    if !extras.see_also.is_empty() {
        let pages: Vec<String> = extras
            .see_also
            .iter()
            .map(|page| match page.split_once('(') {
                Some((name, rest)) => format!("\\fB{}\\fR({rest}", escape(name)),
                None => escape(page),
            })
            .collect();
        roff.push_str(&format!(".SH \"SEE ALSO\"\n{}\n", pages.join(", ")));
    }
    roff
}

/// Plain text as roff: backslashes and hyphens escaped, no line taken for a request.
fn escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_sections_are_roff_with_escaped_text() {
        let extras = ManExtras {
            files: &[("/etc/pvefleet/a.toml", "the file; see -x")],
            environment: &[("RUST_LOG", ".dotted \\ text")],
            see_also: &["pvefleet-agent(1)"],
        };
        let roff = extra_sections(&extras);
        assert!(
            roff.contains(".SH FILES\n.TP\n\\fB/etc/pvefleet/a.toml\\fR\nthe file; see \\-x\n")
        );
        assert!(roff.contains(".SH ENVIRONMENT\n.TP\n\\fBRUST_LOG\\fR\n\\&.dotted \\e text\n"));
        assert!(
            roff.contains(".SH \"SEE ALSO\"\n\\fBpvefleet\\-agent\\fR(1)\n"),
            "{roff}"
        );
        assert_eq!(extra_sections(&ManExtras::default()), "");
    }
}
