/*===- run_module.c - Run a kopt runtime module through the C API ---------===*\
|*                                                                            *|
|* Part of the kopt project, under the Apache License v2.0 with LLVM          *|
|* Exceptions. See LICENSE for license information.                           *|
|* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception                    *|
|*                                                                            *|
|*===----------------------------------------------------------------------===*|
|*                                                                            *|
|* Usage: run_module MODULE.kmod [DEVICE]                                     *|
|*                                                                            *|
|* Opens a GPU, loads a module written by `kopt compile --emit-module`,       *|
|* fills each float input with sin(i) (other types with zeros), runs the      *|
|* graph once and prints each output's first values and sum. Every failure    *|
|* is a status with a message; without a GPU it says so and returns 1.       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "kopt-c/Runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(KoptStatus status, const char *what) {
  if (status == KOPT_OK)
    return 0;
  fprintf(stderr, "run_module: %s: %s: %s\n", what, koptStatusName(status),
          koptGetLastError());
  return 1;
}

static void printShape(const KoptTensorInfo *info) {
  printf("%s [", info->name);
  for (int d = 0; d < info->rank; ++d)
    printf("%s%lld", d ? "x" : "", (long long)info->shape[d]);
  printf("]");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: run_module MODULE.kmod [DEVICE]\n");
    return 2;
  }
  int ordinal = argc > 2 ? atoi(argv[2]) : 0;
  KoptDevice *device = NULL;
  KoptModule *module = NULL;
  int failed = 1;
  if (check(koptDeviceCreate(ordinal, &device), "opening the GPU"))
    return 1;
  if (check(koptModuleLoad(device, argv[1], NULL, &module), "loading"))
    goto done;
  const char *info = NULL;
  if (check(koptModuleGetLoadInfo(module, &info), "load info"))
    goto done;
  printf("%s", info);

  size_t inputs = 0, outputs = 0;
  if (check(koptModuleGetNumInputs(module, &inputs), "inputs") ||
      check(koptModuleGetNumOutputs(module, &outputs), "outputs"))
    goto done;
  for (size_t i = 0; i < inputs; ++i) {
    KoptTensorInfo tensor;
    if (check(koptModuleGetInputInfo(module, i, &tensor), "input info"))
      goto done;
    char *data = calloc(1, tensor.bytes ? tensor.bytes : 1);
    if (tensor.elementType == KOPT_F32)
      for (uint64_t k = 0; k < tensor.bytes / 4; ++k)
        ((float *)data)[k] = (float)sin((double)k);
    printf("input  ");
    printShape(&tensor);
    printf("\n");
    int bad = check(koptModuleSetInput(module, tensor.name, data, tensor.bytes),
                    "setting an input");
    free(data);
    if (bad)
      goto done;
  }
  if (check(koptModuleRun(module, NULL), "running"))
    goto done;
  for (size_t i = 0; i < outputs; ++i) {
    KoptTensorInfo tensor;
    if (check(koptModuleGetOutputInfo(module, i, &tensor), "output info"))
      goto done;
    char *data = malloc(tensor.bytes ? tensor.bytes : 1);
    if (check(koptModuleGetOutput(module, tensor.name, data, tensor.bytes),
              "reading an output")) {
      free(data);
      goto done;
    }
    printf("output ");
    printShape(&tensor);
    if (tensor.elementType == KOPT_F32) {
      double sum = 0;
      uint64_t count = tensor.bytes / 4;
      for (uint64_t k = 0; k < count; ++k)
        sum += ((float *)data)[k];
      printf(" =");
      for (uint64_t k = 0; k < count && k < 4; ++k)
        printf(" %g", ((float *)data)[k]);
      printf("%s sum %.6g", count > 4 ? " ..." : "", sum);
    }
    printf("\n");
    free(data);
  }
  failed = 0;
done:
  koptModuleDestroy(module);
  koptDeviceDestroy(device);
  return failed;
}
