//! Stand-ins for Google's token service: one that hands out one fixed
//! access token and counts the scopes asked for, so a test can check that
//! the bearer token a connection sends is the provider's; one that never
//! answers.

use std::sync::{Arc, Mutex};

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

#[async_trait::async_trait]
impl gcp_auth::TokenProvider for FixedToken {
    async fn token(&self, scopes: &[&str]) -> Result<Arc<gcp_auth::Token>, gcp_auth::Error> {
        self.scopes
            .lock()
            .unwrap()
            .extend(scopes.iter().map(|s| (*s).to_owned()));
        // gcp_auth builds a Token only by deserializing one.
        let token = serde_json::json!({ "access_token": self.token, "expires_in": 3600 });
        Ok(Arc::new(
            serde_json::from_value(token).expect("a token from JSON"),
        ))
    }

    async fn project_id(&self) -> Result<Arc<str>, gcp_auth::Error> {
        Ok("test-project".into())
    }
}

/// A token service that takes every request and never answers.
pub struct NeverToken;

#[async_trait::async_trait]
impl gcp_auth::TokenProvider for NeverToken {
    async fn token(&self, _scopes: &[&str]) -> Result<Arc<gcp_auth::Token>, gcp_auth::Error> {
        std::future::pending().await
    }

    async fn project_id(&self) -> Result<Arc<str>, gcp_auth::Error> {
        std::future::pending().await
    }
}
