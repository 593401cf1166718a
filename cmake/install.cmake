# `cmake --install` (make install PREFIX=... DESTDIR=...): the layout the
# installed spate finds its parts in, relative to its own place:
#   bin/spate, bin/start-cluster.sh, bin/stop-cluster.sh, bin/spate-daemon.sh
#   lib/libspate.so, lib/plugins/ (beside libspate: the ZooKeeper HA, Kafka and RocksDB state plugins)
#   lib/pkgconfig/spate.pc (a job author's cflags and libs)
#   include/spate/ (the public API), conf/ (bin/../conf: the default config)
# The directories are fixed, not GNUInstallDirs', because spate finds
# libspate through $ORIGIN/../lib and its conf in bin/../conf.
if(SPATE_SANITIZE)
    return()
endif()

# The build tree has the same bin/ and lib/, so the installed RUNPATH serves
# both: CMake's own build RUNPATH added the build folder and an empty entry,
# which the loader reads as the current directory (a libc.so.6 there would
# be loaded; every library was looked for there first).
set_target_properties(spate_cmd PROPERTIES INSTALL_RPATH "$ORIGIN/../lib" BUILD_WITH_INSTALL_RPATH ON)
install(TARGETS spate_cmd RUNTIME DESTINATION bin)
install(TARGETS spate LIBRARY DESTINATION lib)
install(TARGETS spate_zookeeper_plugin spate_kafka_plugin spate_rocksdb_plugin LIBRARY DESTINATION lib/plugins)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/bin/start-cluster.sh ${PROJECT_SOURCE_DIR}/bin/stop-cluster.sh
        ${PROJECT_SOURCE_DIR}/bin/spate-daemon.sh
        DESTINATION bin)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/spate DESTINATION include
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/conf/config.yaml ${PROJECT_SOURCE_DIR}/conf/masters
              ${PROJECT_SOURCE_DIR}/conf/workers
        DESTINATION conf)
configure_file(${PROJECT_SOURCE_DIR}/cmake/spate.pc.in ${CMAKE_BINARY_DIR}/lib/pkgconfig/spate.pc
               @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/lib/pkgconfig/spate.pc DESTINATION lib/pkgconfig)
