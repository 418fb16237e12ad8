//! Access tokens: the [`TokenSource`] trait a connection asks for them, the
//! cache in front of it, and the adapter over `gcp_auth` behind the
//! built-in credentials. `gcp_auth` stays an implementation detail: no
//! public signature names it, so moving to another line of it (or another
//! crate) is not a breaking change of this library.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeDelta, Utc};

/// A bearer token for Google's APIs, as a [`TokenSource`] hands it out.
///
/// `Debug` does not print the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    secret: String,
    expires_at: Option<DateTime<Utc>>,
}

impl AccessToken {
    /// The token `secret` (what follows `Bearer ` in the `authorization`
    /// header), with no known expiry: the connection asks its source again
    /// before every request.
    #[must_use]
    pub fn new(secret: impl Into<String>) -> Self {
        Self {
            secret: secret.into(),
            expires_at: None,
        }
    }

    /// The same token, good until `expires_at`: the connection reuses it
    /// while more than a minute of it is left.
    #[must_use]
    pub fn expiring_at(mut self, expires_at: DateTime<Utc>) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// The secret.
    #[must_use]
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// When the token stops being accepted, if known.
    #[must_use]
    pub fn expires_at(&self) -> Option<DateTime<Utc>> {
        self.expires_at
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Where a connection's access tokens come from, for
/// [`Credentials::token_source`](crate::Credentials::token_source):
/// workload identity federation, a token broker, a test stand-in.
///
/// `token` is asked for the OAuth scopes of one kind of call (data or
/// admin) when the connection has no token for them with more than a
/// minute left; fetching it is part of the call's attempt, within its
/// timeout. An error fails that attempt (retried as a transport failure on
/// data calls, `Error::Connect` on admin calls).
///
/// A `gcp_auth` 0.12 provider becomes one in a few lines:
///
/// ```no_run
/// use std::sync::Arc;
/// use bigtable_ttl::{AccessToken, Credentials, TokenSource};
///
/// struct GcpAuth(Arc<dyn gcp_auth::TokenProvider>);
///
/// impl TokenSource for GcpAuth {
///     fn token<'a>(
///         &'a self,
///         scopes: &'a [&'a str],
///     ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<AccessToken, Box<dyn std::error::Error + Send + Sync>>> + Send + 'a>> {
///         Box::pin(async move {
///             let token = self.0.token(scopes).await?;
///             Ok(AccessToken::new(token.as_str()).expiring_at(token.expires_at()))
///         })
///     }
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let provider = gcp_auth::provider().await?;
/// let credentials = Credentials::token_source(Arc::new(GcpAuth(provider)));
/// # let _ = credentials;
/// # Ok(()) }
/// ```
pub trait TokenSource: Send + Sync + 'static {
    /// A token good for `scopes`.
    #[allow(clippy::type_complexity)] // spelled out so that the API names no alias of ours
    fn token<'a>(
        &'a self,
        scopes: &'a [&'a str],
    ) -> Pin<
        Box<
            dyn Future<Output = Result<AccessToken, Box<dyn std::error::Error + Send + Sync>>>
                + Send
                + 'a,
        >,
    >;
}

/// A token is reused while more than this is left of it, so that it cannot
/// expire between being read here and being checked by the server.
const MARGIN: TimeDelta = TimeDelta::minutes(1);

/// A [`TokenSource`] with the last token of each scope kept until it is
/// near its expiry. Cheap to clone; clones share the cache.
#[derive(Clone)]
pub(crate) struct Tokens {
    source: Arc<dyn TokenSource>,
    cached: Arc<Mutex<Vec<(&'static str, AccessToken)>>>,
}

impl Tokens {
    pub(crate) fn new(source: Arc<dyn TokenSource>) -> Self {
        Self {
            source,
            cached: Arc::default(),
        }
    }

    /// The secret of a token for `scope`, from the cache or the source.
    pub(crate) async fn secret(
        &self,
        scope: &'static str,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let fresh_until = Utc::now() + MARGIN;
        if let Some((_, token)) = self
            .lock()
            .iter()
            .find(|(s, t)| *s == scope && t.expires_at.is_some_and(|at| at > fresh_until))
        {
            return Ok(token.secret.clone());
        }
        let token = self.source.token(&[scope]).await?;
        let secret = token.secret.clone();
        if token.expires_at.is_some() {
            let mut cached = self.lock();
            cached.retain(|(s, _)| *s != scope);
            cached.push((scope, token));
        }
        Ok(secret)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(&'static str, AccessToken)>> {
        // The cache holds no invariant a panicking holder could break.
        self.cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The built-in credentials' tokens: a `gcp_auth` provider, which keeps
/// and refreshes its own.
pub(crate) struct GcpAuth(pub(crate) Arc<dyn gcp_auth::TokenProvider>);

impl TokenSource for GcpAuth {
    fn token<'a>(
        &'a self,
        scopes: &'a [&'a str],
    ) -> Pin<
        Box<
            dyn Future<Output = Result<AccessToken, Box<dyn std::error::Error + Send + Sync>>>
                + Send
                + 'a,
        >,
    > {
        Box::pin(async move {
            let token = self.0.token(scopes).await?;
            Ok(AccessToken::new(token.as_str()).expiring_at(token.expires_at()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Hands out `token-N` for its N-th call, expiring `lifetime` later.
    struct Counting {
        calls: AtomicUsize,
        lifetime: Option<TimeDelta>,
    }

    impl TokenSource for Counting {
        fn token<'a>(
            &'a self,
            _scopes: &'a [&'a str],
        ) -> Pin<
            Box<
                dyn Future<Output = Result<AccessToken, Box<dyn std::error::Error + Send + Sync>>>
                    + Send
                    + 'a,
            >,
        > {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let token = AccessToken::new(format!("token-{n}"));
            Box::pin(async move {
                Ok(match self.lifetime {
                    Some(lifetime) => token.expiring_at(Utc::now() + lifetime),
                    None => token,
                })
            })
        }
    }

    fn counting(lifetime: Option<TimeDelta>) -> (Arc<Counting>, Tokens) {
        let source = Arc::new(Counting {
            calls: AtomicUsize::new(0),
            lifetime,
        });
        (source.clone(), Tokens::new(source))
    }

    #[tokio::test]
    async fn a_token_is_reused_per_scope_until_a_minute_before_it_expires() {
        let (source, tokens) = counting(Some(TimeDelta::hours(1)));
        assert_eq!(tokens.secret("data").await.unwrap(), "token-0");
        assert_eq!(tokens.secret("data").await.unwrap(), "token-0");
        assert_eq!(tokens.secret("admin").await.unwrap(), "token-1");
        assert_eq!(tokens.clone().secret("data").await.unwrap(), "token-0");
        assert_eq!(source.calls.load(Ordering::SeqCst), 2);

        let (source, tokens) = counting(Some(TimeDelta::seconds(59)));
        assert_eq!(tokens.secret("data").await.unwrap(), "token-0");
        assert_eq!(tokens.secret("data").await.unwrap(), "token-1");
        assert_eq!(source.calls.load(Ordering::SeqCst), 2);

        let (_, tokens) = counting(None);
        assert_eq!(tokens.secret("data").await.unwrap(), "token-0");
        assert_eq!(tokens.secret("data").await.unwrap(), "token-1");
    }

    #[test]
    fn debug_keeps_the_secret() {
        let token = AccessToken::new("ya29.secret");
        assert!(!format!("{token:?}").contains("ya29"));
    }
}
