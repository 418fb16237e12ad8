//! Durations in attributes, parsed at compile time with the grammar the
//! runtime and the CLI use too ([`bigtable_ttl_spec::parse_millis`]): `"90s"`,
//! `"15m"`, `"1h30m"`, `"2d"`, `"250ms"`, a positive whole number of
//! milliseconds. The generated code holds the number of milliseconds; a bad
//! duration is an error at the string.

use syn::LitStr;

/// Parse `lit` into whole milliseconds, or an error at the string.
pub fn parse_millis(lit: &LitStr) -> syn::Result<i64> {
    bigtable_ttl_spec::parse_millis(&lit.value()).map_err(|e| syn::Error::new(lit.span(), e))
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
        assert_eq!(parse_millis(&lit("1h30m")).unwrap(), 5_400_000);
    }

    #[test]
    fn rejects_zero_sub_millisecond_and_garbage() {
        for bad in ["0s", "1500us", "10x", "", "1000000000000d"] {
            assert!(parse_millis(&lit(bad)).is_err(), "{bad}");
        }
    }
}
