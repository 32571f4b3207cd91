/* sqtt_m0_record.h - one 32-bit SQTT record through M0, shared by markers.hpp and
 * amd_sqtt_marker/sqtt_marker.h (C and HIP). Not an API: include one of those.
 *
 * The record is one asm statement, `s_mov_b32 m0, <value>` / `s_nop N` / `s_ttracedata`, so that
 * nothing the compiler schedules lands between the write of M0 and the instruction that reads it,
 * and M0 is the statement's output, so that the compiler knows it is overwritten. A constant is an
 * immediate operand; any other value is made wave-uniform with readfirstlane and passed in an
 * SGPR. Without the pass plugin this is the record; the plugin knows the statement by its text
 * (the text AMD's header writes too) and puts its own marker sequence in its place: the reordering
 * boundary, the scope check, s_ttracedata_imm for small constants.
 */
#ifndef SQTT_M0_RECORD_H
#define SQTT_M0_RECORD_H

#include <stdint.h>

/* The N of `s_nop N` between the write of M0 and s_ttracedata, per generation as the plugin has
 * it (sqtt-gfx, Generation::m0_trace_nop): gfx9 needs one wait state after an SALU write of M0
 * (s_nop 0), gfx10 and gfx11 keep that shape, gfx12 waits four cycles (s_nop 3). Keyed off clang's
 * generation macros; a generation newer than these gets the longer wait. */
#if defined(__GFX9__) || defined(__GFX10__) || defined(__GFX11__)
#define SQTT_M0_TRACE_NOP 0
#else
#define SQTT_M0_TRACE_NOP 3
#endif

/* Operand 1 is the value, operand 2 the nop count. */
#define SQTT_M0_RECORD_ASM "s_mov_b32 m0, %1\ns_nop %2\ns_ttracedata"

#if defined(__HIP__)
#define SQTT_M0_RECORD_DEVICE __attribute__((device))
#else
#define SQTT_M0_RECORD_DEVICE
#endif

/* Writes `value` into the thread trace. The sched_barriers keep the machine scheduler from moving
 * other work across the record. */
static SQTT_M0_RECORD_DEVICE __attribute__((always_inline, unused)) inline void
__sqtt_m0_record(uint32_t value) {
#if defined(__AMDGCN__)
  uint32_t m0;
  __builtin_amdgcn_sched_barrier(0);
#if defined(__OPTIMIZE__)
  /* Known once inlined. Unoptimised code keeps both statements behind a `br i1 false`: there every
   * value goes through an SGPR. */
  if (__builtin_constant_p(value))
    __asm__ volatile(SQTT_M0_RECORD_ASM
                     : "={m0}"(m0)
                     : "i"(value), "i"(SQTT_M0_TRACE_NOP));
  else
#endif
    __asm__ volatile(SQTT_M0_RECORD_ASM
                     : "={m0}"(m0)
                     : "s"((uint32_t)__builtin_amdgcn_readfirstlane((int)value)),
                       "i"(SQTT_M0_TRACE_NOP));
  __builtin_amdgcn_sched_barrier(0);
  (void)m0;
#else
  (void)value;
#endif
}

#undef SQTT_M0_RECORD_DEVICE

#endif /* SQTT_M0_RECORD_H */
