# SqttHipcc: SQTT instrumentation for CMake's HIP language (or a C++ target compiled as HIP).
#
#   find_package(SqttHipcc REQUIRED)       # installed by install.sh under PREFIX/lib/cmake/SqttHipcc
#   sqtt_instrument(<target> [LANGUAGE HIP|CXX] [CHECK_ARGS <args>...])
#
# sqtt_instrument() asks `sqtt-hipcc --sqtt-flags=<the LANGUAGE's compiler>` for the flags that
# instrument a plain `clang++ -x hip` compile (the plugin built for that clang's LLVM major, the
# markers.hpp include directory, -DSQTT_ENABLED=1) and adds them to the target's sources of that
# language; sets `sqtt-hipcc --sqtt-launch` as that language's compiler launcher, so the plugin
# gets the settings the wrapper would give it (sqtt.toml found from the build directory upward,
# SQTT_* over it); launches the target's link steps the same way, so an `-fgpu-rdc` link loads
# the plugin into the device linker (IDs unique across translation units; its compiles leave IDs
# to the link); and adds a post-build `sqtt-hipcc --check $<TARGET_FILE:target> CHECK_ARGS`.
# LANGUAGE defaults to HIP when the HIP language is enabled, else CXX (for targets whose C++
# compiler compiles with `-x hip`). An existing <LANG>_COMPILER_LAUNCHER (ccache) is kept after ours.

get_filename_component(_sqtt_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
find_program(SQTT_HIPCC_EXECUTABLE sqtt-hipcc HINTS "${_sqtt_prefix}/bin"
             DOC "sqtt-hipcc (SQTT instrumentation for HIP)")
if(NOT SQTT_HIPCC_EXECUTABLE)
  set(SqttHipcc_FOUND FALSE)
  set(SqttHipcc_NOT_FOUND_MESSAGE "sqtt-hipcc not found in ${_sqtt_prefix}/bin or on PATH")
  return()
endif()

function(sqtt_instrument target)
  cmake_parse_arguments(PARSE_ARGV 1 _sqtt "" "LANGUAGE" "CHECK_ARGS")
  if(NOT TARGET ${target})
    message(FATAL_ERROR "sqtt_instrument: ${target} is not a target")
  endif()
  set(lang "${_sqtt_LANGUAGE}")
  if(NOT lang)
    get_property(_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
    if("HIP" IN_LIST _langs)
      set(lang HIP)
    else()
      set(lang CXX)
    endif()
  endif()
  if(NOT lang MATCHES "^(HIP|CXX)$")
    message(FATAL_ERROR "sqtt_instrument: LANGUAGE must be HIP or CXX, not ${lang}")
  endif()
  set(compiler "${CMAKE_${lang}_COMPILER}")
  execute_process(
    COMMAND "${SQTT_HIPCC_EXECUTABLE}" "--sqtt-flags=${compiler}"
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
    OUTPUT_VARIABLE flags ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sqtt_instrument(${target}): `sqtt-hipcc --sqtt-flags=${compiler}` failed:\n${err}")
  endif()
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:${lang}>:SHELL:${flags}>")
  get_target_property(launcher ${target} ${lang}_COMPILER_LAUNCHER)
  if(NOT launcher)
    set(launcher "${CMAKE_${lang}_COMPILER_LAUNCHER}")
  endif()
  set_property(TARGET ${target} PROPERTY ${lang}_COMPILER_LAUNCHER
               "${SQTT_HIPCC_EXECUTABLE}" --sqtt-launch ${launcher})
  # Links too: CMake 3.25 has no <LANG>_LINKER_LAUNCHER for HIP, so the link rule's launcher.
  # The launcher adds nothing to links without -fgpu-rdc, nor to archiving.
  get_target_property(link_launcher ${target} RULE_LAUNCH_LINK)
  if(NOT link_launcher)
    set(link_launcher "")
  endif()
  set_property(TARGET ${target} PROPERTY RULE_LAUNCH_LINK
               "\"${SQTT_HIPCC_EXECUTABLE}\" --sqtt-launch ${link_launcher}")
  get_target_property(type ${target} TYPE)
  if(type MATCHES "EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY")
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND "${SQTT_HIPCC_EXECUTABLE}" --check "$<TARGET_FILE:${target}>" ${_sqtt_CHECK_ARGS}
      WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
      COMMENT "sqtt-hipcc --check ${target}"
      VERBATIM)
  endif()
  message(STATUS "sqtt_instrument(${target}): ${lang} sources get ${flags}")
endfunction()

set(SqttHipcc_FOUND TRUE)
