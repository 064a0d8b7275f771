//! `/dashboard`: a live view of the pipeline, served from files embedded in the binary (no network
//! at run time, no build step). The page polls `GET /v1/status` once a second and draws it with
//! uPlot (vendored under `assets/vendor/`, MIT).

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpResponse};

use crate::ApiError;

/// An embedded file: name under `/dashboard/`, content type, bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const PAGE: &str = include_str!("../assets/dashboard.html");

const ASSETS: &[Asset] = &[
    Asset {
        name: "dashboard.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../assets/dashboard.js"),
    },
    Asset {
        name: "dashboard.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../assets/dashboard.css"),
    },
    Asset {
        name: "uPlot.iife.min.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../assets/vendor/uPlot.iife.min.js"),
    },
    Asset {
        name: "uPlot.min.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../assets/vendor/uPlot.min.css"),
    },
    Asset {
        name: "uPlot.LICENSE",
        content_type: "text/plain; charset=utf-8",
        body: include_str!("../assets/vendor/uPlot.LICENSE"),
    },
];

/// The routes of the dashboard.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/dashboard", web::get().to(page))
        .route("/dashboard/", web::get().to(page))
        .route("/dashboard/{name}", web::get().to(asset));
}

async fn page() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(PAGE)
}

async fn asset(name: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let a = ASSETS
        .iter()
        .find(|a| a.name == name.as_str())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "no_such_endpoint",
                format!("no dashboard file '{name}'"),
            )
        })?;
    Ok(HttpResponse::Ok()
        .content_type(a.content_type)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(a.body))
}
