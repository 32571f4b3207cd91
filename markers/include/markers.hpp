// markers.hpp - SQTT device markers for HIP kernels (sqtt-hipcc).
//
// Named markers (need the sqtt pass plugin, which sqtt-hipcc loads):
//   sqtt_marker_enter("name");  sqtt_marker_exit("name");
//   sqtt_marker_point("name");  sqtt_marker_data("name", uint32_t value);
// Numeric markers (work without the plugin; with it they get the same boundary, scope check and
// immediate form as named markers):
//   sqtt_marker_enter(uint32_t id);  sqtt_marker_exit(uint32_t id);  sqtt_marker_point(uint32_t id);
//
// Every call compiles to nothing unless SQTT_ENABLED is defined to a nonzero value
// (sqtt-hipcc defines it when instrumentation is on). A named marker built with SQTT_ENABLED=1
// but without the plugin fails to link with "undefined symbol: __sqtt_named_marker_<kind>":
// nothing is silently dropped.
//
// Marker values are (id << 2) | flags, flags bit 0 = exit previous scope, bit 1 = enter.
#ifndef SQTT_MARKERS_HPP
#define SQTT_MARKERS_HPP

#include <stdint.h>

#include "sqtt_m0_record.h"

#define SQTT_MARKER_FLAG_EXIT_PREV 1u
#define SQTT_MARKER_FLAG_ENTER 2u

#if defined(SQTT_ENABLED) && (SQTT_ENABLED + 0)

// Sentinels resolved by the pass plugin into s_ttracedata / s_ttracedata_imm. They are never
// defined anywhere, so a build without the plugin cannot link.
extern "C" {
__attribute__((device)) void __sqtt_named_marker_enter(const char *name);
__attribute__((device)) void __sqtt_named_marker_exit(const char *name);
__attribute__((device)) void __sqtt_named_marker_point(const char *name);
__attribute__((device)) void __sqtt_named_marker_data(const char *name, uint32_t data);
}

static inline __attribute__((device, always_inline)) void sqtt_marker_enter(const char *name) {
  __sqtt_named_marker_enter(name);
}
static inline __attribute__((device, always_inline)) void sqtt_marker_exit(const char *name) {
  __sqtt_named_marker_exit(name);
}
static inline __attribute__((device, always_inline)) void sqtt_marker_point(const char *name) {
  __sqtt_named_marker_point(name);
}
static inline __attribute__((device, always_inline)) void sqtt_marker_data(const char *name,
                                                                           uint32_t data) {
  __sqtt_named_marker_data(name, data);
}

static inline __attribute__((device, always_inline)) void sqtt_marker_enter(uint32_t id) {
  __sqtt_m0_record((id << 2) | SQTT_MARKER_FLAG_ENTER);
}
// The ID is kept for symmetry with enter; an exit always pops the top scope.
static inline __attribute__((device, always_inline)) void sqtt_marker_exit(uint32_t id) {
  (void)id;
  __sqtt_m0_record(SQTT_MARKER_FLAG_EXIT_PREV);
}
static inline __attribute__((device, always_inline)) void sqtt_marker_point(uint32_t id) {
  __sqtt_m0_record(id << 2);
}

#else // SQTT_ENABLED off: every marker is an empty inline function.

static inline __attribute__((device, always_inline)) void sqtt_marker_enter(const char *) {}
static inline __attribute__((device, always_inline)) void sqtt_marker_exit(const char *) {}
static inline __attribute__((device, always_inline)) void sqtt_marker_point(const char *) {}
static inline __attribute__((device, always_inline)) void sqtt_marker_data(const char *,
                                                                           uint32_t) {}
static inline __attribute__((device, always_inline)) void sqtt_marker_enter(uint32_t) {}
static inline __attribute__((device, always_inline)) void sqtt_marker_exit(uint32_t) {}
static inline __attribute__((device, always_inline)) void sqtt_marker_point(uint32_t) {}

#endif

#endif // SQTT_MARKERS_HPP
