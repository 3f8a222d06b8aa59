# Writes the stdlib's .pxl modules as C++ initializers {"name", R"(...)"} (run by
# the build, see CMakeLists.txt). SOURCES is a '|'-separated list of files.
string(REPLACE "|" ";" SOURCES "${SOURCES}")
set(content "// Generated from stdlib/*.pxl by stdlib/embed_sources.cmake; do not edit.\n")
foreach(src IN LISTS SOURCES)
  get_filename_component(name "${src}" NAME_WE)
  file(READ "${src}" text)
  string(APPEND content "{\"${name}\", R\"pxlsrc(${text})pxlsrc\"},\n")
endforeach()
file(WRITE "${OUT}" "${content}")
