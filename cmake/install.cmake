# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` puts under the prefix, in the conventional places (GNUInstallDirs):
#   bin/migbench, lib*/libmigbench.{a,so.MB_ABI_VERSION}, include/migbench/*.h (the public headers
#   only, below), lib*/pkgconfig/migbench.pc, lib/python3/dist-packages/migbench (MB_PYTHON_DIR),
#   share/migbench/{mig-catalog.json,workloads/}, share/man/man1/migbench*.1,
#   share/bash-completion/completions/migbench, share/zsh/site-functions/_migbench,
#   share/doc/migbench/{LICENSE,README.md,docs/}
# and `cpack -G DEB` packs the same tree as a .deb.
include(GNUInstallDirs)

# Man pages are generated from `migbench --help` and `migbench help CMD` (the same text as
# --help), so they cannot drift from the options.
set(MB_MAN_DIR ${CMAKE_BINARY_DIR}/man)
file(GLOB MB_CLI_SOURCES_FOR_MAN CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cli/*.c)
add_custom_command(
    OUTPUT ${MB_MAN_DIR}/migbench.1
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${MB_MAN_DIR}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${MB_MAN_DIR}
    COMMAND ${CMAKE_SOURCE_DIR}/scripts/gen-man.sh $<TARGET_FILE:migbench> ${MB_MAN_DIR}
            ${PROJECT_VERSION}
    DEPENDS migbench ${CMAKE_SOURCE_DIR}/scripts/gen-man.sh ${MB_CLI_SOURCES_FOR_MAN}
    COMMENT "Generating man pages from migbench help")
add_custom_target(man ALL DEPENDS ${MB_MAN_DIR}/migbench.1)

# Installed programs find the installed libmigbench.so beside them under any prefix
# ($ORIGIN/../lib): no LD_LIBRARY_PATH for a prefix outside the linker's search path.
set_target_properties(migbench PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS migbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS migbench_lib migbench_shared
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
# Headers: the stable API of libmigbench.so (export.h, version.h, status.h, api.h), and the
# headers of the static library's wider API (no ABI promise: docs/api.md). The library's
# internal utilities stay in include/migbench/ for the CLI and the tests but are not installed:
# proc, fileio, num, clock, stats, gpuqueue, live, prom, report_verbs, and progress.h and
# monitor.h, which include them.
set(MB_PUBLIC_HEADERS export status api analysis catalog device experiment exporter fleet layout
    meter mig migcfg plan plan_io powercap powersel report results runner session)
foreach(h ${MB_PUBLIC_HEADERS})
    install(FILES ${CMAKE_SOURCE_DIR}/include/migbench/${h}.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/migbench)
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/include/migbench/version.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/migbench)

# The Python package (python/migbench, docs/python.md): pure Python over libmigbench.so, put where
# Debian's python3 looks for the prefix /usr (and so in the .deb). _install.py tells it where the
# library lies relative to itself, so the tree stays relocatable.
set(MB_PYTHON_DIR lib/python3/dist-packages CACHE STRING
    "Where the Python package goes, relative to the install prefix")
file(RELATIVE_PATH MB_PY_LIBDIR /prefix/${MB_PYTHON_DIR}/migbench /prefix/${CMAKE_INSTALL_LIBDIR})
file(WRITE ${CMAKE_BINARY_DIR}/python/_install.py
    "# SPDX-License-Identifier: Apache-2.0\n# Written by cmake --install: the library's directory relative to this package.\nLIBDIR = \"${MB_PY_LIBDIR}\"\n")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/migbench DESTINATION ${MB_PYTHON_DIR}
    FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/python/_install.py DESTINATION ${MB_PYTHON_DIR}/migbench)

# pkg-config: public headers include <cjson/cJSON.h>, so libcjson is a public requirement.
set(MB_PC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
file(RELATIVE_PATH MB_PC_UP /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
set(MB_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
configure_file(${CMAKE_SOURCE_DIR}/cmake/migbench.pc.in ${CMAKE_BINARY_DIR}/migbench.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/migbench.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES ${CMAKE_SOURCE_DIR}/data/mig-catalog.json
    DESTINATION ${CMAKE_INSTALL_DATADIR}/migbench)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/workloads/ DESTINATION ${CMAKE_INSTALL_DATADIR}/migbench/workloads
    FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY ${MB_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
    FILES_MATCHING PATTERN "*.1")
install(FILES ${CMAKE_SOURCE_DIR}/completion/migbench.bash
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME migbench)
install(FILES ${CMAKE_SOURCE_DIR}/completion/_migbench
    DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/README.md
    DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

# cpack -G DEB: one binary package; shlibdeps finds the libyaml and libcjson package names.
set(CPACK_PACKAGE_NAME migbench)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "measure and plan deep-learning training on shared GPUs (time-slicing, MPS, MIG)")
set(CPACK_PACKAGE_CONTACT "migbench maintainers <migbench@localhost>")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# The reference workloads (share/migbench/workloads) train with PyTorch; migbench itself does
# not need it (measure, plan, layouts, an emulated GPU).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch, python3-torchvision")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
