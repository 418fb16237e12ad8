//! The null server's TLS: a CA made at startup and a certificate for
//! `localhost` it signs, so that a client trusts the server by the CA's
//! PEM alone (the library's `tls_root_certificate`, `cbt -cert-file`), as
//! a Cloud client trusts Google's.

use std::sync::Arc;

use tokio_rustls::rustls;

/// The server's TLS configuration (HTTP/2 by ALPN, as gRPC clients ask)
/// and the CA's certificate, PEM.
pub(crate) fn server_config() -> Result<(Arc<rustls::ServerConfig>, String), String> {
    let e = |what: &str| {
        let what = what.to_owned();
        move |err: rcgen::Error| format!("null server TLS, {what}: {err}")
    };
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(e("CA"))?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ttl-bench null server CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(
        ca_params,
        rcgen::KeyPair::generate().map_err(e("CA key"))?,
    )
    .map_err(e("CA"))?;
    let server_key = rcgen::KeyPair::generate().map_err(e("server key"))?;
    let server_cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .map_err(e("server certificate"))?
        .signed_by(&server_key, &ca)
        .map_err(e("server certificate"))?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|err| format!("null server TLS: {err}"))?
    .with_no_client_auth()
    .with_single_cert(vec![server_cert.der().clone(), ca.der().clone()], key)
    .map_err(|err| format!("null server TLS: {err}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok((Arc::new(config), ca.pem()))
}
