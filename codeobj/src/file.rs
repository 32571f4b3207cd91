//! Reading input files safely: `sqtt_config::file` is the one home (the lowest crate). The
//! code-object reader's race tests are `tests/tests/hostile_inputs.rs`.

pub use sqtt_config::file::{open_regular, read_all, read_at, read_regular, read_regular_string};
