//! What every data request carries besides its body: the routing header
//! of its table, the OAuth scope of its bearer token, and the features a
//! read announces.

/// The OAuth scope of data calls.
pub(crate) const DATA_SCOPE: &str = "https://www.googleapis.com/auth/bigtable.data";

/// The metadata key naming the client library, as every Google client
/// sends it (Google's servers and conformance tests look for it).
pub(crate) const API_CLIENT_KEY: &str = "x-goog-api-client";

/// This library under [`API_CLIENT_KEY`]: the language, the library's
/// version (`gccl`) and its gRPC transport.
pub(crate) const API_CLIENT: &str = concat!(
    "gl-rust/unknown gccl/",
    env!("CARGO_PKG_VERSION"),
    " grpc/tonic"
);

/// The metadata key of the client's feature flags.
pub(crate) const FEATURES_KEY: &str = "bigtable-features";

/// `google.bigtable.v2.FeatureFlags { reverse_scans: true }`, serialized and
/// web-safe base64 encoded, as Google's clients send it under
/// [`FEATURES_KEY`]: Cloud Bigtable rejects a reversed `ReadRows` from a
/// client that does not announce reverse scans. (The bytes are `08 01`,
/// checked by a test against the generated type.)
pub(crate) const FEATURES_REVERSE_SCANS: &str = "CAE=";

/// `x-goog-request-params` for a request on `resource` under the app
/// profile `app_profile` (empty: the instance's default), as Google's
/// clients send it: Cloud Bigtable routes and prioritises by both. A
/// table's calls name it as `table_name`; an instance's (the GoogleSQL
/// calls, `projects/…/instances/…`) as `name`.
pub(crate) fn routing_header(resource: &str, app_profile: &str) -> String {
    let key = if resource.contains("/tables/") {
        "table_name="
    } else {
        "name="
    };
    // Made for every call: sized once (a table path has a handful of
    // slashes to escape), each escape pushed as three bytes, not through
    // the formatting machinery.
    let mut out = String::with_capacity(32 + resource.len() + app_profile.len() + 16);
    out.push_str(key);
    percent_encode(&mut out, resource);
    out.push_str("&app_profile_id=");
    percent_encode(&mut out, app_profile);
    out
}

/// The metadata key of the routing header ([`routing_header`]).
pub(crate) const ROUTING_KEY: &str = "x-goog-request-params";

/// A header every request of some kind carries, its key and value checked
/// once: `from_static` checks them byte by byte at every call.
pub(crate) struct StaticHeader(std::sync::LazyLock<(AsciiKey, AsciiValue)>);

type AsciiKey = tonic::metadata::MetadataKey<tonic::metadata::Ascii>;
type AsciiValue = tonic::metadata::AsciiMetadataValue;

impl StaticHeader {
    /// Into `metadata`, replacing any value it had.
    pub(crate) fn insert_into(&self, metadata: &mut tonic::metadata::MetadataMap) {
        let (key, value) = &*self.0;
        metadata.insert(key.clone(), value.clone());
    }
}

/// [`API_CLIENT_KEY`]: [`API_CLIENT`], on every data request.
pub(crate) static API_CLIENT_HEADER: StaticHeader = StaticHeader(std::sync::LazyLock::new(|| {
    (
        AsciiKey::from_static(API_CLIENT_KEY),
        AsciiValue::from_static(API_CLIENT),
    )
}));

/// [`FEATURES_KEY`]: [`FEATURES_REVERSE_SCANS`], on every read.
pub(crate) static FEATURES_HEADER: StaticHeader = StaticHeader(std::sync::LazyLock::new(|| {
    (
        AsciiKey::from_static(FEATURES_KEY),
        AsciiValue::from_static(FEATURES_REVERSE_SCANS),
    )
}));

/// The routing header's key, checked once.
pub(crate) fn routing_key() -> AsciiKey {
    static KEY: std::sync::LazyLock<AsciiKey> =
        std::sync::LazyLock::new(|| AsciiKey::from_static(ROUTING_KEY));
    KEY.clone()
}

/// [`routing_header`] as the header value, kept for the last resource and
/// app profile each thread sent to: a table's calls send the same value
/// every time, and encoding and checking it again cost about a thousand
/// instructions a call. A thread's cache rather than a shared one: nothing
/// to contend on when many tasks send at once.
pub(crate) fn routing_value(
    resource: &str,
    app_profile: &str,
) -> Option<tonic::metadata::AsciiMetadataValue> {
    type Last = Option<(Box<str>, Box<str>, tonic::metadata::AsciiMetadataValue)>;
    thread_local! {
        static LAST: std::cell::RefCell<Last> = const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((r, p, value)) = &*last {
            if **r == *resource && **p == *app_profile {
                return Some(value.clone());
            }
        }
        let value: tonic::metadata::AsciiMetadataValue =
            routing_header(resource, app_profile).parse().ok()?;
        *last = Some((resource.into(), app_profile.into(), value.clone()));
        Some(value)
    })
}

/// The metadata key of a request's deadline.
pub(crate) const TIMEOUT_KEY: &str = "grpc-timeout";

/// `timeout` as a `grpc-timeout` value, rounded *down*, so the server
/// stops no later than the client's deadline (a conditional write's
/// horizon rests on that): microseconds under 100 ms, milliseconds up to
/// gRPC's eight digits, seconds beyond; never zero, which is no positive
/// timeout.
///
/// Not as tonic writes it (the finest unit that fits, so the value changes
/// with every microsecond a call's budget has spent): a call's first
/// attempt, its budget fresh, sends the same milliseconds as the last one,
/// which HTTP/2's header compression then sends as one byte from its
/// table, instead of a new literal both ends add to it (about 1,400
/// instructions a call on the client, issue 32).
pub(crate) fn grpc_timeout(timeout: std::time::Duration) -> tonic::metadata::AsciiMetadataValue {
    const MAX: u128 = 99_999_999;
    let micros = timeout.as_micros();
    let text = if micros < 100_000 {
        format!("{}u", micros.max(1))
    } else if timeout.as_millis() <= MAX {
        format!("{}m", timeout.as_millis())
    } else {
        format!("{}S", u128::from(timeout.as_secs()).min(MAX))
    };
    text.parse()
        .unwrap_or_else(|_| unreachable!("digits and a unit are a header value"))
}

fn percent_encode(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    // Runs of unreserved bytes are copied whole: they are ASCII, so a run
    // starts and ends on character boundaries (an empty one between two
    // bytes of one character is skipped).
    let mut run = 0;
    for (i, b) in text.bytes().enumerate() {
        if !(b.is_ascii_alphanumeric() || b"-_.~".contains(&b)) {
            if run < i {
                out.push_str(&text[run..i]);
            }
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
            run = i + 1;
        }
    }
    out.push_str(&text[run..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_routes_by_table_name_and_an_instance_by_name() {
        assert_eq!(
            routing_header("projects/p/instances/i/tables/t", "ap"),
            "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id=ap"
        );
        assert_eq!(
            routing_header("projects/p/instances/i", ""),
            "name=projects%2Fp%2Finstances%2Fi&app_profile_id="
        );
    }

    #[test]
    fn the_api_client_header_names_the_library_version() {
        assert!(API_CLIENT.contains(&format!("gccl/{}", env!("CARGO_PKG_VERSION"))));
        assert!(API_CLIENT
            .parse::<tonic::metadata::AsciiMetadataValue>()
            .is_ok());
    }

    #[test]
    fn the_routing_value_follows_the_resource_and_profile_it_is_asked_for() {
        let asked = [
            ("projects/p/instances/i/tables/a", ""),
            ("projects/p/instances/i/tables/a", ""),
            ("projects/p/instances/i/tables/b", ""),
            ("projects/p/instances/i/tables/b", "batch"),
            ("projects/p/instances/i/tables/a", ""),
            ("projects/p/instances/i", "batch"),
        ];
        for (resource, profile) in asked {
            let value = routing_value(resource, profile).unwrap();
            assert_eq!(value.to_str().unwrap(), routing_header(resource, profile));
        }
    }

    #[test]
    fn a_timeout_is_sent_rounded_down_in_a_unit_that_keeps_it_steady() {
        use std::time::Duration;
        let sent = |d: Duration| grpc_timeout(d).to_str().unwrap().to_owned();
        assert_eq!(sent(Duration::from_micros(99_999)), "99999u");
        assert_eq!(sent(Duration::from_nanos(1_500)), "1u");
        assert_eq!(sent(Duration::ZERO), "1u");
        assert_eq!(sent(Duration::from_millis(100)), "100m");
        // A fresh 20 s budget, a few microseconds spent: the same value
        // call after call, and never past the client's deadline.
        assert_eq!(sent(Duration::from_micros(19_999_993)), "19999m");
        assert_eq!(sent(Duration::from_micros(19_999_001)), "19999m");
        assert_eq!(sent(Duration::from_millis(99_999_999)), "99999999m");
        assert_eq!(sent(Duration::from_secs(100_000)), "100000S");
        assert_eq!(sent(Duration::MAX), "99999999S");
    }

    #[test]
    fn routing_header_is_percent_encoded() {
        assert_eq!(
            routing_header("projects/p/instances/i/tables/t", ""),
            "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id="
        );
        assert_eq!(
            routing_header("projects/p/instances/i/tables/t", "batch jobs"),
            "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ft&app_profile_id=batch%20jobs"
        );
        assert_eq!(
            routing_header("i/tables/é", "~a-b_c.d"),
            "table_name=i%2Ftables%2F%C3%A9&app_profile_id=~a-b_c.d"
        );
    }

    /// Web-safe base64 with padding, as Go's `base64.URLEncoding`.
    fn websafe_base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for group in bytes.chunks(3) {
            let n = group
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= group.len() {
                    out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn the_feature_header_announces_reverse_scans() {
        use prost::Message as _;
        let flags = crate::model::proto::FeatureFlags {
            reverse_scans: true,
            ..crate::model::proto::FeatureFlags::default()
        };
        assert_eq!(
            websafe_base64(&flags.encode_to_vec()),
            FEATURES_REVERSE_SCANS
        );
        assert_eq!(websafe_base64(b"\xfb\xff"), "-_8=");
    }
}
