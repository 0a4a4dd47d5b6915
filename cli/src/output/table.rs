//! Plain-text layouts: a table whose columns are aligned to their widest cell (header in
//! capitals, three spaces between columns, no trailing spaces), and a block of `key:  value`
//! lines aligned on the values.

/// Rows under a header, rendered with aligned columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

/// Space between two columns.
const GAP: &str = "   ";

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are blank, extra cells are dropped.
    pub fn row(&mut self, cells: Vec<String>) -> &mut Table {
        let mut cells = cells;
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
        self
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as lines, each ending with a newline.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let mut out = String::new();
        let header: Vec<String> = self.headers.iter().map(|h| h.to_string()).collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str(GAP);
                }
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', w - width(cell)));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `key:  value` lines, values aligned one column after the longest key.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let key_width = pairs.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in pairs {
        let pad = key_width - width(key);
        let line = format!("{key}:{}  {value}", " ".repeat(pad));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Display width of a cell: characters, so `→` or `é` count as one.
fn width(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell_without_trailing_spaces() {
        let mut t = Table::new(&["NAME", "STATE", "NOTE"]);
        t.row(vec!["web-1".into(), "running".into(), String::new()]);
        t.row(vec!["db".into(), "-".into(), "é ok".into()]);
        assert_eq!(
            t.render(),
            "NAME    STATE     NOTE\n\
             web-1   running\n\
             db      -         é ok\n"
        );
    }

    #[test]
    fn fields_align_values() {
        assert_eq!(
            fields(&[("name", "web-1".into()), ("generation", "3".into())]),
            "name:        web-1\ngeneration:  3\n"
        );
    }
}
