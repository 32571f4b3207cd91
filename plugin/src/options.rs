//! The plugin options (`-mllvm -sqtt-marker-<setting>=VALUE`): the C++ shim registers one LLVM
//! `cl::opt` per instrumentation row of [`sqtt_config::SETTINGS`], reading the rows through the
//! functions here, and [`given`] reads back what the command line set.

use std::ffi::c_char;

use sqtt_config::{setting, Setting};

extern "C" {
    fn sqtt_shim_option_value(i: usize, value: *mut *const c_char, len: *mut usize) -> i32;
}

/// Option `i` of the shim's numbering (the instrumentation rows in table order).
fn row(i: usize) -> Option<&'static Setting> {
    setting::instrumentation().nth(i)
}

/// `s` for the shim: its address, and its length in `*len`. An index past the table (the shim
/// never asks for one) gives an empty text rather than a panic across the C boundary.
fn text(s: Option<&'static str>, len: *mut usize) -> *const c_char {
    let s = s.unwrap_or("");
    // SAFETY: the shim passes a valid pointer to a local length.
    unsafe { *len = s.len() };
    s.as_ptr().cast()
}

#[no_mangle]
extern "C" fn sqtt_plugin_option_count() -> usize {
    setting::instrumentation().count()
}

#[no_mangle]
extern "C" fn sqtt_plugin_option_name(i: usize, len: *mut usize) -> *const c_char {
    text(row(i).and_then(|r| r.option), len)
}

#[no_mangle]
extern "C" fn sqtt_plugin_option_var(i: usize, len: *mut usize) -> *const c_char {
    text(row(i).map(|r| r.var), len)
}

#[no_mangle]
extern "C" fn sqtt_plugin_option_value_desc(i: usize, len: *mut usize) -> *const c_char {
    text(row(i).map(|r| r.values), len)
}

/// The value of option `name` when the command line gave it (`-mllvm -name=VALUE`).
pub fn given(name: &str) -> Option<String> {
    let i = setting::instrumentation().position(|r| r.option == Some(name))?;
    let mut ptr: *const c_char = std::ptr::null();
    let mut len = 0usize;
    // SAFETY: the shim writes a pointer into the option's own string (alive as long as the
    // library) and its length, or returns 0 and writes nothing.
    let set = unsafe { sqtt_shim_option_value(i, &mut ptr, &mut len) };
    if set == 0 {
        return None;
    }
    // SAFETY: as above; `len` bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}

/// Whether the driver asked to leave IDs and the funcmap to the device link.
pub(crate) fn deferred_to_link() -> bool {
    std::env::var(sqtt_config::var::DEFER_TO_LINK).is_ok_and(|v| v == "1")
}
