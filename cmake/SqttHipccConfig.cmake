# SqttHipcc: SQTT instrumentation for CMake projects. install.sh installs it as
# PREFIX/lib/cmake/SqttHipcc/ beside PREFIX/bin/sqtt-hipcc.
#
#   find_package(SqttHipcc 0.1 REQUIRED)        # -DCMAKE_PREFIX_PATH=PREFIX
#   sqtt_instrument(DIRECTORY [<dir>] [LANGUAGE HIP|CXX] [CHECK_ARGS <arg>...])
#   sqtt_instrument(<target>... [LANGUAGE HIP|CXX] [CHECK_ARGS <arg>...])
#
# DIRECTORY instruments every target of <dir> (default: the current directory) and of the
# directories below it, including those defined after the call: one call at the top of a project
# instruments the project. Targets without device code are skipped: in the HIP language, those
# without HIP sources; in C++ (LANGUAGE CXX) compiled by a plain clang, those whose options do not
# say `-x hip` (or link hip::device); with sqtt-hipcc as the C++ compiler, none. The named form
# instruments the given targets (their sources of LANGUAGE). Both act at the end of the current
# directory, so sources and options added after the call count.
#
# LANGUAGE defaults to HIP when the HIP language is enabled, else CXX. What a target gets depends
# on who compiles it:
# - a clang (CMake's HIP language, or C++ with `-x hip`): `sqtt-hipcc --sqtt-launch` as the
#   language's compiler launcher (an existing one, such as ccache, runs after it) and as the link
#   rule's launcher. At build time the launcher puts the plugin, the resolved settings (as plugin
#   options), the markers include directory and -DSQTT_ENABLED=1 on the compile's command line, so
#   a ccache after it hashes them, adds sqtt.toml and the plugin to the compile's dependency file,
#   and loads the plugin into an -fgpu-rdc device link. A post-build `sqtt-hipcc --check FILE
#   CHECK_ARGS` checks each executable and shared library.
# - sqtt-hipcc as the compiler (CMAKE_CXX_COMPILER=sqtt-hipcc, the classic hipcc way): nothing more
#   on the command line (the wrapper does it all, and checks what it builds).
# On every route each instrumented object depends on a settings stamp: a build step, run on every
# build, that rewrites CMakeFiles/sqtt-hipcc/settings-*.stamp only when the resolved settings (the
# sqtt.toml found from where the compiles run, the SQTT_* variables of the build's environment)
# or the plugin change. So Ninja and Make rebuild what a changed setting changes, and only that.
#
# Imported targets: SqttHipcc::sqtt-hipcc and SqttHipcc::sqtt (the executables), SqttHipcc::markers
# (an INTERFACE target with PREFIX/include/sqtt-hipcc: markers.hpp, sqtt_m0_record.h,
# amd_sqtt_marker/sqtt_marker.h, for targets built without instrumentation; instrumented ones get
# the directory themselves).

cmake_policy(PUSH)
cmake_policy(VERSION 3.19...3.31)

get_filename_component(_sqtt_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
find_program(SQTT_HIPCC_EXECUTABLE sqtt-hipcc PATHS "${_sqtt_prefix}/bin" NO_DEFAULT_PATH
             DOC "sqtt-hipcc (SQTT instrumentation for HIP)")
set(_sqtt_include_dir "${_sqtt_prefix}/include/sqtt-hipcc")
if(NOT SQTT_HIPCC_EXECUTABLE)
  set(SqttHipcc_FOUND FALSE)
  set(SqttHipcc_NOT_FOUND_MESSAGE "no sqtt-hipcc in ${_sqtt_prefix}/bin (reinstall: ./install.sh --prefix ${_sqtt_prefix})")
  cmake_policy(POP)
  return()
endif()
if(NOT EXISTS "${_sqtt_include_dir}/markers.hpp")
  set(SqttHipcc_FOUND FALSE)
  set(SqttHipcc_NOT_FOUND_MESSAGE "no ${_sqtt_include_dir}/markers.hpp (reinstall: ./install.sh --prefix ${_sqtt_prefix})")
  cmake_policy(POP)
  return()
endif()

if(NOT TARGET SqttHipcc::sqtt-hipcc)
  add_executable(SqttHipcc::sqtt-hipcc IMPORTED)
  set_target_properties(SqttHipcc::sqtt-hipcc PROPERTIES IMPORTED_LOCATION "${SQTT_HIPCC_EXECUTABLE}")
endif()
if(NOT TARGET SqttHipcc::sqtt AND EXISTS "${_sqtt_prefix}/bin/sqtt")
  add_executable(SqttHipcc::sqtt IMPORTED)
  set_target_properties(SqttHipcc::sqtt PROPERTIES IMPORTED_LOCATION "${_sqtt_prefix}/bin/sqtt")
endif()
if(NOT TARGET SqttHipcc::markers)
  add_library(SqttHipcc::markers INTERFACE IMPORTED)
  set_target_properties(SqttHipcc::markers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_sqtt_include_dir}")
endif()
set(SQTT_HIPCC_INCLUDE_DIR "${_sqtt_include_dir}")

function(sqtt_instrument)
  cmake_parse_arguments(PARSE_ARGV 0 _sqtt "" "LANGUAGE" "DIRECTORY;CHECK_ARGS")
  set(dir_form FALSE)
  if(DEFINED _sqtt_DIRECTORY OR "DIRECTORY" IN_LIST _sqtt_KEYWORDS_MISSING_VALUES)
    set(dir_form TRUE)
  endif()
  if(dir_form AND _sqtt_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sqtt_instrument: give targets or DIRECTORY, not both (got ${_sqtt_UNPARSED_ARGUMENTS})")
  endif()
  if(NOT dir_form AND NOT _sqtt_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sqtt_instrument: give the targets to instrument, or DIRECTORY [<dir>] for every target of a directory and below")
  endif()
  list(LENGTH _sqtt_DIRECTORY n)
  if(n GREATER 1)
    message(FATAL_ERROR "sqtt_instrument: DIRECTORY takes one directory, not ${_sqtt_DIRECTORY}")
  endif()
  _sqtt_language(lang "${_sqtt_LANGUAGE}")
  if(dir_form)
    set(what "${_sqtt_DIRECTORY}")
    if(what STREQUAL "")
      set(what "${CMAKE_CURRENT_SOURCE_DIR}")
    endif()
    get_filename_component(what "${what}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    string(FIND "${what}/" "${CMAKE_CURRENT_SOURCE_DIR}/" at)
    if(NOT at EQUAL 0)
      message(FATAL_ERROR "sqtt_instrument(DIRECTORY ${what}): the directory must be ${CMAKE_CURRENT_SOURCE_DIR} or below it")
    endif()
  else()
    set(what "")
    foreach(t IN LISTS _sqtt_UNPARSED_ARGUMENTS)
      if(NOT TARGET "${t}")
        message(FATAL_ERROR "sqtt_instrument: ${t} is not a target")
      endif()
      get_target_property(real "${t}" ALIASED_TARGET)
      if(real)
        set(t "${real}")
      endif()
      get_target_property(imported "${t}" IMPORTED)
      get_target_property(type "${t}" TYPE)
      if(imported OR NOT type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY|STATIC_LIBRARY|OBJECT_LIBRARY)$")
        message(FATAL_ERROR "sqtt_instrument: ${t} is not a target this project compiles (an imported target or a ${type})")
      endif()
      list(APPEND what "${t}")
    endforeach()
  endif()
  # The call's arguments wait in global properties for the deferred call (whose own arguments
  # would be evaluated only then, in the directory's scope).
  get_property(n GLOBAL PROPERTY _SQTT_CALLS)
  if(NOT n)
    set(n 0)
  endif()
  math(EXPR n "${n} + 1")
  set_property(GLOBAL PROPERTY _SQTT_CALLS ${n})
  set_property(GLOBAL PROPERTY _SQTT_CALL_${n}_DIRECTORY ${dir_form})
  set_property(GLOBAL PROPERTY _SQTT_CALL_${n}_WHAT "${what}")
  set_property(GLOBAL PROPERTY _SQTT_CALL_${n}_LANGUAGE ${lang})
  set_property(GLOBAL PROPERTY _SQTT_CALL_${n}_CHECK_ARGS "${_sqtt_CHECK_ARGS}")
  # (EVAL puts the number itself into the deferred call.)
  cmake_language(EVAL CODE "cmake_language(DEFER CALL _sqtt_instrument_deferred ${n})")
endfunction()

# The language of a call: the one given, else HIP when it is enabled, else CXX.
function(_sqtt_language out given)
  set(lang "${given}")
  if(NOT lang)
    get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
    if("HIP" IN_LIST langs)
      set(lang HIP)
    else()
      set(lang CXX)
    endif()
  endif()
  if(NOT lang MATCHES "^(HIP|CXX)$")
    message(FATAL_ERROR "sqtt_instrument: LANGUAGE must be HIP or CXX, not ${lang}")
  endif()
  if(NOT CMAKE_${lang}_COMPILER)
    message(FATAL_ERROR "sqtt_instrument: the ${lang} language is not enabled (project(... LANGUAGES ${lang}))")
  endif()
  set(${out} ${lang} PARENT_SCOPE)
endfunction()

function(_sqtt_instrument_deferred n)
  get_property(dir_form GLOBAL PROPERTY _SQTT_CALL_${n}_DIRECTORY)
  get_property(what GLOBAL PROPERTY _SQTT_CALL_${n}_WHAT)
  get_property(lang GLOBAL PROPERTY _SQTT_CALL_${n}_LANGUAGE)
  get_property(check_args GLOBAL PROPERTY _SQTT_CALL_${n}_CHECK_ARGS)
  _sqtt_route(route ${lang})
  if(dir_form)
    _sqtt_targets_below(targets "${what}")
  else()
    set(targets "${what}")
  endif()
  set(done "")
  foreach(t IN LISTS targets)
    _sqtt_instrument_target(ok ${t} ${lang} ${route} ${dir_form} "${check_args}")
    if(ok)
      list(APPEND done ${t})
    endif()
  endforeach()
  if(dir_form AND NOT route STREQUAL "wrapper")
    # Executables and shared libraries with no device source of their own that link the device
    # code of an instrumented static or object library: their link may be an -fgpu-rdc device
    # link (the launcher loads the plugin there), and their file holds instrumented code.
    _sqtt_carriers(carriers "${targets}" "${done}")
    foreach(t IN LISTS carriers)
      get_target_property(type ${t} TYPE)
      if(type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$" AND NOT t IN_LIST done)
        _sqtt_launch_link(${t})
        _sqtt_check_after_build(${t} "${check_args}")
        message(STATUS "sqtt_instrument(${t}): links instrumented device code: launched link, checked")
      endif()
    endforeach()
  endif()
endfunction()

# `wrapper` when the language's compiler is sqtt-hipcc itself, else `launcher`.
function(_sqtt_route out lang)
  get_filename_component(name "${CMAKE_${lang}_COMPILER}" NAME)
  get_filename_component(compiler "${CMAKE_${lang}_COMPILER}" REALPATH)
  get_filename_component(wrapper "${SQTT_HIPCC_EXECUTABLE}" REALPATH)
  if(name STREQUAL "sqtt-hipcc" OR compiler STREQUAL wrapper)
    set(${out} wrapper PARENT_SCOPE)
  else()
    set(${out} launcher PARENT_SCOPE)
    # Once per compiler: does the plugin for its LLVM exist? (A clear error now, not in the build.)
    get_property(checked GLOBAL PROPERTY _SQTT_CHECKED_${lang})
    if(NOT checked)
      execute_process(
        COMMAND "${SQTT_HIPCC_EXECUTABLE}" "--sqtt-flags=cmake:${CMAKE_${lang}_COMPILER}"
        WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
        OUTPUT_VARIABLE flags ERROR_VARIABLE err RESULT_VARIABLE rc
        OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "sqtt_instrument: `sqtt-hipcc --sqtt-flags=cmake:${CMAKE_${lang}_COMPILER}` failed:\n${err}")
      endif()
      set_property(GLOBAL PROPERTY _SQTT_CHECKED_${lang} TRUE)
      message(STATUS "SqttHipcc: ${lang} compiles launched through sqtt-hipcc get ${flags} and the settings")
    endif()
  endif()
endfunction()

# Every target defined in `dir` and the directories below it.
function(_sqtt_targets_below out dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _sqtt_targets_below(more "${sub}")
    list(APPEND targets ${more})
  endforeach()
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()

# The target's sources (absolute) compiled as `lang`: by their LANGUAGE property, else by
# extension. Sources named by generator expressions are not known before generation.
function(_sqtt_sources out target lang)
  get_target_property(srcs ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(found "")
  foreach(s IN LISTS srcs)
    if(s MATCHES "^\\$<")
      continue()
    endif()
    get_filename_component(abs "${s}" ABSOLUTE BASE_DIR "${dir}")
    get_source_file_property(l "${abs}" TARGET_DIRECTORY ${target} LANGUAGE)
    if(NOT l)
      get_filename_component(ext "${abs}" LAST_EXT)
      string(SUBSTRING "${ext}" 1 -1 ext)
      if(ext IN_LIST CMAKE_${lang}_SOURCE_FILE_EXTENSIONS)
        set(l ${lang})
      endif()
    endif()
    if(l STREQUAL lang)
      list(APPEND found "${abs}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# Whether a target's C++ compiles are HIP compiles for a plain clang: `-x hip` among its options
# or the project's C++ flags, or hip::device (which adds it) among its libraries.
function(_sqtt_cxx_is_hip out target)
  get_target_property(opts ${target} COMPILE_OPTIONS)
  get_target_property(libs ${target} LINK_LIBRARIES)
  set(text ";${opts};${CMAKE_CXX_FLAGS};")
  string(REPLACE " " ";" text "${text}")
  if(text MATCHES ";-x;hip;|;-xhip;|;--x=hip;" OR "hip::device" IN_LIST libs)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Instruments one target (see the top of this file); `ok` says whether it was.
function(_sqtt_instrument_target ok target lang route dir_form check_args)
  set(${ok} FALSE PARENT_SCOPE)
  get_target_property(done ${target} SQTT_INSTRUMENTED)
  if(done)
    set(${ok} TRUE PARENT_SCOPE)
    return()
  endif()
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY|STATIC_LIBRARY|OBJECT_LIBRARY)$")
    return()
  endif()
  _sqtt_sources(srcs ${target} ${lang})
  set(device "${srcs}")
  if(device AND dir_form AND lang STREQUAL "CXX" AND route STREQUAL "launcher")
    _sqtt_cxx_is_hip(hip ${target})
    if(NOT hip)
      set(device "")
    endif()
  endif()
  if(NOT device)
    message(STATUS "sqtt_instrument(${target}): no device code (no ${lang} sources compiled as HIP): skipped")
    return()
  endif()
  set_property(TARGET ${target} PROPERTY SQTT_INSTRUMENTED TRUE)
  set(${ok} TRUE PARENT_SCOPE)
  set_property(TARGET ${target} APPEND PROPERTY INCLUDE_DIRECTORIES "${SQTT_HIPCC_INCLUDE_DIR}")
  _sqtt_stamp(stamp ${target} ${lang} ${route})
  set_property(SOURCE ${srcs} TARGET_DIRECTORY ${target} APPEND PROPERTY OBJECT_DEPENDS "${stamp}")
  if(route STREQUAL "wrapper")
    # ccache in front of sqtt-hipcc hashes sqtt-hipcc's arguments alone, not the plugin and the
    # settings the wrapper adds (a changed setting would hit): it runs behind the wrapper instead.
    get_target_property(launcher ${target} ${lang}_COMPILER_LAUNCHER)
    if(launcher)
      list(GET launcher 0 first)
      get_filename_component(first_name "${first}" NAME)
      if(first_name STREQUAL "ccache")
        list(REMOVE_AT launcher 0)
        set_property(TARGET ${target} PROPERTY ${lang}_COMPILER_LAUNCHER
                     "${CMAKE_COMMAND}" -E env "SQTT_CCACHE=${first}" ${launcher})
        message(STATUS "sqtt_instrument(${target}): ccache runs behind sqtt-hipcc (SQTT_CCACHE)")
      endif()
    endif()
    message(STATUS "sqtt_instrument(${target}): compiled by sqtt-hipcc; rebuilt when the settings change")
    return()
  endif()
  get_target_property(launcher ${target} ${lang}_COMPILER_LAUNCHER)
  if(NOT launcher)
    set(launcher "${CMAKE_${lang}_COMPILER_LAUNCHER}")
  endif()
  set_property(TARGET ${target} PROPERTY ${lang}_COMPILER_LAUNCHER
               "${SQTT_HIPCC_EXECUTABLE}" --sqtt-launch ${launcher})
  if(type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$")
    _sqtt_launch_link(${target})
    _sqtt_check_after_build(${target} "${check_args}")
  endif()
  message(STATUS "sqtt_instrument(${target}): ${lang} sources launched through sqtt-hipcc")
endfunction()

# The link launched too (CMake has no HIP linker launcher before 3.29: the link rule's launcher),
# so an -fgpu-rdc link loads the plugin into the device linker. It adds nothing to other links.
function(_sqtt_launch_link target)
  get_target_property(link_launcher ${target} RULE_LAUNCH_LINK)
  if(NOT link_launcher)
    set(link_launcher "")
  endif()
  if(NOT link_launcher MATCHES "--sqtt-launch")
    set_property(TARGET ${target} PROPERTY RULE_LAUNCH_LINK
                 "\"${SQTT_HIPCC_EXECUTABLE}\" --sqtt-launch ${link_launcher}")
  endif()
endfunction()

function(_sqtt_check_after_build target check_args)
  get_target_property(checked ${target} SQTT_CHECKED)
  if(checked)
    return()
  endif()
  set_property(TARGET ${target} PROPERTY SQTT_CHECKED TRUE)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${SQTT_HIPCC_EXECUTABLE}" --check "$<TARGET_FILE:${target}>" ${check_args}
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
    COMMENT "sqtt-hipcc --check ${target}"
    VERBATIM)
endfunction()

# The settings stamp of a target's compiles: one per directory the compiles run in (Ninja runs
# them from the top build directory, Makefiles from the target's) and compiler (whose LLVM chooses
# the plugin; the wrapper's hipcc on the wrapper route). Its step runs on every build and
# rewrites the file only when what it records changes.
function(_sqtt_stamp out target lang route)
  if(CMAKE_GENERATOR MATCHES "Ninja")
    set(cwd "${CMAKE_BINARY_DIR}")
  else()
    get_target_property(cwd ${target} BINARY_DIR)
  endif()
  set(compiler "")
  if(route STREQUAL "launcher")
    set(compiler "${CMAKE_${lang}_COMPILER}")
  endif()
  string(SHA1 id "${cwd}\n${compiler}")
  string(SUBSTRING "${id}" 0 12 id)
  set(stamp "${CMAKE_BINARY_DIR}/CMakeFiles/sqtt-hipcc/settings-${id}.stamp")
  if(NOT TARGET sqtt_settings_${id})
    # Present from the start, so a build of one target alone (`make app/fast`) finds it.
    if(NOT EXISTS "${stamp}")
      file(WRITE "${stamp}" "")
    endif()
    add_custom_target(sqtt_settings_${id}
      COMMAND "${SQTT_HIPCC_EXECUTABLE}" "--sqtt-stamp=${stamp}" ${compiler}
      BYPRODUCTS "${stamp}"
      WORKING_DIRECTORY "${cwd}"
      VERBATIM)
  endif()
  add_dependencies(${target} sqtt_settings_${id})
  set(${out} "${stamp}" PARENT_SCOPE)
endfunction()

# Targets of `targets` that are not instrumented themselves but link one that is, directly or
# through static and object libraries (whose objects end up in the linking file).
function(_sqtt_carriers out targets instrumented)
  set(carrying "")
  foreach(t IN LISTS instrumented)
    get_target_property(type ${t} TYPE)
    if(type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY)$")
      list(APPEND carrying ${t})
    endif()
  endforeach()
  set(result "")
  set(changed TRUE)
  while(changed)
    set(changed FALSE)
    foreach(t IN LISTS targets)
      if(t IN_LIST result OR t IN_LIST instrumented)
        continue()
      endif()
      get_target_property(libs ${t} LINK_LIBRARIES)
      foreach(l IN LISTS libs)
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" l "${l}")
        if(l IN_LIST carrying)
          list(APPEND result ${t})
          get_target_property(type ${t} TYPE)
          if(type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY)$")
            list(APPEND carrying ${t})
          endif()
          set(changed TRUE)
          break()
        endif()
      endforeach()
    endforeach()
  endwhile()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

set(SqttHipcc_FOUND TRUE)
cmake_policy(POP)
