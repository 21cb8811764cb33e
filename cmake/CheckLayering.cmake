# Fails when a file of one passes/ folder includes a header of a folder or a
# dialect it may not use. Run by the build before each pass library compiles
# (LLMCPassLibrary.cmake):
#
#   cmake -DFOLDER=Codegen/CUDA -DALLOWED=Codegen/Common,Serving -DDIALECTS=llm \
#         -DFILES=a.cpp,b.h -DSTAMP=out.stamp -P cmake/CheckLayering.cmake
#
# FOLDER may always include its own headers; ALLOWED lists the other folders
# (under passes/) it builds on, DIALECTS the folders of dialects/ whose ops it
# reads or writes. STAMP is touched when every include is allowed.
cmake_minimum_required(VERSION 3.20)
if(NOT DEFINED FOLDER OR NOT DEFINED FILES)
  message(FATAL_ERROR "CheckLayering.cmake needs -DFOLDER= and -DFILES=")
endif()
string(REPLACE "," ";" allowed "${FOLDER},${ALLOWED}")
string(REPLACE "," ";" files "${FILES}")
string(REPLACE "," ";" dialects "${DIALECTS}")
set(errors "")
foreach(file IN LISTS files)
  file(STRINGS "${file}" includes REGEX "^#include \"passes/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"passes/(.*)/[^/]*\".*$" "\\1" used "${line}")
    if(used STREQUAL line)
      string(APPEND errors "\n  ${file}: ${line}: headers of passes/ live in a stage's folder")
    elseif(NOT used IN_LIST allowed)
      string(APPEND errors "\n  ${file}: ${line}: passes/${FOLDER} may include only passes/{${FOLDER},${ALLOWED}}")
    endif()
  endforeach()
  file(STRINGS "${file}" dialect_includes REGEX "^#include \"dialects/")
  foreach(line IN LISTS dialect_includes)
    string(REGEX REPLACE "^#include \"dialects/([^/]*)/.*$" "\\1" dialect "${line}")
    if(NOT dialect IN_LIST dialects)
      string(APPEND errors "\n  ${file}: ${line}: passes/${FOLDER} works on dialects/{${DIALECTS}} only")
    endif()
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "include across layers:${errors}")
endif()
if(DEFINED STAMP)
  file(TOUCH "${STAMP}")
endif()
