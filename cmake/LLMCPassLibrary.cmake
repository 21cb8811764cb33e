# llmc_add_pass_library(FOLDER folder SOURCES ... [USES folder...] [LINK_LIBS lib...]
#                       [DEPENDS target...])
#
# One stage's (or target's) passes under passes/FOLDER: its Passes.td becomes
# passes/FOLDER/Passes.h.inc (register<Folder>Passes()) and its pass docs, its
# sources the library LLMC<Folder>Passes ("/" dropped: Codegen/CPU ->
# LLMCCodegenCPUPasses).
# USES names the folders it builds on: the library links theirs, and the build
# fails if a file here includes a header of any other folder
# (cmake/CheckLayering.cmake). DEPENDS: targets that generate what the sources
# include.
function(llmc_add_pass_library)
  cmake_parse_arguments(ARG "" "FOLDER" "SOURCES;USES;LINK_LIBS;DEPENDS" ${ARGN})
  string(REPLACE "/" "" name "${ARG_FOLDER}")
  set(library LLMC${name}Passes)

  set(LLVM_TARGET_DEFINITIONS Passes.td)
  mlir_tablegen(Passes.h.inc -gen-pass-decls -name ${name})
  add_public_tablegen_target(${library}IncGen)
  add_mlir_doc(Passes ${library} passes/ -gen-pass-doc)

  file(GLOB files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  string(REPLACE ";" "," file_list "${files}")
  string(REPLACE ";" "," uses "${ARG_USES}")
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/layering.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DFOLDER=${ARG_FOLDER} -DALLOWED=${uses} -DFILES=${file_list}
            -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayering.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/CheckLayering.cmake
    COMMENT "Checking the includes of passes/${ARG_FOLDER}")
  add_custom_target(${library}Layering DEPENDS ${stamp})

  set(used_libraries "")
  set(used_generated "")
  foreach(folder IN LISTS ARG_USES)
    string(REPLACE "/" "" used "${folder}")
    list(APPEND used_libraries LLMC${used}Passes)
    list(APPEND used_generated LLMC${used}PassesIncGen)
  endforeach()
  add_mlir_library(${library} ${ARG_SOURCES}
    DEPENDS ${library}IncGen ${library}Layering ${used_generated} ${ARG_DEPENDS}
      LLMCOnnxIncGen LLMCLlmIncGen
    LINK_LIBS PUBLIC ${used_libraries} LLMCOnnxDialect LLMCLlmDialect LLMCSupport
      MLIRFuncDialect MLIRPass ${ARG_LINK_LIBS})
endfunction()
