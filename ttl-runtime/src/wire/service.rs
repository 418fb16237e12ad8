//! The data channel as a tower service for generated tonic clients: the
//! escape hatch for calls this library does not make. Every request it
//! carries gets what the library's own calls get: the routing header of its
//! table and, on Cloud Bigtable, a bearer token.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::transport::Channel;
use tower_service::Service;

use crate::model::error::BoxError;
use crate::wire::headers::{routing_header, DATA_SCOPE};

/// A tonic service over the library's data channel, for one table's
/// requests. Made by `Connection::data_client`.
#[derive(Clone)]
pub struct DataService {
    channel: Channel,
    tokens: Option<Arc<dyn gcp_auth::TokenProvider>>,
    routing: http::HeaderValue,
}

impl std::fmt::Debug for DataService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataService")
            .field("routing", &self.routing)
            .field("authenticated", &self.tokens.is_some())
            .finish_non_exhaustive()
    }
}

impl DataService {
    /// Requests on `table_name` (`projects/…/tables/…`) under `app_profile`
    /// over `channel`.
    pub(crate) fn new(
        channel: Channel,
        tokens: Option<Arc<dyn gcp_auth::TokenProvider>>,
        table_name: &str,
        app_profile: &str,
    ) -> Result<Self, BoxError> {
        Ok(Self {
            channel,
            tokens,
            routing: routing_header(table_name, app_profile).parse()?,
        })
    }
}

impl Service<http::Request<Body>> for DataService {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::poll_ready(&mut self.channel, cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        // The channel made ready by `poll_ready` serves this call; a clone
        // takes its place for the next (tower's usual swap).
        let fresh = self.channel.clone();
        let mut channel = std::mem::replace(&mut self.channel, fresh);
        let tokens = self.tokens.clone();
        request
            .headers_mut()
            .insert("x-goog-request-params", self.routing.clone());
        Box::pin(async move {
            if let Some(tokens) = tokens {
                let token = tokens.token(&[DATA_SCOPE]).await?;
                let value: http::HeaderValue = format!("Bearer {}", token.as_str()).parse()?;
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, value);
            }
            Ok(channel.call(request).await?)
        })
    }
}
