//! A small macro that turns a field table into a zero-copy `Packet<T>` with
//! getters/setters and a `Repr` with parse/emit. Offsets and bit positions follow
//! IBA vol. 1 ch. 14 (cross-checked with the bit offsets of rdma-core
//! `libibmad/fields.c`).

use crate::ids::{Guid, Lid};

/// Conversion between a field's Rust type and its raw wire integer.
pub(crate) trait Wire<R>: Sized {
    fn from_raw(r: R) -> Self;
    fn to_raw(self) -> R;
}

macro_rules! wire_ident {
    ($($t:ty),*) => { $( impl Wire<$t> for $t { fn from_raw(r: $t) -> $t { r } fn to_raw(self) -> $t { self } } )* };
}
wire_ident!(u8, u16, u32, u64);

impl Wire<u8> for bool {
    fn from_raw(r: u8) -> bool {
        r != 0
    }
    fn to_raw(self) -> u8 {
        self as u8
    }
}
impl Wire<u16> for Lid {
    fn from_raw(r: u16) -> Lid {
        Lid(r)
    }
    fn to_raw(self) -> u16 {
        self.0
    }
}
impl Wire<u64> for Guid {
    fn from_raw(r: u64) -> Guid {
        Guid(r)
    }
    fn to_raw(self) -> u64 {
        self.0
    }
}

/// Read one field spec from a byte slice.
macro_rules! fget {
    ($b:expr, u8 $o:literal) => {
        $b[$o]
    };
    ($b:expr, u16 $o:literal) => {
        crate::bytes::be16($b, $o)
    };
    ($b:expr, u24 $o:literal) => {
        crate::bytes::be24($b, $o)
    };
    ($b:expr, u32 $o:literal) => {
        crate::bytes::be32($b, $o)
    };
    ($b:expr, u64 $o:literal) => {
        crate::bytes::be64($b, $o)
    };
    ($b:expr, bits $o:literal $sh:literal $w:literal) => {
        ($b[$o] >> $sh) & (((1u16 << $w) - 1) as u8)
    };
}
/// Write one field spec (read-modify-write for sub-byte fields).
macro_rules! fput {
    ($b:expr, $v:expr, u8 $o:literal) => {
        $b[$o] = $v
    };
    ($b:expr, $v:expr, u16 $o:literal) => {
        crate::bytes::put16($b, $o, $v)
    };
    ($b:expr, $v:expr, u24 $o:literal) => {
        crate::bytes::put24($b, $o, $v & 0xff_ffff)
    };
    ($b:expr, $v:expr, u32 $o:literal) => {
        crate::bytes::put32($b, $o, $v)
    };
    ($b:expr, $v:expr, u64 $o:literal) => {
        crate::bytes::put64($b, $o, $v)
    };
    ($b:expr, $v:expr, bits $o:literal $sh:literal $w:literal) => {{
        let m: u8 = (((1u16 << $w) - 1) as u8) << $sh;
        $b[$o] = ($b[$o] & !m) | (($v << $sh) & m);
    }};
}
/// The raw integer type of a field spec.
macro_rules! fraw {
    (u8 $($r:tt)*) => {
        u8
    };
    (u16 $($r:tt)*) => {
        u16
    };
    (u24 $($r:tt)*) => {
        u32
    };
    (u32 $($r:tt)*) => {
        u32
    };
    (u64 $($r:tt)*) => {
        u64
    };
    (bits $($r:tt)*) => {
        u8
    };
}

/// Generate `Packet<T>` (getters `f()`, setters `set_f()`) and `Repr` for a
/// fixed-size attribute laid out by the field table.
macro_rules! attribute {
    (
        $(#[$doc:meta])* $name:literal, $len:expr,
        { $( $(#[$fd:meta])* $f:ident / $set:ident : $ty:ty = [$($spec:tt)*] ),* $(,)? }
    ) => {
        /// Bytes of the attribute (the rest of the 64-byte SMP data block is reserved).
        pub const LEN: usize = $len;

        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct Packet<T: AsRef<[u8]>> { buffer: T }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Wrap without checking.
            pub const fn new_unchecked(buffer: T) -> Packet<T> { Packet { buffer } }
            /// Wrap after [`Packet::check_len`].
            pub fn new_checked(buffer: T) -> crate::error::Result<Packet<T>> {
                let p = Packet { buffer }; p.check_len()?; Ok(p)
            }
            /// Ensure the attribute fits.
            pub fn check_len(&self) -> crate::error::Result<()> { crate::error::need($name, self.buffer.as_ref(), LEN) }
            /// The wrapped buffer.
            pub fn into_inner(self) -> T { self.buffer }
            $(
                $(#[$fd])*
                pub fn $f(&self) -> $ty {
                    let b = self.buffer.as_ref();
                    <$ty as crate::mad::field::Wire<crate::mad::field::fraw!($($spec)*)>>::from_raw(crate::mad::field::fget!(b, $($spec)*))
                }
            )*
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            $(
                #[doc = concat!("Set `", stringify!($f), "` in place.")]
                pub fn $set(&mut self, v: $ty) {
                    let b = self.buffer.as_mut();
                    let r: crate::mad::field::fraw!($($spec)*) = crate::mad::field::Wire::to_raw(v);
                    crate::mad::field::fput!(b, r, $($spec)*);
                }
            )*
        }

        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        pub struct Repr { $( $(#[$fd])* pub $f: $ty, )* }

        impl Repr {
            /// Parse from an SMP data block (at least [`LEN`] bytes).
            pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> crate::error::Result<Repr> {
                p.check_len()?;
                Ok(Repr { $( $f: p.$f(), )* })
            }
            /// Parse from raw bytes.
            pub fn from_bytes(b: &[u8]) -> crate::error::Result<Repr> {
                Repr::parse(&Packet::new_checked(b)?)
            }
            /// Bytes [`Repr::emit`] writes.
            pub const fn buffer_len(&self) -> usize { LEN }
            /// Write the attribute; reserved bits are zero.
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> crate::error::Result<()> {
                crate::error::room($name, p.buffer.as_ref(), LEN)?;
                p.buffer.as_mut()[..LEN].fill(0);
                $( p.$set(self.$f); )*
                Ok(())
            }
            /// Write into raw bytes.
            pub fn to_bytes(&self, b: &mut [u8]) -> crate::error::Result<()> {
                self.emit(&mut Packet::new_unchecked(b))
            }
            /// The field names, in wire order.
            pub const FIELD_NAMES: &'static [&'static str] = &[$( stringify!($f), )*];
            /// Call `f` with every field's name and raw wire value, in wire order.
            pub fn visit(&self, f: &mut dyn FnMut(&'static str, u64)) {
                $( f(stringify!($f), crate::mad::field::Wire::<crate::mad::field::fraw!($($spec)*)>::to_raw(self.$f) as u64); )*
            }
            /// Set a field by name from its raw wire value (truncated to the field's
            /// width on emit). Returns false for an unknown name.
            pub fn set_field(&mut self, name: &str, v: u64) -> bool {
                match name {
                    $( stringify!($f) => {
                        self.$f = crate::mad::field::Wire::from_raw(v as crate::mad::field::fraw!($($spec)*));
                        true
                    } )*
                    _ => false,
                }
            }
        }
    };
}

/// A wire enum over a `u8` with an `Unknown(raw)` arm.
macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $( $(#[$vd:meta])* $v:ident = $code:literal ),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vd])* $v, )*
            /// Any other value.
            Unknown(u8),
        }
        impl Default for $name {
            fn default() -> $name { $name::from(0u8) }
        }
        impl From<u8> for $name {
            fn from(x: u8) -> $name { match x { $( $code => $name::$v, )* o => $name::Unknown(o) } }
        }
        impl From<$name> for u8 {
            fn from(x: $name) -> u8 { match x { $( $name::$v => $code, )* $name::Unknown(o) => o } }
        }
        impl crate::mad::field::Wire<u8> for $name {
            fn from_raw(r: u8) -> $name { $name::from(r) }
            fn to_raw(self) -> u8 { u8::from(self) }
        }
    };
}

pub(crate) use {attribute, fget, fput, fraw, wire_enum};
