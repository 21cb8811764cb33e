# llmc_add_pass_library(FOLDER folder SOURCES ... [USES folder...] [DIALECTS name...]
#                       [LINK_LIBS lib...] [DEPENDS target...])
#
# One stage's (or target's) passes under passes/FOLDER: its Passes.td becomes
# passes/FOLDER/Passes.h.inc (register<Folder>Passes()) and its pass docs, its
# sources the library LLMC<Folder>Passes ("/" dropped: Codegen/CPU ->
# LLMCCodegenCPUPasses).
# USES names the folders it builds on: the library links theirs, and the build
# fails if a file here includes a header of any other folder
# (cmake/CheckLayering.cmake). DIALECTS names the folders of dialects/ whose
# ops the passes work on (llm when not given): the stages after raising see
# llm IR only, and the build refuses their including the onnx dialect.
# DEPENDS: targets that generate what the sources include.
function(llmc_add_pass_library)
  cmake_parse_arguments(ARG "" "FOLDER" "SOURCES;USES;DIALECTS;LINK_LIBS;DEPENDS" ${ARGN})
  if(NOT ARG_DIALECTS)
    set(ARG_DIALECTS llm)
  endif()
  string(REPLACE "/" "" name "${ARG_FOLDER}")
  set(library LLMC${name}Passes)

  set(LLVM_TARGET_DEFINITIONS Passes.td)
  mlir_tablegen(Passes.h.inc -gen-pass-decls -name ${name})
  add_public_tablegen_target(${library}IncGen)
  add_mlir_doc(Passes ${library} passes/ -gen-pass-doc)

  file(GLOB files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.h ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  string(REPLACE ";" "," file_list "${files}")
  string(REPLACE ";" "," uses "${ARG_USES}")
  string(REPLACE ";" "," dialects "${ARG_DIALECTS}")
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/layering.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DFOLDER=${ARG_FOLDER} -DALLOWED=${uses} -DDIALECTS=${dialects}
            -DFILES=${file_list}
            -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayering.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/CheckLayering.cmake
    COMMENT "Checking the includes of passes/${ARG_FOLDER}")
  add_custom_target(${library}Layering DEPENDS ${stamp})

  set(used_libraries "")
  set(used_generated "")
  foreach(dialect IN LISTS ARG_DIALECTS)
    string(SUBSTRING ${dialect} 0 1 first)
    string(TOUPPER ${first} first)
    string(SUBSTRING ${dialect} 1 -1 rest)
    list(APPEND used_libraries LLMC${first}${rest}Dialect)
    list(APPEND used_generated LLMC${first}${rest}IncGen)
  endforeach()
  foreach(folder IN LISTS ARG_USES)
    string(REPLACE "/" "" used "${folder}")
    list(APPEND used_libraries LLMC${used}Passes)
    list(APPEND used_generated LLMC${used}PassesIncGen)
  endforeach()
  add_mlir_library(${library} ${ARG_SOURCES}
    DEPENDS ${library}IncGen ${library}Layering ${used_generated} ${ARG_DEPENDS}
    LINK_LIBS PUBLIC ${used_libraries} LLMCSupport
      MLIRFuncDialect MLIRPass ${ARG_LINK_LIBS})
endfunction()
