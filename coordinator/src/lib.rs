//! coordinator (being built)
