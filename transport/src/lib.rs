//! transport (being built)
