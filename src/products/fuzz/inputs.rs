//! What the properties draw: arbitrary bytes, values and batch reads, a
//! server's messages, the mutations of a valid stream, and the prefixes of a
//! reply to cut it at.

use proptest::prelude::*;
use proptest::sample::Index;

use super::{Bytes, Want};

/// Bytes of any value, 0..4096 long.
pub(super) fn noise() -> impl Strategy<Value = Bytes> + Clone {
    prop::collection::vec(any::<u8>(), 0..4096).prop_map(Bytes)
}

/// Bytes that may follow a reply: 0..64 of any value.
pub(super) fn tail() -> impl Strategy<Value = Bytes> + Clone {
    prop::collection::vec(any::<u8>(), 0..64).prop_map(Bytes)
}

/// A value: often short, up to 2000 bytes.
pub(super) fn value() -> impl Strategy<Value = Bytes> + Clone {
    prop_oneof![
        2 => prop::collection::vec(any::<u8>(), 0..40),
        1 => prop::collection::vec(any::<u8>(), 0..2000),
    ]
    .prop_map(Bytes)
}

/// The distinct key ids of a batch read, 1 to 4 of them.
pub(super) fn ids() -> impl Strategy<Value = Vec<u64>> + Clone {
    prop::collection::btree_set(0u64..2_000_000, 1..5).prop_map(|s| s.into_iter().collect())
}

/// A batch read's ids and, for each, its value or a miss.
pub(super) fn batch() -> impl Strategy<Value = (Vec<u64>, Vec<Option<Bytes>>)> + Clone {
    ids().prop_flat_map(|ids| {
        let n = ids.len();
        (
            Just(ids),
            prop::collection::vec(prop::option::of(value()), n),
        )
    })
}

/// The values a batch read finds.
pub(super) fn hits(ids: &[u64], values: &[Option<Bytes>]) -> Want {
    Want::Batch(
        ids.iter()
            .zip(values)
            .filter_map(|(&id, v)| Some((id, v.clone()?)))
            .collect(),
    )
}

/// A server's error message: printable, no line end.
pub(super) fn message() -> impl Strategy<Value = String> + Clone {
    "[ -~]{0,40}"
}

/// One change to a stream of bytes.
#[derive(Clone, Debug)]
pub(super) enum Mutation {
    Flip(Index, u8),
    Put(Index, u8),
    Insert(Index, Bytes),
    Delete(Index, usize),
    Truncate(Index),
}

/// Any one [`Mutation`], a flip most often; a byte put is often one that
/// frames a protocol (a line end, a sign, a digit).
pub(super) fn mutation() -> impl Strategy<Value = Mutation> + Clone {
    let special = prop::sample::select(vec![
        0u8, 1, 0x7f, 0x80, 0xfe, 0xff, b'\r', b'\n', b' ', b'-', b'0', b'9',
    ]);
    prop_oneof![
        4 => (any::<Index>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        2 => (any::<Index>(), special).prop_map(|(i, b)| Mutation::Put(i, b)),
        2 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, Bytes(b))),
        2 => (any::<Index>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
    ]
}

/// Applies `m` to `buf` (an empty `buf` only takes an insertion).
pub(super) fn mutate(buf: &mut Vec<u8>, m: &Mutation) {
    if buf.is_empty() {
        if let Mutation::Insert(_, b) = m {
            buf.extend_from_slice(&b.0);
        }
        return;
    }
    match m {
        Mutation::Flip(i, x) => {
            let at = i.index(buf.len());
            buf[at] ^= x;
        }
        Mutation::Put(i, b) => {
            let at = i.index(buf.len());
            buf[at] = *b;
        }
        Mutation::Insert(i, b) => {
            let at = i.index(buf.len() + 1);
            buf.splice(at..at, b.0.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let at = i.index(buf.len());
            buf.drain(at..(at + n).min(buf.len()));
        }
        Mutation::Truncate(i) => buf.truncate(i.index(buf.len())),
    }
}

/// The lengths of the proper prefixes of an `n`-byte reply to try: all of
/// them for a short reply; else none, one byte short, and those `cuts` pick.
pub(super) fn prefixes(n: usize, cuts: &[Index]) -> Vec<usize> {
    if n <= 256 {
        return (0..n).collect();
    }
    let cuts = cuts.iter().map(|c| c.index(n));
    [0, n - 1].into_iter().chain(cuts).collect()
}
