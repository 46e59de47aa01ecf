//! The one error type of the crate: every parse and emit failure says which header
//! and field, and what was expected.

/// A wire parse or emit error.
///
/// Messages are lowercase fragments that read after "failed to".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The input ends before a header or a field that must be there.
    #[error("parse {header}: truncated, need {need} bytes but only {have} are present")]
    Truncated {
        /// Header being parsed (e.g. "BTH").
        header: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// A length field disagrees with the bytes actually present (a "lying length").
    #[error("parse {header}: {field} says {claimed} bytes but {actual} bytes are present")]
    BadLength {
        /// Header holding the length field.
        header: &'static str,
        /// The length field.
        field: &'static str,
        /// What the field claims, in bytes.
        claimed: usize,
        /// What is really there, in bytes.
        actual: usize,
    },
    /// A field holds a value this format does not allow.
    #[error("parse {header}: {field} is {value:#x}, expected {expected}")]
    BadField {
        /// Header holding the field.
        header: &'static str,
        /// The field.
        field: &'static str,
        /// The value found.
        value: u64,
        /// What was expected, in words.
        expected: &'static str,
    },
    /// Bytes are left over after the last header and payload the lengths account for.
    #[error("parse {header}: {extra} trailing bytes after the packet its length fields describe")]
    TrailingBytes {
        /// Outermost header whose length was exceeded.
        header: &'static str,
        /// Surplus bytes.
        extra: usize,
    },
    /// Emit was given a buffer that cannot hold the result.
    #[error("emit {header}: buffer too small, need {need} bytes but have {have}")]
    BufferTooSmall {
        /// Header or packet being emitted.
        header: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A value cannot be represented on the wire (e.g. payload larger than a length field).
    #[error("emit {header}: {field} value {value} does not fit ({expected})")]
    Unrepresentable {
        /// Header being emitted.
        header: &'static str,
        /// Offending field.
        field: &'static str,
        /// Value given.
        value: u64,
        /// Allowed range, in words.
        expected: &'static str,
    },
}

/// Result alias of this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// `Err(Truncated)` unless `buf` holds at least `need` bytes.
#[inline]
pub(crate) fn need(header: &'static str, buf: &[u8], need: usize) -> Result<()> {
    if buf.len() < need {
        Err(Error::Truncated {
            header,
            need,
            have: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// `Err(BufferTooSmall)` unless `buf` holds at least `need` bytes.
#[inline]
pub(crate) fn room(header: &'static str, buf: &[u8], need: usize) -> Result<()> {
    if buf.len() < need {
        Err(Error::BufferTooSmall {
            header,
            need,
            have: buf.len(),
        })
    } else {
        Ok(())
    }
}
