//! What every data request carries besides its body: the routing header
//! of its table and the OAuth scope of its bearer token.

use std::fmt::Write as _;

/// The OAuth scope of data calls.
pub(crate) const DATA_SCOPE: &str = "https://www.googleapis.com/auth/bigtable.data";

/// `x-goog-request-params` for a table request, as Google's clients send it
/// (routes the request to the right backend on Cloud Bigtable).
pub(crate) fn routing_header(table_name: &str) -> String {
    let mut out = String::from("table_name=");
    for b in table_name.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out.push_str("&app_profile_id=");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_header_is_percent_encoded() {
        assert_eq!(
            routing_header("projects/p/instances/i/tables/t"),
            "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id="
        );
    }
}
