// transfer experiment: staged pinned copies of a 170 MB host array (issue 15)
#include <cuda_runtime.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include <time.h>
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int nthreads = 16;
static void copy_threaded(void *dst, const void *src, size_t bytes) {
    const int parts = nthreads;
#pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int k = 0; k < parts; ++k) {
        size_t lo = bytes * k / parts, hi = bytes * (k + 1) / parts;
        memcpy((char *)dst + lo, (const char *)src + lo, hi - lo);
    }
}
static cudaEvent_t ev[2];
static void h2d(void *dst, const void *src, size_t bytes, char *pinned, size_t chunk, cudaStream_t s) {
    for (size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
        size_t n = std::min(chunk, bytes - off);
        char *buf = pinned + (k & 1) * chunk;
        if (k >= 2) cudaEventSynchronize(ev[k & 1]);
        copy_threaded(buf, (const char *)src + off, n);
        cudaMemcpyAsync((char *)dst + off, buf, n, cudaMemcpyHostToDevice, s);
        cudaEventRecord(ev[k & 1], s);
    }
    cudaStreamSynchronize(s);
}
static void d2h(void *dst, const void *src, size_t bytes, char *pinned, size_t chunk, cudaStream_t s) {
    size_t chunks = (bytes + chunk - 1) / chunk;
    for (size_t k = 0; k < chunks + 2; ++k) {
        if (k >= 2) { size_t j = k - 2, off = j * chunk; cudaEventSynchronize(ev[j & 1]);
            copy_threaded((char *)dst + off, pinned + (j & 1) * chunk, std::min(chunk, bytes - off)); }
        if (k < chunks) { size_t off = k * chunk, n = std::min(chunk, bytes - off);
            cudaMemcpyAsync(pinned + (k & 1) * chunk, (const char *)src + off, n, cudaMemcpyDeviceToHost, s);
            cudaEventRecord(ev[k & 1], s); }
    }
}
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main() {
    const size_t bytes = (size_t)24 * 24 * 24 * 64 * 24 * 8;
    char *a = (char *)malloc(bytes), *b = (char *)malloc(bytes), *d;
    memset(a, 1, bytes); memset(b, 2, bytes);
    cudaMalloc(&d, bytes);
    cudaStream_t s; cudaStreamCreate(&s);
    cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming); cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming);
    char *pinned; cudaHostAlloc((void **)&pinned, 2 * (64 << 20), 0);
    printf("bytes %zu (%.1f MB); omp max threads %d\n", bytes, bytes / 1e6, omp_get_max_threads());
    const int R = 7;
    { std::vector<double> t; for (int r = 0; r < R; ++r) { double t0 = now(); copy_threaded(b, a, bytes); t.push_back(now() - t0); }
      printf("host memcpy 16 threads: %.2f ms %.1f GB/s\n", med(t) * 1e3, bytes / med(t) * 1e-9); }
    { std::vector<double> t, u; for (int r = 0; r < R; ++r) { double t0 = now(); cudaMemcpy(d, a, bytes, cudaMemcpyHostToDevice); t.push_back(now() - t0);
        t0 = now(); cudaMemcpy(b, d, bytes, cudaMemcpyDeviceToHost); u.push_back(now() - t0); }
      printf("pageable cudaMemcpy: h2d %.2f ms (%.1f GB/s)  d2h %.2f ms (%.1f GB/s)\n", med(t) * 1e3, bytes / med(t) * 1e-9, med(u) * 1e3, bytes / med(u) * 1e-9); }
    {   double t0 = now(); cudaHostRegister(a, bytes, 0); double reg = now() - t0; std::vector<double> t, u;
        for (int r = 0; r < R; ++r) { t0 = now(); cudaMemcpy(d, a, bytes, cudaMemcpyHostToDevice); t.push_back(now() - t0);
            t0 = now(); cudaMemcpy(a, d, bytes, cudaMemcpyDeviceToHost); u.push_back(now() - t0); }
        t0 = now(); cudaHostUnregister(a); double unreg = now() - t0;
        printf("registered (pinned) direct: h2d %.2f ms (%.1f GB/s)  d2h %.2f ms (%.1f GB/s); register %.2f ms unregister %.2f ms\n",
               med(t) * 1e3, bytes / med(t) * 1e-9, med(u) * 1e3, bytes / med(u) * 1e-9, reg * 1e3, unreg * 1e3); }
    int ths[] = {4, 8, 16}; size_t chs[] = {2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20};
    for (int th : ths) for (size_t ch : chs) {
        nthreads = th; std::vector<double> t, u;
        for (int r = 0; r < R; ++r) { double t0 = now(); h2d(d, a, bytes, pinned, ch, s); t.push_back(now() - t0);
            t0 = now(); d2h(b, d, bytes, pinned, ch, s); u.push_back(now() - t0); }
        printf("staged threads %2d chunk %2zu MB: h2d %6.2f ms (%5.1f GB/s) d2h %6.2f ms (%5.1f GB/s)  [d2h min %.2f max %.2f]\n", th, ch >> 20,
               med(t) * 1e3, bytes / med(t) * 1e-9, med(u) * 1e3, bytes / med(u) * 1e-9, *std::min_element(u.begin(), u.end()) * 1e3, *std::max_element(u.begin(), u.end()) * 1e3);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
