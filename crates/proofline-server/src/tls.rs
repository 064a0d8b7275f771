//! TLS for the API (rustls with the ring provider): the certificate chain and private key are
//! read from PEM files at start.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// PEM files of the server's certificate chain and private key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// Certificate chain, leaf first.
    pub cert: PathBuf,
    /// Private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

fn err(path: &Path, what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("{what} {}: {e}", path.display()))
}

/// A rustls server configuration from the files.
pub fn server_config(files: &TlsFiles) -> std::io::Result<rustls::ServerConfig> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| err(&files.cert, "server.tls_cert", e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(&files.cert, "server.tls_cert", e))?;
    if certs.is_empty() {
        return Err(err(
            &files.cert,
            "server.tls_cert",
            "no certificate in the file",
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| err(&files.key, "server.tls_key", e))?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| err(&files.key, "server.tls_cert/tls_key", e))
}
