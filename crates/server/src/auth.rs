//! Authentication: trust, cleartext password, MD5 and SCRAM-SHA-256 against users from configuration;
//! TLS with a certificate and key.

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::cleartext::CleartextPasswordAuthStartupHandler;
use pgwire::api::auth::md5pass::{hash_md5_password, Md5PasswordAuthStartupHandler};
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{AuthSource, LoginInfo, Password, ServerParameterProvider, StartupHandler};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use pgwire::tokio::tokio_rustls::rustls::ServerConfig as TlsConfig;
use pgwire::tokio::TlsAcceptor;

use crate::handler::{Connection, Params};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// Any user name is accepted without a password.
    Trust,
    /// The password travels in clear text (use with TLS).
    Password,
    Md5,
    ScramSha256,
}

impl std::str::FromStr for AuthMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "trust" => AuthMethod::Trust,
            "password" | "cleartext" => AuthMethod::Password,
            "md5" => AuthMethod::Md5,
            "scram-sha-256" | "scram" => AuthMethod::ScramSha256,
            other => return Err(format!("unknown authentication method \"{other}\": use trust, password, md5 or scram-sha-256")),
        })
    }
}

const SCRAM_ITERATIONS: usize = 4096;

/// Users and their passwords, from configuration.
#[derive(Debug, Clone)]
pub struct Users {
    passwords: Arc<HashMap<String, String>>,
    method: AuthMethod,
}

impl Users {
    pub fn new(passwords: HashMap<String, String>, method: AuthMethod) -> Self {
        Users { passwords: Arc::new(passwords), method }
    }
}

#[async_trait]
impl AuthSource for Users {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().ok_or(PgWireError::UserNameRequired)?;
        let mock;
        let secret = match self.passwords.get(user) {
            Some(secret) => secret,
            // An unknown user under MD5 or SCRAM gets the exchange a known one gets, with a salt and a secret
            // no password matches, as PostgreSQL answers with a mock salt: it fails at the same step with the
            // same error, so trying names does not tell which exist.
            None if matches!(self.method, AuthMethod::Md5 | AuthMethod::ScramSha256) => {
                mock = format!("{:x?}", rand_bytes::<16>());
                &mock
            }
            None => return Err(PgWireError::InvalidPassword(user.to_string())),
        };
        Ok(match self.method {
            AuthMethod::Md5 => {
                let salt: [u8; 4] = rand_bytes();
                Password::new(Some(salt.to_vec()), hash_md5_password(user, secret, &salt).into_bytes())
            }
            AuthMethod::ScramSha256 => {
                let salt: [u8; 16] = rand_bytes();
                Password::new(Some(salt.to_vec()), gen_salted_password(secret, &salt, SCRAM_ITERATIONS))
            }
            _ => Password::new(None, secret.as_bytes().to_vec()),
        })
    }
}

/// Random bytes for salts, from the OS through std's hasher seeds (no extra dependency).
fn rand_bytes<const N: usize>() -> [u8; N] {
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; N];
    for chunk in out.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0));
        let v = h.finish().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    out
}

/// The startup handler of a connection, by authentication method.
pub enum Startup {
    Trust(Arc<Connection>),
    Password(CleartextPasswordAuthStartupHandler<Users, Arc<Params>>),
    Md5(Md5PasswordAuthStartupHandler<Users, Params>),
    Scram(SASLAuthStartupHandler<Params>),
}

impl Startup {
    /// `pids`: the server's one generator of backend keys (each pgwire handler would otherwise start its own
    /// count, and every session would report the same pid).
    pub fn new(method: AuthMethod, users: &Users, pids: Arc<dyn PidSecretKeyGenerator>, conn: Arc<Connection>) -> Startup {
        let params = Arc::new(Params);
        match method {
            AuthMethod::Trust => Startup::Trust(conn),
            AuthMethod::Password => {
                Startup::Password(CleartextPasswordAuthStartupHandler::new(users.clone(), params).with_pid_secret_key_generator(pids))
            }
            AuthMethod::Md5 => {
                Startup::Md5(Md5PasswordAuthStartupHandler::new(Arc::new(users.clone()), params).with_pid_secret_key_generator(pids))
            }
            AuthMethod::ScramSha256 => {
                let mut scram = ScramAuth::new(Arc::new(users.clone()));
                scram.set_iterations(SCRAM_ITERATIONS);
                Startup::Scram(SASLAuthStartupHandler::new(params).with_scram(scram).with_pid_secret_key_generator(pids))
            }
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            // A bad setting refuses the connection, as in PostgreSQL.
            if let Err(e) = tabula_query::session::startup_settings(startup.parameters.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
                let mut info = crate::errors::error_info(&e);
                info.severity = "FATAL".into();
                return Err(PgWireError::UserError(Box::new(info)));
            }
        }
        match self {
            Startup::Trust(c) => c.on_startup(client, message).await,
            Startup::Password(h) => h.on_startup(client, message).await,
            Startup::Md5(h) => h.on_startup(client, message).await,
            Startup::Scram(h) => h.on_startup(client, message).await,
        }
    }
}

impl ServerParameterProvider for Params {
    fn server_parameters<C: ClientInfo>(&self, client: &C) -> Option<HashMap<String, String>> {
        Some(crate::handler::server_parameters(client))
    }
}

/// A TLS acceptor from PEM certificate chain and private key files.
pub fn tls_acceptor(cert: &Path, key: &Path) -> anyhow::Result<TlsAcceptor> {
    use anyhow::Context;
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read TLS certificate {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("bad TLS certificate {}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key).with_context(|| format!("cannot read TLS key {}", key.display()))?;
    let config = TlsConfig::builder().with_no_client_auth().with_single_cert(certs, key).context("TLS certificate and key do not fit")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
