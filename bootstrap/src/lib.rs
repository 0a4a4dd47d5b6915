//! bootstrap (being built)
