// How many clusters of C blocks, each holding its share of a softmax row
// of 393,216 floats in shared memory (or 100 KB, or 200 KB), the device
// holds at once (cudaOccupancyMaxActiveClusters, non-portable sizes up to
// 16 allowed): which cluster sizes leave SMs idle. The claiming softmax
// uses clusters of 8, of which the H200 holds 15 (120 of 132 SMs).
//
// Build: nvcc -arch=sm_90 -o cluster_occupancy cluster_occupancy.cu
// Run:   ./cluster_occupancy
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k(float *p) {
  extern __shared__ float s[];
  if (p) p[0] = s[0];
}
int main() {
  cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s: %d SMs, %zu KB smem per block optin\n", prop.name,
         prop.multiProcessorCount, prop.sharedMemPerBlockOptin / 1024);
  for (int c = 1; c <= 16; ++c) {
    long long share = (393216LL + c - 1) / c;
    share = (share + 3) / 4 * 4;
    size_t bytes = share * 4;
    for (size_t sm : {bytes, (size_t)100 * 1024, (size_t)200 * 1024}) {
      if (sm > prop.sharedMemPerBlockOptin) {
        printf("c=%2d smem %6zu KB: too big\n", c, sm / 1024);
        continue;
      }
      cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)sm);
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(c * 64);
      cfg.blockDim = dim3(512);
      cfg.dynamicSmemBytes = sm;
      cudaLaunchAttribute attr;
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = c;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int n = -1;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&n, (void *)k, &cfg);
      printf("c=%2d smem %6zu KB: %3d clusters, %3d SMs busy %s\n", c,
             sm / 1024, n, n * c, e ? cudaGetErrorString(e) : "");
    }
  }
}
