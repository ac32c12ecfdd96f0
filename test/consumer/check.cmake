# Installs zklock into a temp prefix, then builds and runs two consumers against it: the
# consumer project with find_package(zklock), and the same program compiled by hand with
# `pkg-config --cflags --libs zklock`.
#
# SHARED=OFF: installs BINARY_DIR (the build under test: a static library).
# SHARED=ON: configures and builds the library alone from SOURCE_DIR with BUILD_SHARED_LIBS=ON,
#   installs that, checks its SONAME, that it exports only the API (check_exports.py) and that
#   both consumers load it (NEEDED libzklock.so.<soversion>). That second build of the library
#   is a unity build of one batch (ZKLOCK_UNITY_LIBRARY, ZKLOCK_UNITY_BATCH=0: 43 s of compile
#   against 58 s in the test command's batches of 10) without optimization:
#   what is checked here (the SONAME, the exported symbols, the consumers linking and running)
#   depends on neither: the visibility comes from the attributes, and -O0 emits every inline
#   function out of line, so the export check sees at least as much as at -O3. The static
#   library under test keeps its flags.
#   LIBRARY_OBJECTS ('|' between paths): the build under test's own objects, compiled as
#   position-independent code (ZKLOCK_LIBRARY_PIC, the test command's build; the same flags a
#   shared build adds but -fPIC: the hidden visibility and ZKLOCK_API are every build's): the
#   shared build links its libzklock.so from them (ZKLOCK_LIBRARY_OBJECTS) and compiles nothing
#   of the library; the SONAME, the install, the exports and the consumers are checked the same. (A library source that misses the include of a project
#   header is the test "package: each library source includes the project headers it uses",
#   check_includes.py.)
# The consumers are compiled without optimization too (-O0, CMAKE_BUILD_TYPE=Release's other
# flags): they check that the package compiles, links and runs, not its code.
# Each step prints its wall time (ctest -V).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run what)
  string(TIMESTAMP start "%s%f")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(TIMESTAMP end "%s%f")
  math(EXPR ms "(${end} - ${start}) / 1000")
  message(STATUS "${what}: ${ms} ms")
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

if(SHARED)
  set(objects)
  if(LIBRARY_OBJECTS)
    set(objects "-DZKLOCK_LIBRARY_OBJECTS=${LIBRARY_OBJECTS}")
  endif()
  run("shared library configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/lib -G Ninja
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" -DZKLOCK_UNITY_LIBRARY=ON -DZKLOCK_UNITY_BATCH=0
    -DBUILD_SHARED_LIBS=ON ${objects}
    -DZKLOCK_BUILD_TESTS=OFF -DZKLOCK_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_LIBDIR=lib
    "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}" "-DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER}"
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_SHARED_LINKER_FLAGS=${LINKER_FLAGS}")
  run("shared library build" ${CMAKE_COMMAND} --build ${WORK_DIR}/lib)
  run("install" ${CMAKE_COMMAND} --install ${WORK_DIR}/lib --prefix ${prefix})
  file(GLOB sonames ${prefix}/lib/libzklock.so.*)
  run("readelf" readelf -d ${prefix}/lib/libzklock.so)
  if(NOT run_output MATCHES "SONAME\\)[^\n]*\\[(libzklock\\.so\\.[0-9.]+)\\]")
    message(FATAL_ERROR "libzklock.so has no versioned SONAME:\n${run_output}")
  endif()
  set(soname ${CMAKE_MATCH_1})
  if(NOT EXISTS ${prefix}/lib/${soname})
    message(FATAL_ERROR "SONAME ${soname} is not installed (${sonames})")
  endif()
  message(STATUS "SONAME ${soname}")
  run("export check" ${PYTHON} ${SOURCE_DIR}/test/consumer/check_exports.py
    ${prefix}/lib/libzklock.so ${prefix}/include)
  message(STATUS "${run_output}")
else()
  run("install" ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
  # The build under test has debug info (RelWithDebInfo: -g); the installed library has none
  # unless ZKLOCK_INSTALL_DEBUG_INFO=ON (CMakeLists.txt): a few MB, not 80.
  file(GLOB archive ${prefix}/lib*/libzklock.a ${prefix}/lib*/*/libzklock.a)
  if(NOT archive)
    message(FATAL_ERROR "libzklock.a is not installed under ${prefix}")
  endif()
  run("readelf" readelf -S -W ${archive})
  if(run_output MATCHES "\\.debug_info")
    file(SIZE ${archive} size)
    message(FATAL_ERROR "the installed ${archive} (${size} bytes) has debug info")
  endif()
  file(SIZE ${archive} size)
  message(STATUS "installed libzklock.a: ${size} bytes, no debug info")
endif()

# 1. find_package(zklock)
run("consumer configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/consumer -B ${WORK_DIR}/build
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG"
  # the same instrumentation as the library (the asan preset's static library needs it)
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
run("consumer build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("consumer run" ${WORK_DIR}/build/consumer)

# 2. pkg-config: only what zklock.pc says, as the README's line compiles it (no -std: zklock.pc's
# Cflags carry -std=c++20, and g++ 12 defaults to gnu++17), run with the prefix's lib directory
# on the loader's path.
file(GLOB pcfile ${prefix}/*/pkgconfig/zklock.pc ${prefix}/*/*/pkgconfig/zklock.pc)
if(NOT pcfile)
  message(FATAL_ERROR "zklock.pc is not installed under ${prefix}")
endif()
get_filename_component(pcdir ${pcfile} DIRECTORY)
run("pkg-config" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
  pkg-config --cflags --libs zklock)
string(STRIP "${run_output}" pcflags)
message(STATUS "pkg-config --cflags --libs zklock: ${pcflags}")
separate_arguments(pcflags UNIX_COMMAND "${pcflags}")
separate_arguments(cxxflags UNIX_COMMAND "${CXX_FLAGS} ${LINKER_FLAGS}")
run("pkg-config consumer build" ${CXX} ${cxxflags} ${SOURCE_DIR}/test/consumer/main.cpp
  ${pcflags} -o ${WORK_DIR}/pc-consumer)
get_filename_component(libdir ${pcdir} DIRECTORY)
run("pkg-config consumer run" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/pc-consumer)

if(SHARED)
  foreach(exe ${WORK_DIR}/build/consumer ${WORK_DIR}/pc-consumer)
    run("readelf" readelf -d ${exe})
    if(NOT run_output MATCHES "NEEDED\\)[^\n]*\\[${soname}\\]")
      message(FATAL_ERROR "${exe} does not load ${soname}:\n${run_output}")
    endif()
  endforeach()
  message(STATUS "both consumers load ${soname}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
