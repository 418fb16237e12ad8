//! Routing cookies: Cloud Bigtable may answer a request with
//! `x-goog-cbt-cookie-*` metadata (in its headers or its trailers, an error's
//! included) that tell where the retries of the same operation should go.
//! Google's clients send them back on every later attempt of that
//! operation; so does this library. A cookie seen again with a new value
//! replaces the old; one not seen again is kept.

use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, KeyAndValueRef, MetadataMap};

/// The prefix of every routing cookie's metadata key.
pub(crate) const COOKIE_PREFIX: &str = "x-goog-cbt-cookie";

/// The routing cookies of one operation, learnt from its attempts'
/// answers and sent with its next attempts.
#[derive(Debug, Clone, Default)]
pub(crate) struct RoutingCookies(Vec<(AsciiMetadataKey, AsciiMetadataValue)>);

impl RoutingCookies {
    /// Keep the cookies `metadata` (response headers or trailers) holds.
    /// Every answer's metadata passes here, so the built-in metrics read
    /// the front end's signals (server timing, location) here too.
    pub(crate) fn learn(&mut self, metadata: &MetadataMap) {
        #[cfg(feature = "opentelemetry")]
        crate::wire::server_signals::seen(metadata);
        for entry in metadata.iter() {
            let KeyAndValueRef::Ascii(key, value) = entry else {
                continue;
            };
            if !key.as_str().starts_with(COOKIE_PREFIX) {
                continue;
            }
            match self.0.iter_mut().find(|(k, _)| k == key) {
                Some((_, old)) => *old = value.clone(),
                None => self.0.push((key.clone(), value.clone())),
            }
        }
    }

    /// Add the cookies learnt so far to a request's `metadata`.
    pub(crate) fn apply(&self, metadata: &mut MetadataMap) {
        for (key, value) in &self.0 {
            metadata.insert(key.clone(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(pairs: &[(&'static str, &'static str)]) -> MetadataMap {
        let mut map = MetadataMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    #[test]
    fn cookies_are_kept_replaced_and_sent_back() {
        let mut cookies = RoutingCookies::default();
        cookies.learn(&metadata(&[
            ("x-goog-cbt-cookie-routing", "a"),
            ("x-other", "not a cookie"),
        ]));
        cookies.learn(&metadata(&[]));
        let mut sent = MetadataMap::new();
        cookies.apply(&mut sent);
        assert_eq!(sent.get("x-goog-cbt-cookie-routing").unwrap(), "a");
        assert!(sent.get("x-other").is_none());
        cookies.learn(&metadata(&[("x-goog-cbt-cookie-routing", "b")]));
        let mut sent = MetadataMap::new();
        cookies.apply(&mut sent);
        assert_eq!(sent.get("x-goog-cbt-cookie-routing").unwrap(), "b");
        assert_eq!(sent.len(), 1);
    }
}
