//! Plain-text layouts: a table whose columns are aligned to their widest cell (header in
//! capitals, three spaces between columns, no trailing spaces), and a block of `key:  value`
//! lines aligned on the values. Cells and values are escaped as [`super::printable`] says.

use super::printable::one_line;

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

    /// Adds a row; missing cells are blank, extra cells are dropped. Control characters in a
    /// cell are escaped ([`one_line`]), so a cell is always one line of plain text.
    pub fn row(&mut self, cells: Vec<String>) -> &mut Table {
        let mut cells: Vec<String> = cells
            .into_iter()
            .map(|c| one_line(&c).into_owned())
            .collect();
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

/// `key:  value` lines, values aligned one column after the longest key. Control characters in
/// a value are escaped ([`one_line`]): a multi-line description shows as one line with `\n`.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let key_width = pairs.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in pairs {
        let value = one_line(value);
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
    fn control_characters_in_cells_and_values_are_escaped_and_do_not_break_alignment() {
        let mut t = Table::new(&["OWNER", "NOTE"]);
        t.row(vec!["a\u{1b}[2J".into(), "x".into()]);
        t.row(vec!["line1\nline2".into(), "y".into()]);
        assert_eq!(
            t.render(),
            "OWNER          NOTE\n\
             a\\u{1b}[2J     x\n\
             line1\\nline2   y\n"
        );
        assert_eq!(
            fields(&[("description", "one\r\ntwo\0".into())]),
            "description:  one\\r\\ntwo\\0\n"
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
