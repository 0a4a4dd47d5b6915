//! raft (being built)
