#===- KoptPackage.cmake - Install kopt as a CMake package ------*- cmake -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Installs kopt's compiler libraries, their headers, the pass plugin where it
# is built, and the CMake package that lets another project write
#
#   find_package(Kopt REQUIRED)
#   target_link_libraries(app PRIVATE Kopt::KoptPasses)
#
# Layout under the install prefix:
#
#   include/kopt/      one include root, which the targets carry, holding
#                      kopt/ (the headers of the installed libraries) and
#                      passes/ (Passes.h, Passes.td and the generated
#                      Passes.h.inc): sources include "kopt/InitAll.h" and
#                      "passes/Passes.h" as they do inside kopt
#   lib/               libKoptAnalysis.a, libKoptPasses.a, libKoptSupport.a,
#                      libKoptInputLimits.a (its bounds on input),
#                      and KoptPassPlugin.so where it is built
#   lib/cmake/kopt/    KoptConfig.cmake, KoptConfigVersion.cmake and
#                      KoptTargets.cmake (namespace Kopt::)
#
# The code generator and the evaluator (KoptCodegen, KoptEvaluator) are not
# installed: they link the runtime's libraries, which are not installable yet.
#
#===------------------------------------------------------------------------===#

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KOPT_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/kopt")
set(KOPT_INSTALL_PACKAGEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/kopt")
set(KOPT_INSTALLED_LIBRARIES KoptAnalysis KoptPasses KoptSupport KoptInputLimits)

# MLIR 22's headers need C++17; consumers get it from the targets.
target_compile_features(KoptAnalysis PUBLIC cxx_std_17)

install(TARGETS ${KOPT_INSTALLED_LIBRARIES}
  EXPORT KoptTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  INCLUDES DESTINATION "${KOPT_INSTALL_INCLUDEDIR}")
if(TARGET KoptPassPlugin)
  install(TARGETS KoptPassPlugin
    EXPORT KoptTargets
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
endif()

install(FILES "${PROJECT_SOURCE_DIR}/include/kopt/InitAll.h"
  DESTINATION "${KOPT_INSTALL_INCLUDEDIR}/kopt")
install(DIRECTORY
  "${PROJECT_SOURCE_DIR}/include/kopt/Analysis"
  "${PROJECT_SOURCE_DIR}/include/kopt/Support"
  DESTINATION "${KOPT_INSTALL_INCLUDEDIR}/kopt"
  FILES_MATCHING PATTERN "*.h")
install(FILES
  "${PROJECT_SOURCE_DIR}/passes/Passes.h"
  "${PROJECT_SOURCE_DIR}/passes/Passes.td"
  "${PROJECT_BINARY_DIR}/passes/Passes.h.inc"
  DESTINATION "${KOPT_INSTALL_INCLUDEDIR}/passes")

install(EXPORT KoptTargets
  NAMESPACE Kopt::
  DESTINATION "${KOPT_INSTALL_PACKAGEDIR}")

# The consumer's find_package(MLIR) looks first where this build found it.
set(KOPT_PACKAGE_MLIR_DIR "${MLIR_DIR}")
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/KoptConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cmake/KoptConfig.cmake"
  INSTALL_DESTINATION "${KOPT_INSTALL_PACKAGEDIR}"
  PATH_VARS KOPT_INSTALL_INCLUDEDIR)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cmake/KoptConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/cmake/KoptConfig.cmake"
  "${PROJECT_BINARY_DIR}/cmake/KoptConfigVersion.cmake"
  DESTINATION "${KOPT_INSTALL_PACKAGEDIR}")
