cmake_minimum_required(VERSION 3.25)
# Fails when a file under lib/<layer>/ includes "<other>/..." from a layer it does not use,
# when lib/ holds a folder that is no layer, or when a file of python/, examples/, tools/ or
# benchmarks/ includes a layer its folder may not use (`outside`, allowed_outside_<folder>).
# cmake -DROOT=<lib dir> -DRULES=<file> -P check_layers.cmake; lib/CMakeLists.txt writes RULES
# from the TOROID_LAYER_USES_* lists the build links by (`layers`, and `allowed_<layer>`: the
# layer itself and the layers it uses) and runs this before every layer builds. The public
# headers ("toroid/...") are outside this check: the build keeps MPI out of the layers below
# mpi_base by not giving them MPI's headers.
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
include("${RULES}")
set(bad "")
file(GLOB entries LIST_DIRECTORIES true "${ROOT}/*")
foreach(e ${entries})
  get_filename_component(name "${e}" NAME)
  if(IS_DIRECTORY "${e}" AND NOT name IN_LIST layers)
    string(APPEND bad "\n  lib/${name}/: a folder that is no layer (layers: ${layers})")
  endif()
endforeach()
# Appends to `bad` each #include "<folder>/..." of `files` (paths shown from `root`) whose folder
# is a layer not in `allowed`; with `strict` (lib/'s own files) any folder but toroid/ that is not
# in `allowed`, since lib/ holds nothing else. `who` names the rule in the message.
function(check_includes files root who allowed strict)
  set(found "")
  foreach(f ${files})
    file(STRINGS "${f}" includes REGEX "^#include \"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" used "${line}")
      if(used STREQUAL "toroid" OR used IN_LIST allowed)
        continue()
      endif()
      if(strict OR used IN_LIST layers)
        file(RELATIVE_PATH rel "${root}" "${f}")
        set(may "${allowed}")
        if(NOT may)
          set(may "none: the public headers, toroid/...")
        endif()
        string(APPEND found "\n  ${rel}: ${line} (${who} may use: ${may})")
      endif()
    endforeach()
  endforeach()
  set(bad "${bad}${found}" PARENT_SCOPE)
endfunction()

get_filename_component(project_root "${ROOT}/.." ABSOLUTE)
foreach(layer ${layers})
  file(GLOB files "${ROOT}/${layer}/*.cpp" "${ROOT}/${layer}/*.hpp")
  check_includes("${files}" "${project_root}" "${layer}" "${allowed_${layer}}" TRUE)
endforeach()
# The project's folders outside lib/ (`outside`): each may include only the layers in its
# allowed_outside_<folder> list, and the public headers.
foreach(dir ${outside})
  file(GLOB_RECURSE files "${project_root}/${dir}/*.cpp" "${project_root}/${dir}/*.hpp")
  check_includes("${files}" "${project_root}" "${dir}/" "${allowed_outside_${dir}}" FALSE)
endforeach()
if(bad)
  message(FATAL_ERROR "includes against the layer order:${bad}")
endif()
