//! The machinery behind the registry's one list: the [`products!`] macro that
//! turns one entry per product into the `TargetKind` enum (with its serde
//! names), `TargetKind::ALL`, `TargetKind::product` and the static codec
//! dispatch, and the two small visitor traits that dispatch uses, so a point
//! runs generic over its concrete codec (no `dyn` on the hot path).

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::TargetKind;
use crate::engine::{self, AsideSpec, EngineReport, Observer, Spec};
use crate::wire::{CacheCodec, Codec};

/// Work done with a product's codec, whatever its concrete type.
pub(super) trait WithCodec {
    /// What the work gives.
    type Out;
    /// Does the work with `codec`.
    fn with<C: Codec>(self, codec: C) -> Self::Out;
}

/// Work done with a cache's codec, whatever its concrete type.
pub(super) trait WithCacheCodec {
    /// What the work gives.
    type Out;
    /// Does the work with `codec`.
    fn with<K: CacheCodec>(self, codec: K) -> Self::Out;
}

/// One point run straight against its target.
pub(super) struct Plain<'a> {
    /// The point.
    pub spec: &'a Spec,
    /// Set on Ctrl-C.
    pub shutdown: &'a AtomicBool,
    /// Told of every interval.
    pub observer: &'a mut dyn Observer,
}

impl WithCodec for Plain<'_> {
    type Out = Result<EngineReport>;
    fn with<C: Codec>(self, codec: C) -> Self::Out {
        engine::execute_with_codec(codec, self.spec, self.shutdown, self.observer)
    }
}

/// One point run through a cache in front of a database: the cache's codec
/// is chosen first, then [`AsideWith`] chooses the database's.
pub(super) struct Aside<'a> {
    /// The point, against the database.
    pub plain: Plain<'a>,
    /// The cache and its policy.
    pub aside: &'a AsideSpec,
    /// The database behind the cache.
    pub db: TargetKind,
}

impl WithCacheCodec for Aside<'_> {
    type Out = Result<EngineReport>;
    fn with<K: CacheCodec>(self, cache: K) -> Self::Out {
        let (db, spec) = (self.db, self.plain.spec);
        super::with_codec(db, spec, AsideWith { run: self, cache })
    }
}

/// [`Aside`] with the cache's codec chosen, the database's still to choose.
pub(super) struct AsideWith<'a, K> {
    run: Aside<'a>,
    cache: K,
}

impl<K: CacheCodec> WithCodec for AsideWith<'_, K> {
    type Out = Result<EngineReport>;
    fn with<D: Codec>(self, db: D) -> Self::Out {
        let p = self.run.plain;
        engine::aside::execute_with_codecs(
            self.cache,
            db,
            p.spec,
            self.run.aside,
            p.shutdown,
            p.observer,
        )
    }
}

/// The registry from one list: caches, then databases, each entry
///
/// `/// doc` `Variant = "name" => PRODUCT_STATIC, |spec| codec expression;`
///
/// (the name is the serde name in results and must be the product's
/// `Facts::name`; the codec expression may read the point's `&Spec`). Makes
/// `TargetKind` with `ALL` and `product()`, and `with_codec` /
/// `with_cache_codec`, the static dispatch to a generic worker.
macro_rules! products {
    (
        caches {
            $( $(#[$cdoc:meta])* $cv:ident = $cname:literal => $cprod:expr, |$cs:pat_param| $ccodec:expr; )*
        }
        databases {
            $( $(#[$ddoc:meta])* $dv:ident = $dname:literal => $dprod:expr, |$ds:pat_param| $dcodec:expr; )*
        }
    ) => {
        /// The product a target is: decides the protocol and, when managed,
        /// the binary. Serialised by the product's name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum TargetKind {
            $( $(#[$cdoc])* #[serde(rename = $cname)] $cv, )*
            $( $(#[$ddoc])* #[serde(rename = $dname)] $dv, )*
        }

        impl TargetKind {
            /// Every product, in the order help texts list them: caches, then
            /// databases.
            pub const ALL: [TargetKind; [$($cname,)* $($dname,)*].len()] =
                [$(TargetKind::$cv,)* $(TargetKind::$dv,)*];

            /// The product's implementation.
            pub fn product(self) -> &'static dyn Product {
                match self {
                    $( TargetKind::$cv => &$cprod, )*
                    $( TargetKind::$dv => &$dprod, )*
                }
            }
        }

        /// Does `work` with the codec of `kind` (for the values and query
        /// mode of `spec`).
        fn with_codec<W: registry::WithCodec>(kind: TargetKind, spec: &Spec, work: W) -> W::Out {
            match kind {
                $( TargetKind::$cv => {
                    let $cs: &Spec = spec;
                    work.with($ccodec)
                } )*
                $( TargetKind::$dv => {
                    let $ds: &Spec = spec;
                    work.with($dcodec)
                } )*
            }
        }

        /// Does `work` with the codec of cache `kind`; `None` for a database.
        fn with_cache_codec<W: registry::WithCacheCodec>(
            kind: TargetKind,
            spec: &Spec,
            work: W,
        ) -> Option<W::Out> {
            match kind {
                $( TargetKind::$cv => {
                    let $cs: &Spec = spec;
                    Some(work.with($ccodec))
                } )*
                $( TargetKind::$dv => None, )*
            }
        }
    };
}
