//! The parsers of set-up, probes and counters that are pure functions over
//! bytes: the frame readers handed to `roundtrip` and `read_frame` (RESP,
//! memcached `stats`, Tarantool, CQL) with what reads the frames they cut
//! (INFO fields, CQL rows and errors, Tarantool bodies), `CLUSTER NODES`,
//! and the third-party parsers PostgreSQL's and MySQL's sessions hand the
//! server's bytes to.

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthSwitchRequest, ErrPacket, HandshakePacket, StmtPacket};
use mysql_common::proto::MyDeserialize;
use postgres_protocol::message::backend::Message;
use proptest::prelude::*;
use proptest::sample::Index;

use super::inputs::{mutate, mutation, noise, prefixes, tail, value};
use super::{Bytes, Fuzz};
use crate::driver::wire::Malformed;
use crate::products::{cql, memcached, resp, tarantool};

/// The three properties of a frame reader `read` (the length of the whole
/// frame at the front, `None` while incomplete) on arbitrary bytes, on
/// `valid` frames mutated, and on valid frames cut short or followed by
/// more; `then` reads each frame it cuts, as set-up does.
fn reader<V: Strategy<Value = Bytes> + Clone>(
    name: &str,
    read: impl Fn(&[u8]) -> Result<Option<usize>, Malformed>,
    then: impl Fn(&[u8]),
    valid: V,
) {
    let cut = |buf: &[u8]| -> Result<Option<usize>, TestCaseError> {
        let got = read(buf);
        if let Ok(Some(n)) = got {
            prop_assert!(
                n >= 1 && n <= buf.len(),
                "a frame of {n} bytes in {}",
                buf.len()
            );
            then(&buf[..n]);
        }
        Ok(got.ok().flatten())
    };
    let fuzz = Fuzz::new(3);
    fuzz.check(&format!("{name}: arbitrary bytes"), noise(), |b| {
        cut(&b.0).map(drop)
    });
    let mutated = (valid.clone(), prop::collection::vec(mutation(), 1..5));
    fuzz.check(
        &format!("{name}: valid frames, mutated"),
        mutated,
        |(b, changes)| {
            let mut b = b.0;
            prop_assert_eq!(cut(&b)?, Some(b.len()));
            for m in &changes {
                mutate(&mut b, m);
            }
            cut(&b).map(drop)
        },
    );
    let split = (valid, prop::collection::vec(any::<Index>(), 1..8), tail());
    fuzz.check(
        &format!("{name}: valid frames cut and extended"),
        split,
        |(b, cuts, more)| {
            let b = b.0;
            let longer = [&b[..], &more.0].concat();
            prop_assert_eq!(cut(&longer)?, Some(b.len()));
            for n in prefixes(b.len(), &cuts) {
                prop_assert_eq!(read(&b[..n]), Ok(None), "{} of {} bytes", n, b.len());
            }
            Ok(())
        },
    );
}

fn bulk(v: &[u8]) -> Vec<u8> {
    [format!("${}\r\n", v.len()).as_bytes(), v, b"\r\n"].concat()
}

/// Any RESP2/RESP3 value, nested up to 3 deep.
fn resp_frame() -> impl Strategy<Value = Bytes> + Clone {
    let line = |kind: char| "[ -~]{0,20}".prop_map(move |s| format!("{kind}{s}\r\n").into_bytes());
    let info = "[0-9.]{1,10}"
        .prop_map(|v| bulk(format!("# Server\r\nredis_version:{v}\r\nos:x\r\n").as_bytes()));
    let words = [
        "$-1\r\n", "*-1\r\n", "_\r\n", "#t\r\n", ",1.5\r\n", "(12\r\n", ":-3\r\n",
    ];
    let leaf = prop_oneof![
        line('+'),
        line('-'),
        value().prop_map(|v| bulk(&v.0)),
        info,
        prop::sample::select(words.to_vec()).prop_map(|w| w.as_bytes().to_vec()),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        let kind = prop::sample::select(vec!['*', '~', '>', '%']);
        (kind, prop::collection::vec(inner, 0..4)).prop_map(|(kind, mut items)| {
            if kind == '%' {
                items.truncate(items.len() / 2 * 2);
            }
            let n = if kind == '%' {
                items.len() / 2
            } else {
                items.len()
            };
            [format!("{kind}{n}\r\n").into_bytes(), items.concat()].concat()
        })
    })
    .prop_map(Bytes)
}

#[test]
fn resp_frames() {
    // As the probe and counters read a frame: its payload, then INFO fields.
    let then = |f: &[u8]| {
        if let Ok(p) = resp::bulk_payload(f) {
            let text = String::from_utf8_lossy(p);
            let _ = resp::info_field(&text, "redis_version");
        }
    };
    reader("resp frames", resp::frame_len, then, resp_frame());
}

#[test]
fn cluster_nodes() {
    let seed = "127.0.0.1:7000".parse().expect("an address");
    let slots = "[0-9]{1,5}(-[0-9]{1,5})?|\\[[0-9]{1,5}-[<>]-[0-9a-f]{1,8}\\]";
    let line = (
        "[0-9a-f]{1,8}",
        "(127\\.0\\.0\\.1|::1|)?:[0-9]{1,6}(@[0-9]{1,5})?(,[a-z-]{1,8})?",
        "(myself,)?(master|slave)(,fail|,handshake|,noaddr)?",
        prop::collection::vec(slots, 0..4),
    )
        .prop_map(|(id, addr, flags, slots)| {
            format!("{id} {addr} {flags} - 0 0 1 connected {}", slots.join(" "))
        });
    let fuzz = Fuzz::new(2);
    fuzz.check(
        "cluster nodes: arbitrary text",
        "(\\PC{0,80}\n){0,6}",
        |t| {
            let _ = resp::cluster::node_lines(&t, seed);
            Ok(())
        },
    );
    let lines = prop::collection::vec(line, 0..6).prop_map(|l| l.join("\n"));
    fuzz.check("cluster nodes: lines", lines, |t| {
        if let Ok(nodes) = resp::cluster::node_lines(&t, seed) {
            for n in nodes {
                prop_assert!(
                    n.slots
                        .iter()
                        .all(|&(a, b)| a <= b && b < resp::codec::SLOTS)
                );
            }
        }
        Ok(())
    });
}

#[test]
fn memcached_stats() {
    let stat = "STAT [a-z_]{1,12} [0-9.:]{1,12}\r\n";
    let end = prop_oneof![
        Just("END\r\n".to_string()),
        "VERSION [0-9.]{1,8}\r\n",
        "SERVER_ERROR [ -~]{0,20}\r\n",
        Just("ERROR\r\n".to_string()),
    ];
    let valid = (prop::collection::vec(stat, 0..6), end)
        .prop_map(|(s, e)| Bytes((s.concat() + &e).into_bytes()));
    reader(
        "memcached stats",
        memcached::codec::stats_frame_len,
        |_| {},
        valid,
    );
}

#[test]
fn tarantool_frames() {
    let read = |b: &[u8]| tarantool::iproto::frame(b).map(|f| f.map(|(len, ..)| len));
    // As a set-up call reads a reply: its body as one MessagePack value.
    let then = |f: &[u8]| {
        let (len, _, _, body) = tarantool::iproto::frame(f).ok().flatten().expect("a frame");
        assert!(body <= len && len == f.len());
        let _ = rmpv::decode::read_value(&mut &f[body..len]);
    };
    let valid = (
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 0..64),
        value(),
    )
        .prop_map(|(sync, junk, v)| {
            let mut h = vec![0x82, 0x00, 0x00, 0x01, 0xce];
            h.extend_from_slice(&sync.to_be_bytes());
            let body = [
                &[0x82, 0x30, 0x91, 0x92, 0x01, 0xc5][..],
                &(v.0.len() as u16).to_be_bytes(),
                &v.0,
                &[0x31, 0xc4, junk.len() as u8],
                &junk,
            ]
            .concat();
            let len = (h.len() + body.len()) as u32;
            Bytes([&[0xce][..], &len.to_be_bytes(), &h, &body].concat())
        });
    reader("tarantool frames", read, then, valid);
}

#[test]
fn cql_frames() {
    let read = |b: &[u8]| cql::frame::frame(b).map(|f| f.map(|f| f.len));
    // As a set-up call reads a reply: an error's message, a result's rows.
    let then = |f: &[u8]| {
        let frame = cql::frame::frame(f).ok().flatten().expect("a frame");
        assert!(frame.body.start <= frame.body.end && frame.body.end == f.len());
        let _ = cql::conn::error_message(f);
        let _ = cql::conn::rows(&f[frame.body]);
    };
    let cell = prop::option::of(prop::collection::vec(any::<u8>(), 0..40));
    let body =
        (0u8..3, 1i32..4, prop::collection::vec(cell, 0..9)).prop_map(|(meta, columns, cells)| {
            let flags: i32 = [0x04, 0x01, 0x00][usize::from(meta)];
            let mut b = [
                2i32.to_be_bytes(),
                flags.to_be_bytes(),
                columns.to_be_bytes(),
            ]
            .concat();
            for c in 0..columns {
                if meta == 1 && c == 0 {
                    b.extend_from_slice(b"\0\x02ks\0\x01t");
                }
                if meta == 2 {
                    b.extend_from_slice(b"\0\x02ks\0\x01t");
                }
                if meta != 0 {
                    b.extend_from_slice(&[0, 1, b'c', 0, 0x20, 0, 0x0d]);
                }
            }
            let rows = cells.len() / columns as usize;
            b.extend_from_slice(&(rows as i32).to_be_bytes());
            for c in cells.iter().take(rows * columns as usize) {
                match c {
                    Some(c) => b.extend([&(c.len() as i32).to_be_bytes()[..], c].concat()),
                    None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
            b
        });
    let error = "[ -~]{0,30}".prop_map(|m| {
        [
            &0x2200i32.to_be_bytes()[..],
            &(m.len() as u16).to_be_bytes(),
            m.as_bytes(),
        ]
        .concat()
    });
    let valid = (
        any::<u16>(),
        prop_oneof![
            body.prop_map(|b| (0x08u8, b)),
            error.prop_map(|b| (0x00u8, b))
        ],
    )
        .prop_map(|(s, (op, b))| {
            let head = [0x84, 0, (s >> 8) as u8 & 0x7f, s as u8, op];
            Bytes([&head[..], &(b.len() as u32).to_be_bytes(), &b].concat())
        });
    reader("cql frames", read, then, valid);
}

/// Reads the messages at the front of `buf` as PostgreSQL's set-up session
/// does: each parsed, then its fields, rows and mechanisms walked.
fn pg_messages(buf: &[u8]) {
    let mut b = BytesMut::from(buf);
    for _ in 0..64 {
        let Ok(Some(m)) = Message::parse(&mut b) else {
            return;
        };
        match m {
            Message::AuthenticationSasl(s) => {
                let _ = s.mechanisms().count();
            }
            Message::ParameterStatus(p) => {
                let _ = (p.name(), p.value());
            }
            Message::RowDescription(d) => {
                let _ = d.fields().map(|f| Ok(f.name().len())).count();
            }
            Message::DataRow(r) => {
                let buf = r.buffer();
                let mut ranges = r.ranges();
                while let Ok(Some(range)) = ranges.next() {
                    let _ = range.map(|x| buf[x].len());
                }
            }
            Message::ErrorResponse(e) => {
                let _ = e.fields().map(|f| Ok(f.value_bytes().len())).count();
            }
            _ => {}
        }
    }
}

#[test]
fn postgres_messages() {
    let msg =
        |tag: u8, body: &[u8]| [&[tag][..], &(body.len() as u32 + 4).to_be_bytes(), body].concat();
    let one = prop_oneof![
        Just(msg(b'R', &[0, 0, 0, 0])),
        Just(msg(b'R', b"\0\0\0\x0aSCRAM-SHA-256\0\0")),
        Just(msg(b'R', b"\0\0\0\x05salt")),
        "[a-z_]{1,12}".prop_map(move |n| msg(b'S', format!("{n}\0x\0").as_bytes())),
        Just(msg(b'K', &[0, 0, 0, 1, 0, 0, 0, 2])),
        Just(msg(
            b'T',
            b"\0\x01v\0\0\0\0\0\0\x02\0\0\0\x11\xff\xff\xff\xff\xff\xff\0\x01"
        )),
        value().prop_map(move |v| msg(
            b'D',
            &[&[0, 1][..], &(v.0.len() as i32).to_be_bytes(), &v.0].concat()
        )),
        Just(msg(b'E', b"SERROR\0C28P01\0Mno\0\0")),
        Just(msg(b'Z', b"I")),
    ];
    let valid = prop::collection::vec(one, 1..6).prop_map(|m| Bytes(m.concat()));
    let fuzz = Fuzz::new(2);
    fuzz.check("postgres messages: arbitrary bytes", noise(), |b| {
        pg_messages(&b.0);
        Ok(())
    });
    let mutated = (valid, prop::collection::vec(mutation(), 0..5));
    fuzz.check(
        "postgres messages: valid, mutated",
        mutated,
        |(b, changes)| {
            let mut b = b.0;
            for m in &changes {
                mutate(&mut b, m);
            }
            pg_messages(&b);
            Ok(())
        },
    );
}

/// Reads `p` as MySQL's set-up session reads a packet: as a greeting, an
/// error, an authentication switch and a prepare's reply.
fn mysql_packet(p: &[u8]) {
    if let Ok(hs) = HandshakePacket::deserialize((), &mut ParseBuf(p)) {
        let _ = (
            hs.server_version_ref(),
            hs.capabilities(),
            hs.auth_plugin_name_ref(),
        );
        let _ = (hs.nonce(), hs.server_version_parsed());
    }
    let _ = ErrPacket::deserialize(CapabilityFlags::CLIENT_PROTOCOL_41, &mut ParseBuf(p));
    if let Ok(sw) = AuthSwitchRequest::deserialize((), &mut ParseBuf(p)) {
        let _ = (sw.auth_plugin().as_bytes().len(), sw.plugin_data().len());
    }
    if let Ok(st) = StmtPacket::deserialize((), &mut ParseBuf(p)) {
        let _ = (st.num_params(), st.num_columns(), st.statement_id());
    }
}

#[test]
fn mysql_packets() {
    let greeting = (
        "[0-9a-z.-]{0,20}",
        any::<[u8; 20]>(),
        any::<u32>(),
        "[a-z_]{0,24}",
    )
        .prop_map(|(v, nonce, caps, plugin)| {
            let mut p = [&[10][..], v.as_bytes(), &[0, 1, 0, 0, 0], &nonce[..8], &[0]].concat();
            p.extend_from_slice(&caps.to_le_bytes()[..2]);
            p.extend_from_slice(&[45, 2, 0]);
            p.extend_from_slice(&caps.to_le_bytes()[2..]);
            p.extend_from_slice(&[21, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            p.extend_from_slice(&nonce[8..]);
            p.push(0);
            p.extend_from_slice(plugin.as_bytes());
            p.push(0);
            p
        });
    let others = prop_oneof![
        "[ -~]{0,30}".prop_map(|m| [&[0xff, 0x15, 0x04][..], b"#28000", m.as_bytes()].concat()),
        ("[a-z_]{1,24}", any::<[u8; 20]>()).prop_map(|(n, d)| [
            &[0xfe][..],
            n.as_bytes(),
            &[0],
            &d,
            &[0]
        ]
        .concat()),
        any::<(u32, u16, u16)>().prop_map(|(id, c, n)| {
            [
                &[0][..],
                &id.to_le_bytes(),
                &c.to_le_bytes(),
                &n.to_le_bytes(),
                &[0, 0, 0],
            ]
            .concat()
        }),
    ];
    let valid = prop_oneof![greeting, others];
    let fuzz = Fuzz::new(2);
    fuzz.check("mysql packets: arbitrary bytes", noise(), |b| {
        mysql_packet(&b.0);
        Ok(())
    });
    let mutated = (valid, prop::collection::vec(mutation(), 0..5));
    fuzz.check("mysql packets: valid, mutated", mutated, |(b, changes)| {
        let mut b = b;
        for m in &changes {
            mutate(&mut b, m);
        }
        mysql_packet(&b);
        Ok(())
    });
}
