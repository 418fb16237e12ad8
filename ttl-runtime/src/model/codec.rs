//! How field values become cell bytes and back.
//!
//! Fixed encodings, chosen so that `cbt` and Bigtable's own counters agree:
//!
//! | type | bytes |
//! |---|---|
//! | `String` | UTF-8 |
//! | `Vec<u8>` | as is |
//! | `bool` | one byte, 0 or 1 |
//! | `i64`, `u64` | 8 bytes big-endian (Bigtable's counter encoding) |
//! | `i32`, `u32` | 4 bytes big-endian |
//! | `i16`, `u16` | 2 bytes big-endian |
//! | `i8`, `u8` | 1 byte |
//! | `f64` | 8 bytes big-endian IEEE 754 |
//! | `f32` | 4 bytes big-endian IEEE 754 |
//!
//! A fixed-width cell of any other width does not decode
//! ([`CodecError::WrongWidth`]): an `i32` cell is not read as an `i64`.
//! | `DateTime<Utc>` | microseconds since the epoch, 8 bytes big-endian |
//!
//! Implement [`CellCodec`] for your own types; with the `json` feature,
//! [`Json<T>`] stores any serde type as JSON.

use chrono::{DateTime, Utc};

use crate::model::error::CodecError;

/// A type that can be stored in one Bigtable cell.
///
/// ```
/// use bigtable_ttl::{CellCodec, CodecError};
///
/// #[derive(Debug, PartialEq)]
/// struct Celsius(f64);
///
/// impl CellCodec for Celsius {
///     fn encode(&self) -> Result<Vec<u8>, CodecError> {
///         self.0.encode()
///     }
///     fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
///         f64::decode(bytes).map(Celsius)
///     }
/// }
///
/// let bytes = Celsius(21.5).encode().unwrap();
/// assert_eq!(Celsius::decode(&bytes).unwrap(), Celsius(21.5));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in a Bigtable cell",
    label = "no `CellCodec` for this field's type",
    note = "stored fields need `CellCodec`: String, Vec<u8>, bool, i8 to i64, u8 to u64, f32, f64, DateTime<Utc>, `Json<T>` (feature `json`), `#[derive(CellCodec)]` on a newtype or C-like enum, or your own impl"
)]
pub trait CellCodec: Sized {
    /// The cell bytes for this value.
    ///
    /// # Errors
    /// When the value cannot be represented.
    fn encode(&self) -> Result<Vec<u8>, CodecError>;

    /// Append the cell bytes for this value ([`CellCodec::encode`]'s) to
    /// `out`. The bulk writer encodes values through this, into a buffer it
    /// reuses: an implementation writing in place saves an allocation per
    /// cell. The default appends what `encode` returns.
    ///
    /// # Errors
    /// As [`CellCodec::encode`]; `out` may then hold part of the value.
    #[inline]
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&self.encode()?);
        Ok(())
    }

    /// The value stored in `bytes`.
    ///
    /// # Errors
    /// When the bytes are not a valid encoding (wrong width, bad UTF-8, …).
    fn decode(bytes: &[u8]) -> Result<Self, CodecError>;
}

/// The `N` bytes of a fixed-width cell (what `#[derive(CellCodec)]`'s
/// `by_number` enums read their number from).
///
/// # Errors
/// [`CodecError::WrongWidth`].
#[inline]
pub fn fixed<const N: usize>(bytes: &[u8]) -> Result<[u8; N], CodecError> {
    bytes.try_into().map_err(|_| CodecError::WrongWidth {
        expected: N,
        actual: bytes.len(),
    })
}

impl CellCodec for String {
    #[inline]
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(self.as_bytes().to_vec())
    }
    #[inline]
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(self.as_bytes());
        Ok(())
    }
    #[inline]
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        String::from_utf8(bytes.to_vec()).map_err(|e| CodecError::InvalidUtf8(e.to_string()))
    }
}

impl CellCodec for Vec<u8> {
    #[inline]
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(self.clone())
    }
    #[inline]
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(self);
        Ok(())
    }
    #[inline]
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        Ok(bytes.to_vec())
    }
}

impl CellCodec for bool {
    #[inline]
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(vec![u8::from(*self)])
    }
    #[inline]
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.push(u8::from(*self));
        Ok(())
    }
    #[inline]
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        match fixed::<1>(bytes)? {
            [0] => Ok(false),
            [1] => Ok(true),
            [other] => Err(CodecError::InvalidBool(other)),
        }
    }
}

macro_rules! big_endian {
    ($($t:ty),*) => {$(
        impl CellCodec for $t {
            #[inline]
            fn encode(&self) -> Result<Vec<u8>, CodecError> {
                Ok(self.to_be_bytes().to_vec())
            }
            #[inline]
            fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
                out.extend_from_slice(&self.to_be_bytes());
                Ok(())
            }
            #[inline]
            fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
                Ok(<$t>::from_be_bytes(fixed(bytes)?))
            }
        }
    )*};
}
big_endian!(i64, u64, i32, u32, i16, u16, i8, u8, f64, f32);

impl CellCodec for DateTime<Utc> {
    #[inline]
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(self.timestamp_micros().to_be_bytes().to_vec())
    }
    #[inline]
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&self.timestamp_micros().to_be_bytes());
        Ok(())
    }
    #[inline]
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        let micros = i64::from_be_bytes(fixed(bytes)?);
        DateTime::from_timestamp_micros(micros).ok_or(CodecError::TimestampOutOfRange(micros))
    }
}

/// The error of a `by_name` enum cell that names no variant.
#[cold]
#[must_use]
pub fn unknown_name(enum_name: &'static str, bytes: &[u8]) -> CodecError {
    CodecError::UnknownVariant {
        enum_name,
        value: format!("\"{}\"", bytes.escape_ascii()),
    }
}

/// The error of a `by_number` enum cell that holds no variant's number.
#[cold]
#[must_use]
pub fn unknown_number(enum_name: &'static str, number: impl std::fmt::Display) -> CodecError {
    CodecError::UnknownVariant {
        enum_name,
        value: number.to_string(),
    }
}

/// Stores any serde type as JSON (feature `json`).
///
/// ```
/// # #[cfg(feature = "json")] {
/// use bigtable_ttl::{CellCodec, Json};
/// let bytes = Json(vec![1, 2, 3]).encode().unwrap();
/// assert_eq!(bytes, b"[1,2,3]");
/// # }
/// ```
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

#[cfg(feature = "json")]
impl<T: serde::Serialize + serde::de::DeserializeOwned> CellCodec for Json<T> {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        serde_json::to_vec(&self.0).map_err(|e| CodecError::Json(e.to_string()))
    }
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        serde_json::to_writer(out, &self.0).map_err(|e| CodecError::Json(e.to_string()))
    }
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        serde_json::from_slice(bytes)
            .map(Json)
            .map_err(|e| CodecError::Json(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i64_is_big_endian_eight_bytes() {
        assert_eq!(1i64.encode().unwrap(), vec![0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn wrong_width_is_reported() {
        assert_eq!(
            i64::decode(&[1, 2]).unwrap_err(),
            CodecError::WrongWidth {
                expected: 8,
                actual: 2
            }
        );
    }

    /// `value` encodes to `bytes` and decodes back; one byte more or less
    /// is a width error.
    fn fixed_width<T: CellCodec + PartialEq + std::fmt::Debug>(value: &T, bytes: &[u8]) {
        assert_eq!(value.encode().unwrap(), bytes, "{value:?}");
        assert_eq!(&T::decode(bytes).unwrap(), value);
        let longer = [bytes, &[0]].concat();
        for wrong in [&bytes[1..], &longer[..]] {
            assert_eq!(
                T::decode(wrong).unwrap_err(),
                CodecError::WrongWidth {
                    expected: bytes.len(),
                    actual: wrong.len()
                },
                "{value:?}"
            );
        }
    }

    #[test]
    fn narrow_integers_and_f32_are_big_endian_of_their_width() {
        fixed_width(&0xfe_u8, &[0xfe]);
        fixed_width(&-2_i8, &[0xfe]);
        fixed_width(&0x1234_u16, &[0x12, 0x34]);
        fixed_width(&i16::MIN, &[0x80, 0]);
        fixed_width(&0x1234_5678_u32, &[0x12, 0x34, 0x56, 0x78]);
        fixed_width(&-1_i32, &[0xff; 4]);
        fixed_width(&1.5_f32, &[0x3f, 0xc0, 0, 0]);
        fixed_width(&f32::NEG_INFINITY, &[0xff, 0x80, 0, 0]);
        let nan = f32::decode(&f32::NAN.encode().unwrap()).unwrap();
        assert!(nan.is_nan());
    }

    /// `encode_into` appends what `encode` returns, for every built-in
    /// codec (the bulk writer encodes through it, the other writes through
    /// `encode`).
    #[test]
    fn encode_into_appends_what_encode_returns() {
        /// A codec with only `encode`: the default `encode_into`.
        struct Only(u8);
        impl CellCodec for Only {
            fn encode(&self) -> Result<Vec<u8>, CodecError> {
                Ok(vec![self.0; 3])
            }
            fn decode(_: &[u8]) -> Result<Self, CodecError> {
                Err(CodecError::Missing)
            }
        }
        fn same<T: CellCodec>(value: &T) {
            let mut out = b"kept".to_vec();
            value.encode_into(&mut out).unwrap();
            assert_eq!(&out[..4], b"kept");
            assert_eq!(out[4..], value.encode().unwrap()[..]);
        }
        same(&"ünïcode".to_owned());
        same(&String::new());
        same(&vec![0_u8, 1, 255]);
        same(&true);
        same(&false);
        same(&-7_i64);
        same(&u64::MAX);
        same(&-7_i32);
        same(&7_u32);
        same(&-7_i16);
        same(&7_u16);
        same(&-7_i8);
        same(&7_u8);
        same(&1.5_f64);
        same(&-1.5_f32);
        same(&DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap());
        #[cfg(feature = "json")]
        same(&Json(vec![("a".to_owned(), 1)]));
        same(&Only(9));
    }

    #[test]
    fn invalid_utf8_is_reported() {
        assert!(matches!(
            String::decode(&[0xff, 0xfe]).unwrap_err(),
            CodecError::InvalidUtf8(_)
        ));
    }
}
