//! The studies that ship inside the binary (`studies/*.toml`), so that
//! `kvlab study s0` works from any directory.

/// Name and text of every built-in study.
pub const BUILTIN: &[(&str, &str)] = &[
    ("s0", include_str!("../../../studies/s0.toml")),
    ("s1", include_str!("../../../studies/s1.toml")),
    ("s2", include_str!("../../../studies/s2.toml")),
    ("s3", include_str!("../../../studies/s3.toml")),
    ("s3-read", include_str!("../../../studies/s3-read.toml")),
    ("s4", include_str!("../../../studies/s4.toml")),
    ("tarantool", include_str!("../../../studies/tarantool.toml")),
    ("cluster", include_str!("../../../studies/cluster.toml")),
    (
        "cache-aside",
        include_str!("../../../studies/cache-aside.toml"),
    ),
    ("demo", include_str!("../../../studies/demo.toml")),
    ("pooler", include_str!("../../../studies/pooler.toml")),
    ("tls", include_str!("../../../studies/tls.toml")),
    ("socket", include_str!("../../../studies/socket.toml")),
    (
        "cache-size",
        include_str!("../../../studies/cache-size.toml"),
    ),
    (
        "cold-start",
        include_str!("../../../studies/cold-start.toml"),
    ),
    (
        "cache-failure",
        include_str!("../../../studies/cache-failure.toml"),
    ),
    ("profiles", include_str!("../../../studies/profiles.toml")),
];

/// The text of the built-in study `name`.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
}

/// The built-in studies' names: `s0, s1, …`.
pub fn names() -> String {
    BUILTIN
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::study::{Scale, parse_scaled};

    #[test]
    fn every_builtin_parses_at_both_scales() {
        for (name, text) in BUILTIN {
            let s = parse_scaled(text, name, Scale::Quick).unwrap();
            assert_eq!(&s.name, name, "a built-in's name is its file's");
            if s.original.is_some() {
                let o = parse_scaled(text, name, Scale::Original).unwrap();
                assert!(o.original.is_none());
                assert_eq!(o.scale.as_deref(), Some("original"));
            }
        }
    }
}
