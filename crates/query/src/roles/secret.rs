//! A role's password as PostgreSQL keeps it: never the password itself, but a SCRAM-SHA-256 verifier
//! (`pg_authid.rolpassword`), from which no password can be read back and which cannot be replayed as one:
//!
//! ```text
//! SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>      (base64; RFC 5802, RFC 7677)
//! SaltedPassword := Hi(SASLprep(password), salt, iterations)       (PBKDF2 with HMAC-SHA-256)
//! StoredKey      := SHA-256(HMAC(SaltedPassword, "Client Key"))
//! ServerKey      := HMAC(SaltedPassword, "Server Key")
//! ```
//!
//! Beside it the MD5 hash `md5` || md5(password || name), which `--auth md5` needs (PostgreSQL keeps one
//! or the other by `password_encryption`; a server here may be restarted with either method).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::error::{QueryError, Result};

/// PostgreSQL's `scram_iterations` default.
const ITERATIONS: usize = 4096;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// `SCRAM-SHA-256$...`, as `pg_authid.rolpassword` shows it.
    pub scram: String,
    /// `md5` and 32 hex digits.
    pub md5: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The parts of a SCRAM verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: usize,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl Secret {
    /// The secret of `password` for role `name`, with a fresh random salt.
    pub fn new(name: &str, password: &str) -> Result<Secret> {
        let mut salt = [0u8; 16];
        getrandom::getrandom(&mut salt).map_err(|e| QueryError::Internal(format!("no random bytes: {e}")))?;
        let v = verifier(password, &salt, ITERATIONS);
        Ok(Secret {
            scram: format!(
                "SCRAM-SHA-256${}:{}${}:{}",
                v.iterations,
                B64.encode(&v.salt),
                B64.encode(&v.stored_key),
                B64.encode(&v.server_key)
            ),
            md5: format!("md5{:x}", md5::compute(format!("{password}{name}"))),
        })
    }

    /// A secret read back from its stored form.
    pub fn from_parts(scram: &str, md5: &str) -> Result<Secret> {
        let s = Secret { scram: scram.to_string(), md5: md5.to_string() };
        s.verifier()?;
        Ok(s)
    }

    pub fn verifier(&self) -> Result<Verifier> {
        let bad = || QueryError::Internal("bad SCRAM verifier in the catalog".into());
        let rest = self.scram.strip_prefix("SCRAM-SHA-256$").ok_or_else(bad)?;
        let (head, keys) = rest.split_once('$').ok_or_else(bad)?;
        let (iterations, salt) = head.split_once(':').ok_or_else(bad)?;
        let (stored, server) = keys.split_once(':').ok_or_else(bad)?;
        let decode = |s: &str| B64.decode(s).map_err(|_| bad());
        Ok(Verifier {
            iterations: iterations.parse().map_err(|_| bad())?,
            salt: decode(salt)?,
            stored_key: decode(stored)?,
            server_key: decode(server)?,
        })
    }

    /// Whether a password given in clear text (`--auth password`) is this one.
    pub fn matches(&self, password: &str) -> bool {
        let Ok(v) = self.verifier() else { return false };
        let given = verifier(password, &v.salt, v.iterations);
        // Constant time: the comparison does not tell how many leading bytes agree.
        given.stored_key.len() == v.stored_key.len() && given.stored_key.iter().zip(&v.stored_key).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
    }

    /// What an MD5 client answers for this secret and `salt`: `md5` || md5(hash || salt).
    pub fn md5_response(&self, salt: &[u8]) -> String {
        let hash = self.md5.strip_prefix("md5").unwrap_or(&self.md5);
        format!("md5{:x}", md5::compute([hash.as_bytes(), salt].concat()))
    }
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The verifier of a password: PBKDF2-HMAC-SHA-256 of its SASLprep form (a password SASLprep refuses is
/// used as it is, as PostgreSQL does), then the two keys.
fn verifier(password: &str, salt: &[u8], iterations: usize) -> Verifier {
    let prepared = stringprep::saslprep(password).map(|p| p.into_owned()).unwrap_or_else(|_| password.to_string());
    let mut u = hmac(prepared.as_bytes(), &[salt, &1u32.to_be_bytes()].concat());
    let mut salted = u.clone();
    for _ in 1..iterations {
        u = hmac(prepared.as_bytes(), &u);
        salted.iter_mut().zip(&u).for_each(|(s, x)| *s ^= x);
    }
    Verifier {
        iterations,
        salt: salt.to_vec(),
        stored_key: Sha256::digest(hmac(&salted, b"Client Key")).to_vec(),
        server_key: hmac(&salted, b"Server Key"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifier_is_postgresqls() {
        // From PostgreSQL 15: SET password_encryption = 'scram-sha-256'; CREATE ROLE zz_r PASSWORD 'secret';
        // then rolpassword, whose salt is taken here to recompute the keys.
        let pg = "SCRAM-SHA-256$4096:k2aQ1NBKKUJ4NFqQTqkWbA==$PwNmaHR+GlDVAnwIOFnydzxNlIf/NL4xuzmlZtb90A8=:+2eWIzgRuCySvQXwxwbf1PD8zYtztLatPQ9hzlRcICo=";
        let s = Secret { scram: pg.into(), md5: String::new() };
        let v = s.verifier().unwrap();
        assert_eq!(verifier("secret", &v.salt, v.iterations), v);
        assert!(s.matches("secret"));
        assert!(!s.matches("secreT"));
    }

    #[test]
    fn md5_is_postgresqls() {
        // PostgreSQL 15: SET password_encryption = 'md5'; CREATE ROLE zz_r PASSWORD 'secret';
        assert_eq!(Secret::new("zz_r", "secret").unwrap().md5, "md5efcb21aa0a38f4bc9955f5cc4151ae99");
        let s = Secret::new("r", "secret").unwrap();
        assert!(s.matches("secret"));
        assert_eq!(Secret::from_parts(&s.scram, &s.md5).unwrap(), s);
        assert_ne!(Secret::new("r", "secret").unwrap().scram, s.scram, "each secret has its own salt");
    }
}
