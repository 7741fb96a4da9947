#!/usr/bin/env python3
"""The host build of a library's CUDA C++, for the fake CUDA driver (tests/gen/fake_cuda.cpp).

cuda_on_host.py <kernels.cu> <out.cpp> [--ids]

Writes out.cpp: the .cu's text (its <cuda_fp16.h> is tests/gen/cuda_host's), then for every
`extern "C" __global__ void NAME(PARAMS)` a function kiln_host_NAME(void** params) that calls it
with *(TYPE*)params[i] for each parameter, as cuLaunchKernel passes them, and for a kernel with a
barrier (__syncthreads) kiln_host_syncs_NAME, which tells the driver to run a block's threads
side by side. --ids also defines the thread ids the kernels read, the barrier __syncthreads calls,
and kiln_host_set_ids(block, thread, dim, sync, arg), which the driver calls before each thread
(one of a library's files has it).
"""
import re
import sys


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
    kernels = re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', source)
    if not kernels:
        sys.exit("cuda_on_host.py: %s has no kernels" % sys.argv[1])
    # each kernel's text: from its signature to the next one's
    starts = [m.start() for m in re.finditer(r'extern "C" __global__ void \w+\(', source)] + [len(source)]
    for k, (name, params) in enumerate(kernels):
        args = ", ".join("*(%s*)p[%d]" % (param_type(q), i) for i, q in enumerate(params.split(",")))
        out.append('extern "C" void kiln_host_%s(void** p) { %s(%s); }\n' % (name, name, args))
        if "__syncthreads()" in source[starts[k]:starts[k + 1]]:
            out.append('extern "C" const int kiln_host_syncs_%s = 1;\n' % name)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("".join(out))


main()
