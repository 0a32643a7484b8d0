// hecate-validate, single-GPU suites: the expert-FFN GEMMs the compute cost model predicts (cuBLAS,
// bf16 inputs, fp32 accumulation, over a grid of tokens per expert), once as separate calls for one
// expert and once as one strided-batched call per weight matrix over `--experts` experts with equal
// token counts (what a grouped MoE kernel does: one launch per layer), and the HBM copy rate. Writes
// measured.json (schema hecate-sim/measured@1) for `hecate-sim validate`, which compares the cost
// model with it and fits the GEMM efficiency curve.
//
// Timing: CUDA events around each call, warm-up calls first, the median over repetitions; inputs
// are random (never zero) and the weights rotate over enough buffers to defeat the L2 cache. Every
// CUDA and cuBLAS return code is checked. `--self-test` checks a GEMM against a CPU reference and
// the copy byte for byte, then exits 0 (pass), 1 (fail) or 77 (no GPU: skipped).
//
// Depends on the CUDA runtime and cuBLAS only, so the binary runs on GPU machines that lack the
// simulator's other libraries.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

namespace {

struct Fatal {
  std::string what;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Fatal{std::string(what) + ": " + cudaGetErrorString(e)};
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Fatal{std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s))};
}

struct Options {
  long d_model = 2048, d_ffn = 8192;
  int mats = 2;  // GEMMs in an expert's forward: 2 (GELU MLP) or 3 (SwiGLU)
  int experts = 8;  // experts of one GPU in the batched suite
  std::vector<long> tokens{16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192};
  int reps = 30, warmup = 5;
  double hbm_bytes = 2.0 * (1 << 30);
  std::string out = "measured.json";
  bool self_test = false;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "hecate-validate: %s\n"
               "usage: hecate-validate [--d-model D] [--d-ffn F] [--mats 2|3] [--experts E] [--tokens T1,T2,...] [--reps R]\n"
               "                       [--hbm-bytes B] [--out FILE] | --self-test\n",
               msg);
  std::exit(2);
}

long parse_long(const char* s, const char* flag) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!end || *end || v <= 0) usage((std::string(flag) + " expects a positive integer, got '" + s + "'").c_str());
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--d-model") o.d_model = parse_long(next(), "--d-model");
    else if (a == "--d-ffn") o.d_ffn = parse_long(next(), "--d-ffn");
    else if (a == "--mats") {
      o.mats = static_cast<int>(parse_long(next(), "--mats"));
      if (o.mats != 2 && o.mats != 3) usage("--mats expects 2 (GELU) or 3 (SwiGLU)");
    } else if (a == "--tokens") {
      o.tokens.clear();
      std::string list = next();
      size_t p = 0;
      while (p <= list.size()) {
        const size_t q = list.find(',', p);
        const std::string item = list.substr(p, q == std::string::npos ? std::string::npos : q - p);
        o.tokens.push_back(parse_long(item.c_str(), "--tokens"));
        if (q == std::string::npos) break;
        p = q + 1;
      }
    } else if (a == "--experts") o.experts = static_cast<int>(parse_long(next(), "--experts"));
    else if (a == "--reps") o.reps = static_cast<int>(parse_long(next(), "--reps"));
    else if (a == "--hbm-bytes") o.hbm_bytes = static_cast<double>(parse_long(next(), "--hbm-bytes"));
    else if (a == "--out") o.out = next();
    else if (a == "--self-test") o.self_test = true;
    else usage(("unknown argument '" + a + "'").c_str());
  }
  return o;
}

// Uniform in [-1, 1), never 0, from a hash of (index, seed): filled on the GPU (host generation of
// a few GB of weights took minutes).
__global__ void fill_random(__nv_bfloat16* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    float v = static_cast<float>(z >> 40) / static_cast<float>(1ull << 23) - 1.0f;
    if (v == 0.0f) v = 0.5f;
    p[i] = __float2bfloat16(v);
  }
}

__nv_bfloat16* random_bf16(size_t n, uint64_t seed) {
  __nv_bfloat16* d = nullptr;
  check(cudaMalloc(&d, n * sizeof(__nv_bfloat16)), "cudaMalloc");
  fill_random<<<1024, 256>>>(d, n, seed);
  check(cudaGetLastError(), "fill_random launch");
  check(cudaDeviceSynchronize(), "fill_random");
  return d;
}

// Row-major C[m x n] = A[m x k] * B[k x n], as cuBLAS's column-major C^T = B^T A^T.
void gemm(cublasHandle_t h, long m, long n, long k, const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c) {
  const float one = 1.0f, zero = 0.0f;
  check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one, b,
                     CUDA_R_16BF, static_cast<int>(n), a, CUDA_R_16BF, static_cast<int>(k), &zero, c, CUDA_R_16BF,
                     static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Device time of `call()` per call: `warmup` untimed calls, then CUDA events around each of `reps`.
template <class F>
std::vector<double> time_calls(int reps, int warmup, F&& call) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) call(i);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(e0), "cudaEventRecord");
    call(warmup + i);
    check(cudaEventRecord(e1), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    t.push_back(ms * 1e-3);
  }
  check(cudaEventDestroy(e0), "cudaEventDestroy");
  check(cudaEventDestroy(e1), "cudaEventDestroy");
  return t;
}

struct GemmResult {
  long m, n, k;
  double median_s, min_s, max_s;
};

// Times C = A x W for `reps` calls, rotating over enough weight buffers to exceed the L2 cache.
GemmResult time_gemm(cublasHandle_t h, long m, long n, long k, int reps, int warmup, size_t l2_bytes) {
  const size_t wbytes = static_cast<size_t>(k) * n * sizeof(__nv_bfloat16);
  const int nbuf = static_cast<int>(std::min<size_t>(8, std::max<size_t>(1, 2 * l2_bytes / wbytes + 1)));
  std::vector<__nv_bfloat16*> w(nbuf);
  for (int i = 0; i < nbuf; ++i) w[i] = random_bf16(static_cast<size_t>(k) * n, 100 + i);
  __nv_bfloat16* a = random_bf16(static_cast<size_t>(m) * k, 7);
  __nv_bfloat16* c = nullptr;
  check(cudaMalloc(&c, static_cast<size_t>(m) * n * sizeof(__nv_bfloat16)), "cudaMalloc");
  const auto t = time_calls(reps, warmup, [&](int i) { gemm(h, m, n, k, a, w[i % nbuf], c); });
  for (auto* p : w) check(cudaFree(p), "cudaFree");
  check(cudaFree(a), "cudaFree");
  check(cudaFree(c), "cudaFree");
  return {m, n, k, median(t), *std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end())};
}

// Times E GEMMs C_e = A_e x W_e (e < E) in one cublasGemmStridedBatchedEx call, rotating weights.
double time_batched(cublasHandle_t h, long m, long n, long k, int experts, int reps, int warmup, size_t l2_bytes) {
  const size_t wn = static_cast<size_t>(k) * n * experts;
  const size_t wbytes = wn * sizeof(__nv_bfloat16);
  const int nbuf = static_cast<int>(std::min<size_t>(8, std::max<size_t>(1, 2 * l2_bytes / wbytes + 1)));
  std::vector<__nv_bfloat16*> w(nbuf);
  for (int i = 0; i < nbuf; ++i) w[i] = random_bf16(wn, 200 + i);
  __nv_bfloat16* a = random_bf16(static_cast<size_t>(m) * k * experts, 9);
  __nv_bfloat16* c = nullptr;
  check(cudaMalloc(&c, static_cast<size_t>(m) * n * experts * sizeof(__nv_bfloat16)), "cudaMalloc");
  const float one = 1.0f, zero = 0.0f;
  auto call = [&](const __nv_bfloat16* wb) {
    // Row-major C_e[m x n] = A_e[m x k] W_e[k x n], as column-major C_e^T = W_e^T A_e^T.
    check(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                     static_cast<int>(k), &one, wb, CUDA_R_16BF, static_cast<int>(n),
                                     static_cast<long long>(k) * n, a, CUDA_R_16BF, static_cast<int>(k),
                                     static_cast<long long>(m) * k, &zero, c, CUDA_R_16BF, static_cast<int>(n),
                                     static_cast<long long>(m) * n, experts, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  };
  const auto t = time_calls(reps, warmup, [&](int i) { call(w[i % nbuf]); });
  for (auto* p : w) check(cudaFree(p), "cudaFree");
  check(cudaFree(a), "cudaFree");
  check(cudaFree(c), "cudaFree");
  return median(t);
}

struct CopyResult {
  double bytes, median_s, gbps;  // gbps counts bytes read plus bytes written
};

CopyResult time_copy(double bytes, int reps) {
  const size_t n = static_cast<size_t>(bytes);
  void *src = nullptr, *dst = nullptr;
  check(cudaMalloc(&src, n), "cudaMalloc");
  check(cudaMalloc(&dst, n), "cudaMalloc");
  check(cudaMemset(src, 0x5a, n), "cudaMemset");
  const auto t = time_calls(reps, 1, [&](int) {
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync D2D");
  });
  check(cudaFree(src), "cudaFree");
  check(cudaFree(dst), "cudaFree");
  const double med = median(t);
  return {bytes, med, 2 * bytes / med / 1e9};
}

// GEMM against a CPU reference on the same bf16 inputs, and a copy checked byte for byte.
bool self_test(cublasHandle_t h) {
  const long m = 96, n = 160, k = 256;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<__nv_bfloat16> ha(m * k), hb(k * n), hc(m * n);
  for (auto& x : ha) x = __float2bfloat16(u(rng));
  for (auto& x : hb) x = __float2bfloat16(u(rng));
  __nv_bfloat16 *a, *b, *c;
  check(cudaMalloc(&a, ha.size() * 2), "cudaMalloc");
  check(cudaMalloc(&b, hb.size() * 2), "cudaMalloc");
  check(cudaMalloc(&c, hc.size() * 2), "cudaMalloc");
  check(cudaMemcpy(a, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(b, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  gemm(h, m, n, k, a, b, c);
  check(cudaMemcpy(hc.data(), c, hc.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  double worst = 0;
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        const double x = __bfloat162float(ha[i * k + p]) * __bfloat162float(hb[p * n + j]);
        ref += x;
        mag += std::fabs(x);
      }
      // bf16 output: relative rounding 2^-8 of the result, plus fp32 accumulation noise.
      worst = std::max(worst, std::fabs(__bfloat162float(hc[i * n + j]) - ref) / (std::fabs(ref) / 128 + mag * 1e-5 + 1e-6));
    }
  check(cudaFree(a), "cudaFree");
  check(cudaFree(b), "cudaFree");
  check(cudaFree(c), "cudaFree");
  const size_t bytes = 1 << 24;
  std::vector<unsigned char> src(bytes), back(bytes);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(rng());
  void *d0, *d1;
  check(cudaMalloc(&d0, bytes), "cudaMalloc");
  check(cudaMalloc(&d1, bytes), "cudaMalloc");
  check(cudaMemcpy(d0, src.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(d1, d0, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  check(cudaMemcpy(back.data(), d1, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(d0), "cudaFree");
  check(cudaFree(d1), "cudaFree");
  const bool copy_ok = std::memcmp(src.data(), back.data(), bytes) == 0;
  std::printf("self-test: GEMM %ldx%ldx%ld worst error %.3f of tolerance (%s); D2D copy of %zu bytes %s\n", m, n, k, worst,
              worst <= 1.0 ? "ok" : "FAIL", bytes, copy_ok ? "identical" : "DIFFERS");
  return worst <= 1.0 && copy_ok;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) o += ch;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "hecate-validate: no CUDA device; skipped\n");
    return 77;
  }
  try {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    cublasHandle_t h;
    check(cublasCreate(&h), "cublasCreate");
    if (o.self_test) {
      const bool ok = self_test(h);
      check(cublasDestroy(h), "cublasDestroy");
      return ok ? 0 : 1;
    }
    int runtime = 0, driver = 0, cublas_version = 0;
    check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    check(cublasGetVersion(h, &cublas_version), "cublasGetVersion");
    const size_t l2 = static_cast<size_t>(prop.l2CacheSize);
    std::vector<std::pair<long, std::vector<GemmResult>>> rows;
    std::printf("%8s %12s %12s %12s %10s\n", "tokens", "up ms", "down ms", "ffn fwd ms", "TFLOP/s");
    for (long t : o.tokens) {
      std::vector<GemmResult> g;
      // Up projection(s) [t x d_model] x [d_model x d_ffn] (two for SwiGLU: gate and up), then down.
      for (int i = 0; i + 1 < o.mats; ++i) g.push_back(time_gemm(h, t, o.d_ffn, o.d_model, o.reps, o.warmup, l2));
      g.push_back(time_gemm(h, t, o.d_model, o.d_ffn, o.reps, o.warmup, l2));
      double total = 0;
      for (const auto& x : g) total += x.median_s;
      const double flops = 2.0 * t * o.d_model * o.d_ffn * o.mats;
      std::printf("%8ld %12.4f %12.4f %12.4f %10.1f\n", t, g.front().median_s * 1e3, g.back().median_s * 1e3, total * 1e3,
                  flops / total / 1e12);
      rows.push_back({t, g});
    }
    std::vector<std::pair<long, double>> batched;
    std::printf("%8s %12s %10s   (%d experts, one strided-batched call per matrix)\n", "tokens", "layer ms", "TFLOP/s",
                o.experts);
    for (long t : o.tokens) {
      double total = 0;
      for (int i = 0; i + 1 < o.mats; ++i) total += time_batched(h, t, o.d_ffn, o.d_model, o.experts, o.reps, o.warmup, l2);
      total += time_batched(h, t, o.d_model, o.d_ffn, o.experts, o.reps, o.warmup, l2);
      const double flops = 2.0 * t * o.d_model * o.d_ffn * o.mats * o.experts;
      std::printf("%8ld %12.4f %10.1f\n", t, total * 1e3, flops / total / 1e12);
      batched.push_back({t, total});
    }
    const CopyResult cp = time_copy(o.hbm_bytes, o.reps);
    std::printf("HBM device-to-device copy: %.2f GB in %.3f ms = %.0f GB/s (read + write)\n", cp.bytes / 1e9, cp.median_s * 1e3,
                cp.gbps);
    check(cublasDestroy(h), "cublasDestroy");

    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::string js;
    char buf[512];
    js += "{\n  \"schema\": \"hecate-sim/measured@1\",\n";
    std::snprintf(buf, sizeof buf,
                  "  \"device\": {\"name\": \"%s\", \"sms\": %d, \"memory_bytes\": %zu, \"l2_bytes\": %d, \"cc\": \"%d.%d\", "
                  "\"cuda_runtime\": %d, \"driver\": %d, \"cublas\": %d},\n",
                  json_escape(prop.name).c_str(), prop.multiProcessorCount, prop.totalGlobalMem, prop.l2CacheSize, prop.major,
                  prop.minor, runtime, driver, cublas_version);
    js += buf;
    std::snprintf(buf, sizeof buf,
                  "  \"when\": \"%s\",\n  \"method\": \"CUDA events per call, %d warm-up calls, median of %d, random bf16 inputs, "
                  "weights rotated over buffers exceeding L2\",\n",
                  stamp, o.warmup, o.reps);
    js += buf;
    std::snprintf(buf, sizeof buf,
                  "  \"expert_ffn\": {\"d_model\": %ld, \"d_ffn\": %ld, \"mats\": %d, \"dtype\": \"bf16\", \"accumulate\": \"fp32\", "
                  "\"rows\": [\n",
                  o.d_model, o.d_ffn, o.mats);
    js += buf;
    for (size_t r = 0; r < rows.size(); ++r) {
      double total = 0;
      for (const auto& x : rows[r].second) total += x.median_s;
      std::snprintf(buf, sizeof buf, "    {\"tokens\": %ld, \"forward_s\": %.9g, \"gemms\": [", rows[r].first, total);
      js += buf;
      for (size_t i = 0; i < rows[r].second.size(); ++i) {
        const auto& x = rows[r].second[i];
        std::snprintf(buf, sizeof buf, "%s{\"m\": %ld, \"n\": %ld, \"k\": %ld, \"median_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g}",
                      i ? ", " : "", x.m, x.n, x.k, x.median_s, x.min_s, x.max_s);
        js += buf;
      }
      js += r + 1 < rows.size() ? "]},\n" : "]}\n";
    }
    js += "  ]},\n";
    std::snprintf(buf, sizeof buf,
                  "  \"expert_ffn_batched\": {\"experts\": %d, \"call\": \"cublasGemmStridedBatchedEx, one per weight matrix\", "
                  "\"rows\": [\n",
                  o.experts);
    js += buf;
    for (size_t r = 0; r < batched.size(); ++r) {
      std::snprintf(buf, sizeof buf, "    {\"tokens\": %ld, \"forward_s\": %.9g}%s\n", batched[r].first, batched[r].second,
                    r + 1 < batched.size() ? "," : "");
      js += buf;
    }
    js += "  ]},\n";
    std::snprintf(buf, sizeof buf, "  \"hbm_copy\": {\"bytes\": %.0f, \"median_s\": %.9g, \"bandwidth_Bps\": %.6g}\n}\n", cp.bytes,
                  cp.median_s, cp.gbps * 1e9);
    js += buf;
    // Atomic: write a temporary beside the target, then rename over it.
    const std::string tmp = o.out + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(js.data(), 1, js.size(), f) != js.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "hecate-validate: cannot write %s\n", tmp.c_str());
      std::remove(tmp.c_str());
      return 1;
    }
    if (std::rename(tmp.c_str(), o.out.c_str()) != 0) {
      std::fprintf(stderr, "hecate-validate: cannot rename %s to %s\n", tmp.c_str(), o.out.c_str());
      std::remove(tmp.c_str());
      return 1;
    }
    std::printf("wrote %s\n", o.out.c_str());
  } catch (const Fatal& e) {
    std::fprintf(stderr, "hecate-validate: %s\n", e.what.c_str());
    return 1;
  }
  return 0;
}
