//! How the passes get into LLVM's pass builder: through the `llvm-plugin` crate on LLVM 15-18,
//! through the plugin's own registration on 19 and later (where `llvm-plugin` has no release).
//! Both only translate the pass builder's hooks into [`crate::pipeline::phase_at`], [`crate::pipeline::phase_named`]
//! and [`crate::pipeline::run_phase`]; the day `llvm-plugin` supports a major, deleting `own.rs` and
//! `shim/register.cpp` for it changes no pass code.

#[cfg(not(sqtt_own_registration))]
mod via_llvm_plugin;

#[cfg(sqtt_own_registration)]
mod own;
