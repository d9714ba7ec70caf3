//! Short-lived credentials that the plugin's SDK resolves and refreshes
//! (botocore, google-auth, azure-identity), cached here until they near
//! their expiry so that the SDK is asked once per token, not per request.

use crate::errors::Redactor;
use async_trait::async_trait;
#[cfg(feature = "s3")]
use object_store::aws::{AwsCredential, AwsCredentialProvider};
#[cfg(feature = "azure")]
use object_store::azure::{AzureCredential, AzureCredentialProvider};
#[cfg(feature = "gcs")]
use object_store::gcp::{GcpCredential, GcpCredentialProvider};
use object_store::CredentialProvider;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One resolved credential: named secret fields (`key_id`, `secret_key`,
/// `token` for S3; `bearer` for GCS and Azure) and when it expires.
#[derive(Clone, Default)]
pub struct Token {
    pub fields: HashMap<String, String>,
    /// Seconds since the epoch; `None` for credentials that do not expire.
    pub expires_at: Option<f64>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<&String> = self.fields.keys().collect();
        keys.sort();
        f.debug_struct("Token").field("fields", &keys).field("expires_at", &self.expires_at).finish()
    }
}

/// Where fresh credentials come from (the Python side of a plugin). Called
/// from a blocking thread; may take as long as a token exchange takes.
pub trait TokenSource: Send + Sync + fmt::Debug {
    fn fetch(&self) -> Result<Token, String>;
}

/// Refresh this long before the stated expiry.
const EARLY: Duration = Duration::from_secs(120);

struct Cached<C> {
    value: Arc<C>,
    refresh_at: Option<SystemTime>,
}

struct Refreshing<C> {
    source: Arc<dyn TokenSource>,
    redactor: Redactor,
    convert: fn(&Token) -> Result<C, String>,
    cache: tokio::sync::Mutex<Option<Cached<C>>>,
}

impl<C> fmt::Debug for Refreshing<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refreshing").field("source", &self.source).finish_non_exhaustive()
    }
}

fn unauthenticated(msg: String) -> object_store::Error {
    object_store::Error::Unauthenticated { path: String::new(), source: msg.into() }
}

#[async_trait]
impl<C: Send + Sync + 'static> CredentialProvider for Refreshing<C> {
    type Credential = C;

    async fn get_credential(&self) -> object_store::Result<Arc<C>> {
        let mut cache = self.cache.lock().await;
        if let Some(c) = cache.as_ref() {
            if c.refresh_at.is_none_or(|t| SystemTime::now() < t) {
                return Ok(c.value.clone());
            }
        }
        let source = self.source.clone();
        let token = tokio::task::spawn_blocking(move || source.fetch())
            .await
            .map_err(|e| unauthenticated(format!("credential refresh did not finish: {e}")))?
            .map_err(|e| unauthenticated(self.redactor.clean(&format!("credential refresh failed: {e}"))))?;
        for v in token.fields.values() {
            self.redactor.add(v);
        }
        let value = Arc::new((self.convert)(&token).map_err(unauthenticated)?);
        let refresh_at = token
            .expires_at
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(|t| UNIX_EPOCH + Duration::from_secs_f64(t))
            .map(|t| t.checked_sub(EARLY).unwrap_or(t));
        *cache = Some(Cached { value: value.clone(), refresh_at });
        Ok(value)
    }
}

fn field(t: &Token, name: &str) -> Result<String, String> {
    t.fields.get(name).filter(|v| !v.is_empty()).cloned().ok_or_else(|| format!("the credential has no {name:?}"))
}

fn refreshing<C: Send + Sync + 'static>(
    source: Arc<dyn TokenSource>,
    redactor: Redactor,
    convert: fn(&Token) -> Result<C, String>,
) -> Arc<Refreshing<C>> {
    Arc::new(Refreshing { source, redactor, convert, cache: tokio::sync::Mutex::new(None) })
}

#[cfg(feature = "s3")]
pub(crate) fn aws(source: Arc<dyn TokenSource>, redactor: Redactor) -> AwsCredentialProvider {
    refreshing(source, redactor, |t| {
        Ok(AwsCredential {
            key_id: field(t, "key_id")?,
            secret_key: field(t, "secret_key")?,
            token: t.fields.get("token").filter(|v| !v.is_empty()).cloned(),
        })
    })
}

#[cfg(feature = "gcs")]
pub(crate) fn gcp(source: Arc<dyn TokenSource>, redactor: Redactor) -> GcpCredentialProvider {
    refreshing(source, redactor, |t| Ok(GcpCredential { bearer: field(t, "bearer")? }))
}

#[cfg(feature = "azure")]
pub(crate) fn azure(source: Arc<dyn TokenSource>, redactor: Redactor) -> AzureCredentialProvider {
    refreshing(source, redactor, |t| Ok(AzureCredential::BearerToken(field(t, "bearer")?)))
}
