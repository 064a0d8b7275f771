// proofline scripts/issue-rates.cu: the issue rates of the wide integer multiply-add (IMAD.WIDE.U32,
// what the field multiplications are made of) and of the FP64 fused multiply-add (DFMA) on one
// GPU, alone and interleaved in one thread: operations per second, and per SM per clock. On the
// GPU machine (nvcc is there, not the Rust toolchain):
//   nvcc -arch=sm_90 -O3 -o /tmp/issue-rates scripts/issue-rates.cu && /tmp/issue-rates
#include <cstdio>
#include <cstdint>
#define N 8
__global__ void imad(uint64_t* out, uint32_t iters, uint32_t b) {
    uint64_t acc[N]; uint32_t a[N];
    for (int k = 0; k < N; k++) { acc[k] = threadIdx.x + k; a[k] = blockIdx.x * 7 + k; }
    for (uint32_t i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < N; k++)
            asm volatile("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc[k]) : "r"(a[k]), "r"(b));
    uint64_t s = 0; for (int k = 0; k < N; k++) s ^= acc[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void dfma(double* out, uint32_t iters, double x, double y) {
    double acc[N];
    for (int k = 0; k < N; k++) acc[k] = threadIdx.x + k;
    for (uint32_t i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < N; k++) acc[k] = fma(acc[k], x, y);
    double s = 0; for (int k = 0; k < N; k++) s += acc[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void both(uint64_t* out, uint32_t iters, uint32_t b, double x, double y) {
    uint64_t acc[N]; uint32_t a[N]; double d[N];
    for (int k = 0; k < N; k++) { acc[k] = threadIdx.x + k; a[k] = blockIdx.x * 7 + k; d[k] = k; }
    for (uint32_t i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < N; k++) {
            asm volatile("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc[k]) : "r"(a[k]), "r"(b));
            d[k] = fma(d[k], x, y);
        }
    uint64_t s = 0; double t = 0; for (int k = 0; k < N; k++) { s ^= acc[k]; t += d[k]; }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s ^ (uint64_t)t;
}
int main() {
    cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
    int clk_khz = 0; cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, 0);
    const int sms = p.multiProcessorCount, threads = 256, blocks = sms * 8;
    const uint32_t iters = 1 << 16;
    void* buf; cudaMalloc(&buf, (size_t)blocks * threads * 8);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    const double ops = (double)blocks * threads * iters * N;
    for (int rep = 0; rep < 3; rep++) {
        for (int which = 0; which < 3; which++) {
            cudaEventRecord(e0);
            if (which == 0) imad<<<blocks, threads>>>((uint64_t*)buf, iters, 0x9e3779b9u);
            if (which == 1) dfma<<<blocks, threads>>>((double*)buf, iters, 0.999999, 1e-9);
            if (which == 2) both<<<blocks, threads>>>((uint64_t*)buf, iters, 0x9e3779b9u, 0.999999, 1e-9);
            cudaEventRecord(e1); cudaEventSynchronize(e1);
            float ms; cudaEventElapsedTime(&ms, e0, e1);
            const double rate = ops / (ms * 1e-3);
            const char* name = which == 0 ? "IMAD.WIDE" : which == 1 ? "DFMA" : "IMAD.WIDE+DFMA (each)";
            printf("%-22s %8.2f ms  %7.3f T/s  %6.2f per SM per clock at %d MHz\n", name, ms, rate / 1e12,
                   rate / sms / (clk_khz * 1e3), clk_khz / 1000);
        }
    }
    printf("%s, %d SMs, error: %s\n", p.name, sms, cudaGetErrorString(cudaGetLastError()));
    return 0;
}
