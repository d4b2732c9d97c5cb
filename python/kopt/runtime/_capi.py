# ===- _capi.py - libkoptrt through ctypes ---------------------------------===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# ===----------------------------------------------------------------------===#
#
# Finds libkoptrt, loads it once, declares the C API's prototypes
# (include/kopt-c/Runtime.h) and turns a failed status into Error with the
# library's message. Nothing here needs a GPU.
#
# ===----------------------------------------------------------------------===#

import ctypes
import os
import threading

ENV_VAR = "KOPT_RUNTIME_LIBRARY"
LIBRARY_NAME = "libkoptrt.so"

# KoptStatus values, by name as koptStatusName spells them.
STATUS_NAMES = {
    0: "ok",
    1: "invalid-argument",
    2: "out-of-range",
    3: "unsupported",
    4: "io-error",
    5: "unavailable",
    6: "internal",
}

MAX_RANK = 8


class Error(RuntimeError):
    """A failure of libkoptrt or of a call's arguments. `status` is the
    C API's status name ("unavailable", "invalid-argument", ...), or
    "not-found" when libkoptrt itself was not found; the message is
    libkoptrt's own (koptGetLastError) where it came from the library."""

    def __init__(self, message, status="invalid-argument"):
        super().__init__(message)
        self.status = status
        self.message = message


class CTensorInfo(ctypes.Structure):
    """KoptTensorInfo."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("elementType", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("bytes", ctypes.c_uint64),
    ]


class CBatchInfo(ctypes.Structure):
    """KoptBatchInfo."""

    _fields_ = [
        ("dynamic", ctypes.c_int32),
        ("independent", ctypes.c_int32),
        ("batch", ctypes.c_int64),
        ("numSizes", ctypes.c_size_t),
        ("sizes", ctypes.POINTER(ctypes.c_int64)),
        ("numBatchedInputs", ctypes.c_size_t),
        ("batchedInputs", ctypes.POINTER(ctypes.c_char_p)),
        ("numBatchedOutputs", ctypes.c_size_t),
        ("batchedOutputs", ctypes.POINTER(ctypes.c_char_p)),
        ("reason", ctypes.c_char_p),
    ]


def candidate_paths():
    """Where libkoptrt is looked for, in order: $KOPT_RUNTIME_LIBRARY (a file,
    or a folder holding libkoptrt.so), beside the package (kopt/ and
    kopt/lib/), then, for a package used from a kopt checkout, the build
    tree (build/lib/) and the portable build (dist/lib/)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [
        os.path.join(package, LIBRARY_NAME),
        os.path.join(package, "lib", LIBRARY_NAME),
    ]
    checkout = os.path.dirname(os.path.dirname(package))
    if os.path.isfile(os.path.join(checkout, "include", "kopt-c",
                                   "Runtime.h")):
        paths += [
            os.path.join(checkout, "build", "lib", LIBRARY_NAME),
            os.path.join(checkout, "dist", "lib", LIBRARY_NAME),
        ]
    return paths


def find_library():
    """The path of libkoptrt to load; raises Error when there is none."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        path = configured
        if os.path.isdir(path):
            path = os.path.join(path, LIBRARY_NAME)
        if not os.path.isfile(path):
            raise Error(f"{ENV_VAR} is '{configured}', but there is no "
                        f"libkoptrt at '{path}'", "not-found")
        return path
    tried = candidate_paths()
    for path in tried:
        if os.path.isfile(path):
            return path
    raise Error(
        "libkoptrt not found: set " + ENV_VAR + " to its path (a kopt build "
        "has it in build/lib/, a portable one in dist/lib/); tried " +
        ", ".join(tried), "not-found")


# Prototypes: name -> (argument types, result type). Every function returns
# a KoptStatus (an int) unless it says otherwise.
_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_SIZE = ctypes.c_size_t
_INFO = ctypes.POINTER(CTensorInfo)
_BATCH = ctypes.POINTER(CBatchInfo)
PROTOTYPES = {
    "koptGetLastError": ([], ctypes.c_char_p),
    "koptStatusName": ([ctypes.c_int], ctypes.c_char_p),
    "koptDeviceCreate": ([ctypes.c_int, _PP], ctypes.c_int),
    "koptDeviceDestroy": ([_P], None),
    "koptDeviceGetArch": ([_P, ctypes.POINTER(ctypes.c_char_p)],
                          ctypes.c_int),
    "koptDeviceGetStream": ([_P, _PP], ctypes.c_int),
    "koptDeviceSynchronize": ([_P], ctypes.c_int),
    "koptKernelDbOpen": ([ctypes.c_char_p, _PP], ctypes.c_int),
    "koptKernelDbClose": ([_P], None),
    "koptModuleLoad": ([_P, ctypes.c_char_p, _P, _PP], ctypes.c_int),
    "koptModuleDestroy": ([_P], None),
    "koptModuleGetLoadInfo": ([_P, ctypes.POINTER(ctypes.c_char_p)],
                              ctypes.c_int),
    "koptModuleGetNumInputs": ([_P, ctypes.POINTER(_SIZE)], ctypes.c_int),
    "koptModuleGetNumOutputs": ([_P, ctypes.POINTER(_SIZE)], ctypes.c_int),
    "koptModuleGetInputInfo": ([_P, _SIZE, _INFO], ctypes.c_int),
    "koptModuleGetOutputInfo": ([_P, _SIZE, _INFO], ctypes.c_int),
    "koptModuleBindBuffer": ([_P, ctypes.c_char_p, ctypes.c_uint64],
                             ctypes.c_int),
    "koptModuleGetBatchInfo": ([_P, _BATCH], ctypes.c_int),
    "koptModuleSetBatch": ([_P, ctypes.c_int64], ctypes.c_int),
    "koptModuleSetGraphCapture": ([_P, ctypes.c_int], ctypes.c_int),
    "koptModuleRun": ([_P, _P], ctypes.c_int),
    "koptModuleFileOpen": ([ctypes.c_char_p, _PP], ctypes.c_int),
    "koptModuleFileClose": ([_P], None),
    "koptModuleFileGetNumInputs": ([_P, ctypes.POINTER(_SIZE)],
                                   ctypes.c_int),
    "koptModuleFileGetNumOutputs": ([_P, ctypes.POINTER(_SIZE)],
                                    ctypes.c_int),
    "koptModuleFileGetInputInfo": ([_P, _SIZE, _INFO], ctypes.c_int),
    "koptModuleFileGetOutputInfo": ([_P, _SIZE, _INFO], ctypes.c_int),
    "koptModuleFileGetBatchInfo": ([_P, _BATCH], ctypes.c_int),
}


class Library:
    """libkoptrt loaded from `path`, with its functions as attributes."""

    def __init__(self, path):
        try:
            self._dll = ctypes.CDLL(path)
        except OSError as error:
            raise Error(f"cannot load libkoptrt from '{path}': {error}",
                        "not-found") from None
        self.path = path
        for name, (argtypes, restype) in PROTOTYPES.items():
            function = getattr(self._dll, name, None)
            if function is None:
                # An older library: the call fails when used, not now.
                continue
            function.argtypes = argtypes
            function.restype = restype
            setattr(self, name, function)

    def __getattr__(self, name):
        # Only reached for a prototype the loaded library lacks.
        if name in PROTOTYPES:
            raise Error(f"libkoptrt at '{self.path}' has no {name}: it is "
                        "older than this package", "unsupported")
        raise AttributeError(name)

    def has(self, name):
        """Whether the loaded library has function `name` (an older one may
        lack the newest)."""
        return name in self.__dict__ or hasattr(type(self), name)

    def check(self, status):
        """Raises Error with the library's message unless `status` is
        KOPT_OK (0)."""
        if status == 0:
            return
        message = self.koptGetLastError() or b""
        raise Error(message.decode("utf-8", "replace") or
                    f"libkoptrt failed ({STATUS_NAMES.get(status)})",
                    STATUS_NAMES.get(status, f"status-{status}"))


_lock = threading.Lock()
_library = None


def library():
    """libkoptrt, loaded on first use."""
    global _library
    with _lock:
        if _library is None:
            _library = Library(find_library())
        return _library


def set_library(lib):
    """Replaces the loaded library (None: find it again on next use); for
    tests."""
    global _library
    with _lock:
        _library = lib
