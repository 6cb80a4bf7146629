//! Juggler's global round robin: freed children go to the queues in turn, by one cursor every
//! worker shares. The hooks' defaults.

use super::Hooks;

/// Global round robin.
pub(super) struct Grr;

impl Hooks for Grr {}
