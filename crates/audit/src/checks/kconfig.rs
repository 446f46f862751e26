//! (being written)

use crate::check::Check;

/// The checks of this group.
pub(crate) const CHECKS: &[Check] = &[];
