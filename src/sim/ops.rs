//! `run` and `replay` ops of the request service.
//!
//! FOUNDATION PLACEHOLDER: the engine/simulator issue implements these.

use serde_json::Value;

use crate::service::bad_request;

pub(crate) fn run(_request: &Value) -> Value {
    bad_request("op \"run\" is not available yet")
}

pub(crate) fn replay(_request: &Value) -> Value {
    bad_request("op \"replay\" is not available yet")
}
