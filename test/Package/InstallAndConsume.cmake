#===- InstallAndConsume.cmake - Test the installed package -----*- cmake -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Run by ctest (package-install-consumer) with `cmake -P`: installs the kopt
# build KOPT_BINARY_DIR into WORK_DIR/prefix, configures and builds the
# consumer project against it (find_package(Kopt) through Kopt_DIR), runs it
# on MODEL, and, where the build has the pass plugin (PLUGIN_FILE_NAME not
# empty), runs MLIR_OPT on MODEL with the installed plugin, found through
# the package's KOPT_PASS_PLUGIN.
#
#===------------------------------------------------------------------------===#

foreach(var KOPT_BINARY_DIR WORK_DIR CONSUMER_SOURCE_DIR INCLUDE_SUBDIR
        LIB_SUBDIR PACKAGE_SUBDIR GENERATOR CXX_COMPILER MODEL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "InstallAndConsume.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(consumerBuild "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${prefix}" "${consumerBuild}")

message(STATUS "Installing ${KOPT_BINARY_DIR} into ${prefix}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" --install "${KOPT_BINARY_DIR}" --prefix "${prefix}"
  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
foreach(file
    "${PACKAGE_SUBDIR}/KoptConfig.cmake"
    "${PACKAGE_SUBDIR}/KoptConfigVersion.cmake"
    "${PACKAGE_SUBDIR}/KoptTargets.cmake"
    "${INCLUDE_SUBDIR}/kopt/InitAll.h"
    "${INCLUDE_SUBDIR}/kopt/Support/ModelLoader.h"
    "${INCLUDE_SUBDIR}/passes/Passes.h"
    "${INCLUDE_SUBDIR}/passes/Passes.h.inc")
  if(NOT EXISTS "${prefix}/${file}")
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()

message(STATUS "Building the consumer, Kopt_DIR=${prefix}/${PACKAGE_SUBDIR}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${consumerBuild}"
          -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
          "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
          "-DKopt_DIR=${prefix}/${PACKAGE_SUBDIR}"
  COMMAND_ERROR_IS_FATAL ANY)
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${consumerBuild}"
  COMMAND_ERROR_IS_FATAL ANY)

execute_process(
  COMMAND "${consumerBuild}/kopt-consumer" "${MODEL}"
  OUTPUT_VARIABLE output
  COMMAND_ERROR_IS_FATAL ANY)
if(NOT output MATCHES "func.func private @[a-z_]+_kopt_g0_[a-z]+\\(")
  message(FATAL_ERROR "kopt-consumer outlined no group:\n${output}")
endif()
string(REGEX MATCH "kopt-consumer: [0-9]+ fusion groups? outlined" summary
       "${output}")
message(STATUS "${summary}")

# The installed plugin, in the mlir-opt of the LLVM kopt was built against.
# The consumer wrote down KOPT_PASS_PLUGIN, which the package sets.
file(READ "${consumerBuild}/kopt-pass-plugin.txt" plugin)
if(PLUGIN_FILE_NAME)
  set(expected "${prefix}/${LIB_SUBDIR}/${PLUGIN_FILE_NAME}")
  if(NOT plugin STREQUAL expected OR NOT EXISTS "${plugin}")
    message(FATAL_ERROR "KOPT_PASS_PLUGIN is '${plugin}', not ${expected}")
  endif()
  execute_process(
    COMMAND "${MLIR_OPT}" "${MODEL}" "--load-pass-plugin=${plugin}"
            "--pass-pipeline=builtin.module(kopt-fusion-planning)"
    OUTPUT_VARIABLE pluginOutput
    COMMAND_ERROR_IS_FATAL ANY)
  if(NOT pluginOutput MATCHES "func.func private @[a-z_]+_kopt_g0_[a-z]+\\(")
    message(FATAL_ERROR "the installed plugin outlined no group:\n"
                        "${pluginOutput}")
  endif()
  message(STATUS "mlir-opt ran the installed ${PLUGIN_FILE_NAME}")
endif()
