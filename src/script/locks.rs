//! Lock scripts shipped with rlockd (see `lua/`).
