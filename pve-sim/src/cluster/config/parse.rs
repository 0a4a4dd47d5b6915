//! Reading a config file's text back (`parse_vm_config`), for the config a remote migration
//! sends through its tunnel: leading `#` lines are the description (`decode_text`), then
//! `key: value` lines; the sections after the first `[...]` header (`[PENDING]`, snapshots)
//! are dropped, as the tunnel's `config` command drops them.

use super::text::VmConfig;

/// `PVE::Tools::decode_text`: `%XX` escapes back to bytes.
fn decode_text(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The current section of a config file's text.
pub(crate) fn parse_main(vmid: u32, text: &str) -> Result<VmConfig, String> {
    let mut conf = VmConfig::default();
    let mut description: Option<String> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('[') {
            break;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let d = description.get_or_insert_with(String::new);
            d.push_str(&decode_text(comment));
            d.push('\n');
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("vm {vmid} - unable to parse config: {line}"));
        };
        let key = key.trim();
        let valid = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!("vm {vmid} - unable to parse config: {line}"));
        }
        conf.set(key, value.trim());
    }
    if let Some(d) = description {
        conf.set("description", d);
    }
    Ok(conf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rendered_text_parses_back() {
        let mut c = VmConfig::default();
        c.set("name", "web1");
        c.set("net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0");
        c.set("description", "first line\nsecond: with colon\n");
        c.snapshots.insert("s1".into(), c.main.clone());
        let parsed = parse_main(100, &c.render()).unwrap();
        assert_eq!(parsed.main, c.main);
        assert!(parsed.snapshots.is_empty());
        assert_eq!(
            parse_main(100, "name web1").unwrap_err(),
            "vm 100 - unable to parse config: name web1"
        );
    }
}
