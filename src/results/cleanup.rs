//! What kvlab removed from (or left in) a server it did not start when its
//! work ended, and how many of the server's other keys were there before and
//! after: the figure that says whether a run cost a team its keys.

use serde::{Deserialize, Serialize};

/// One server kvlab did not start, after kvlab's work on it ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cleaned {
    /// The server's URL, without its password.
    pub server: String,
    /// What kvlab wrote there (`kvlab's keys (ids 0..N under 'kvlab:')`,
    /// `kvlab's table kvlab_kv`).
    pub what: String,
    /// Left in place (`--keep-data`, or a client of a sharded run).
    #[serde(default)]
    pub kept: bool,
    /// kvlab's keys it removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_removed: Option<u64>,
    /// The size of kvlab's table it dropped, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_bytes: Option<u64>,
    /// The cache's keys that were not kvlab's when kvlab first made room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_before: Option<u64>,
    /// The cache's keys once kvlab's were removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_after: Option<u64>,
    /// Why it could not be cleaned, if it could not (remove it yourself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Cleaned {
    /// The cache's other keys gone while kvlab worked (evicted, or expired
    /// or deleted by their own application): `others_before − others_after`.
    pub fn others_fewer(&self) -> Option<u64> {
        Some(self.others_before?.saturating_sub(self.others_after?))
    }

    /// One line, as kvlab says it at the end of its work.
    pub fn line(&self) -> String {
        let (what, at) = (&self.what, &self.server);
        if self.kept {
            return format!(
                "kvlab: left {what} in {at} (--keep-data; --no-load, which loaded none of them; or a client of a sharded run)"
            );
        }
        if let Some(e) = &self.error {
            return format!("kvlab: could not remove {what} from {at}: {e}; remove it yourself");
        }
        match (self.keys_removed, self.table_bytes) {
            (Some(n), _) => {
                let others = match (self.others_before, self.others_after) {
                    (Some(b), Some(a)) => format!(
                        "; its other keys: {b} before, {a} after ({} fewer)",
                        b.saturating_sub(a)
                    ),
                    _ => String::new(),
                };
                format!("kvlab: removed {n} of kvlab's keys from {at}{others}")
            }
            (None, Some(bytes)) => format!(
                "kvlab: dropped {what} ({:.1} MiB) from {at}",
                bytes as f64 / (1u64 << 20) as f64
            ),
            (None, None) => format!("kvlab: no {what} to remove in {at}"),
        }
    }
}
