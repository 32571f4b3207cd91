/* amd_sqtt_marker/sqtt_marker.h - AMD's SQTT device marker API, for sqtt-hipcc (C and HIP).
 *
 * Code written for the header of AMD's own pass (amd/sqtt-marker in ROCm's LLVM) builds
 * unchanged against this one, and the sqtt pass plugin resolves what it calls:
 *
 *   amd_sqtt_marker_enter_string("name");  amd_sqtt_marker_exit_string("name");
 *   amd_sqtt_marker_point_string("name");  amd_sqtt_marker_data_string("name", uint32_t data);
 *   amd_sqtt_marker_enter_id(uint32_t id); amd_sqtt_marker_exit(); amd_sqtt_marker_point_id(id);
 *
 * and the names of AMD's newer header:
 *
 *   sqtt_marker_enter("name"); sqtt_marker_exit("name"); sqtt_marker_point("name");
 *   sqtt_marker_data("name", data);  (extern "C" sentinels, resolved by the plugin)
 *   sqtt_marker_enter_id(id); sqtt_marker_exit_id(id); sqtt_marker_point_id(id);
 *
 * Every call is a no-op unless AMD_SQTT_MARKER_ENABLE is nonzero. Left undefined, it follows
 * SQTT_ENABLED, which sqtt-hipcc defines when instrumentation is on; AMD's build line
 * (-DAMD_SQTT_MARKER_ENABLE=1) works as it is. String markers need the plugin: without it, an
 * enabled build fails to link with an undefined sentinel, so nothing is silently dropped. ID
 * markers work without it; with it they get the same boundary, scope check and immediate form as
 * markers.hpp's numeric markers (they lower to the same M0 record).
 *
 * Values are (id << 2) | flags: bit 0 exits the current scope, bit 1 enters one.
 *
 * Beside markers.hpp in one HIP translation unit: include markers.hpp first. Its overloads then
 * stand for sqtt_marker_enter/exit/point/data (their C++ linkage cannot coexist with the
 * extern "C" declarations here) and follow SQTT_ENABLED.
 */
#ifndef AMD_SQTT_MARKER_H
#define AMD_SQTT_MARKER_H

#include <stdint.h>

#include "../sqtt_m0_record.h"

#ifndef AMD_SQTT_MARKER_ENABLE
#if defined(SQTT_ENABLED) && (SQTT_ENABLED + 0)
#define AMD_SQTT_MARKER_ENABLE 1
#else
#define AMD_SQTT_MARKER_ENABLE 0
#endif
#endif

#define AMD_SQTT_MARKER_FLAG_EXIT_PREV UINT32_C(1)
#define AMD_SQTT_MARKER_FLAG_ENTER (UINT32_C(1) << 1)

#if defined(__HIP__)
#define SQTT_AMD_API_DEVICE __attribute__((device))
#else
#define SQTT_AMD_API_DEVICE
#endif
#define SQTT_AMD_API static SQTT_AMD_API_DEVICE __attribute__((always_inline, unused)) inline

/* Device code with markers on: string markers call the sentinels, ID markers write M0 records.
 * Anything else (markers off, or HIP's host pass, which parses kernel bodies but never emits
 * them) gets empty functions. */
#if (AMD_SQTT_MARKER_ENABLE + 0) && (defined(__AMDGCN__) || defined(__HIP_DEVICE_COMPILE__))

#ifdef __cplusplus
extern "C" {
#endif
/* Never defined anywhere: the plugin replaces every call. */
SQTT_AMD_API_DEVICE void __sqtt_named_marker_enter(const char *name);
SQTT_AMD_API_DEVICE void __sqtt_named_marker_exit(const char *name);
SQTT_AMD_API_DEVICE void __sqtt_named_marker_point(const char *name);
SQTT_AMD_API_DEVICE void __sqtt_named_marker_data(const char *name, uint32_t data);
#if !defined(SQTT_MARKERS_HPP)
SQTT_AMD_API_DEVICE void sqtt_marker_enter(const char *name);
SQTT_AMD_API_DEVICE void sqtt_marker_exit(const char *name);
SQTT_AMD_API_DEVICE void sqtt_marker_point(const char *name);
SQTT_AMD_API_DEVICE void sqtt_marker_data(const char *name, uint32_t data);
#endif
#ifdef __cplusplus
}
#endif

SQTT_AMD_API void amd_sqtt_marker_enter_string(const char *name) {
  __sqtt_named_marker_enter(name);
}
SQTT_AMD_API void amd_sqtt_marker_exit_string(const char *name) {
  __sqtt_named_marker_exit(name);
}
SQTT_AMD_API void amd_sqtt_marker_point_string(const char *name) {
  __sqtt_named_marker_point(name);
}
SQTT_AMD_API void amd_sqtt_marker_data_string(const char *name, uint32_t data) {
  __sqtt_named_marker_data(name, data);
}
SQTT_AMD_API void amd_sqtt_marker_enter_id(uint32_t id) {
  __sqtt_m0_record((id << 2) | AMD_SQTT_MARKER_FLAG_ENTER);
}
/* An exit always pops the top scope. */
SQTT_AMD_API void amd_sqtt_marker_exit(void) {
  __sqtt_m0_record(AMD_SQTT_MARKER_FLAG_EXIT_PREV);
}
SQTT_AMD_API void amd_sqtt_marker_point_id(uint32_t id) { __sqtt_m0_record(id << 2); }
SQTT_AMD_API void sqtt_marker_enter_id(uint32_t id) { amd_sqtt_marker_enter_id(id); }
SQTT_AMD_API void sqtt_marker_exit_id(uint32_t id) {
  (void)id;
  amd_sqtt_marker_exit();
}
SQTT_AMD_API void sqtt_marker_point_id(uint32_t id) { amd_sqtt_marker_point_id(id); }

#else

SQTT_AMD_API void amd_sqtt_marker_enter_string(const char *name) { (void)name; }
SQTT_AMD_API void amd_sqtt_marker_exit_string(const char *name) { (void)name; }
SQTT_AMD_API void amd_sqtt_marker_point_string(const char *name) { (void)name; }
SQTT_AMD_API void amd_sqtt_marker_data_string(const char *name, uint32_t data) {
  (void)name;
  (void)data;
}
SQTT_AMD_API void amd_sqtt_marker_enter_id(uint32_t id) { (void)id; }
SQTT_AMD_API void amd_sqtt_marker_exit(void) {}
SQTT_AMD_API void amd_sqtt_marker_point_id(uint32_t id) { (void)id; }
#if !defined(SQTT_MARKERS_HPP)
SQTT_AMD_API void sqtt_marker_enter(const char *name) { (void)name; }
SQTT_AMD_API void sqtt_marker_exit(const char *name) { (void)name; }
SQTT_AMD_API void sqtt_marker_point(const char *name) { (void)name; }
SQTT_AMD_API void sqtt_marker_data(const char *name, uint32_t data) {
  (void)name;
  (void)data;
}
#endif
SQTT_AMD_API void sqtt_marker_enter_id(uint32_t id) { (void)id; }
SQTT_AMD_API void sqtt_marker_exit_id(uint32_t id) { (void)id; }
SQTT_AMD_API void sqtt_marker_point_id(uint32_t id) { (void)id; }

#endif

#undef SQTT_AMD_API
#undef SQTT_AMD_API_DEVICE

#endif /* AMD_SQTT_MARKER_H */
