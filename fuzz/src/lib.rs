//! Fuzz targets of uct-rs: each module's `run` feeds bytes to decoders of
//! outside input and checks their invariants.

pub mod sockcm_wire;
