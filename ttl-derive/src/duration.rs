//! Durations in attributes, parsed at compile time.
//!
//! The syntax is `humantime::parse_duration`'s: `"90s"`, `"15m"`, `"1h30m"`,
//! `"2d"`, `"250ms"`. The result must be a positive whole number of
//! milliseconds (Bigtable's timestamp granularity); the generated code holds
//! the number of milliseconds.

use syn::LitStr;

/// Largest accepted duration in milliseconds: its microseconds must fit in an
/// `i64`, as the runtime computes timestamps in microseconds.
const MAX_MILLIS: u128 = (i64::MAX / 1_000) as u128;

/// Parse `lit` into whole milliseconds, or an error at the string.
pub fn parse_millis(lit: &LitStr) -> syn::Result<i64> {
    let text = lit.value();
    let duration = humantime::parse_duration(&text).map_err(|e| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid duration {text:?}: {e}; write a number and a unit, as in \
                 \"90s\", \"15m\", \"1h30m\" or \"2d\" (units: ms, s, m, h, d, w)"
            ),
        )
    })?;
    if duration.is_zero() {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "duration {text:?} is zero: a TTL must be positive; \
                 to delete data, delete the row instead"
            ),
        ));
    }
    if duration.subsec_nanos() % 1_000_000 != 0 {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "duration {text:?} is not a whole number of milliseconds: \
                 Bigtable timestamps have millisecond granularity"
            ),
        ));
    }
    let millis = duration.as_millis();
    if millis > MAX_MILLIS {
        return Err(syn::Error::new(
            lit.span(),
            format!("duration {text:?} is too long for a Bigtable timestamp"),
        ));
    }
    // Checked just above.
    #[allow(clippy::cast_possible_truncation)]
    Ok(millis as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> LitStr {
        LitStr::new(s, proc_macro2::Span::call_site())
    }

    #[test]
    fn accepts_common_units() {
        assert_eq!(parse_millis(&lit("90s")).unwrap(), 90_000);
        assert_eq!(parse_millis(&lit("15m")).unwrap(), 900_000);
        assert_eq!(parse_millis(&lit("1h30m")).unwrap(), 5_400_000);
        assert_eq!(parse_millis(&lit("2d")).unwrap(), 172_800_000);
        assert_eq!(parse_millis(&lit("250ms")).unwrap(), 250);
    }

    #[test]
    fn rejects_zero_sub_millisecond_and_garbage() {
        for bad in ["0s", "1500us", "10x", "", "1000000000000d"] {
            assert!(parse_millis(&lit(bad)).is_err(), "{bad}");
        }
    }
}
