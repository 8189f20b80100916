//! Tokens and the roles they admit a connection to (LOCK-14).
//!
//! A tokens file has one token a line, then its role, separated by
//! whitespace: `s3cret-writer write` or `dashboard-token read`. `#` starts a
//! comment that runs to the end of the line; blank lines are ignored.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use leasehold::remote::protocol::Role;

/// The tokens a server accepts, each with its role.
#[derive(Clone, Default)]
pub struct Tokens {
    /// Each token's role, and its number: its line among the tokens, from 0.
    roles: HashMap<String, (Role, usize)>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens themselves.
        f.debug_struct("Tokens")
            .field("count", &self.roles.len())
            .finish()
    }
}

impl Tokens {
    /// Reads a tokens file.
    pub fn load(path: &Path) -> Result<Tokens> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
        Tokens::parse(&text).with_context(|| format!("bad tokens file {}", path.display()))
    }

    /// Parses the text of a tokens file.
    pub fn parse(text: &str) -> Result<Tokens> {
        let mut roles = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [token, role] = fields[..] else {
                bail!(
                    "line {}: expected `TOKEN ROLE`, got {} fields",
                    n + 1,
                    fields.len()
                );
            };
            let role = match role {
                "read" => Role::Read,
                "write" => Role::Write,
                other => bail!("line {}: unknown role {other:?} (read or write)", n + 1),
            };
            let number = roles.len();
            if roles.insert(token.to_owned(), (role, number)).is_some() {
                bail!("line {}: a token appears twice", n + 1);
            }
        }
        if roles.is_empty() {
            bail!("no token in the file: no connection could ever be admitted");
        }
        Ok(Tokens { roles })
    }

    /// The role `token` admits to, if it is one of ours.
    pub fn role(&self, token: &str) -> Option<Role> {
        self.find(token).map(|(role, _)| role)
    }

    /// The role `token` admits to and the token's number (from 0 to
    /// [`Tokens::len`], for counting its connections), if it is one of ours.
    pub fn find(&self, token: &str) -> Option<(Role, usize)> {
        self.roles.get(token).copied()
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.roles.len()
    }

    /// Whether there is no token.
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-14: tokens map to read or write roles; others are unknown.
    #[test]
    fn lock_14_tokens_file_parses() {
        let t = Tokens::parse("# the team's tokens\n\nw1 write\n  r1\tread   # the dashboard\n")
            .unwrap();
        assert_eq!(t.role("w1"), Some(Role::Write));
        assert_eq!(t.role("r1"), Some(Role::Read));
        assert_eq!(t.role("nope"), None);
        assert_eq!(t.find("w1"), Some((Role::Write, 0)));
        assert_eq!(t.find("r1"), Some((Role::Read, 1)));
        assert_eq!(t.len(), 2);
        assert!(!format!("{t:?}").contains("w1"));
    }

    #[test]
    fn bad_tokens_files_are_refused() {
        for bad in [
            "w1",
            "w1 write extra",
            "w1 admin",
            "w1 write\nw1 read",
            "# none\n",
        ] {
            assert!(Tokens::parse(bad).is_err(), "{bad:?}");
        }
    }
}
