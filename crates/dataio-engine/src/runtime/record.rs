//! Records as the executor sees them: the few fields the plan reads,
//! converted once when the chunk is pulled from the source.

use bytes::Bytes;
use serde_json::Value as Json;
use std::any::Any;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Bytes),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(*b as u8 as f64),
            _ => None,
        }
    }

    /// Equality with a JSON literal from a predicate.
    /// A JSON value as a field: strings as text, numbers, bools and nulls
    /// as themselves, arrays and objects as their JSON text (bytes).
    pub fn from_json(v: Json) -> Value {
        match v {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => Value::Str(s),
            other => Value::Bytes(Bytes::from(other.to_string())),
        }
    }

    pub fn eq_json(&self, j: &Json) -> bool {
        match (self, j) {
            (Value::Null, Json::Null) => true,
            (Value::Bool(a), Json::Bool(b)) => a == b,
            (Value::Str(a), Json::String(b)) => a == b,
            (v, Json::Number(n)) => match (v.as_f64(), n.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
            _ => false,
        }
    }

    /// Ordering against a JSON literal (numbers with numbers, strings with strings).
    pub fn cmp_json(&self, j: &Json) -> Option<std::cmp::Ordering> {
        match (self, j) {
            (Value::Str(a), Json::String(b)) => Some(a.as_str().cmp(b.as_str())),
            (v, Json::Number(n)) => v.as_f64()?.partial_cmp(&n.as_f64()?),
            _ => None,
        }
    }

    /// A printable form for keys and group ids.
    pub fn display(&self) -> String {
        match self {
            Value::Null => "None".into(),
            Value::Bool(b) => {
                if *b {
                    "True".into()
                } else {
                    "False".into()
                }
            }
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Str(s) => s.clone(),
            Value::Bytes(b) => format!("<{} bytes>", b.len()),
        }
    }
}

/// Opaque per-record data the binding layer carries to the batch (`context=`).
pub type Context = Arc<dyn Any + Send + Sync>;

#[derive(Clone, Default)]
pub struct Record {
    pub fields: Vec<(String, Value)>,
    pub context: Option<Context>,
    /// Where the record's bytes come from (`shard.tar#sample`), named by
    /// row errors of slots whose input was bytes rather than a URI.
    pub origin: Option<Arc<str>>,
    /// A record its source could not make (a jsonl line that is not a JSON
    /// object): `(uri, what, detail)` of the corrupt-data error every slot
    /// of its row fails with, so `on_failure="skip"` skips it like any row.
    pub broken: Option<Arc<(String, String, String)>>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record").field("fields", &self.fields).finish()
    }
}

impl Record {
    pub fn new(fields: Vec<(String, Value)>) -> Self {
        Record { fields, context: None, origin: None, broken: None }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The record's key: its `key` field, else its index.
    pub fn key(&self, index: u64) -> String {
        match self.get("key") {
            Some(v) if !v.is_null() => v.display(),
            _ => index.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_become_fields_and_containers_their_text() {
        let v = |j: Json| Value::from_json(j);
        assert_eq!(v(serde_json::json!("hi")), Value::Str("hi".into()));
        assert_eq!(v(serde_json::json!(3)), Value::Int(3));
        assert_eq!(v(serde_json::json!(1.5)), Value::Float(1.5));
        assert_eq!(v(serde_json::json!(true)), Value::Bool(true));
        assert_eq!(v(Json::Null), Value::Null);
        assert_eq!(v(serde_json::json!({"k": [1]})), Value::Bytes(Bytes::from_static(br#"{"k":[1]}"#)));
    }
}
