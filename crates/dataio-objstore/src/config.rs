//! What a backend is built from: the kind of store, the object_store
//! configuration keys the plugin resolved, dataio's own tuning keys, and an
//! optional source of short-lived credentials. One store client is built per
//! bucket (container) on first use.

use crate::credentials::{self, TokenSource};
use crate::errors::Redactor;
#[cfg(feature = "s3")]
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
#[cfg(feature = "azure")]
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
#[cfg(feature = "gcs")]
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::{BackoffConfig, ObjectStore, RetryConfig};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// The store family a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Amazon S3 and S3-compatible stores (R2, MinIO, moto, custom endpoints).
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage.
    Azure,
}

impl Kind {
    pub fn plugin(self) -> &'static str {
        match self {
            Kind::S3 => "dataio-s3",
            Kind::Gcs => "dataio-gcs",
            Kind::Azure => "dataio-azure",
        }
    }

    /// What the store calls the first URI component.
    pub fn bucket_word(self) -> &'static str {
        match self {
            Kind::Azure => "container",
            _ => "bucket",
        }
    }

    fn accepts(self, key: &str) -> bool {
        #[allow(unreachable_patterns)]
        match self {
            #[cfg(feature = "s3")]
            Kind::S3 => AmazonS3ConfigKey::from_str(key).is_ok(),
            #[cfg(feature = "gcs")]
            Kind::Gcs => GoogleConfigKey::from_str(key).is_ok(),
            #[cfg(feature = "azure")]
            Kind::Azure => AzureConfigKey::from_str(key).is_ok(),
            _ => false,
        }
    }
}

/// Configuration of one backend (one scheme).
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub kind: Kind,
    pub scheme: String,
    /// object_store keys (`aws_endpoint`, `aws_region`, `google_base_url`,
    /// `azure_storage_account_name`, `allow_http`, `timeout`, ...).
    pub options: Vec<(String, String)>,
    pub retry: RetryConfig,
    /// Streaming writes switch to a multipart upload past this many bytes,
    /// and upload parts of this size.
    pub part_size: usize,
    /// Parts in flight per streaming write.
    pub max_part_uploads: usize,
    pub token_source: Option<Arc<dyn TokenSource>>,
    /// Every secret this backend was given, to scrub from messages.
    pub redactor: Redactor,
}

impl StoreConfig {
    pub fn new(kind: Kind, scheme: &str) -> Self {
        StoreConfig {
            kind,
            scheme: scheme.to_ascii_lowercase(),
            options: Vec::new(),
            retry: RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(15),
                    base: 2.0,
                },
                max_retries: 10,
                retry_timeout: Duration::from_secs(180),
            },
            part_size: 8 << 20,
            max_part_uploads: 8,
            token_source: None,
            redactor: Redactor::default(),
        }
    }

    /// Sets one key: dataio's own tuning keys, or an object_store key of this
    /// kind of store. Unknown keys are refused (the message names the key,
    /// never the value).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let secs = |v: &str| -> Result<Duration, String> {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("{key} must be a number of seconds, got {v:?}"))
        };
        let count = |v: &str| v.parse::<usize>().map_err(|_| format!("{key} must be a whole number, got {v:?}"));
        match key {
            "max_retries" => self.retry.max_retries = count(value)?,
            "retry_timeout" => self.retry.retry_timeout = secs(value)?,
            "backoff_initial" => self.retry.backoff.init_backoff = secs(value)?,
            "backoff_max" => self.retry.backoff.max_backoff = secs(value)?,
            "part_size" => {
                let n = count(value)?;
                if n < 5 << 20 {
                    return Err(format!("part_size must be at least 5 MiB (the S3 minimum), got {n}"));
                }
                self.part_size = n;
            }
            "max_part_uploads" => self.max_part_uploads = count(value)?.max(1),
            _ if self.kind.accepts(key) => {
                if !is_public(key) {
                    self.redactor.add(value);
                }
                self.options.push((key.to_string(), value.to_string()))
            }
            _ => return Err(format!("unknown {} configuration key {key:?}", self.kind.plugin())),
        }
        Ok(())
    }

    #[cfg(feature = "gcs")]
    fn is_set(&self, keys: &[&str]) -> bool {
        self.options.iter().any(|(k, v)| keys.contains(&k.as_str()) && v == "true")
    }

    /// Builds the client for one bucket (or `container` / `container@account`).
    pub(crate) fn build(&self, bucket: &str) -> object_store::Result<Arc<dyn ObjectStore>> {
        #[allow(unreachable_patterns)]
        match self.kind {
            #[cfg(feature = "s3")]
            Kind::S3 => {
                let mut b = AmazonS3Builder::new();
                for (k, v) in &self.options {
                    b = b.with_config(AmazonS3ConfigKey::from_str(k)?, v);
                }
                b = b.with_bucket_name(bucket).with_retry(self.retry.clone());
                if let Some(src) = &self.token_source {
                    b = b.with_credentials(credentials::aws(src.clone(), self.redactor.clone()));
                }
                Ok(Arc::new(b.build()?))
            }
            #[cfg(feature = "gcs")]
            Kind::Gcs => {
                let mut b = GoogleCloudStorageBuilder::new();
                for (k, v) in &self.options {
                    b = b.with_config(GoogleConfigKey::from_str(k)?, v);
                }
                b = b.with_bucket_name(bucket).with_retry(self.retry.clone());
                if let Some(src) = &self.token_source {
                    b = b.with_credentials(credentials::gcp(src.clone(), self.redactor.clone()));
                } else if self.is_set(&["google_skip_signature", "skip_signature"]) {
                    // object_store 0.14 still asks the credential chain (the
                    // metadata server) for some unsigned GCS requests; an
                    // empty token keeps them anonymous.
                    let empty = object_store::gcp::GcpCredential { bearer: String::new() };
                    b = b.with_credentials(Arc::new(object_store::StaticCredentialProvider::new(empty)));
                }
                Ok(Arc::new(b.build()?))
            }
            #[cfg(feature = "azure")]
            Kind::Azure => {
                let mut b = MicrosoftAzureBuilder::new();
                for (k, v) in &self.options {
                    b = b.with_config(AzureConfigKey::from_str(k)?, v);
                }
                // `az://container@account/path` names the account in the URI.
                let (container, account) = match bucket.split_once('@') {
                    Some((c, a)) => (c, Some(a)),
                    None => (bucket, None),
                };
                b = b.with_container_name(container).with_retry(self.retry.clone());
                if let Some(account) = account {
                    b = b.with_account(account);
                }
                if let Some(src) = &self.token_source {
                    b = b.with_credentials(credentials::azure(src.clone(), self.redactor.clone()));
                }
                Ok(Arc::new(b.build()?))
            }
            // A plugin compiles only its own family's client (the s3, gcs and
            // azure features); another kind cannot reach here through it.
            kind => Err(object_store::Error::NotSupported {
                source: format!("this build of dataio-objstore has no {} client", kind.plugin()).into(),
            }),
        }
    }
}

/// Keys whose values may appear in messages; every other value is a secret.
fn is_public(key: &str) -> bool {
    let k = key
        .trim_start_matches("aws_")
        .trim_start_matches("google_")
        .trim_start_matches("azure_storage_")
        .trim_start_matches("azure_");
    matches!(
        k,
        "endpoint"
            | "endpoint_url"
            | "region"
            | "default_region"
            | "allow_http"
            | "base_url"
            | "account_name"
            | "account"
            | "use_emulator"
            | "skip_signature"
            | "virtual_hosted_style_request"
            | "timeout"
            | "connect_timeout"
            | "pool_idle_timeout"
            | "pool_max_idle_per_host"
            | "http2_only"
            | "http1_only"
            | "allow_invalid_certificates"
            | "bucket"
            | "bucket_name"
            | "container_name"
            | "user_agent"
            | "proxy_url"
            | "use_fabric_endpoint"
            | "unsigned_payload"
            | "checksum_algorithm"
            | "s3_express"
            | "request_payer"
            | "conditional_put"
            | "copy_if_not_exists"
            | "disable_tagging"
            | "imdsv1_fallback"
            | "metadata_endpoint"
    )
}
