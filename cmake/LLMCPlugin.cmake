# llmc_add_pass_plugin: build an MLIR pass plugin that `llmc compile --load-pass-plugin` and
# `llmc-opt --load-pass-plugin` load. Included by LLMCConfig.cmake.
#
#   llmc_add_pass_plugin(<name>
#     SOURCES <file.cpp>...
#     [PASSES_TD <Passes.td> [PASSES_GROUP <Group>]]
#     [LINK_LIBS <lib>...])
#
# Builds <name>.so (a MODULE library, no "lib" prefix) from SOURCES with the flags llmc and
# MLIR were built with: C++17, exceptions off, RTTI as LLVM's build has it, LLVM's
# definitions, the llmc and MLIR include dirs (LLMC::headers); it links libMLIR.so (and
# libLLVM.so through it) and leaves llmc's own symbols (the llm dialect's op classes and
# TypeIDs) undefined: the llmc or llmc-opt executable that loads the plugin provides them.
#
# PASSES_TD declares the plugin's passes in TableGen, as each folder of llmc's passes/ does
# (passes/Fusion/Passes.td): mlir-tblgen -gen-pass-decls writes <stem of the .td>.h.inc into
# the target's binary dir, which is on its include path (#include "<stem>.h.inc" with
# GEN_PASS_DECL_<PASS> / GEN_PASS_DEF_<PASS> / GEN_PASS_REGISTRATION); PASSES_GROUP names the
# generated register<Group>Passes() (default: <name>).
#
# The plugin must define mlirGetPassPluginInfo() (mlir/Tools/Plugins/PassPlugin.h).
function(llmc_add_pass_plugin name)
  cmake_parse_arguments(ARG "" "PASSES_TD;PASSES_GROUP" "SOURCES;LINK_LIBS" ${ARGN})
  set(sources ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "llmc_add_pass_plugin(${name}): no SOURCES")
  endif()

  if(ARG_PASSES_TD)
    get_filename_component(td "${ARG_PASSES_TD}" ABSOLUTE)
    get_filename_component(td_dir "${td}" DIRECTORY)
    get_filename_component(td_stem "${td}" NAME_WE)
    set(group "${ARG_PASSES_GROUP}")
    if(NOT group)
      string(MAKE_C_IDENTIFIER "${name}" group)
    endif()
    set(generated "${CMAKE_CURRENT_BINARY_DIR}/${name}.gen/${td_stem}.h.inc")
    set(tblgen_includes -I "${td_dir}")
    foreach(dir ${MLIR_INCLUDE_DIRS} ${LLMC_INCLUDE_DIRS})
      list(APPEND tblgen_includes -I "${dir}")
    endforeach()
    add_custom_command(OUTPUT "${generated}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/${name}.gen"
      COMMAND ${MLIR_TABLEGEN_EXE} -gen-pass-decls -name ${group} ${tblgen_includes}
              "${td}" -o "${generated}"
      DEPENDS "${td}"
      COMMENT "Building ${td_stem}.h.inc (passes of ${name})"
      VERBATIM)
    list(APPEND sources "${generated}")
  endif()

  add_library(${name} MODULE ${sources})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    # Inline functions stay private to the plugin, as in LLVM's own builds; everything else
    # keeps default visibility (a hidden *reference* to llmc's symbols would not link).
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_PASSES_TD)
    target_include_directories(${name} PRIVATE "${CMAKE_CURRENT_BINARY_DIR}/${name}.gen")
  endif()
  target_link_libraries(${name} PRIVATE LLMC::headers MLIR ${ARG_LINK_LIBS})
  if(NOT LLMC_LLVM_ENABLE_EH)
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions>)
  endif()
  if(NOT LLMC_LLVM_ENABLE_RTTI)
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-rtti>)
  endif()
  # llmc's symbols are defined by the executable that loads the plugin, not at link time
  # (overrides a -z defs that a project's own flags may add).
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(${name} PRIVATE LINKER:-z,undefs)
  elseif(APPLE)
    target_link_options(${name} PRIVATE LINKER:-undefined,dynamic_lookup)
  endif()
endfunction()
