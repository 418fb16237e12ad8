//! What Google's front end says about an attempt in its response metadata:
//! the time it spent on it (`server-timing: gfet4t7; dur=…`) and where it
//! ran (`x-goog-ext-425905942-bin`, a `google.bigtable.v2.ResponseParams`).
//! The built-in metrics read them as Google's clients do: from the
//! response headers, else the trailers. An attempt with neither never
//! reached Google (a connectivity error); the emulator sends neither.
//!
//! The channel notes them, as it notes routing cookies, into the slot of
//! the attempt under way ([`ATTEMPT`], a task-local the caller scopes), so
//! that no call's signature carries it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use prost::Message as _;
use tonic::metadata::MetadataMap;

/// The metadata key of the server's timing.
pub(crate) const SERVER_TIMING_KEY: &str = "server-timing";
/// The entry of `server-timing` that holds the front end's latency.
const SERVER_TIMING_PREFIX: &str = "gfet4t7; dur=";
/// The metadata key of the binary `ResponseParams` (zone, cluster).
pub(crate) const LOCATION_KEY: &str = "x-goog-ext-425905942-bin";

/// The signals of one attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ServerSignals {
    /// `server-timing`'s `gfet4t7` duration, in milliseconds.
    pub(crate) server_latency_ms: Option<f64>,
    /// The cluster and zone that served the attempt.
    pub(crate) location: Option<(String, String)>,
    /// When the request went to the connection (the channel was ready).
    pub(crate) sent_at: Option<Instant>,
}

impl ServerSignals {
    /// Note what `metadata` (headers, or trailers) holds; what an earlier
    /// look found (the headers) stays.
    pub(crate) fn learn(&mut self, metadata: &MetadataMap) {
        if self.server_latency_ms.is_none() {
            self.server_latency_ms = metadata
                .get(SERVER_TIMING_KEY)
                .and_then(|v| v.to_str().ok())
                .and_then(server_latency_ms);
        }
        if self.location.is_none() {
            self.location = metadata
                .get_bin(LOCATION_KEY)
                .and_then(|v| v.to_bytes().ok())
                .and_then(|bytes| crate::model::proto::ResponseParams::decode(bytes).ok())
                .map(|p| {
                    (
                        p.cluster_id.unwrap_or_default(),
                        p.zone_id.unwrap_or_default(),
                    )
                });
        }
    }

    /// Whether the attempt reached Google's front end: it said how long
    /// it took, or where it ran (the latter alone on Google's direct path).
    pub(crate) fn reached_google(&self) -> bool {
        self.server_latency_ms.is_some_and(|ms| ms > 0.0) || self.location.is_some()
    }
}

/// The `gfet4t7` duration of a `server-timing` value, in milliseconds:
/// the value starts with `gfet4t7; dur=` (Google's clients accept nothing
/// else), or holds it as one of its comma-separated entries.
pub(crate) fn server_latency_ms(value: &str) -> Option<f64> {
    value.split(',').find_map(|entry| {
        entry
            .trim()
            .strip_prefix(SERVER_TIMING_PREFIX)
            .and_then(|ms| ms.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
    })
}

tokio::task_local! {
    /// The signals of the attempt under way, when someone records them.
    pub(crate) static ATTEMPT: Arc<Mutex<ServerSignals>>;
}

/// Note `metadata` into the attempt under way, if any.
pub(crate) fn seen(metadata: &MetadataMap) {
    let _ = ATTEMPT.try_with(|slot| {
        if let Ok(mut signals) = slot.lock() {
            signals.learn(metadata);
        }
    });
}

/// The attempt under way is on its way to the server now.
pub(crate) fn sending() {
    let _ = ATTEMPT.try_with(|slot| {
        if let Ok(mut signals) = slot.lock() {
            signals.sent_at.get_or_insert_with(Instant::now);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn location(cluster: &str, zone: &str) -> Vec<u8> {
        crate::model::proto::ResponseParams {
            zone_id: Some(zone.into()),
            cluster_id: Some(cluster.into()),
            afe_id: None,
        }
        .encode_to_vec()
    }

    #[test]
    fn server_timing_as_googles_clients_read_it() {
        assert_eq!(server_latency_ms("gfet4t7; dur=123"), Some(123.0));
        assert_eq!(server_latency_ms("gfet4t7; dur=1.5"), Some(1.5));
        assert_eq!(server_latency_ms("other; dur=9, gfet4t7; dur=7"), Some(7.0));
        assert_eq!(server_latency_ms("gfet4t7; dur=abc"), None);
        assert_eq!(server_latency_ms("dur=5"), None);
        assert_eq!(server_latency_ms(""), None);
    }

    #[test]
    fn headers_first_then_trailers() {
        let mut headers = MetadataMap::new();
        headers.insert(SERVER_TIMING_KEY, "gfet4t7; dur=12".parse().unwrap());
        let mut trailers = MetadataMap::new();
        trailers.insert(SERVER_TIMING_KEY, "gfet4t7; dur=99".parse().unwrap());
        trailers.insert_bin(
            LOCATION_KEY,
            tonic::metadata::MetadataValue::from_bytes(&location("c1", "us-east1-b")),
        );
        let mut signals = ServerSignals::default();
        assert!(!signals.reached_google());
        signals.learn(&headers);
        signals.learn(&trailers);
        assert_eq!(signals.server_latency_ms, Some(12.0));
        assert_eq!(
            signals.location,
            Some(("c1".to_owned(), "us-east1-b".to_owned()))
        );
        assert!(signals.reached_google());
    }

    #[test]
    fn undecodable_location_is_no_location() {
        let mut trailers = MetadataMap::new();
        trailers.insert_bin(
            LOCATION_KEY,
            tonic::metadata::MetadataValue::from_bytes(b"\xff\xff\xff"),
        );
        let mut signals = ServerSignals::default();
        signals.learn(&trailers);
        assert_eq!(signals.location, None);
        assert!(!signals.reached_google());
    }
}
