//! The machinery behind the registry's one list: the [`products!`] macro that
//! turns one entry per product into the `TargetKind` enum (with its serde
//! names), `TargetKind::ALL`, `TargetKind::product` and the static codec
//! dispatch, and the two small visitor traits that dispatch uses, so that the
//! engine runs a point generic over its concrete codec (no `dyn` on the hot
//! path).

use crate::driver::wire::{CacheCodec, Codec};

/// Work done with a product's codec, whatever its concrete type.
pub trait WithCodec {
    /// What the work gives.
    type Out;
    /// Does the work with `codec`.
    fn with<C: Codec>(self, codec: C) -> Self::Out;
}

/// Work done with a cache's codec, whatever its concrete type.
pub trait WithCacheCodec {
    /// What the work gives.
    type Out;
    /// Does the work with `codec`.
    fn with<K: CacheCodec>(self, codec: K) -> Self::Out;
}

/// The registry from one list: caches, then databases, each entry
///
/// `/// doc` `Variant = "name" => PRODUCT_STATIC, |spec| codec expression;`
///
/// (the name is the serde name in results and must be the product's
/// `Facts::name`; the codec expression may read the point's [`CodecInput`]). Makes
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

        /// Does `work` with the codec of `kind`, made for `input`.
        pub fn with_codec<W: registry::WithCodec>(kind: TargetKind, input: &CodecInput, work: W) -> W::Out {
            match kind {
                $( TargetKind::$cv => {
                    let $cs: &CodecInput = input;
                    work.with($ccodec)
                } )*
                $( TargetKind::$dv => {
                    let $ds: &CodecInput = input;
                    work.with($dcodec)
                } )*
            }
        }

        /// Does `work` with the codec of cache `kind`; `None` for a database.
        pub fn with_cache_codec<W: registry::WithCacheCodec>(
            kind: TargetKind,
            input: &CodecInput,
            work: W,
        ) -> Option<W::Out> {
            match kind {
                $( TargetKind::$cv => {
                    let $cs: &CodecInput = input;
                    Some(work.with($ccodec))
                } )*
                $( TargetKind::$dv => None, )*
            }
        }
    };
}
