//! Valid RESP and memcached (text and meta) replies, and the tests running
//! the decoders' properties on them.

use proptest::prelude::*;

use super::inputs::{batch, hits, message, value};
use super::{Ask, Bytes, Subject, Valid, Want, properties};
use crate::products::memcached::Memcache;
use crate::products::resp::Resp;

/// `v` as a RESP bulk string.
fn bulk(v: &[u8]) -> Vec<u8> {
    [format!("${}\r\n", v.len()).as_bytes(), v, b"\r\n"].concat()
}

/// Any of the asks in `asks`.
fn one_of(asks: &'static [Ask]) -> impl Strategy<Value = Ask> + Clone {
    prop::sample::select(asks)
}

const ANY: &[Ask] = &[Ask::Get, Ask::Set, Ask::Many, Ask::Delete];

fn resp_reply() -> impl Strategy<Value = Valid> + Clone {
    let nil = prop::sample::select(vec![&b"$-1\r\n"[..], b"_\r\n"]);
    let host = "[a-z0-9.]{1,20}:[0-9]{1,5}";
    let redirect = (
        any::<bool>(),
        one_of(&[Ask::Get, Ask::Set]),
        0u16..16384,
        host,
    );
    prop_oneof![
        value().prop_map(|v| Valid::new(Ask::Get, bulk(&v.0), Want::Value(v))),
        nil.prop_map(|b| Valid::new(Ask::Get, b, Want::Nil)),
        Just(Valid::new(Ask::Set, &b"+OK\r\n"[..], Want::Stored)),
        (one_of(ANY), message()).prop_map(|(ask, m)| Valid::new(
            ask,
            format!("-ERR {m}\r\n"),
            Want::Error
        )),
        redirect.prop_map(|(ask, op, slot, to)| {
            let line = format!("-{} {slot} {to}\r\n", if ask { "ASK" } else { "MOVED" });
            let to = Bytes(to.into_bytes());
            Valid::new(op, line, Want::Redirect { slot, to, ask })
        }),
        batch().prop_map(|(ids, values)| {
            let mut b = format!("*{}\r\n", ids.len()).into_bytes();
            for v in &values {
                match v {
                    Some(v) => b.extend(bulk(&v.0)),
                    None => b.extend_from_slice(b"$-1\r\n"),
                }
            }
            Valid::new(Ask::Many, b, hits(&ids, &values)).ids(ids)
        }),
        (0u64..1000).prop_map(|n| Valid::new(Ask::Delete, format!(":{n}\r\n"), Want::Stored)),
    ]
}

/// memcached's error lines, for any single-key request.
fn mc_error() -> impl Strategy<Value = Valid> + Clone {
    let kind = prop::sample::select(vec!["SERVER_ERROR ", "CLIENT_ERROR "]);
    let single = one_of(&[Ask::Get, Ask::Set, Ask::Delete]);
    prop_oneof![
        (single.clone(), kind, message()).prop_map(|(a, k, m)| Valid::new(
            a,
            format!("{k}{m}\r\n"),
            Want::Error
        )),
        single.prop_map(|a| Valid::new(a, &b"ERROR\r\n"[..], Want::Error)),
    ]
}

fn text_reply() -> impl Strategy<Value = Valid> + Clone {
    let head = (
        "[a-z:0-9]{1,20}",
        any::<u32>(),
        prop::option::of(any::<u64>()),
    );
    let word = |w: &'static str, ask, want| Just(Valid::new(ask, w, want));
    prop_oneof![
        (head, value()).prop_map(|((key, flags, cas), v)| {
            let cas = cas.map(|c| format!(" {c}")).unwrap_or_default();
            let line = format!("VALUE {key} {flags} {}{cas}\r\n", v.0.len());
            let b = [line.as_bytes(), &v.0, b"\r\nEND\r\n"].concat();
            Valid::new(Ask::Get, b, Want::Value(v))
        }),
        word("END\r\n", Ask::Get, Want::Nil),
        word("STORED\r\n", Ask::Set, Want::Stored),
        word("NOT_STORED\r\n", Ask::Set, Want::Error),
        word("DELETED\r\n", Ask::Delete, Want::Stored),
        word("NOT_FOUND\r\n", Ask::Delete, Want::Stored),
        mc_error(),
        (batch(), any::<u32>()).prop_map(|((ids, values), flags)| {
            let mut b = Vec::new();
            for (id, v) in ids.iter().zip(&values) {
                if let Some(v) = v {
                    b.extend(format!("VALUE k:{id} {flags} {}\r\n", v.0.len()).bytes());
                    b.extend([&v.0[..], b"\r\n"].concat());
                }
            }
            b.extend_from_slice(b"END\r\n");
            Valid::new(Ask::Many, b, hits(&ids, &values)).ids(ids)
        }),
    ]
}

/// Meta flags a reply may carry besides the key.
fn meta_flags() -> impl Strategy<Value = String> + Clone {
    prop::sample::subsequence(vec![" f0", " t-1", " c123", " s5", " b"], 0..3)
        .prop_map(|f| f.concat())
}

fn meta_reply() -> impl Strategy<Value = Valid> + Clone {
    let word = |w: &'static str, ask, want| Just(Valid::new(ask, w, want));
    prop_oneof![
        (value(), meta_flags()).prop_map(|(v, flags)| {
            let b = [
                format!("VA {}{flags}\r\n", v.0.len()).as_bytes(),
                &v.0,
                b"\r\n",
            ]
            .concat();
            Valid::new(Ask::Get, b, Want::Value(v))
        }),
        word("EN\r\n", Ask::Get, Want::Nil),
        word("HD\r\n", Ask::Set, Want::Stored),
        word("NS\r\n", Ask::Set, Want::Error),
        word("HD\r\n", Ask::Delete, Want::Stored),
        word("NF\r\n", Ask::Delete, Want::Stored),
        mc_error(),
        (batch(), meta_flags(), meta_flags()).prop_map(|((ids, values), before, after)| {
            let mut b = Vec::new();
            for (id, v) in ids.iter().zip(&values) {
                if let Some(v) = v {
                    b.extend(format!("VA {}{before} kk:{id}{after}\r\n", v.0.len()).bytes());
                    b.extend([&v.0[..], b"\r\n"].concat());
                }
            }
            b.extend_from_slice(b"MN\r\n");
            Valid::new(Ask::Many, b, hits(&ids, &values)).ids(ids)
        }),
    ]
}

#[test]
fn resp() {
    properties("resp", &Subject::cache(Resp), resp_reply());
}

/// A valid RESP3 push and what it says: an invalidation of keys, a
/// flush, or another message.
fn resp_push() -> impl Strategy<Value = (Vec<u8>, Option<Vec<Vec<u8>>>)> + Clone {
    let keys = prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..6);
    prop_oneof![
        keys.prop_map(|keys| {
            let mut b = b">2\r\n$10\r\ninvalidate\r\n".to_vec();
            b.extend(format!("*{}\r\n", keys.len()).bytes());
            for k in &keys {
                b.extend(bulk(k));
            }
            (b, Some(keys))
        }),
        Just((b">2\r\n$10\r\ninvalidate\r\n_\r\n".to_vec(), None)),
        message().prop_map(|m| {
            let b = [
                &b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n"[..],
                &bulk(m.as_bytes()),
            ]
            .concat();
            (b, Some(vec![b"other".to_vec()]))
        }),
    ]
}

/// RESP3 pushes: each valid one read whole with its keys, every cut of it
/// incomplete, and any bytes (or a mutated push) never past the buffer.
#[test]
fn resp_pushes() {
    use crate::driver::wire::{Codec, Unasked};
    let fuzz = super::Fuzz::new(2);
    fuzz.check(
        "resp pushes: valid, cut anywhere",
        resp_push(),
        |(b, want)| {
            let mut keys = Vec::new();
            let got = Resp.unasked(&b, &mut keys);
            let names: Vec<Vec<u8>> = keys.iter().map(|k| b[k.clone()].to_vec()).collect();
            match (&want, got) {
                (Some(w), Some(Ok(Unasked::Invalidate { len }))) => {
                    prop_assert_eq!(len, b.len());
                    prop_assert_eq!(&names, w);
                }
                (None, Some(Ok(Unasked::InvalidateAll { len }))) => prop_assert_eq!(len, b.len()),
                (Some(w), Some(Ok(Unasked::Other { len }))) if w == &vec![b"other".to_vec()] => {
                    prop_assert_eq!(len, b.len())
                }
                (_, other) => prop_assert!(false, "{:?} read as {:?}", b, other),
            }
            for cut in 1..b.len() {
                let part = Resp.unasked(&b[..cut], &mut keys);
                prop_assert_eq!(part, Some(Ok(Unasked::Incomplete)));
            }
            Ok(())
        },
    );
    let mutated = (
        resp_push(),
        prop::collection::vec(super::inputs::mutation(), 1..4),
    );
    fuzz.check("resp pushes: mutated", mutated, |((mut b, _), changes)| {
        for m in &changes {
            super::inputs::mutate(&mut b, m);
        }
        let mut keys = Vec::new();
        if let Some(Ok(
            Unasked::Invalidate { len } | Unasked::InvalidateAll { len } | Unasked::Other { len },
        )) = Resp.unasked(&b, &mut keys)
        {
            prop_assert!(len <= b.len());
            prop_assert!(keys.iter().all(|k| k.start <= k.end && k.end <= len));
        }
        Ok(())
    });
}

#[test]
fn memcached_text() {
    properties(
        "memcached text",
        &Subject::cache(Memcache { meta: false }),
        text_reply(),
    );
}

#[test]
fn memcached_meta() {
    properties(
        "memcached meta",
        &Subject::cache(Memcache { meta: true }),
        meta_reply(),
    );
}
