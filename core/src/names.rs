//! Checks of lock names, keys and manual lease names.

use crate::error::{Error, ErrorKind, Result};

/// The longest lock name, key or lease name, in bytes.
pub const MAX_NAME_BYTES: usize = 1024;

/// Checks a name: non-empty (`EmptyName`) and at most [`MAX_NAME_BYTES`] (`InvalidArgument`).
pub fn check(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::new(
            ErrorKind::EmptyName,
            format!("the {what} is empty"),
        ));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "the {what} is {} bytes long; the limit is {MAX_NAME_BYTES}",
                name.len()
            ),
        ));
    }
    Ok(())
}
