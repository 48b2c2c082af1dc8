//! A product's named choices a plan makes: the query mode its requests use
//! and the consistency level they ask for. Each holds the product's own name
//! for it (one of [`Facts::query_modes`](super::Facts::query_modes) or
//! [`Facts::consistency_levels`](super::Facts::consistency_levels)), so a
//! value is always one the product offers.

use std::fmt;

use serde::{Serialize, Serializer};

macro_rules! choice {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name(&'static str);

        impl $name {
            /// The choice among `names` (a product's, in lower case) that
            /// `given` names in any case; `None` when none does.
            pub fn among(names: &'static [&'static str], given: &str) -> Option<$name> {
                names
                    .iter()
                    .find(|n| n.eq_ignore_ascii_case(given))
                    .map(|n| $name(n))
            }

            /// Its name, as the product's facts spell it.
            pub fn name(self) -> &'static str {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.0)
            }
        }
    };
}

choice!(
    /// How requests are sent (`--query-mode`), for products that have modes
    /// (e.g. PostgreSQL's prepared, extended or simple queries).
    QueryMode
);

choice!(
    /// The consistency level requests ask for (`--consistency`), for
    /// products that have levels (e.g. CQL's one, quorum, all).
    Consistency
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_found_in_any_case_and_named_as_the_facts_spell_it() {
        static MODES: [&str; 2] = ["prepared", "simple"];
        assert_eq!(
            QueryMode::among(&MODES, "SIMPLE").map(QueryMode::name),
            Some("simple")
        );
        assert_eq!(QueryMode::among(&MODES, "fast"), None);
        assert_eq!(Consistency::among(&[], "one"), None);
    }
}
