//! Property tests ("fuzzing") of every codec's reply decoders and of the
//! set-up parsers that are pure functions over bytes. On arbitrary bytes, on
//! streams of valid replies mutated (bytes flipped, inserted, deleted, the
//! stream cut), and on valid replies cut short or followed by more bytes, no
//! decoder panics, every frame and range it returns lies inside its input,
//! and a reply decodes the same whole, in pieces, or with more behind it.
//!
//! Quick by default: `KVLAB_FUZZ_CASES` cases per property (512). With
//! `KVLAB_FUZZ_SECS` set, each test runs that many seconds instead, in
//! batches of `KVLAB_FUZZ_CASES` with fresh seeds (`PROPTEST_RNG_SEED`
//! fixes the seed, to replay a failure).
//!
//! # Layout
//! - this file: the harness, the decoders' contract and the three properties.
//! - `inputs`: what the properties draw (bytes, values, batch reads,
//!   mutations, a reply's prefixes).
//! - `caches`: RESP and memcached (text and meta) replies.
//! - `databases`: PostgreSQL, MySQL, Tarantool and CQL replies.
//! - `setup`: frame readers and reply parsers of set-up, probes and counters.

mod caches;
mod databases;
mod inputs;
mod setup;

use std::fmt;
use std::ops::Range;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseResult, TestError, TestRunner};

use crate::driver::wire::{CacheCodec, Codec, Decoded, Malformed, Reply};
use crate::workload::OpKind;
use inputs::{ids, mutate, mutation, noise, prefixes, tail};

/// Test cases per property: `KVLAB_FUZZ_CASES`, else 512.
pub(super) fn cases() -> u32 {
    std::env::var("KVLAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

/// Seconds each test runs in the time-bounded mode (`KVLAB_FUZZ_SECS`).
fn seconds() -> Option<f64> {
    std::env::var("KVLAB_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&s: &f64| s > 0.0)
}

/// The properties of one test; in the time-bounded mode they share its time.
pub(super) struct Fuzz {
    each: Option<Duration>,
}

impl Fuzz {
    /// A test of `properties` properties.
    pub(super) fn new(properties: u32) -> Fuzz {
        Fuzz {
            each: seconds().map(|s| Duration::from_secs_f64(s / f64::from(properties))),
        }
    }

    /// Checks `test` on values of `strategy`: `cases()` of them, or batches
    /// of that many with fresh seeds until this property's time is up.
    pub(super) fn check<S>(
        &self,
        what: &str,
        strategy: S,
        test: impl Fn(S::Value) -> TestCaseResult,
    ) where
        S: Strategy,
        S::Value: fmt::Debug,
    {
        let config = Config {
            cases: cases(),
            failure_persistence: None,
            max_shrink_iters: 20_000,
            ..Config::default()
        };
        let until = self.each.map(|d| Instant::now() + d);
        let mut batches = 0u64;
        loop {
            match TestRunner::new(config.clone()).run(&strategy, &test) {
                Ok(()) => batches += 1,
                Err(TestError::Fail(why, input)) => {
                    panic!("{what}: {why}\nsmallest failing input: {input:#?}")
                }
                Err(TestError::Abort(why)) => panic!("{what}: aborted: {why}"),
            }
            if until.is_none_or(|t| Instant::now() >= t) {
                break;
            }
        }
        if until.is_some() {
            eprintln!("{what}: {} cases", batches * u64::from(config.cases));
        }
    }
}

/// Bytes, shown as an escaped byte string.
#[derive(Clone, Default, PartialEq, Eq)]
pub(super) struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// What a reply answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ask {
    Get,
    Set,
    /// A batch read of the reply's `ids`, named [`PREFIX`] + id.
    Many,
    Delete,
}

/// The key prefix of batch reads.
pub(super) const PREFIX: &[u8] = b"k:";

/// What a valid reply says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Want {
    Value(Bytes),
    Nil,
    Stored,
    Error,
    /// The values found, in the reply's order.
    Batch(Vec<(u64, Bytes)>),
    Redirect {
        slot: u16,
        to: Bytes,
        ask: bool,
    },
}

/// One valid reply and what it says.
#[derive(Clone, Debug)]
pub(super) struct Valid {
    pub ask: Ask,
    /// The key ids of a batch read.
    pub ids: Vec<u64>,
    pub bytes: Bytes,
    pub want: Want,
    /// The tag it names, for protocols that answer out of order.
    pub tag: Option<u32>,
}

impl Valid {
    pub(super) fn new(ask: Ask, bytes: impl Into<Vec<u8>>, want: Want) -> Valid {
        Valid {
            ask,
            ids: Vec::new(),
            bytes: Bytes(bytes.into()),
            want,
            tag: None,
        }
    }

    /// The reply to a batch read of `ids`.
    pub(super) fn ids(mut self, ids: Vec<u64>) -> Valid {
        self.ids = ids;
        self
    }

    /// The reply names `tag`.
    pub(super) fn tag(mut self, tag: u32) -> Valid {
        self.tag = Some(tag);
        self
    }
}

/// A batch read's values found: (key id, range of the input).
type Found = Vec<(u64, Range<usize>)>;

/// A decoder under test: a codec's, asked as the engine asks it, and a cache
/// codec's DELETE too.
pub(super) struct Subject<C> {
    codec: C,
    /// A cache codec's DELETE decoder.
    delete: Option<DecodeDelete<C>>,
}

/// [`CacheCodec::decode_delete`] of a codec of type `C`.
type DecodeDelete<C> = fn(&C, &[u8]) -> Result<Decoded, Malformed>;

impl<C: Codec> Subject<C> {
    /// A codec's GET, SET and batch-read decoders.
    pub(super) fn plain(codec: C) -> Subject<C> {
        Subject {
            codec,
            delete: None,
        }
    }

    /// What it decodes.
    fn asks(&self) -> &'static [Ask] {
        match self.delete {
            Some(_) => &[Ask::Get, Ask::Set, Ask::Many, Ask::Delete],
            None => &[Ask::Get, Ask::Set, Ask::Many],
        }
    }

    /// Decodes `buf` as the reply to `ask` (of `ids` for a batch read).
    fn decode(
        &self,
        ask: Ask,
        ids: &[u64],
        buf: &[u8],
        found: &mut Found,
    ) -> Result<Decoded, Malformed> {
        match (ask, self.delete) {
            (Ask::Get, _) => self.codec.decode(OpKind::Get, buf),
            (Ask::Set, _) => self.codec.decode(OpKind::Set, buf),
            (Ask::Many, _) => self.codec.decode_many(PREFIX, ids, buf, found),
            (Ask::Delete, Some(delete)) => delete(&self.codec, buf),
            (Ask::Delete, None) => unreachable!("not a cache codec"),
        }
    }
}

impl<C: CacheCodec> Subject<C> {
    /// A cache codec's decoders, DELETE's too.
    pub(super) fn cache(codec: C) -> Subject<C> {
        let delete = Some(C::decode_delete as DecodeDelete<C>);
        Subject {
            delete,
            ..Subject::plain(codec)
        }
    }
}

/// A whole reply as decoded: its length, what it says, the tag it names.
type Whole = (usize, Want, Option<u32>);

/// Decodes `buf` and checks the decoders' contract: a frame is 1 to
/// `buf.len()` bytes; its value, redirect address and values found lie in
/// it; a batch read answers `Batch` or an error, a DELETE `Stored` or an
/// error; a tag names what `reply_tag` names. Returns the raw result and,
/// for a whole reply, what it says.
fn judge<C: Codec>(
    t: &Subject<C>,
    ask: Ask,
    ids: &[u64],
    buf: &[u8],
) -> Result<(Result<Decoded, Malformed>, Option<Whole>), TestCaseError> {
    let mut found = Vec::new();
    let got = t.decode(ask, ids, buf, &mut found);
    let tag = t.codec.reply_tag(buf);
    let (len, reply, named) = match &got {
        Ok(Decoded::Frame { len, reply }) => (*len, reply.clone(), None),
        Ok(Decoded::Tagged { len, reply, tag }) => (*len, reply.clone(), Some(*tag)),
        Ok(Decoded::Incomplete) | Err(_) => {
            // What the engine asks of an incomplete reply must not panic.
            let _ = t.codec.declared_len(buf);
            for (_, r) in &found {
                prop_assert!(
                    r.start <= r.end && r.end <= buf.len(),
                    "found {r:?} outside the input"
                );
            }
            return Ok((got, None));
        }
    };
    prop_assert!(
        len >= 1 && len <= buf.len(),
        "a frame of {len} bytes in {} bytes",
        buf.len()
    );
    let inside = |r: &Range<usize>| r.start <= r.end && r.end <= len;
    let want = match reply {
        Reply::Value(r) => {
            prop_assert!(inside(&r), "value {r:?} outside the {len}-byte frame");
            Want::Value(Bytes(buf[r].to_vec()))
        }
        Reply::Redirect { slot, to, ask } => {
            prop_assert!(inside(&to), "redirect {to:?} outside the {len}-byte frame");
            Want::Redirect {
                slot,
                to: Bytes(buf[to].to_vec()),
                ask,
            }
        }
        Reply::Nil => Want::Nil,
        Reply::Stored => Want::Stored,
        Reply::ServerError => Want::Error,
        Reply::Batch => Want::Batch(Vec::new()),
    };
    for (_, r) in &found {
        prop_assert!(inside(r), "found {r:?} outside the {len}-byte frame");
    }
    let want = match want {
        Want::Batch(_) => Want::Batch(
            found
                .iter()
                .map(|(id, r)| (*id, Bytes(buf[r.clone()].to_vec())))
                .collect(),
        ),
        w => w,
    };
    match ask {
        Ask::Many => prop_assert!(
            matches!(want, Want::Batch(_) | Want::Error),
            "{want:?} to a batch read"
        ),
        Ask::Delete => prop_assert!(
            matches!(want, Want::Stored | Want::Error),
            "{want:?} to a delete"
        ),
        Ask::Get | Ask::Set => {
            prop_assert!(!matches!(want, Want::Batch(_)), "a batch to a single read")
        }
    }
    prop_assert_eq!(tag, named, "reply_tag disagrees with the decoded tag");
    Ok((got, Some((len, want, named))))
}

/// Decodes back to back the replies of `stream`, asked as `replies` were, up
/// to the first that is not whole; returns the replies decoded.
fn walk<C: Codec>(
    t: &Subject<C>,
    replies: &[Valid],
    stream: &[u8],
) -> Result<Vec<Whole>, TestCaseError> {
    let (mut at, mut out) = (0, Vec::new());
    for r in replies.iter().cycle().take(replies.len() + 2) {
        let Some(whole) = judge(t, r.ask, &r.ids, &stream[at..])?.1 else {
            break;
        };
        at += whole.0;
        out.push(whole);
        if at == stream.len() {
            break;
        }
    }
    Ok(out)
}

/// The three properties of the decoders of `t`, with `valid` replies: on
/// arbitrary bytes; on streams of valid replies, as they are then mutated;
/// and on a valid reply cut short or followed by other bytes.
pub(super) fn properties<C, V>(name: &str, t: &Subject<C>, valid: V)
where
    C: Codec,
    V: Strategy<Value = Valid> + Clone,
{
    let fuzz = Fuzz::new(3);
    fuzz.check(
        &format!("{name}: arbitrary bytes"),
        (noise(), ids()),
        |(buf, ids)| {
            for &ask in t.asks() {
                let _ = judge(t, ask, &ids, &buf.0)?;
            }
            Ok(())
        },
    );
    let streams = (
        prop::collection::vec(valid.clone(), 1..5),
        prop::collection::vec(mutation(), 1..5),
    );
    fuzz.check(
        &format!("{name}: valid streams, mutated"),
        streams,
        |(replies, changes)| {
            let mut stream: Vec<u8> = replies
                .iter()
                .flat_map(|r| r.bytes.0.iter().copied())
                .collect();
            let decoded = walk(t, &replies, &stream)?;
            prop_assert_eq!(
                decoded.len(),
                replies.len(),
                "a valid stream not decoded whole"
            );
            for (r, (len, want, tag)) in replies.iter().zip(decoded) {
                prop_assert_eq!((len, &want, tag), (r.bytes.0.len(), &r.want, r.tag));
            }
            for m in &changes {
                mutate(&mut stream, m);
            }
            walk(t, &replies, &stream)?;
            Ok(())
        },
    );
    let cut = (valid, prop::collection::vec(any::<Index>(), 1..8), tail());
    fuzz.check(
        &format!("{name}: valid replies cut and extended"),
        cut,
        |(r, cuts, more)| {
            let bytes = &r.bytes.0;
            let (_, whole) = judge(t, r.ask, &r.ids, bytes)?;
            let whole = whole.ok_or_else(|| TestCaseError::fail("a valid reply not decoded"))?;
            prop_assert_eq!(&whole, &(bytes.len(), r.want.clone(), r.tag));
            let more = [&bytes[..], &more.0].concat();
            let (_, longer) = judge(t, r.ask, &r.ids, &more)?;
            prop_assert_eq!(
                longer.as_ref(),
                Some(&whole),
                "more bytes behind the reply change it"
            );
            for n in prefixes(bytes.len(), &cuts) {
                let (got, _) = judge(t, r.ask, &r.ids, &bytes[..n])?;
                prop_assert_eq!(
                    got,
                    Ok(Decoded::Incomplete),
                    "{} of {} bytes",
                    n,
                    bytes.len()
                );
                let tag = t.codec.reply_tag(&bytes[..n]);
                prop_assert!(tag.is_none() || tag == r.tag, "a prefix names tag {tag:?}");
                // A prefix never declares more than the whole reply: the
                // engine fails a socket whose reply declares more than it
                // can buffer, so an overstatement would fail a good reply.
                let declared = t.codec.declared_len(&bytes[..n]);
                prop_assert!(
                    declared.is_none_or(|d| d <= bytes.len()),
                    "{} of {} bytes declare {:?}",
                    n,
                    bytes.len(),
                    declared
                );
            }
            Ok(())
        },
    );
}

/// Every product's codec and set-up parsers are fuzzed here: the match is
/// exhaustive, so a product added to the registry does not compile until
/// it names its tests.
#[test]
fn every_product_is_fuzzed() {
    use super::TargetKind as K;
    for k in K::ALL {
        let tests: &[&str] = match k {
            K::Redis | K::Valkey | K::RedisCluster | K::ValkeyCluster => &[
                "caches::resp",
                "caches::resp_pushes",
                "setup::resp_frames",
                "setup::cluster_nodes",
            ],
            K::Memcached => &[
                "caches::memcached_text",
                "caches::memcached_meta",
                "setup::memcached_stats",
            ],
            K::Postgres => &["databases::postgres", "setup::postgres_messages"],
            K::Mariadb => &["databases::mysql", "setup::mysql_packets"],
            K::Tarantool => &["databases::tarantool", "setup::tarantool_frames"],
            K::Cassandra => &["databases::cql", "setup::cql_frames"],
        };
        assert!(!tests.is_empty(), "{k:?}");
    }
}
