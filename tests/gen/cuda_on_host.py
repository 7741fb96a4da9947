#!/usr/bin/env python3
"""The host build of a library's CUDA C++, for the fake CUDA driver (tests/gen/fake_cuda.cpp).

cuda_on_host.py <kernels.cu> <out.cpp> [--ids]

Writes out.cpp: the .cu's text (its <cuda_fp16.h> is tests/gen/cuda_host's), then for every
`extern "C" __global__ void NAME(PARAMS)` a function kiln_host_NAME(void** params) that calls it
with *(TYPE*)params[i] for each parameter, as cuLaunchKernel passes them, and for a kernel with a
barrier (__syncthreads) or a tensor cores' product (kiln_mma_*) kiln_host_syncs_NAME, which tells the
driver to run a block's threads side by side. --ids also defines the thread ids the kernels read, the barrier __syncthreads calls,
kiln_host_set_ids(block, thread, dim, sync, arg), which the driver calls before each thread, and
kiln_mma_on_host, the tensor cores' product (one of a library's files has them).
"""
import re
import sys


# The tensor cores' product (the kernels' kiln_mma_*: mma.sync.m16n8k16 on a GPU) on the host, for a
# block whose threads run side by side: each thread leaves its fragments, and after a barrier
# computes its 4 elements of its warp's 16 x 8 product from the warp's fragments, in PTX's layout
# (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point type"), written here from the
# matrices' side: A[row][k] is element k % 2 + 2 * (row / 8) + 4 * (k / 8) of lane row % 8 * 4 +
# k % 8 / 2; B[k][col] element k % 2 + 2 * (k / 8) of lane col * 4 + k % 8 / 2; D[row][col] element
# col % 2 + 2 * (row / 8) of lane row % 8 * 4 + col / 2. A second barrier keeps the fragments
# until every thread has read them.
MMA_ON_HOST = r"""
static float kiln_mma_a[1024][8], kiln_mma_b[1024][4];
extern "C" void kiln_mma_on_host(const float* a, const float* b, const float* c, float* d) {
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  memcpy(kiln_mma_a[tid], a, sizeof kiln_mma_a[tid]);
  memcpy(kiln_mma_b[tid], b, sizeof kiln_mma_b[tid]);
  __syncthreads();
  const unsigned warp = tid / 32 * 32, lane = tid % 32;
  for (unsigned i = 0; i < 4; ++i) {
    // the element D[row][col] this lane holds as its i-th
    unsigned row = 0, col = 0;
    for (row = 0; row < 16; ++row)
      for (col = 0; col < 8; ++col)
        if (row % 8 * 4 + col / 2 == lane && col % 2 + 2 * (row / 8) == i) goto found;
  found:
    float sum = c[i];
    for (unsigned k = 0; k < 16; ++k)
      sum += kiln_mma_a[warp + row % 8 * 4 + k % 8 / 2][k % 2 + 2 * (row / 8) + 4 * (k / 8)] *
             kiln_mma_b[warp + col * 4 + k % 8 / 2][k % 2 + 2 * (k / 8)];
    d[i] = sum;
  }
  __syncthreads();
}
"""


def param_type(param):
    """the type of one parameter ("const float* __restrict__ data1" -> "const float*")"""
    words = param.replace("__restrict__", "").split()
    if len(words) < 2:
        sys.exit("cuda_on_host.py: cannot read the parameter '%s'" % param)
    return " ".join(words[:-1])


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--ids"):
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        source = f.read()
    out = ["// the host build of %s, written by tests/gen/cuda_on_host.py\n" % sys.argv[1].rsplit("/", 1)[-1],
           source, "\n"]
    if len(sys.argv) == 4:
        out.append("thread_local kiln_uint3 threadIdx, blockIdx, blockDim;\n"
                   "thread_local void (*kiln_host_sync)(void*);\nthread_local void* kiln_host_sync_arg;\n"
                   "extern \"C\" void kiln_host_set_ids(const unsigned* b, const unsigned* t, const unsigned* d,\n"
                   "                                    void (*sync)(void*), void* arg) {\n"
                   "  blockIdx = {b[0], b[1], b[2]};\n  threadIdx = {t[0], t[1], t[2]};\n"
                   "  blockDim = {d[0], d[1], d[2]};\n  kiln_host_sync = sync;\n  kiln_host_sync_arg = arg;\n}\n")
        out.append(MMA_ON_HOST)
    kernels = re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', source)
    if not kernels:
        sys.exit("cuda_on_host.py: %s has no kernels" % sys.argv[1])
    # each kernel's text: from its signature to the next one's
    starts = [m.start() for m in re.finditer(r'extern "C" __global__ void \w+\(', source)] + [len(source)]
    for k, (name, params) in enumerate(kernels):
        args = ", ".join("*(%s*)p[%d]" % (param_type(q), i) for i, q in enumerate(params.split(",")))
        out.append('extern "C" void kiln_host_%s(void** p) { %s(%s); }\n' % (name, name, args))
        text = source[starts[k]:starts[k + 1]]
        if "__syncthreads()" in text or "kiln_mma_" in text:  # a warp's product is a barrier of the block
            out.append('extern "C" const int kiln_host_syncs_%s = 1;\n' % name)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("".join(out))


main()
