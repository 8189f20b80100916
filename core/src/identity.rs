//! Who holds a lease, as an application and an operator see it (WHO-01):
//! the identity a store handle gives at connect, recorded with every lease
//! it takes.

use triomphe::ThinArc;

use crate::error::{Error, ErrorKind, Result};

/// The longest identity, in bytes.
pub const IDENTITY_MAX: usize = 256;

/// A holder's identity: a UTF-8 string of 1 to [`IDENTITY_MAX`] bytes with
/// no control character, by default `hostname:pid` ([`Identity::of_process`]).
/// Stores record it with every lease and show it wherever they show a
/// holder; it is never a lease id. Cloning shares one allocation behind a
/// pointer of 8 bytes, which every lease of a handle keeps.
///
/// ```
/// let who = leasehold::Identity::new("api-7")?;
/// assert_eq!(who.as_str(), "api-7");
/// # Ok::<(), leasehold::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Identity(ThinArc<(), u8>);

impl Identity {
    /// `name` as an identity: `InvalidArgument` when it is empty, longer
    /// than [`IDENTITY_MAX`] bytes or holds a control character.
    pub fn new(name: &str) -> Result<Identity> {
        let why = if name.is_empty() {
            "is empty"
        } else if name.len() > IDENTITY_MAX {
            "is longer than 256 bytes"
        } else if name.chars().any(char::is_control) {
            "holds a control character"
        } else {
            return Ok(Identity::unchecked(name));
        };
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("the identity {why}"),
        ))
    }

    /// The identity given at connect, or this process's when none was
    /// given (an empty one is none: the bindings pass it so).
    pub fn given_or_default(name: Option<&str>) -> Result<Identity> {
        match name {
            Some(name) if !name.is_empty() => Identity::new(name),
            _ => Ok(Identity::of_process()),
        }
    }

    /// `hostname:pid` of this process (the pid read anew, so a child after
    /// `fork()` names itself).
    pub fn of_process() -> Identity {
        let host = gethostname::gethostname();
        let host = host.to_string_lossy();
        let mut name = format!("{host}:{}", std::process::id());
        if name.len() > IDENTITY_MAX || name.chars().any(char::is_control) {
            name = format!("pid:{}", std::process::id());
        }
        Identity::unchecked(&name)
    }

    fn unchecked(name: &str) -> Identity {
        Identity(ThinArc::from_header_and_slice((), name.as_bytes()))
    }

    /// The identity as the string it was made from.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0.slice).expect("an identity's bytes are those of a str")
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // WHO-01
    #[test]
    fn who_01_an_identity_is_checked_and_defaults_to_host_and_pid() {
        assert_eq!(Identity::new("api-7").unwrap().as_str(), "api-7");
        assert_eq!(Identity::new(&"é".repeat(128)).unwrap().as_str().len(), 256);
        for bad in ["", "a\nb", "\u{7f}"] {
            let e = Identity::new(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        }
        let e = Identity::new(&"x".repeat(257)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let own = Identity::given_or_default(Some("")).unwrap();
        let pid = format!(":{}", std::process::id());
        assert!(own.as_str().ends_with(&pid), "{own}");
        assert!(own.as_str().len() > pid.len(), "{own}");
        assert_eq!(Identity::given_or_default(None).unwrap(), own);
        assert_eq!(std::mem::size_of::<Identity>(), 8);
    }
}
