/*===- kopt-c/Runtime.h - The kopt runtime's C API ----------------*- C -*-===*\
|*                                                                            *|
|* Part of the kopt project, under the Apache License v2.0 with LLVM          *|
|* Exceptions. See LICENSE for license information.                           *|
|* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception                    *|
|*                                                                            *|
|*===----------------------------------------------------------------------===*|
|*                                                                            *|
|* libkoptrt runs what kopt tuned, with no LLVM or MLIR: it opens a kernel    *|
|* database read-only and launches a task's plan on the caller's stream and   *|
|* device pointers, or loads a runtime module (`kopt compile --emit-module`)  *|
|* and runs the whole graph, optionally as a CUDA graph. The CUDA libraries   *|
|* are loaded with dlopen: on a machine without a driver every call that      *|
|* needs one returns KOPT_UNAVAILABLE with a message, never aborts.           *|
|*                                                                            *|
|* Conventions: every function returns a KoptStatus; outputs come last,       *|
|* through `out` pointers, and are set only on KOPT_OK. After a failure,      *|
|* koptGetLastError() gives the calling thread's message. Objects created by  *|
|* a `...Create`/`...Open`/`...Load`/`...Lookup` call are freed by the        *|
|* matching `...Destroy`/`...Close` (which accept NULL). Streams and device   *|
|* pointers are the driver API's CUstream and CUdeviceptr, passed as void *   *|
|* and uint64_t so this header needs no CUDA header; a runtime API            *|
|* cudaStream_t is the same handle. libkoptrt works in the device's primary   *|
|* context (the one the CUDA runtime uses) and makes it current on the        *|
|* calling thread.                                                            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef KOPT_C_RUNTIME_H
#define KOPT_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define KOPT_EXPORT __declspec(dllexport)
#else
#define KOPT_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*\
|* Status                                                                     *|
\*===----------------------------------------------------------------------===*/

/** What a call did. KOPT_OK is 0; every other value is a failure. */
typedef enum KoptStatus {
  KOPT_OK = 0,
  /** An argument or input is malformed (a NULL pointer, a bad name, a
   *  damaged file, a wrong size). */
  KOPT_INVALID_ARGUMENT = 1,
  /** A size or index is out of range. */
  KOPT_OUT_OF_RANGE = 2,
  /** A version or feature this library does not implement. */
  KOPT_UNSUPPORTED = 3,
  /** A file could not be read. */
  KOPT_IO_ERROR = 4,
  /** No CUDA driver, no device, no library, or no kernel for the key. */
  KOPT_UNAVAILABLE = 5,
  /** A CUDA call failed, or kopt's own invariant broke. */
  KOPT_INTERNAL = 6,
} KoptStatus;

/** The calling thread's message for its last failed call ("" when there was
 *  none). The string belongs to the library and stays valid until the
 *  thread's next call into it. */
KOPT_EXPORT const char *koptGetLastError(void);

/** The stable name of `status` ("ok", "invalid-argument", ...). */
KOPT_EXPORT const char *koptStatusName(KoptStatus status);

/*===----------------------------------------------------------------------===*\
|* Element types and tensors                                                  *|
\*===----------------------------------------------------------------------===*/

typedef enum KoptElementType {
  KOPT_F16 = 0,
  KOPT_BF16 = 1,
  KOPT_F32 = 2,
  KOPT_F64 = 3,
  /** Booleans, one byte each. */
  KOPT_I1 = 4,
  KOPT_I8 = 5,
  KOPT_I16 = 6,
  KOPT_I32 = 7,
  KOPT_I64 = 8,
} KoptElementType;

/** The most dimensions a tensor passed through this API has. */
#define KOPT_MAX_RANK 8

/** A dense, row-major tensor in device memory. */
typedef struct KoptTensor {
  /** The device address (a CUdeviceptr). */
  uint64_t data;
  KoptElementType elementType;
  int32_t rank;
  int64_t shape[KOPT_MAX_RANK];
} KoptTensor;

/** A tensor's description. `name` belongs to the object it came from. */
typedef struct KoptTensorInfo {
  const char *name;
  KoptElementType elementType;
  int32_t rank;
  int64_t shape[KOPT_MAX_RANK];
  /** Bytes of the whole tensor. */
  uint64_t bytes;
} KoptTensorInfo;

/*===----------------------------------------------------------------------===*\
|* Device                                                                     *|
\*===----------------------------------------------------------------------===*/

/** A device: the CUDA driver, the device's primary context and a stream. */
typedef struct KoptDevice KoptDevice;

/** Opens device `ordinal`. Fails with KOPT_UNAVAILABLE, and a message that
 *  says so, when there is no CUDA driver or no such device. Free with
 *  koptDeviceDestroy, after every object made on it. */
KOPT_EXPORT KoptStatus koptDeviceCreate(int ordinal, KoptDevice **outDevice);
KOPT_EXPORT void koptDeviceDestroy(KoptDevice *device);

/** The device's architecture, such as "sm_90"; the string belongs to the
 *  device. */
KOPT_EXPORT KoptStatus koptDeviceGetArch(const KoptDevice *device,
                                         const char **outArch);

/** The runtime's own stream on the device (a CUstream), owned by it. */
KOPT_EXPORT KoptStatus koptDeviceGetStream(const KoptDevice *device,
                                           void **outStream);

/** Waits for all work on the device. */
KOPT_EXPORT KoptStatus koptDeviceSynchronize(KoptDevice *device);

/*===----------------------------------------------------------------------===*\
|* Kernel database                                                            *|
\*===----------------------------------------------------------------------===*/

/** A kernel database opened read-only. Lookups are thread-safe. */
typedef struct KoptKernelDb KoptKernelDb;

/** Opens the SQLite kernel database at `path` read-only (it is never
 *  written or created). Free with koptKernelDbClose. */
KOPT_EXPORT KoptStatus koptKernelDbOpen(const char *path, KoptKernelDb **outDb);
KOPT_EXPORT void koptKernelDbClose(KoptKernelDb *db);

/** A task's tuned plan, loaded on one device. */
typedef struct KoptKernel KoptKernel;

/** Looks up the plan of task `taskKey` (64 hex digits, as `kopt.key` on the
 *  IR) for `device` under precision policy `precision` ("fp32" when NULL):
 *  the fastest valid record measured on the device's architecture, else
 *  one of an older architecture, whose PTX the driver JIT-compiles (or
 *  whose source NVRTC compiles); koptKernelGetLoadInfo says which. Fails
 *  with KOPT_UNAVAILABLE when the database has no record for the key.
 *  Thread-safe. Free with koptKernelDestroy. */
KOPT_EXPORT KoptStatus koptKernelDbLookup(KoptKernelDb *db, KoptDevice *device,
                                          const char *taskKey,
                                          const char *precision,
                                          KoptKernel **outKernel);
KOPT_EXPORT void koptKernelDestroy(KoptKernel *kernel);

/** How the kernel's code was found and loaded, one line per fact; owned by
 *  the kernel. */
KOPT_EXPORT KoptStatus koptKernelGetLoadInfo(const KoptKernel *kernel,
                                             const char **outInfo);

/** Launches the plan on `stream` (a CUstream; NULL for the device's own) over
 *  the caller's tensors: `inputs` and `outputs` in the task's order. The
 *  plan is prepared for these shapes on the first launch (and again when
 *  they change); it returns without waiting. Launches of one kernel share
 *  its temporaries: do not let them overlap on the device (use one kernel
 *  per stream). Thread-safe. */
KOPT_EXPORT KoptStatus koptKernelLaunch(KoptKernel *kernel, void *stream,
                                        const KoptTensor *inputs,
                                        size_t numInputs,
                                        const KoptTensor *outputs,
                                        size_t numOutputs);

/*===----------------------------------------------------------------------===*\
|* Runtime modules                                                            *|
\*===----------------------------------------------------------------------===*/

/** A runtime module (.kmod) loaded on a device. Not thread-safe: use one
 *  module object per thread. */
typedef struct KoptModule KoptModule;

/** Loads the module at `path` on `device`: allocates its buffers, uploads
 *  its constants and loads every plan (cubins for the device, else PTX or
 *  source compiled here). `db` is needed only for a module whose plans are
 *  references to database records, and may be NULL otherwise; the module
 *  does not keep it. Free with koptModuleDestroy, before the device. */
KOPT_EXPORT KoptStatus koptModuleLoad(KoptDevice *device, const char *path,
                                      KoptKernelDb *db, KoptModule **outModule);
KOPT_EXPORT void koptModuleDestroy(KoptModule *module);

/** How the module's code was loaded, one line per plan source; owned by the
 *  module. */
KOPT_EXPORT KoptStatus koptModuleGetLoadInfo(const KoptModule *module,
                                             const char **outInfo);

KOPT_EXPORT KoptStatus koptModuleGetNumInputs(const KoptModule *module,
                                              size_t *outCount);
KOPT_EXPORT KoptStatus koptModuleGetNumOutputs(const KoptModule *module,
                                               size_t *outCount);
/** Describes input (output) `index`, at the batch size in effect for a
 *  module with a dynamic batch. */
KOPT_EXPORT KoptStatus koptModuleGetInputInfo(const KoptModule *module,
                                              size_t index,
                                              KoptTensorInfo *outInfo);
KOPT_EXPORT KoptStatus koptModuleGetOutputInfo(const KoptModule *module,
                                               size_t index,
                                               KoptTensorInfo *outInfo);

/** How a module's batch size varies. Pointers belong to the module (or
 *  module file) and stay valid until it is destroyed. */
typedef struct KoptBatchInfo {
  /** Non-zero when the module's batch is dynamic: the outermost dimension of
   *  the inputs and outputs named below is the batch size (times a
   *  constant), set with koptModuleSetBatch. Zero for a static module, whose
   *  other fields are then zero. */
  int32_t dynamic;
  /** Non-zero when the compiler proved every sample independent of the
   *  others: any positive batch size runs, as chunks of the tuned sizes
   *  when it is not one. Else only the tuned sizes run. */
  int32_t independent;
  /** The batch size in effect: the one set last, else the first tuned size
   *  (a module file: the size its input and output infos describe). */
  int64_t batch;
  /** The tuned batch sizes, ascending. */
  size_t numSizes;
  const int64_t *sizes;
  /** The names of the inputs and outputs that carry the batch. */
  size_t numBatchedInputs;
  const char *const *batchedInputs;
  size_t numBatchedOutputs;
  const char *const *batchedOutputs;
  /** Why the samples were not proven independent; "" when they were. */
  const char *reason;
} KoptBatchInfo;

/** Describes the module's batch. */
KOPT_EXPORT KoptStatus koptModuleGetBatchInfo(const KoptModule *module,
                                              KoptBatchInfo *outInfo);

/** Sets the batch size of the next runs of a module with a dynamic batch:
 *  one of its tuned sizes, or any positive size when its samples are
 *  independent; otherwise KOPT_INVALID_ARGUMENT with a message naming the
 *  tuned sizes (a static module always fails). The inputs and outputs that
 *  carry the batch take their shapes at that size (koptModuleGetInputInfo
 *  says them) and lose their values and bindings, so set or bind them
 *  again; the others (weights) keep theirs. Setting the size in effect
 *  changes nothing. */
KOPT_EXPORT KoptStatus koptModuleSetBatch(KoptModule *module, int64_t batch);

/** Copies `bytes` host bytes (exactly the input's size) into input `name`. */
KOPT_EXPORT KoptStatus koptModuleSetInput(KoptModule *module, const char *name,
                                          const void *data, size_t bytes);
/** Waits for the device, then copies output (or input) `name` into `data`,
 *  which holds `bytes` (exactly the tensor's size). */
KOPT_EXPORT KoptStatus koptModuleGetOutput(KoptModule *module, const char *name,
                                           void *data, size_t bytes);
/** Makes input or output `name` live in the caller's device memory at
 *  `pointer` (a CUdeviceptr of at least the tensor's size, at the batch size
 *  in effect); 0 returns it to the module's own buffer. */
KOPT_EXPORT KoptStatus koptModuleBindBuffer(KoptModule *module,
                                            const char *name, uint64_t pointer);

/** With `enable` non-zero, runs go through a CUDA graph captured from the
 *  module's launches on the next run (and again after a binding changes):
 *  one launch instead of one per step, for small launch-bound graphs. */
KOPT_EXPORT KoptStatus koptModuleSetGraphCapture(KoptModule *module,
                                                 int enable);

/** Enqueues one run of the whole graph on `stream` (a CUstream; NULL for the
 *  device's own) and returns without waiting. A captured graph needs a
 *  stream other than the legacy default stream. */
KOPT_EXPORT KoptStatus koptModuleRun(KoptModule *module, void *stream);

/*===----------------------------------------------------------------------===*\
|* Module files                                                               *|
\*===----------------------------------------------------------------------===*/

/** A runtime module read from its file and verified, but not loaded on any
 *  device: it describes the module's inputs and outputs on a machine
 *  without a GPU. Free with koptModuleFileClose. */
typedef struct KoptModuleFile KoptModuleFile;

/** Reads and verifies the module at `path` as koptModuleLoad does, with no
 *  device and no database. Fails with KOPT_IO_ERROR when the file cannot
 *  be read, KOPT_UNSUPPORTED for another schema and KOPT_INVALID_ARGUMENT
 *  for a damaged or inconsistent module. */
KOPT_EXPORT KoptStatus koptModuleFileOpen(const char *path,
                                          KoptModuleFile **outFile);
KOPT_EXPORT void koptModuleFileClose(KoptModuleFile *file);

KOPT_EXPORT KoptStatus koptModuleFileGetNumInputs(const KoptModuleFile *file,
                                                  size_t *outCount);
KOPT_EXPORT KoptStatus koptModuleFileGetNumOutputs(const KoptModuleFile *file,
                                                   size_t *outCount);
/** Describes input (output) `index`, as koptModuleGetInputInfo does; the
 *  name belongs to `file`. */
KOPT_EXPORT KoptStatus koptModuleFileGetInputInfo(const KoptModuleFile *file,
                                                  size_t index,
                                                  KoptTensorInfo *outInfo);
KOPT_EXPORT KoptStatus koptModuleFileGetOutputInfo(const KoptModuleFile *file,
                                                   size_t index,
                                                   KoptTensorInfo *outInfo);
/** Describes the module's batch, as koptModuleGetBatchInfo does; the input
 *  and output infos of a file are at its first tuned size. */
KOPT_EXPORT KoptStatus koptModuleFileGetBatchInfo(const KoptModuleFile *file,
                                                  KoptBatchInfo *outInfo);

#ifdef __cplusplus
}
#endif

#endif /* KOPT_C_RUNTIME_H */
