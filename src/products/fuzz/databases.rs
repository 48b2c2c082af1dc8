//! Valid PostgreSQL, MySQL, Tarantool and CQL replies, and the tests running
//! the decoders' properties on them.

use proptest::prelude::*;

use super::inputs::{batch, hits, message, value};
use super::{Ask, Subject, Valid, Want, properties};
use crate::products::cql::CqlCodec;
use crate::products::mysql::MyCodec;
use crate::products::postgres::PgCodec;
use crate::products::tarantool::TtCodec;

/// A PostgreSQL message.
fn pg(tag: u8, body: &[u8]) -> Vec<u8> {
    [&[tag][..], &(body.len() as u32 + 4).to_be_bytes(), body].concat()
}

/// A DataRow of `cells`.
fn pg_row(cells: &[&[u8]]) -> Vec<u8> {
    let mut b = (cells.len() as u16).to_be_bytes().to_vec();
    for c in cells {
        b.extend_from_slice(&(c.len() as i32).to_be_bytes());
        b.extend_from_slice(c);
    }
    pg(b'D', &b)
}

fn pg_reply() -> impl Strategy<Value = Valid> + Clone {
    // What may come before the result (ParseComplete, BindComplete,
    // RowDescription, a notice) and after it (CommandComplete, ReadyForQuery).
    let lead = prop::sample::subsequence(
        vec![
            pg(b'1', b""),
            pg(b'2', b""),
            pg(
                b'T',
                b"\0\x01v\0\0\0\0\0\0\x02\0\0\0\x11\xff\xff\xff\xff\xff\xff\0\x01",
            ),
            pg(b'N', b"SNOTICE\0Mhm\0\0"),
        ],
        0..3,
    )
    .prop_map(|m| m.concat());
    let tail = |tag: &str| [pg(b'C', format!("{tag}\0").as_bytes()), pg(b'Z', b"I")].concat();
    let error = |m: String| {
        [
            pg(b'E', format!("SERROR\0C42P01\0M{m}\0\0").as_bytes()),
            pg(b'Z', b"I"),
        ]
        .concat()
    };
    let ask = prop::sample::select(vec![Ask::Get, Ask::Set, Ask::Many]);
    prop_oneof![
        (lead.clone(), prop::option::of(value())).prop_map(move |(lead, v)| match v {
            Some(v) => {
                let b = [lead, pg_row(&[&v.0]), tail("SELECT 1")].concat();
                Valid::new(Ask::Get, b, Want::Value(v))
            }
            None => Valid::new(Ask::Get, [lead, tail("SELECT 0")].concat(), Want::Nil),
        }),
        lead.clone().prop_map(move |lead| Valid::new(
            Ask::Set,
            [lead, tail("INSERT 0 1")].concat(),
            Want::Stored
        )),
        (lead.clone(), ask, message()).prop_map(move |(lead, ask, m)| Valid::new(
            ask,
            [lead, error(m)].concat(),
            Want::Error
        )),
        (lead, batch()).prop_map(move |(lead, (ids, values))| {
            let mut b = lead;
            for (id, v) in ids.iter().zip(&values) {
                if let Some(v) = v {
                    b.extend(pg_row(&[&(*id as i64).to_be_bytes(), &v.0]));
                }
            }
            b.extend(tail("SELECT 2"));
            Valid::new(Ask::Many, b, hits(&ids, &values)).ids(ids)
        }),
    ]
}

/// A MySQL packet.
fn my(seq: u8, body: &[u8]) -> Vec<u8> {
    [&(body.len() as u32).to_le_bytes()[..3], &[seq], body].concat()
}

/// A length-encoded string.
fn lenenc(s: &[u8]) -> Vec<u8> {
    let n = s.len();
    let head = match n {
        0..=250 => vec![n as u8],
        251..=0xffff => [&[0xfc][..], &(n as u16).to_le_bytes()].concat(),
        _ => [&[0xfd][..], &(n as u32).to_le_bytes()[..3]].concat(),
    };
    [&head[..], s].concat()
}

fn mysql_reply() -> impl Strategy<Value = Valid> + Clone {
    let eof = my(9, &[0xfe, 0, 0, 2, 0]);
    let coldef = prop::collection::vec(any::<u8>(), 0..40).prop_map(|c| my(2, &c));
    let err = |m: String| {
        my(
            1,
            &[&[0xff, 0x7a, 0x04][..], b"#42S02", m.as_bytes()].concat(),
        )
    };
    let ask = prop::sample::select(vec![Ask::Get, Ask::Set, Ask::Many]);
    let (eof1, eof2) = (eof.clone(), eof.clone());
    prop_oneof![
        (coldef.clone(), prop::option::of(value())).prop_map(move |(col, v)| {
            let head = [my(1, &[1]), col, eof1.clone()].concat();
            match v {
                Some(v) => {
                    let row = my(4, &[&[0, 0][..], &lenenc(&v.0)].concat());
                    Valid::new(Ask::Get, [head, row, eof1.clone()].concat(), Want::Value(v))
                }
                None => Valid::new(Ask::Get, [head, eof1.clone()].concat(), Want::Nil),
            }
        }),
        Just(Valid::new(
            Ask::Set,
            my(1, &[0, 1, 0, 2, 0, 0, 0]),
            Want::Stored
        )),
        (ask, message()).prop_map(move |(ask, m)| Valid::new(ask, err(m), Want::Error)),
        (coldef.clone(), coldef, batch()).prop_map(move |(k, v, (ids, values))| {
            let mut b = [my(1, &[2]), k, v, eof2.clone()].concat();
            for (id, v) in ids.iter().zip(&values) {
                if let Some(v) = v {
                    b.extend(my(
                        5,
                        &[lenenc(id.to_string().as_bytes()), lenenc(&v.0)].concat(),
                    ));
                }
            }
            b.extend(eof2.clone());
            Valid::new(Ask::Many, b, hits(&ids, &values)).ids(ids)
        }),
    ]
}

/// `v` as a MessagePack unsigned integer in the form `wide` picks (0: the
/// shortest; 1 to 4: 1, 2, 4 or 8 bytes where it fits).
fn mp_uint(v: u64, wide: u8) -> Vec<u8> {
    match wide {
        0 if v < 0x80 => vec![v as u8],
        0 | 1 if v <= 0xff => vec![0xcc, v as u8],
        0..=2 if v <= 0xffff => [&[0xcd][..], &(v as u16).to_be_bytes()].concat(),
        0..=3 if v <= 0xffff_ffff => [&[0xce][..], &(v as u32).to_be_bytes()].concat(),
        _ => [&[0xcf][..], &v.to_be_bytes()].concat(),
    }
}

/// `v` as a MessagePack string (`bin` false) or binary, shortest form, or
/// wider (`wide`).
fn mp_bytes(v: &[u8], bin: bool, wide: bool) -> Vec<u8> {
    let n = v.len();
    let head = match (n, bin, wide) {
        (0..=31, false, false) => vec![0xa0 | n as u8],
        (0..=0xff, _, false) => vec![if bin { 0xc4 } else { 0xd9 }, n as u8],
        (0..=0xffff, _, false) => [
            &[if bin { 0xc5 } else { 0xda }][..],
            &(n as u16).to_be_bytes(),
        ]
        .concat(),
        _ => [
            &[if bin { 0xc6 } else { 0xdb }][..],
            &(n as u32).to_be_bytes(),
        ]
        .concat(),
    };
    [&head[..], v].concat()
}

/// A Tarantool reply: header {code, sync, schema} in some order and width,
/// then `body`.
fn tt(code: u64, sync: u32, wide: u8, swap: bool, body: &[u8]) -> Vec<u8> {
    let code = [&[0x00][..], &mp_uint(code, wide)].concat();
    let sync = [&[0x01][..], &mp_uint(u64::from(sync), wide)].concat();
    let pairs = if swap { [sync, code] } else { [code, sync] };
    let h = [&[0x83][..], &pairs.concat(), &[0x05, 0x40]].concat();
    let len = (h.len() + body.len()) as u32;
    [&[0xce][..], &len.to_be_bytes(), &h, body].concat()
}

fn tt_reply() -> impl Strategy<Value = Valid> + Clone {
    let form = (0u8..5, any::<bool>(), any::<(bool, bool)>());
    let sync = any::<u32>();
    let ask = prop::sample::select(vec![Ask::Get, Ask::Set, Ask::Many, Ask::Delete]);
    // {DATA: [[key, value, (version)]]}, or {DATA: []}.
    let tuple = |k: u64, v: &[u8], wide, (bin, w), extra: bool| {
        let mut t = vec![if extra { 0x93 } else { 0x92 }];
        t.extend(mp_uint(k, wide));
        t.extend(mp_bytes(v, bin, w));
        if extra {
            t.push(0x00);
        }
        t
    };
    // SQL's column metadata, which the batch read skips.
    let meta = [
        &[0x32, 0x92][..],
        &[0x81, 0x00, 0xa1, b'k'],
        &[0x82, 0x00, 0xa1, b'v', 0x01, 0xa3, b'a', b'n', b'y'],
    ]
    .concat();
    prop_oneof![
        (form.clone(), sync, prop::option::of(value()), any::<bool>()).prop_map(
            move |((wide, swap, bs), s, v, extra)| {
                let s = s & !1;
                match v {
                    Some(v) => {
                        let body =
                            [&[0x81, 0x30, 0x91][..], &tuple(7, &v.0, wide, bs, extra)].concat();
                        Valid::new(Ask::Get, tt(0, s, wide, swap, &body), Want::Value(v)).tag(s)
                    }
                    None => Valid::new(
                        Ask::Get,
                        tt(0, s, wide, swap, &[0x81, 0x30, 0x90]),
                        Want::Nil,
                    )
                    .tag(s),
                }
            }
        ),
        (form.clone(), sync, value()).prop_map(move |((wide, swap, bs), s, v)| {
            let s = s | 1;
            let body = [&[0x81, 0x30, 0x91][..], &tuple(7, &v.0, wide, bs, false)].concat();
            Valid::new(Ask::Set, tt(0, s, wide, swap, &body), Want::Stored).tag(s)
        }),
        (form.clone(), sync, ask, 1u64..0x7fff, message()).prop_map(
            |((wide, swap, _), s, ask, e, m)| {
                let body = [&[0x81, 0x31][..], &mp_bytes(m.as_bytes(), false, false)].concat();
                let v = Valid::new(ask, tt(0x8000 | e, s, wide, swap, &body), Want::Error).tag(s);
                if ask == Ask::Many { v.ids(vec![1]) } else { v }
            }
        ),
        (form.clone(), sync).prop_map(|((wide, swap, _), s)| {
            Valid::new(
                Ask::Delete,
                tt(0, s, wide, swap, &[0x81, 0x30, 0x90]),
                Want::Stored,
            )
            .tag(s)
        }),
        (form, sync, batch(), any::<bool>()).prop_map(
            move |((wide, swap, bs), s, (ids, values), with_meta)| {
                let rows: Vec<_> = ids
                    .iter()
                    .zip(&values)
                    .filter_map(|(&id, v)| Some(tuple(id, &v.as_ref()?.0, wide, bs, false)))
                    .collect();
                let mut body = vec![if with_meta { 0x82 } else { 0x81 }];
                if with_meta {
                    body.extend_from_slice(&meta);
                }
                body.extend(
                    [
                        &[0x30, 0xdd][..],
                        &(rows.len() as u32).to_be_bytes(),
                        &rows.concat(),
                    ]
                    .concat(),
                );
                Valid::new(Ask::Many, tt(0, s, wide, swap, &body), hits(&ids, &values))
                    .ids(ids)
                    .tag(s)
            }
        ),
    ]
}

/// A CQL `[string]`.
fn cql_string(s: &[u8]) -> Vec<u8> {
    [&(s.len() as u16).to_be_bytes()[..], s].concat()
}

/// A CQL `[bytes]`.
fn cql_bytes(s: &[u8]) -> Vec<u8> {
    [&(s.len() as i32).to_be_bytes()[..], s].concat()
}

/// A CQL frame on `stream`; `extras` picks a tracing id, warnings and a
/// custom payload before the body.
fn cql_frame(stream: u16, opcode: u8, extras: (bool, bool, bool), body: &[u8]) -> Vec<u8> {
    let (tracing, warnings, payload) = extras;
    let mut b = Vec::new();
    if tracing {
        b.extend_from_slice(&[0x5a; 16]);
    }
    if warnings {
        b.extend([&[0, 2][..], &cql_string(b"slow"), &cql_string(b"")].concat());
    }
    if payload {
        b.extend([&[0, 1][..], &cql_string(b"k"), &cql_bytes(b"vv")].concat());
    }
    b.extend_from_slice(body);
    let flags =
        (u8::from(tracing) * 0x02) | (u8::from(warnings) * 0x08) | (u8::from(payload) * 0x04);
    let head = [0x84, flags, (stream >> 8) as u8, stream as u8, opcode];
    [&head[..], &(b.len() as u32).to_be_bytes(), &b].concat()
}

/// Rows metadata of `types` (option ids): none (`kind` 0), global (1), or
/// per column (2).
fn cql_meta(kind: u8, paging: bool, types: &[u16]) -> Vec<u8> {
    let flags: i32 = [0x04, 0x01, 0x00][usize::from(kind)] | if paging { 0x02 } else { 0 };
    let mut b = [flags.to_be_bytes(), (types.len() as i32).to_be_bytes()].concat();
    if paging {
        b.extend(cql_bytes(b"page"));
    }
    if kind == 1 {
        b.extend([cql_string(b"ks"), cql_string(b"kvlab_kv")].concat());
    }
    if kind != 0 {
        for (i, &t) in types.iter().enumerate() {
            if kind == 2 {
                b.extend([cql_string(b"ks"), cql_string(b"kvlab_kv")].concat());
            }
            b.extend(cql_string(&[b'a' + i as u8]));
            b.extend_from_slice(&t.to_be_bytes());
        }
    }
    b
}

fn cql_reply() -> impl Strategy<Value = Valid> + Clone {
    let extras = any::<(bool, bool, bool)>();
    let meta = (0u8..3, any::<bool>());
    let stream = 0u16..0x8000;
    let ask = prop::sample::select(vec![Ask::Get, Ask::Set, Ask::Many]);
    prop_oneof![
        (
            extras,
            meta.clone(),
            stream.clone(),
            prop::option::of(value())
        )
            .prop_map(|(x, (kind, paging), s, v)| {
                let s = s & !1;
                let mut body = [
                    2i32.to_be_bytes().to_vec(),
                    cql_meta(kind, paging, &[0x0003]),
                ]
                .concat();
                body.extend_from_slice(&i32::from(v.is_some()).to_be_bytes());
                let want = match v {
                    Some(v) => {
                        body.extend(cql_bytes(&v.0));
                        Want::Value(v)
                    }
                    None => Want::Nil,
                };
                Valid::new(Ask::Get, cql_frame(s, 0x08, x, &body), want).tag(u32::from(s))
            }),
        (extras, stream.clone()).prop_map(|(x, s)| {
            let s = s | 1;
            Valid::new(
                Ask::Set,
                cql_frame(s, 0x08, x, &1i32.to_be_bytes()),
                Want::Stored,
            )
            .tag(u32::from(s))
        }),
        (extras, stream.clone(), ask, message()).prop_map(|(x, s, ask, m)| {
            let body = [&0x2200i32.to_be_bytes()[..], &cql_string(m.as_bytes())].concat();
            let v = Valid::new(ask, cql_frame(s, 0x00, x, &body), Want::Error).tag(u32::from(s));
            if ask == Ask::Many { v.ids(vec![1]) } else { v }
        }),
        (extras, meta, stream, batch()).prop_map(|(x, (kind, paging), s, (ids, values))| {
            let mut body = [
                2i32.to_be_bytes().to_vec(),
                cql_meta(kind, paging, &[0x0002, 0x0003]),
            ]
            .concat();
            let rows: Vec<_> = ids
                .iter()
                .zip(&values)
                .filter_map(|(&id, v)| {
                    Some([cql_bytes(&id.to_be_bytes()), cql_bytes(&v.as_ref()?.0)].concat())
                })
                .collect();
            body.extend_from_slice(&(rows.len() as i32).to_be_bytes());
            body.extend(rows.concat());
            Valid::new(Ask::Many, cql_frame(s, 0x08, x, &body), hits(&ids, &values))
                .ids(ids)
                .tag(u32::from(s))
        }),
    ]
}

#[test]
fn postgres() {
    properties("postgres", &Subject::plain(PgCodec::new(3)), pg_reply());
}

#[test]
fn mysql() {
    properties("mysql", &Subject::plain(MyCodec::new(3)), mysql_reply());
}

#[test]
fn tarantool() {
    properties("tarantool", &Subject::cache(TtCodec::new()), tt_reply());
}

#[test]
fn cql() {
    properties("cql", &Subject::plain(CqlCodec::default()), cql_reply());
}
