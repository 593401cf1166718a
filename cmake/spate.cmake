# Helpers for spate's build: layers, libspate.so, tests, fuzz targets, benchmarks.

set_property(GLOBAL PROPERTY SPATE_LAYERS "")

# spate_layer(<name> SOURCES ... [DEPS <layer>...] [LIBS <lib>...])
# A static library spate_<name> for one src/ folder. DEPS are the layers the
# folder may call; a call the wrong way (a symbol of a layer not in DEPS) fails
# the link of spate_<name>_layercheck, a shared object linked with
# --no-undefined from this layer and its declared dependencies only.
function(spate_layer name)
    cmake_parse_arguments(L "" "" "SOURCES;DEPS;LIBS" ${ARGN})
    add_library(spate_${name} STATIC ${L_SOURCES})
    target_include_directories(spate_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src
                                                    ${PROJECT_SOURCE_DIR}/include)
    set(deps "")
    foreach(d ${L_DEPS})
        list(APPEND deps spate_${d})
    endforeach()
    target_link_libraries(spate_${name} PUBLIC ${deps} ${L_LIBS})

    add_library(spate_${name}_layercheck SHARED ${PROJECT_SOURCE_DIR}/cmake/empty.c)
    target_link_libraries(spate_${name}_layercheck PRIVATE
        -Wl,--whole-archive spate_${name} -Wl,--no-whole-archive -Wl,--no-undefined)
    set_target_properties(spate_${name}_layercheck PROPERTIES
        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib/layercheck)
    set_property(GLOBAL APPEND PROPERTY SPATE_LAYERS spate_${name})
    # The same DEPS for the include check (spate_layer_graph).
    file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
    string(JOIN " " line ${name} ${folder} ${L_DEPS})
    set_property(GLOBAL APPEND PROPERTY SPATE_LAYER_GRAPH "${line}")
endfunction()

# spate_layer_graph(<file>): writes the layers declared so far, one line each,
# `<name> <folder> <dep>...`, for tests/layers/check_includes.py. Called
# after every src/ folder is added, so a new folder is in it by its
# spate_layer() alone.
function(spate_layer_graph file)
    get_property(lines GLOBAL PROPERTY SPATE_LAYER_GRAPH)
    string(JOIN "\n" text ${lines})
    file(WRITE ${file} "# spate_layer(<name> DEPS ...) of src/*/CMakeLists.txt: name folder deps\n"
                       "${text}\n")
endfunction()

# libspate.so: every layer, exports fixed by cmake/libspate.map.
function(spate_link_libspate)
    get_property(layers GLOBAL PROPERTY SPATE_LAYERS)
    add_library(spate SHARED ${PROJECT_SOURCE_DIR}/cmake/empty.c)
    target_link_libraries(spate PRIVATE -Wl,--whole-archive ${layers} -Wl,--no-whole-archive
        -Wl,--no-undefined -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libspate.map)
    foreach(l ${layers})
        get_target_property(libs ${l} INTERFACE_LINK_LIBRARIES)
        if(libs)
            target_link_libraries(spate PRIVATE ${libs})
        endif()
    endforeach()
    target_include_directories(spate PUBLIC ${PROJECT_SOURCE_DIR}/include)
    set_target_properties(spate PROPERTIES LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/libspate.map)

    add_executable(spate_cmd ${PROJECT_SOURCE_DIR}/src/cli/main.c)
    if(SPATE_SANITIZE)
        # Sanitizer runtimes are not linked into shared objects: the
        # sanitized spate links the layers statically (for running the e2e
        # tests against it by hand: SPATE_BUILD=build-asan).
        target_link_libraries(spate_cmd PRIVATE -Wl,--whole-archive ${layers} -Wl,--no-whole-archive)
        # Job libraries find the API in the executable (spate_job_library).
        set_target_properties(spate_cmd PROPERTIES ENABLE_EXPORTS ON)
    else()
        target_link_libraries(spate_cmd PRIVATE spate)
    endif()
    target_include_directories(spate_cmd PRIVATE ${PROJECT_SOURCE_DIR}/src)
    set_target_properties(spate_cmd PROPERTIES OUTPUT_NAME spate
        BUILD_RPATH "$ORIGIN/../lib")
endfunction()

# spate_job_library(<name> <dir> <source>...): a job library as users build
# theirs, <dir>/<name>.so, linked to libspate.so; in sanitizer builds its
# spate_* symbols resolve against the sanitized spate executable instead.
function(spate_job_library name dir)
    add_library(${name} MODULE ${ARGN})
    if(SPATE_SANITIZE)
        target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include)
    else()
        target_link_libraries(${name} PRIVATE spate)
    endif()
    set_target_properties(${name} PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY ${dir})
endfunction()

# spate_unit_test(<name> SOURCES ... LIBS ... [TSAN] [TIMEOUT s] [WRAPPER cmd...])
# A Criterion test program, registered as unit/<name>; with the sanitizer
# suites on, also as asan/<name> (the build-asan binary) and, with TSAN, as
# tsan/<name> (the build-tsan binary). WRAPPER runs the program through a
# command (tests/support/with_zookeeper.py: a ZooKeeper server beside it).
function(spate_unit_test name)
    cmake_parse_arguments(T "TSAN" "TIMEOUT" "SOURCES;LIBS;WRAPPER" ${ARGN})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 60)
    endif()
    if(SPATE_SANITIZE STREQUAL "thread")
        # Criterion's runner cannot start under TSan (Snaipe/Criterion#274):
        # the same sources build against a compatible subset.
        add_executable(${name} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/tests/unit/tsan_shim/tsan_runner.c)
        target_include_directories(${name} BEFORE PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit/tsan_shim)
        target_link_libraries(${name} PRIVATE ${T_LIBS})
        target_compile_options(${name} PRIVATE -Wno-missing-field-initializers)
    else()
        add_executable(${name} ${T_SOURCES})
        target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CRITERION)
    endif()
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/unit)
    set_property(GLOBAL APPEND PROPERTY SPATE_UNIT_TESTS ${name})
    if(T_TSAN)
        set_property(GLOBAL APPEND PROPERTY SPATE_TSAN_TESTS ${name})
    endif()
    if(SPATE_SANITIZE)
        return()
    endif()
    add_test(NAME unit/${name} COMMAND ${T_WRAPPER} $<TARGET_FILE:${name}>)
    set_tests_properties(unit/${name} PROPERTIES LABELS unit TIMEOUT ${T_TIMEOUT})
    if(SPATE_SANITIZER_SUITES)
        add_test(NAME asan/${name} COMMAND ${T_WRAPPER} ${SPATE_ASAN_DIR}/tests/unit/${name})
        set_tests_properties(asan/${name} PROPERTIES LABELS asan TIMEOUT ${T_TIMEOUT}
            ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
        if(T_TSAN)
            add_test(NAME tsan/${name} COMMAND ${SPATE_TSAN_DIR}/tests/unit/${name})
            set_tests_properties(tsan/${name} PROPERTIES LABELS tsan TIMEOUT ${T_TIMEOUT}
                ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")
        endif()
    endif()
endfunction()

# spate_fuzz_target(<name> SOURCES ... LIBS ... [SECONDS s])
# A libFuzzer program (built only with SPATE_FUZZ, i.e. in build-asan with
# clang); the main build registers fuzz/<name>, a bounded run over the seed
# corpus tests/fuzz/corpus/<name>/.
function(spate_fuzz_target name)
    cmake_parse_arguments(F "" "SECONDS" "SOURCES;LIBS" ${ARGN})
    if(NOT F_SECONDS)
        set(F_SECONDS 20)
    endif()
    if(SPATE_FUZZ)
        add_executable(${name} ${F_SOURCES})
        target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
        target_link_options(${name} PRIVATE -fsanitize=fuzzer)
        target_link_libraries(${name} PRIVATE ${F_LIBS})
        set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fuzz)
        set_property(GLOBAL APPEND PROPERTY SPATE_FUZZ_TARGETS ${name})
    endif()
    if(NOT SPATE_SANITIZE AND SPATE_SANITIZER_SUITES)
        add_test(NAME fuzz/${name}
                 COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/run-fuzz.sh
                         ${SPATE_ASAN_DIR}/tests/fuzz/${name}
                         ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${name} ${F_SECONDS})
        math(EXPR limit "${F_SECONDS} * 3 + 60")
        # A fuzzer keeps a core busy for its whole time: it counts as two
        # of ctest's -j slots (the Makefile's TEST_JOBS), one core's worth.
        set_tests_properties(fuzz/${name} PROPERTIES LABELS fuzz TIMEOUT ${limit} PROCESSORS 2)
    endif()
endfunction()

# spate_e2e_test(<name> COMMAND ... [TIMEOUT s] [RELEASE_ONLY] [PROCESSORS n]
#                [COST s])
# RELEASE_ONLY: no asan-e2e/ twin (a test of what only the Release build
# has, such as its installation). PROCESSORS: ctest -j slots the test takes
# (default 1). The Makefile runs ctest with two slots per core: most e2e
# tests wait on processes that idle (rate-limited jobs, timeouts), and a
# test whose processes keep the cores busy (a broker, a cluster of six
# processes, full-speed jobs) says so with 2 (no more: ctest starts a test
# only when its slots are free, so one of 3 or 4 waits for the others and
# then runs alone at the end). COST: about how long it takes (seconds);
# ctest starts the longest first, so that they do not end a run alone.
function(spate_e2e_test name)
    cmake_parse_arguments(E "RELEASE_ONLY" "TIMEOUT;PROCESSORS;COST" "COMMAND" ${ARGN})
    if(SPATE_SANITIZE)
        return()
    endif()
    if(NOT E_TIMEOUT)
        set(E_TIMEOUT 120)
    endif()
    if(NOT E_PROCESSORS)
        set(E_PROCESSORS 1)
    endif()
    add_test(NAME e2e/${name} COMMAND ${E_COMMAND})
    set_tests_properties(e2e/${name} PROPERTIES LABELS e2e TIMEOUT ${E_TIMEOUT}
        PROCESSORS ${E_PROCESSORS}
        ENVIRONMENT "SPATE_BUILD=${CMAKE_BINARY_DIR};SPATE_SOURCE=${PROJECT_SOURCE_DIR}")
    if(E_COST)
        set_tests_properties(e2e/${name} PROPERTIES COST ${E_COST})
    endif()
    if(SPATE_SANITIZER_SUITES AND NOT E_RELEASE_ONLY)
        # The same test against build-asan's spate (ASan+UBSan, debug
        # assertions such as the executing RPC endpoint's).
        add_test(NAME asan-e2e/${name} COMMAND ${E_COMMAND})
        if(E_COST)
            set_tests_properties(asan-e2e/${name} PROPERTIES COST ${E_COST})
        endif()
        set_tests_properties(asan-e2e/${name} PROPERTIES LABELS asan TIMEOUT ${E_TIMEOUT}
            PROCESSORS ${E_PROCESSORS}
            ENVIRONMENT "SPATE_BUILD=${SPATE_ASAN_DIR};SPATE_SOURCE=${PROJECT_SOURCE_DIR};ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
    endif()
endfunction()

# spate_bench(<name> SOURCES ... LIBS ...): build/bin/<name>, run by `make bench`.
function(spate_bench name)
    cmake_parse_arguments(B "" "" "SOURCES;LIBS" ${ARGN})
    add_executable(${name} ${B_SOURCES})
    target_link_libraries(${name} PRIVATE ${B_LIBS})
    set_property(GLOBAL APPEND PROPERTY SPATE_BENCHES ${name})
endfunction()

# spate_protobuf_c(<var> <base_dir> <proto>...): runs protoc-c on each .proto
# (a path relative to base_dir) into ${CMAKE_BINARY_DIR}/gen/, keeping its
# folder, so "proto/rpc.proto" is included as "proto/rpc.pb-c.h". <var> gets
# the generated .c files, compiled without warnings (they are not ours).
function(spate_protobuf_c var base)
    find_program(SPATE_PROTOC_C protoc-c REQUIRED)
    set(out "")
    foreach(p ${ARGN})
        string(REGEX REPLACE "\\.proto$" "" stem ${p})
        set(c ${CMAKE_BINARY_DIR}/gen/${stem}.pb-c.c)
        set(h ${CMAKE_BINARY_DIR}/gen/${stem}.pb-c.h)
        add_custom_command(OUTPUT ${c} ${h}
            COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/gen
            COMMAND ${SPATE_PROTOC_C} --c_out=${CMAKE_BINARY_DIR}/gen -I${base} ${base}/${p}
            DEPENDS ${base}/${p} VERBATIM)
        set_source_files_properties(${c} PROPERTIES COMPILE_OPTIONS "-w")
        list(APPEND out ${c})
    endforeach()
    set(${var} ${out} PARENT_SCOPE)
endfunction()
