# kiln_add_library(<lib> SPECS <spec>... TARGETS <target>... [KEEP_IR] [C_SOURCES] [SIZE_BUDGET <bytes>]
#                  [TUNE_DB <file>])
#
# Runs `kiln gen` in the build on the specs, for the targets (`kiln targets` lists them), and makes <lib> a static library of the generated dispatch and kernels that carries its include
# directory (#include "<lib>.h") and the kiln runtime. Ninja regenerates the library only when a
# spec or kiln itself changed (kiln writes a depfile); files kiln would write unchanged are left
# alone, so nothing downstream recompiles. A C target's kernel files are compiled with the target's
# flags, an object target's objects (made by kiln) are linked as they are; the dispatch picks a
# target's variants at run time only on CPUs that have its features. The target names, file names
# and flags come from kiln's one table (generator/target/), read once per configure: from the
# installed kiln, or, in kiln's own build, from a printer of the table compiled at configure time.
# KEEP_IR writes each object's LLVM IR beside it; C_SOURCES makes every target's kernels C instead
# of objects (compiled here with the target's flags: to debug them, or to use your own compiler).
#
# The kernel files are compiled optimized (-O3, after the build mode's own flags, so it wins) in
# every build mode: Debug, RelWithDebInfo, MinSizeRel, no build type and multi-config generators
# alike, so a Debug app gets the kernels (and the floating-point results) of a Release one. The
# mode's other flags (-g) stay. -DKILN_OPTIMIZE_KERNELS=OFF compiles them as the rest of the build.
#
# SIZE_BUDGET: the most bytes (code + data) the kernels of each target may take in <lib> as linked.
# Once the library is archived, `kiln size --budget` measures its kernels there (a C target's as the
# compiler made them, kiln's objects as they are) and fails the build, naming the target, its total
# and its largest kernels and variants, when one is over.
#
# GPU targets (opencl, cuda-sm80, cuda-sm90): their kernels are embedded in the dispatch (OpenCL C,
# and for CUDA a fatbin the toolkit's nvcc makes when kiln gen runs: -DKILN_NVCC=<path> names it,
# else the project's CUDA compiler or the nvcc kiln finds), so the build compiles nothing for them
# and the library needs no GPU, no driver and no CUDA language to build.
#
# TUNE_DB: a database `kiln tune` wrote (checked in beside the specs): `kiln gen --tune-db` gives the
# kernels it lists their tuned opts (nothing is timed in the build; a stale entry is reported and
# ignored), and the library is generated again when the file changes.
#
# Needs the targets kiln::kiln (the generator, a host executable) and kiln::runtime: from
# find_package(kiln) or from kiln's own build (add_subdirectory).
include_guard(GLOBAL)
option(KILN_OPTIMIZE_KERNELS "Compile kiln's kernel files with -O3 whatever the build mode" ON)
if(POLICY CMP0116)
  cmake_policy(SET CMP0116 NEW)  # depfile paths as the Ninja generator expects them
endif()

# The target table as JSON (`kiln targets --json`), once per configure. In kiln's own build the
# table is there already (CMakeLists.txt sets KILN_TARGET_TABLE); an installed kiln is asked.
function(_kiln_target_table out)
  get_property(table GLOBAL PROPERTY KILN_TARGET_TABLE)
  if(NOT table)
    get_target_property(exe kiln::kiln LOCATION)
    execute_process(COMMAND "${exe}" targets --json RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "kiln_add_library: `${exe} targets --json` failed (${rc}): ${err}")
    endif()
    set_property(GLOBAL PROPERTY KILN_TARGET_TABLE "${table}")
  endif()
  set(${out} "${table}" PARENT_SCOPE)
endfunction()

# The architecture the build's code runs on, in the table's spelling (a target's "arch"): from the
# toolchain's CMAKE_SYSTEM_PROCESSOR (and, for 32-bit ARM, whether it builds for an OS: Linux is
# ARMv7-A, bare metal is a Cortex-M); "" for one kiln has no objects for.
function(_kiln_arch out)
  set(p "${CMAKE_SYSTEM_PROCESSOR}")
  set(a "")
  if(p MATCHES "^(x86_64|AMD64|amd64|x64)$")
    set(a x86_64)
  elseif(p MATCHES "^(aarch64|arm64|ARM64|armv8.*)$")
    set(a aarch64)
  elseif(p MATCHES "^(arm|armv7.*|armhf|cortex-m.*)$")
    if(CMAKE_SYSTEM_NAME STREQUAL "Generic" OR p MATCHES "^(cortex-m.*|armv7e?-?m)$")
      set(a armv7em)
    else()
      set(a armv7)
    endif()
  elseif(p MATCHES "^riscv64$")
    set(a riscv64)
  elseif(p MATCHES "^wasm32$" OR CMAKE_SYSTEM_NAME STREQUAL "Emscripten" OR CMAKE_SYSTEM_NAME STREQUAL "WASI")
    set(a wasm32)
  endif()
  set(${out} "${a}" PARENT_SCOPE)
endfunction()

function(kiln_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 KILN "KEEP_IR;C_SOURCES" "SIZE_BUDGET;TUNE_DB" "SPECS;TARGETS")
  if(KILN_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kiln_add_library(${name}): unknown arguments: ${KILN_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "kiln_add_library(${name}): the name must be a C identifier (it is the namespace)")
  endif()
  if(NOT KILN_SPECS)
    message(FATAL_ERROR "kiln_add_library(${name}): no SPECS given")
  endif()
  if(NOT KILN_TARGETS)
    message(FATAL_ERROR "kiln_add_library(${name}): no TARGETS given (`kiln targets` lists them)")
  endif()
  foreach(tool kiln::kiln kiln::runtime)
    if(NOT TARGET ${tool})
      message(FATAL_ERROR "kiln_add_library(${name}): no target ${tool}: find_package(kiln) or add_subdirectory(kiln) first")
    endif()
  endforeach()

  # each target's entry of the table: its index by name, and the known names for errors
  _kiln_target_table(table)
  string(JSON count LENGTH "${table}")
  math(EXPR last "${count} - 1")
  set(known "")
  foreach(i RANGE ${last})
    string(JSON tname GET "${table}" ${i} name)
    set(entry_${tname} ${i})
    list(APPEND known "${tname}")
  endforeach()
  list(SORT known)
  list(JOIN known ", " known)
  set(seen "")
  foreach(target IN LISTS KILN_TARGETS)
    if(NOT DEFINED entry_${target})
      message(FATAL_ERROR "kiln_add_library(${name}): unknown target '${target}' (known: ${known})")
    endif()
    if(target IN_LIST seen)
      message(FATAL_ERROR "kiln_add_library(${name}): target '${target}' given twice")
    endif()
    list(APPEND seen "${target}")
  endforeach()

  set(out "${CMAKE_CURRENT_BINARY_DIR}/kiln-gen/${name}")
  set(specs "")
  foreach(spec IN LISTS KILN_SPECS)
    get_filename_component(abs "${spec}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND specs "${abs}")
  endforeach()

  _kiln_arch(machine)
  set(gnu FALSE)
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    set(gnu TRUE)
  endif()

  # kiln gen's files (generator/emit/library.h): <name>.h, then per spec <part>.kiln its header,
  # dispatch source, kernel file per target and part manifest, then <name>.manifest.json
  set(outputs "${out}/${name}.h")
  set(sources "")
  set(parts "")
  foreach(spec IN LISTS specs)
    get_filename_component(part "${spec}" NAME)
    if(part MATCHES "^(.+)\\.kiln$")
      set(part "${CMAKE_MATCH_1}")
    endif()
    string(REGEX REPLACE "[^A-Za-z0-9_]" "_" part "${part}")
    if(part IN_LIST parts)
      message(FATAL_ERROR "kiln_add_library(${name}): two specs give files named ${name}_${part}*: the specs of one library need different file names")
    endif()
    list(APPEND parts "${part}")
    list(APPEND outputs "${out}/${name}_${part}.h" "${out}/${name}_${part}_dispatch.cpp")
    list(APPEND sources "${out}/${name}_${part}.h" "${out}/${name}_${part}_dispatch.cpp")
  endforeach()
  set(opt_flags "")
  if(KILN_OPTIMIZE_KERNELS AND gnu)
    set(opt_flags -O3)
  endif()
  set(kernel_sources "")
  set(cuda FALSE)
  foreach(target IN LISTS KILN_TARGETS)
    set(i ${entry_${target}})
    string(JSON symbol GET "${table}" ${i} symbol)
    string(JSON extension GET "${table}" ${i} extension)
    if(extension STREQUAL ".cu")
      set(cuda TRUE)
    endif()
    string(JSON gpu GET "${table}" ${i} gpu)
    if(KILN_C_SOURCES AND NOT gpu)  # every CPU target's kernels as C, compiled here with the target's flags
      set(extension ".c")
    endif()
    string(JSON arch GET "${table}" ${i} arch)
    string(JSON nflags LENGTH "${table}" ${i} c_flags)
    set(flags "")
    if(nflags GREATER 0)
      math(EXPR lastflag "${nflags} - 1")
      foreach(f RANGE ${lastflag})
        string(JSON flag GET "${table}" ${i} c_flags ${f})
        list(APPEND flags "${flag}")
      endforeach()
    endif()
    foreach(part IN LISTS parts)
      set(source "${out}/${name}_${part}_${symbol}${extension}")
      list(APPEND outputs "${source}")
      list(APPEND kernel_sources "${source}")
      if(NOT extension STREQUAL ".c")
        # kiln's own object: linked as it is, whatever the compiler and build mode, where its
        # architecture is (elsewhere the dispatch leaves its variants out)
        list(REMOVE_ITEM kernel_sources "${source}")
        if(KILN_KEEP_IR)
          list(APPEND outputs "${out}/${name}_${part}_${symbol}.ll")
        endif()
        if(arch STREQUAL machine)
          list(APPEND kernel_sources "${source}")
          set_source_files_properties("${source}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
        endif()
        continue()
      endif()
      # a C target's file: its flags only where its architecture is (and the compiler spells them
      # so); elsewhere the file compiles to nothing
      set(source_flags ${opt_flags})
      if(flags AND gnu AND (arch STREQUAL "any" OR arch STREQUAL machine))
        list(APPEND source_flags ${flags})
      endif()
      if(source_flags)
        set_source_files_properties("${source}" PROPERTIES COMPILE_OPTIONS "${source_flags}")
      endif()
    endforeach()
  endforeach()
  foreach(part IN LISTS parts)
    list(APPEND outputs "${out}/${name}_${part}.manifest.json")
  endforeach()
  list(APPEND outputs "${out}/${name}.manifest.json")
  list(JOIN KILN_TARGETS "," target_list)
  set(KILN_GEN_FLAGS "")
  if(KILN_KEEP_IR)  # each object's LLVM IR beside it, to read (kiln gen --keep-ir)
    list(APPEND KILN_GEN_FLAGS --keep-ir)
  endif()
  if(KILN_C_SOURCES)
    list(APPEND KILN_GEN_FLAGS --c-sources)
  endif()
  # a CUDA target's kernels: compiled into the fatbin the dispatch embeds by the toolkit's nvcc when
  # kiln gen runs: KILN_NVCC where it is set, else the project's CUDA compiler where it enabled
  # CUDA, else the one kiln gen finds (KILN_NVCC in its environment, CUDA_PATH, CUDA_HOME, PATH,
  # /usr/local/cuda)
  if(cuda AND KILN_NVCC)
    list(APPEND KILN_GEN_FLAGS --nvcc "${KILN_NVCC}")
  elseif(cuda AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
    list(APPEND KILN_GEN_FLAGS --nvcc "${CMAKE_CUDA_COMPILER}")
  endif()
  set(tune_db "")
  if(DEFINED KILN_TUNE_DB OR "TUNE_DB" IN_LIST KILN_KEYWORDS_MISSING_VALUES)
    if(NOT KILN_TUNE_DB)
      message(FATAL_ERROR "kiln_add_library(${name}): TUNE_DB takes the file kiln tune writes")
    endif()
    get_filename_component(tune_db "${KILN_TUNE_DB}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND KILN_GEN_FLAGS --tune-db "${tune_db}")
  endif()

  add_custom_command(
    OUTPUT ${outputs}
    COMMAND "$<TARGET_FILE:kiln::kiln>" gen --name "${name}" --out "${out}" --target "${target_list}" ${KILN_GEN_FLAGS} ${specs}
    DEPENDS ${specs} ${tune_db} kiln::kiln
    DEPFILE "${out}/${name}.d"
    COMMENT "kiln gen ${name}"
    VERBATIM)

  add_library(${name} STATIC "${out}/${name}.h" ${sources} ${kernel_sources})
  target_include_directories(${name} PUBLIC "$<BUILD_INTERFACE:${out}>")
  target_link_libraries(${name} PUBLIC kiln::runtime)
  target_compile_features(${name} PUBLIC cxx_std_17)
  # the kernels are C99 with GNU vector types; -lm for the few libm calls they make
  set_target_properties(${name} PROPERTIES C_STANDARD 99 C_EXTENSIONS ON POSITION_INDEPENDENT_CODE ON)
  if(UNIX)
    target_link_libraries(${name} PRIVATE m)
  endif()

  # SIZE_BUDGET: checked on the archive just made, so on the objects actually linked; a failure
  # leaves the library's build step failed, so the next build checks again
  if(DEFINED KILN_SIZE_BUDGET OR "SIZE_BUDGET" IN_LIST KILN_KEYWORDS_MISSING_VALUES)
    if(NOT KILN_SIZE_BUDGET MATCHES "^[0-9]+$")
      message(FATAL_ERROR "kiln_add_library(${name}): SIZE_BUDGET takes a number of bytes (got '${KILN_SIZE_BUDGET}')")
    endif()
    add_custom_command(TARGET ${name} POST_BUILD
      COMMAND kiln::kiln size --budget ${KILN_SIZE_BUDGET} "${out}/${name}.manifest.json" "$<TARGET_FILE:${name}>"
      COMMENT "kiln size ${name}: SIZE_BUDGET ${KILN_SIZE_BUDGET} bytes per target"
      VERBATIM)
  endif()
endfunction()
