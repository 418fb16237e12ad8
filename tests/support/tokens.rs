//! Stand-ins for Google's token service: one that hands out one fixed
//! access token and counts the scopes asked for, so a test can check that
//! the bearer token a connection sends is the source's; one that never
//! answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bigtable_ttl::{AccessToken, TokenSource};

type TokenFuture<'a> = Pin<
    Box<
        dyn Future<Output = Result<AccessToken, Box<dyn std::error::Error + Send + Sync>>>
            + Send
            + 'a,
    >,
>;

/// Always the token `token`.
pub struct FixedToken {
    token: String,
    /// Every scope asked for, in order.
    pub scopes: Mutex<Vec<String>>,
}

impl FixedToken {
    pub fn new(token: &str) -> Arc<Self> {
        Arc::new(Self {
            token: token.to_owned(),
            scopes: Mutex::default(),
        })
    }
}

impl TokenSource for FixedToken {
    fn token<'a>(&'a self, scopes: &'a [&'a str]) -> TokenFuture<'a> {
        self.scopes
            .lock()
            .unwrap()
            .extend(scopes.iter().map(|s| (*s).to_owned()));
        // No expiry: the connection asks again for every request, so each
        // side's scope is seen whatever order the calls come in.
        let token = AccessToken::new(self.token.clone());
        Box::pin(async move { Ok(token) })
    }
}

/// A token service that takes every request and never answers.
pub struct NeverToken;

impl TokenSource for NeverToken {
    fn token<'a>(&'a self, _scopes: &'a [&'a str]) -> TokenFuture<'a> {
        Box::pin(std::future::pending())
    }
}
