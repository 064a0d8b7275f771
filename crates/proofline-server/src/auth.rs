//! Bearer-token access control: with a token configured, every request except `GET /healthz`
//! must carry `Authorization: Bearer <token>`; anything else gets 401 with a JSON body. The
//! comparison takes the same time wherever the two tokens differ (`subtle`), so response
//! timing does not reveal how much of a guess was right.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, ResponseError};
use subtle::ConstantTimeEq;

use crate::ApiError;

/// The token requests must present.
#[derive(Clone)]
pub struct BearerToken(String);

impl BearerToken {
    /// A token (non-empty).
    pub fn new(token: String) -> Self {
        BearerToken(token)
    }

    /// Whether an `Authorization` header value carries this token.
    pub fn admits(&self, header_value: Option<&[u8]>) -> bool {
        let Some(v) = header_value else { return false };
        let Some(presented) = v.strip_prefix(b"Bearer ") else {
            return false;
        };
        bool::from(presented.ct_eq(self.0.as_bytes()))
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

/// Paths served without a token: liveness only (it reveals job counts, nothing else).
fn is_open(req: &ServiceRequest) -> bool {
    req.path() == "/healthz"
}

/// The middleware (`actix_web::middleware::from_fn`).
pub async fn require_token(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let token = req.app_data::<web::Data<Option<BearerToken>>>().cloned();
    let admitted = match token.as_ref().map(|d| d.as_ref()) {
        Some(Some(t)) => {
            is_open(&req)
                || t.admits(
                    req.headers()
                        .get(header::AUTHORIZATION)
                        .map(|v| v.as_bytes()),
                )
        }
        _ => true,
    };
    if admitted {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    }
    let mut resp = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "this endpoint needs the header 'Authorization: Bearer <token>' with the daemon's \
         server.auth_token",
    )
    .error_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    Ok(req.into_response(resp).map_into_right_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_admitted() {
        let t = BearerToken::new("s3cret".into());
        assert!(t.admits(Some(b"Bearer s3cret")));
        for bad in [
            &b"Bearer s3cre"[..],
            b"Bearer s3cret2",
            b"bearer s3cret",
            b"s3cret",
            b"Bearer ",
            b"Basic s3cret",
        ] {
            assert!(!t.admits(Some(bad)), "{}", String::from_utf8_lossy(bad));
        }
        assert!(!t.admits(None));
    }
}
