//! The tokens of `rtlab serve`: named, with a role (`push` uploads, `read` reads), stored only
//! as the SHA-256 of the secret, revocable. A token is 32 random bytes from the kernel, so a
//! plain hash is enough (no password stretching: nothing to guess), and checking one compares
//! its hash with every live token's in constant time.

use sha2::{Digest, Sha256};

use crate::db::Arg;
use crate::digest::hex;
use crate::error::StoreError;
use crate::store::Store;

/// What a token allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Upload runs (and read).
    Push,
    /// Read only, where reading is protected (`rtlab serve --read-token`).
    Read,
}

impl Role {
    /// The role's name as stored and typed.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Push => "push",
            Role::Read => "read",
        }
    }

    fn parse(text: &str) -> Option<Role> {
        match text {
            "push" => Some(Role::Push),
            "read" => Some(Role::Read),
            _ => None,
        }
    }
}

/// A token as `rtlab serve token list` shows it (never its secret or hash).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TokenInfo {
    /// Its name.
    pub name: String,
    /// What it allows.
    pub role: Role,
    /// When it was made, RFC 3339 UTC.
    pub created_at: String,
    /// When it was revoked, if it was.
    pub revoked_at: Option<String>,
}

/// The prefix of every token, so that a leaked one is recognisable (secret scanners) and a
/// pasted one is not mistaken for something else.
pub const TOKEN_PREFIX: &str = "rtlab_";

/// Longest token name.
pub const MAX_TOKEN_NAME: usize = 64;

/// The stored form of a secret.
fn hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// Equal in time that depends only on the lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // Keep the comparison from being short-circuited by the optimiser.
    std::hint::black_box(diff) == 0
}

/// A name as accepted: 1 to 64 characters of letters, digits, `-`, `_`, `.`.
pub fn check_token_name(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_TOKEN_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        return Ok(());
    }
    Err(StoreError::Token {
        name: name.chars().take(80).collect(),
        why: format!(
            "is not a token name; use 1 to {MAX_TOKEN_NAME} letters, digits, '-', '_' or '.' \
             (a board's or a CI job's name)"
        ),
    })
}

impl Store {
    /// Makes a token named `name` from `secret_bytes` (32 random bytes the caller drew from
    /// the kernel) and returns its secret, which is stored only as a hash. A name already in
    /// use, revoked or not, is refused.
    pub fn add_token(
        &mut self,
        name: &str,
        role: Role,
        secret_bytes: &[u8; 32],
        now: &str,
    ) -> Result<String, StoreError> {
        check_token_name(name)?;
        let secret = format!("{TOKEN_PREFIX}{}", hex(secret_bytes));
        let result = self.db.execute(
            "INSERT INTO tokens (name, hash, role, created_at) VALUES (?1, ?2, ?3, ?4)",
            &[
                Arg::Text(name),
                Arg::Text(&hash(&secret)),
                Arg::Text(role.as_str()),
                Arg::Text(now),
            ],
        );
        match result {
            Ok(_) => Ok(secret),
            Err(e) if e.is_unique_violation() => Err(StoreError::Token {
                name: name.to_string(),
                why: "is taken; `rtlab serve token list` shows the names, \
                           `rtlab serve token revoke NAME` retires one"
                    .into(),
            }),
            Err(e) => Err(self.engine_error(e)),
        }
    }

    /// Every token, oldest first.
    pub fn tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        let rows = self
            .db
            .query(
                "SELECT name, role, created_at, revoked_at FROM tokens ORDER BY created_at, name",
                &[],
            )
            .map_err(|e| self.engine_error(e))?;
        rows.into_iter()
            .map(|r| {
                let bad = |e: crate::db::CellError| self.corrupt("-", "tokens", e.why);
                let name = r.text(0).map_err(bad)?;
                let role_text = r.text(1).map_err(bad)?;
                let role = Role::parse(&role_text)
                    .ok_or_else(|| self.corrupt("-", "tokens.role", "not push or read"))?;
                Ok(TokenInfo {
                    name,
                    role,
                    created_at: r.text(2).map_err(bad)?,
                    revoked_at: r.opt_text(3).map_err(bad)?,
                })
            })
            .collect()
    }

    /// Revokes the token `name` from `now` on. Revoking a revoked token keeps its first time.
    pub fn revoke_token(&mut self, name: &str, now: &str) -> Result<(), StoreError> {
        let changed = self
            .db
            .execute(
                "UPDATE tokens SET revoked_at = coalesce(revoked_at, ?2) WHERE name = ?1",
                &[Arg::Text(name), Arg::Text(now)],
            )
            .map_err(|e| self.engine_error(e))?;
        if changed == 0 {
            return Err(StoreError::Token {
                name: name.chars().take(80).collect(),
                why: "does not exist; `rtlab serve token list` shows the names".into(),
            });
        }
        Ok(())
    }

    /// The live token whose secret is `secret`, if any: its name and role. Every live token's
    /// hash is compared, in constant time, so the time taken does not tell how much of a
    /// guess was right.
    pub fn check_token(&self, secret: &str) -> Result<Option<(String, Role)>, StoreError> {
        let wanted = hash(secret);
        let rows = self
            .db
            .query(
                "SELECT name, role, hash FROM tokens WHERE revoked_at IS NULL",
                &[],
            )
            .map_err(|e| self.engine_error(e))?;
        let mut found = None;
        for r in rows {
            let bad = |e: crate::db::CellError| self.corrupt("-", "tokens", e.why);
            let stored = r.text(2).map_err(bad)?;
            if constant_time_eq(stored.as_bytes(), wanted.as_bytes()) {
                let role = Role::parse(&r.text(1).map_err(bad)?)
                    .ok_or_else(|| self.corrupt("-", "tokens.role", "not push or read"))?;
                found = Some((r.text(0).map_err(bad)?, role));
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::TestStore;

    fn tokens_work(mut store: TestStore) {
        let t = "2026-11-24T10:00:00Z";
        let secret = store.add_token("pi-07", Role::Push, &[7; 32], t).unwrap();
        assert!(
            secret.starts_with("rtlab_") && secret.len() == 6 + 64,
            "{secret}"
        );
        let reader = store.add_token("grafana", Role::Read, &[9; 32], t).unwrap();
        // Only the hash is stored.
        let stored = crate::testdata::scalar(
            &store,
            "SELECT count(*) FROM tokens WHERE hash = ?1",
            &[Arg::Text(&secret)],
        );
        assert_eq!(stored, 0);
        assert_eq!(
            store.check_token(&secret).unwrap(),
            Some(("pi-07".into(), Role::Push))
        );
        assert_eq!(
            store.check_token(&reader).unwrap(),
            Some(("grafana".into(), Role::Read))
        );
        assert_eq!(store.check_token("rtlab_00").unwrap(), None);
        assert_eq!(store.check_token("").unwrap(), None);
        let taken = store
            .add_token("pi-07", Role::Push, &[8; 32], t)
            .unwrap_err();
        assert!(taken.to_string().contains("is taken"), "{taken}");
        assert!(store.add_token("a b", Role::Push, &[1; 32], t).is_err());
        assert!(store.add_token("", Role::Push, &[1; 32], t).is_err());
        store.revoke_token("pi-07", "2026-11-25T00:00:00Z").unwrap();
        store.revoke_token("pi-07", "2026-11-26T00:00:00Z").unwrap();
        assert_eq!(store.check_token(&secret).unwrap(), None);
        assert!(store.revoke_token("nobody", t).is_err());
        let list = store.tokens().unwrap();
        assert_eq!(list.len(), 2);
        let pi = list.iter().find(|i| i.name == "pi-07").unwrap();
        assert_eq!(pi.revoked_at.as_deref(), Some("2026-11-25T00:00:00Z"));
    }

    #[test]
    fn tokens_are_hashed_checked_and_revoked_on_sqlite() {
        tokens_work(TestStore::sqlite().unwrap());
    }

    #[test]
    fn tokens_are_hashed_checked_and_revoked_on_postgres() {
        if let Some(store) = TestStore::postgres() {
            tokens_work(store);
        }
    }

    #[test]
    fn comparison_needs_equal_lengths_and_bytes() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
