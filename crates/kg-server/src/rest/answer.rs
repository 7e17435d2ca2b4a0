//! The answers of the REST API and the view's routes: a compact JSON body, or an
//! error as `{"detail": …}`.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use kg_core::{JsonStyle, PathError, StoreError, to_json};
use serde_json::{Value, json};

/// What a REST handler answers.
pub type ApiResult = Result<Answer, ApiError>;

/// A compact JSON response.
fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        to_json(body, JsonStyle::WIRE),
    )
        .into_response()
}

/// A successful answer: 200 with a compact JSON body.
#[derive(Debug)]
pub struct Answer(pub Value);

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        json_response(StatusCode::OK, &self.0)
    }
}

/// Every error answer of the REST API and the view's routes: a status and a
/// `{"detail": …}` body.
#[derive(Debug)]
pub enum ApiError {
    /// `{"detail": "<message>"}` with this status.
    Detail(StatusCode, String),
    /// 422 `{"detail": [{"loc", "msg", "type"}, …]}`: every problem with the
    /// request's fields, in the validation-error list shape clients know.
    Fields(Vec<FieldProblem>),
    /// 409 `{"detail", "level", "id", "node"}`: a write built on a stale view of a
    /// node; `node` is the node as it stands, for the writer to merge with.
    NotWritten(Box<kg_core::NotWritten>),
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError::Detail(status, message.into())
    }

    /// The caller's mistake (400), such as an invalid level or identifier.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
}

/// The request's fault → 400 (404 for what does not exist), the server's → 500.
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        if let StoreError::NotWritten(refused) = e {
            return ApiError::NotWritten(refused);
        }
        let status = match &e {
            StoreError::NodeNotFound { .. }
            | StoreError::UnknownSession(_)
            | StoreError::Path(PathError::NoSuchProject(_)) => StatusCode::NOT_FOUND,
            StoreError::CannotUndo(_) => StatusCode::CONFLICT,
            e if e.is_client_error() => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, detail) = match self {
            ApiError::NotWritten(refused) => {
                let body = json!({
                    "detail": refused.message(),
                    "level": refused.level.as_str(),
                    "id": refused.id,
                    "node": refused.node,
                });
                return json_response(StatusCode::CONFLICT, &body);
            }
            ApiError::Detail(status, message) => (status, Value::String(message)),
            ApiError::Fields(problems) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                problems.iter().map(FieldProblem::to_value).collect(),
            ),
        };
        json_response(status, &json!({"detail": detail}))
    }
}

/// One field problem: where (`body` or `query`), which field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub location: &'static str,
    pub field: &'static str,
    pub message: &'static str,
}

impl FieldProblem {
    fn to_value(&self) -> Value {
        json!({"loc": [self.location, self.field], "msg": self.message, "type": "value_error"})
    }
}

/// A query parameter that must be given and is not.
pub(super) fn missing_query(field: &'static str) -> ApiError {
    ApiError::Fields(vec![FieldProblem {
        location: "query",
        field,
        message: "Field required",
    }])
}
