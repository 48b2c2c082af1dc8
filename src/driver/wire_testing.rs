//! What codecs' unit tests share: keys, expected frames, whole-reply checks.

use std::ops::Range;

use super::{Batch, Codec, Decoded, Key, Malformed, Reply};
use crate::workload::OpKind;

/// A batch read of keys 1 (`k:1`) and 22 (`k:22`), tag 0.
pub const TWO_KEYS: Batch<'static> = Batch {
    ids: &[1, 22],
    names: b"k:1k:22",
    ends: &[3, 7],
    tag: 0,
};

/// Asserts that `decode` finds every proper prefix of `reply` incomplete,
/// and all of it one in-order reply to a batch read that found key 22's
/// value `abc` and nothing else.
pub fn assert_found_22(
    decode: impl Fn(&[u8], &mut Vec<(u64, Range<usize>)>) -> Result<Decoded, Malformed>,
    reply: &[u8],
) {
    for cut in 0..reply.len() {
        let got = decode(&reply[..cut], &mut Vec::new());
        assert_eq!(got, Ok(Decoded::Incomplete), "{cut} bytes");
    }
    let mut found = Vec::new();
    assert_eq!(decode(reply, &mut found), frame(reply.len(), Reply::Batch));
    let found: Vec<_> = found.into_iter().map(|(id, v)| (id, &reply[v])).collect();
    assert_eq!(found, [(22, &b"abc"[..])]);
}

/// Key `id` named `name`, with tag 0.
pub fn key(id: u64, name: &[u8]) -> Key<'_> {
    Key { id, name, tag: 0 }
}

/// What decoding a whole in-order reply of `len` bytes saying `reply` gives.
pub fn frame(len: usize, reply: Reply) -> Result<Decoded, Malformed> {
    Ok(Decoded::Frame { len, reply })
}

/// The bytes `codec` encodes for a GET of `key`, and for a SET of it to `value`.
pub fn encoded<C: Codec>(codec: &C, key: Key<'_>, value: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut get, mut set) = (Vec::new(), Vec::new());
    codec.encode_get(key, &mut get);
    codec.encode_set(key, value, &mut set);
    (get, set)
}

/// Asserts that `codec` decodes all of `buf` as one in-order reply to a GET
/// that found `value`.
pub fn assert_value<C: Codec>(codec: &C, buf: &[u8], value: &[u8]) {
    match codec.decode(OpKind::Get, buf) {
        Ok(Decoded::Frame {
            len,
            reply: Reply::Value(v),
        }) => assert_eq!((len, &buf[v]), (buf.len(), value)),
        other => panic!("{other:?}"),
    }
}

/// Asserts that every proper prefix of the reply `buf` to `op` is incomplete.
pub fn assert_incomplete<C: Codec>(codec: &C, op: OpKind, buf: &[u8]) {
    for n in 0..buf.len() {
        let got = codec.decode(op, &buf[..n]);
        assert_eq!(got, Ok(Decoded::Incomplete), "{n} bytes");
        let declared = codec.declared_len(&buf[..n]);
        assert!(
            declared.is_none_or(|d| d <= buf.len()),
            "{n} bytes declare {declared:?}"
        );
    }
}
