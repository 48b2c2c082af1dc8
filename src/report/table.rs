//! The one table type the Markdown and HTML renderers share.

/// A table shared by the Markdown and HTML renderers.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Caption.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
}
