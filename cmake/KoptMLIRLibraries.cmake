#===- KoptMLIRLibraries.cmake - How kopt links MLIR -------------*- cmake -*-===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Sets KOPT_MLIR_LIBS, the MLIR/LLVM libraries every compiler target links.
#
# A development build links the shared libMLIR and libLLVM (fast links on small
# machines). A portable build links the static MLIR component libraries and
# rebinds the imported `LLVM` target, which Debian's static MLIR libraries name
# as their dependency, to LLVM's static component libraries, so that binaries
# depend on libc alone.
#
#===------------------------------------------------------------------------===#

if(NOT KOPT_PORTABLE)
  set(KOPT_MLIR_LIBS MLIR LLVM)
  return()
endif()

set(KOPT_MLIR_LIBS
  MLIRArithDialect
  MLIRBufferizationDialect
  MLIRFuncDialect
  MLIRFuncTransforms
  MLIRIR
  MLIRLinalgDialect
  MLIRLinalgTransforms
  MLIRMathDialect
  MLIRMLProgramDialect
  MLIROptLib
  MLIRParser
  MLIRPass
  MLIRSCFDialect
  MLIRSupport
  MLIRTensorDialect
  MLIRTosaDialect
  MLIRTosaToArith
  MLIRTosaToLinalg
  MLIRTosaToTensor
  MLIRTosaTransforms
  MLIRTransforms
  MLIRAffineDialect
  MLIRComplexDialect
  MLIRControlFlowDialect
)

llvm_map_components_to_libnames(kopt_llvm_static
  Support Demangle TargetParser BinaryFormat Core Remarks BitstreamReader)
list(TRANSFORM kopt_llvm_static PREPEND "${LLVM_LIBRARY_DIR}/lib")
list(TRANSFORM kopt_llvm_static APPEND ".a")
foreach(config RELWITHDEBINFO RELEASE DEBUG NOCONFIG)
  set_target_properties(LLVM PROPERTIES
    IMPORTED_LOCATION_${config} "${LLVM_LIBRARY_DIR}/libLLVMSupport.a"
    IMPORTED_SONAME_${config} "")
endforeach()
# zlib and zstd are linked statically too: the binaries must need libc alone.
find_library(KOPT_ZLIB_STATIC NAMES libz.a REQUIRED)
find_library(KOPT_ZSTD_STATIC NAMES libzstd.a REQUIRED)
set_target_properties(LLVM PROPERTIES
  INTERFACE_LINK_LIBRARIES
  "-Wl,--start-group;${kopt_llvm_static};-Wl,--end-group;${KOPT_ZLIB_STATIC};${KOPT_ZSTD_STATIC};${CMAKE_DL_LIBS};pthread")
