//! The result of a fill: items a cache holds per GiB, or bytes per row of a
//! database's table.

use serde::{Deserialize, Serialize};

/// What a fill found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FillResult {
    /// Value size in bytes.
    pub value_size: usize,
    /// Keys kvlab wrote.
    pub written: u64,
    /// Items the server holds at the end.
    pub items: u64,
    /// The memory they are measured against, bytes: the cache's memory limit,
    /// or the database table plus its indexes.
    pub bytes: u64,
    /// What `bytes` is.
    pub basis: String,
    /// Items per GiB of `bytes`.
    pub items_per_gib: f64,
    /// Bytes per item, all overhead included.
    pub bytes_per_item: f64,
    /// Why the fill stopped.
    pub stopped_by: String,
}
