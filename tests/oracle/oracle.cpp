// Differential-test oracle: NVIDIA's cuda_occupancy.h, driven line by line from stdin.
// Each input line: a command, the device properties, the function attributes, the
// device state, then the command's arguments. Each output line: the header's answer.
#include <cuda_occupancy.h>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

static int g_dyn_per_thread = 0, g_dyn_base = 0;
static size_t block_to_smem(int block) { return (size_t)g_dyn_base + (size_t)g_dyn_per_thread * block; }

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        std::istringstream in(line);
        std::string cmd;
        cudaOccDeviceProp p;
        cudaOccFuncAttributes a;
        cudaOccDeviceState s;
        long long smemPerBlock, smemPerSM, optin, reserved, shared, maxDyn;
        int shmemCfg, gc, carveout;
        in >> cmd >> p.computeMajor >> p.computeMinor >> p.maxThreadsPerBlock
           >> p.maxThreadsPerMultiprocessor >> p.regsPerBlock >> p.regsPerMultiprocessor
           >> p.warpSize >> smemPerBlock >> smemPerSM >> p.numSms >> optin >> reserved
           >> a.maxThreadsPerBlock >> a.numRegs >> shared >> shmemCfg >> maxDyn
           >> a.numBlockBarriers >> gc >> carveout >> a.virtualResourceCount;
        p.sharedMemPerBlock = (size_t)smemPerBlock;
        p.sharedMemPerMultiprocessor = (size_t)smemPerSM;
        p.sharedMemPerBlockOptin = (size_t)optin;
        p.reservedSharedMemPerBlock = (size_t)reserved;
        a.sharedSizeBytes = (size_t)shared;
        a.shmemLimitConfig = shmemCfg ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
        a.maxDynamicSharedSizeBytes = (size_t)maxDyn;
        a.partitionedGCConfig = gc ? PARTITIONED_GC_ON : PARTITIONED_GC_OFF;
        s.carveoutConfig = carveout;
        if (cmd == "occ") {
            int block; long long dyn;
            in >> block >> dyn;
            cudaOccResult r;
            std::memset(&r, 0, sizeof r);
            cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, block, (size_t)dyn);
            std::printf("%d %d %u %d %d %d %d %d %d %zu %d %d\n", (int)e, r.activeBlocksPerMultiprocessor,
                        r.limitingFactors, r.blockLimitRegs, r.blockLimitSharedMem, r.blockLimitWarps,
                        r.blockLimitBlocks, r.blockLimitBarriers, r.allocatedRegistersPerBlock,
                        r.allocatedSharedMemPerBlock, (int)r.partitionedGCConfig, r.blockLimitVirtual);
        } else if (cmd == "best") {
            in >> g_dyn_base >> g_dyn_per_thread;
            int grid = 0, block = 0;
            cudaOccError e = cudaOccMaxPotentialOccupancyBlockSize(&grid, &block, &p, &a, &s, block_to_smem, 0);
            std::printf("%d %d %d\n", (int)e, grid, block);
        } else if (cmd == "avail") {
            int blocks, block;
            in >> blocks >> block;
            size_t bytes = 0;
            cudaOccError e = cudaOccAvailableDynamicSMemPerBlock(&bytes, &p, &a, &s, blocks, block);
            std::printf("%d %zu\n", (int)e, bytes);
        } else {
            std::printf("bad command\n");
        }
        std::fflush(stdout);
    }
    return 0;
}
