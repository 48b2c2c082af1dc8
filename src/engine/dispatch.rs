//! Runs one point with the concrete codecs of its products: the registry
//! (`products`) picks them by [`TargetKind`] and hands them to the visitors
//! here, which start the request loop generic over them (no `dyn` on the hot
//! path).

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use super::spec::{AsideSpec, EngineReport, Observer, Spec};
use crate::driver::wire::{CacheCodec, Codec, CodecInput};
use crate::products::{TargetKind, WithCacheCodec, WithCodec, names, with_cache_codec, with_codec};

/// Runs one point against `spec.connector`'s product with its codec, or, when
/// `spec.aside` is set, through the cache in front of it.
pub fn execute(
    spec: &Spec,
    shutdown: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<EngineReport> {
    let kind = TargetKind::of(spec.connector.product);
    let input = CodecInput {
        connector: &spec.connector,
        value_size: spec.values.min(),
    };
    let plain = Plain {
        spec,
        shutdown,
        observer,
    };
    let Some(aside) = &spec.aside else {
        return with_codec(kind, &input, plain);
    };
    if !kind.is_sql() {
        bail!("cache-aside needs a database behind the cache");
    }
    let run = Aside {
        plain,
        aside,
        db: kind,
    };
    let cache = CodecInput {
        connector: &aside.cache,
        value_size: spec.values.min(),
    };
    match with_cache_codec(TargetKind::of(aside.cache.product), &cache, run) {
        Some(report) => report,
        None => bail!("cache-aside needs {} as the cache", names(true)),
    }
}

/// One point run straight against its target.
struct Plain<'a> {
    /// The point.
    spec: &'a Spec,
    /// Set on Ctrl-C.
    shutdown: &'a AtomicBool,
    /// Told of every interval.
    observer: &'a mut dyn Observer,
}

impl WithCodec for Plain<'_> {
    type Out = Result<EngineReport>;
    fn with<C: Codec>(self, codec: C) -> Self::Out {
        super::execute_with_codec(codec, self.spec, self.shutdown, self.observer)
    }
}

/// One point run through a cache in front of a database: the cache's codec
/// is chosen first, then [`AsideWith`] chooses the database's.
struct Aside<'a> {
    /// The point, against the database.
    plain: Plain<'a>,
    /// The cache and its policy.
    aside: &'a AsideSpec,
    /// The database behind the cache.
    db: TargetKind,
}

impl WithCacheCodec for Aside<'_> {
    type Out = Result<EngineReport>;
    fn with<K: CacheCodec>(self, cache: K) -> Self::Out {
        let (db, spec) = (self.db, self.plain.spec);
        let input = CodecInput {
            connector: &spec.connector,
            value_size: spec.values.min(),
        };
        with_codec(db, &input, AsideWith { run: self, cache })
    }
}

/// [`Aside`] with the cache's codec chosen, the database's still to choose.
struct AsideWith<'a, K> {
    run: Aside<'a>,
    cache: K,
}

impl<K: CacheCodec> WithCodec for AsideWith<'_, K> {
    type Out = Result<EngineReport>;
    fn with<D: Codec>(self, db: D) -> Self::Out {
        let p = self.run.plain;
        super::aside::execute_with_codecs(
            self.cache,
            db,
            p.spec,
            self.run.aside,
            p.shutdown,
            p.observer,
        )
    }
}
