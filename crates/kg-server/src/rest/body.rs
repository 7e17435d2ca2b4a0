//! Request bodies: a JSON object read into a serde struct, and each field's problem
//! reported in the words clients know.

use super::{ApiError, FieldProblem};
use crate::state::MAX_BODY_BYTES;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A JSON object body read into `T`, refused with a clear message when it is too big,
/// not JSON, or not an object.
///
/// The body is parsed as a JSON value first and only then read into `T`: malformed
/// JSON and a non-object keep their own answers, and a repeated key keeps the last
/// value, where serde's derive would refuse it.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/json")
            });
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Send the body as JSON with Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| match e {
            BytesRejection::FailedToBufferBody(_)
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "Request body is larger than the {} MiB limit",
                        MAX_BODY_BYTES >> 20
                    ),
                )
            }
            other => ApiError::new(
                other.status(),
                format!("Cannot read the request body: {other}"),
            ),
        })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(object @ Value::Object(_)) => serde_json::from_value(object)
                .map(JsonBody)
                // The bodies here read every field as a `Field`, which takes any value.
                .map_err(|e| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("Cannot read the request body: {e}"),
                    )
                }),
            Ok(_) => Err(ApiError::Fields(vec![FieldProblem {
                location: "body",
                field: "",
                message: "the body must be a JSON object",
            }])),
            Err(e) => Err(ApiError::bad_request(format!("Malformed JSON body: {e}"))),
        }
    }
}

/// One body field as the client sent it. The checks below word their own messages
/// (those clients know) and report every field's problem at once; serde's derive
/// would stop at the first, in its own words.
#[derive(Debug, Default)]
pub(crate) enum Field<T> {
    /// Missing, or `null`.
    #[default]
    Absent,
    Given(T),
    /// Present but not a `T`.
    Mistyped,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(deserializer)? {
            Value::Null => Field::Absent,
            value => serde_json::from_value(value).map_or(Field::Mistyped, Field::Given),
        })
    }
}

/// What a field's type must look like, in the words clients know.
pub(super) trait Expected {
    const MISTYPED: &'static str;
}

impl Expected for String {
    const MISTYPED: &'static str = "Input should be a valid string";
}

impl Expected for f64 {
    const MISTYPED: &'static str = "Input should be a valid number";
}

impl Expected for Vec<String> {
    const MISTYPED: &'static str = "Input should be a list of strings";
}

/// A body field in which every value counts, `null` included: only a missing key is
/// `None`.
pub(super) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// The problems found in one body, in the order its fields are checked.
#[derive(Debug, Default)]
pub(super) struct Problems(Vec<FieldProblem>);

impl Problems {
    pub(super) fn push(&mut self, field: &'static str, message: &'static str) {
        self.0.push(FieldProblem {
            location: "body",
            field,
            message,
        });
    }

    /// A field that must be given. When it is not, the problem is recorded and a
    /// placeholder returned, which [`Problems::finish`] never lets through.
    pub(super) fn required<T: Expected + Default>(
        &mut self,
        field: &'static str,
        value: Field<T>,
    ) -> T {
        match value {
            Field::Given(v) => v,
            Field::Absent => {
                self.push(field, "Field required");
                T::default()
            }
            Field::Mistyped => {
                self.push(field, T::MISTYPED);
                T::default()
            }
        }
    }

    pub(super) fn optional<T: Expected>(
        &mut self,
        field: &'static str,
        value: Field<T>,
    ) -> Option<T> {
        match value {
            Field::Given(v) => Some(v),
            Field::Absent => None,
            Field::Mistyped => {
                self.push(field, T::MISTYPED);
                None
            }
        }
    }

    /// A field of any value (see [`present`]) that must be given.
    pub(super) fn any(&mut self, field: &'static str, value: Option<Value>) -> Value {
        value.unwrap_or_else(|| {
            self.push(field, "Field required");
            Value::Null
        })
    }

    /// 422 with every problem, if there is one.
    pub(super) fn finish(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::Fields(self.0))
        }
    }
}
