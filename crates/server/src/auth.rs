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
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth, ScramSecret};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{AuthSource, LoginInfo, Password, ServerParameterProvider, StartupHandler};
use pgwire::api::METADATA_USER;
use pgwire::api::{ClientInfo, PidSecretKeyGenerator};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use pgwire::tokio::tokio_rustls::rustls::ServerConfig as TlsConfig;
use pgwire::tokio::TlsAcceptor;

use tabula_query::roles::{Role, Secret};
use tabula_query::Database;

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

/// Who may log in: the users of the configuration, with their passwords, and the roles made in SQL with
/// LOGIN and a password, whose secrets the catalog keeps (a SCRAM verifier and an MD5 hash, never the
/// password).
#[derive(Clone)]
pub struct Users {
    passwords: Arc<HashMap<String, String>>,
    method: AuthMethod,
    db: Arc<Database>,
}

impl Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users").field("configured", &self.passwords.len()).field("method", &self.method).finish()
    }
}

/// Where a login's password is checked against.
enum Known<'a> {
    Configured(&'a str),
    Made(Secret),
    /// No such user, or one without LOGIN or a password: no password matches.
    Nobody,
}

impl Users {
    pub fn new(passwords: HashMap<String, String>, method: AuthMethod, db: Arc<Database>) -> Self {
        Users { passwords: Arc::new(passwords), method, db }
    }

    fn known(&self, user: &str) -> Known<'_> {
        if let Some(p) = self.passwords.get(user) {
            return Known::Configured(p);
        }
        match self.db.roles().get(user) {
            Some(Role { login: true, password: Some(secret), configured: false, .. }) => Known::Made(secret),
            _ => Known::Nobody,
        }
    }
}

#[async_trait]
impl AuthSource for Users {
    /// MD5 and cleartext; SCRAM asks [`AuthSource::get_scram_secret`].
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().ok_or(PgWireError::UserNameRequired)?;
        let salt: [u8; 4] = rand_bytes();
        let response = match self.known(user) {
            Known::Configured(secret) => hash_md5_password(user, secret, &salt),
            Known::Made(secret) => secret.md5_response(&salt),
            // An unknown user gets the exchange a known one gets, as PostgreSQL answers with a mock salt: it
            // fails at the same step with the same error, so trying names does not tell which exist.
            Known::Nobody if self.method == AuthMethod::Md5 => format!("{:x?}", rand_bytes::<16>()),
            Known::Nobody => return Err(PgWireError::InvalidPassword(user.to_string())),
        };
        Ok(Password::new(Some(salt.to_vec()), response.into_bytes()))
    }

    async fn verify_password(&self, login: &LoginInfo, presented: &[u8]) -> PgWireResult<Option<()>> {
        let user = login.user().ok_or(PgWireError::UserNameRequired)?;
        let presented = std::str::from_utf8(presented).unwrap_or("");
        let ok = match self.known(user) {
            Known::Configured(secret) => secret == presented,
            Known::Made(secret) => secret.matches(presented),
            Known::Nobody => false,
        };
        if ok {
            Ok(None)
        } else {
            Err(PgWireError::InvalidPassword(user.to_string()))
        }
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().ok_or(PgWireError::UserNameRequired)?;
        let secret = match self.known(user) {
            Known::Configured(password) => {
                let salt: [u8; 16] = rand_bytes();
                ScramSecret::SaltedPassword { salt: salt.to_vec(), salted_password: gen_salted_password(password, &salt, SCRAM_ITERATIONS) }
            }
            Known::Made(secret) => {
                let v = secret.verifier().map_err(|e| PgWireError::ApiError(Box::new(e)))?;
                ScramSecret::Verifier { salt: v.salt, iterations: v.iterations, stored_key: v.stored_key, server_key: v.server_key }
            }
            // A mock: a salt and keys no password matches.
            Known::Nobody => {
                ScramSecret::SaltedPassword { salt: rand_bytes::<16>().to_vec(), salted_password: rand_bytes::<32>().to_vec() }
            }
        };
        Ok((secret, None))
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
        if let (PgWireFrontendMessage::Startup(ref startup), Startup::Trust(conn)) = (&message, self) {
            // Under trust a role without LOGIN is refused at once; under the password methods it has no
            // password that matches, so that the refusal does not tell who exists.
            let user = startup.parameters.get("user").map_or("", String::as_str);
            if conn.shared.db.roles().get(user).is_some_and(|r| !r.login) {
                let info =
                    pgwire::error::ErrorInfo::new("FATAL".into(), "28000".into(), format!("role \"{user}\" is not permitted to log in"));
                return Err(PgWireError::UserError(Box::new(info)));
            }
        }
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            // A bad setting refuses the connection, as in PostgreSQL.
            if let Err(e) = tabula_query::settings::startup_settings(startup.parameters.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
                let mut info = crate::errors::error_info(&e);
                info.severity = "FATAL".into();
                return Err(PgWireError::UserError(Box::new(info)));
            }
        }
        let result = match self {
            Startup::Trust(c) => c.on_startup(client, message).await,
            Startup::Password(h) => h.on_startup(client, message).await,
            Startup::Md5(h) => h.on_startup(client, message).await,
            Startup::Scram(h) => h.on_startup(client, message).await,
        };
        result.map_err(|e| match e {
            // Worded as PostgreSQL words it, naming the user of the startup message: SCRAM's own messages
            // carry an empty name (libpq sends none there), which pgwire would print.
            PgWireError::InvalidPassword(named) => {
                let user = client.metadata().get(METADATA_USER).filter(|u| !u.is_empty()).cloned().unwrap_or(named);
                let message = format!("password authentication failed for user \"{user}\"");
                PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new("FATAL".into(), "28P01".into(), message)))
            }
            e => e,
        })
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
