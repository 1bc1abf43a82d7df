// The seed's benchmark, fusex rows: litgpt's qkv split + RoPE forward and
// backward in bf16 over the LitGPT configs, at batch sizes 1 and 2, under
// each fusex executor (fused with the hand-derived backward, fused with the
// prim-VJP backward, greedy claim with a cat claimant, unfused), beside a
// copy of the case's minimum bytes timed in the same run. Every executor's
// output is checked against a float64 scalar reference before it is timed;
// one that is wrong is reported as an error, not timed.
//
//   bench_rope [--quick] [--t-cap=N] [--layout=blocks|grouped]
//              [--device=cpu|cuda] [--configs=FILE] [Google Benchmark flags]
//
// Names: rope/<config>/bs<B>/<forward|backward>/<executor>. The context of
// the JSON output records the device, the layout and the T cap.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <optional>

#include "host_timing.hpp"
#include "rope_cases.hpp"
#if defined(__CUDACC__)
#include "cuda_timing.hpp"
#endif

#ifndef FUSEX_VERSION_STRING
#define FUSEX_VERSION_STRING "0.1.0"
#endif
#ifndef FUSEX_ROPE_CONFIGS
#define FUSEX_ROPE_CONFIGS "bench/data/rope_bench_configs.csv"
#endif

namespace {

namespace fx = fusex;
namespace rb = bench::rope;
using fx::ops::qkv_layout;

struct options {
  bool quick = false, cuda = false;
  int t_cap = 2048;
  qkv_layout layout = qkv_layout::blocks;
  std::string configs = FUSEX_ROPE_CONFIGS;
};

// The inputs of the case being timed; benchmarks run in registration order,
// so one case at a time is alive.
std::optional<rb::inputs> current;
const rb::inputs& case_for(const rb::config& c, int B, int T, qkv_layout l) {
  if (!current || current->c.name != c.name || current->B != B || current->T != T) {
    current.reset();
    current.emplace(c, B, T, l);
  }
  return *current;
}

// Runs `plan` once on the chosen device, returning its outputs on the host.
template <class Plan, class Args>
auto outputs_of(Plan plan, const Args& args, bool cuda) {
  auto out = fx::detail::as_tuple(std::apply([&](const auto&... a) { return fx::evaluate(plan, fx::host{}, a...); }, args));
#if defined(__CUDACC__)
  if (cuda) {
    bench::gpu::device_arena arena;
    cudaStream_t s;
    bench::gpu::check(cudaStreamCreate(&s), "cudaStreamCreate");
    {
      fx::cuda_context ctx(s);
      const auto in = std::apply([&](const auto&... a) { return fx::inputs(bench::gpu::device_input(arena, a)...); }, args);
      const auto dev = std::apply([&](const auto&... o) { return std::tuple{arena.upload(o)...}; }, out);
      const std::size_t ws = fx::workspace_bytes(plan, in);
      const fx::cuda_stream on{s, ws ? arena.bytes(ws) : nullptr, ws, &ctx};
      std::apply([&](const auto&... d) { fx::run(plan, on, in, fx::outputs(d...)); }, dev);
      bench::gpu::check(cudaStreamSynchronize(s), "fusex::run (rope benchmark check)");
      std::apply([&](auto&... h) {
        std::apply([&](const auto&... d) {
          (bench::gpu::check(cudaMemcpy(h.data(), d.data(), static_cast<std::size_t>(h.size()) * sizeof(*h.data()),
                                   cudaMemcpyDeviceToHost), "cudaMemcpy"), ...);
        }, dev);
      }, out);
    }
    cudaStreamDestroy(s);
  }
#else
  (void)cuda;
#endif
  return out;
}

template <class Plan, class Args>
void time_plan(benchmark::State& st, Plan plan, const Args& args, bool cuda) {
#if defined(__CUDACC__)
  if (cuda) return std::apply([&](const auto&... a) { bench::gpu::run_plan(st, plan, a...); }, args);
#else
  (void)cuda;
#endif
  std::apply([&](const auto&... a) { bench::run_plan(st, plan, a...); }, args);
}

void copy(benchmark::State& st, double bytes, bool cuda) {
#if defined(__CUDACC__)
  if (cuda) return bench::gpu::copy_limit(st, bytes);
#else
  (void)cuda;
#endif
  bench::copy_limit(st, bytes);
}

// One executor in one direction of one case: checked, then timed.
template <qkv_layout L, int Dir>
void run_case(benchmark::State& st, const rb::config& c, int B, int T, int e, bool cuda) {
  const rb::inputs& in = case_for(c, B, T, L);
  rb::with_plan<L, Dir>(e, [&](auto plan, auto v) {
    using V = decltype(v);
    const auto fargs = in.forward_args();
    rb::check_result r;
    if constexpr (Dir == 0) {
      const auto out = outputs_of(plan, fargs, cuda);
      r = rb::check_forward(in, std::get<0>(out), std::get<1>(out), std::get<2>(out));
      if (r.ok()) time_plan(st, plan, fargs, cuda);
    } else {
      // the backward's arguments: the forward's, its results (outputs and saved values), the cotangents
      const auto fwd = fx::detail::as_tuple(
          std::apply([&](const auto&... a) { return fx::evaluate(fx::partition(V::forward), fx::host{}, a...); }, fargs));
      const auto bargs = std::tuple_cat(fargs, std::apply([](const auto&... f) { return std::tuple{f.as_view()...}; }, fwd),
                                        in.cotangents());
      const auto out = outputs_of(plan, bargs, cuda);
      r = rb::check_backward(in, std::get<0>(out));
      if (r.ok()) time_plan(st, plan, bargs, cuda);
    }
    if (!r.ok()) {
      st.SkipWithError(("wrong against the float64 reference: " + r.text()).c_str());
      return;
    }
    st.counters["verified"] = 1;
    st.counters["worst_error_over_tolerance"] = r.worst_ratio;
    st.counters["min_bytes"] = rb::minimum_bytes(c, B, T);
    st.counters["T"] = T;
    st.counters["B"] = B;
  });
}

template <qkv_layout L>
void register_all(const options& o, const std::vector<rb::config>& configs) {
  for (const rb::config& c : configs)
    for (int B : {1, 2})
      for (int dir : {0, 1}) {
        const int T = std::min(c.block_size, o.t_cap);
        const std::string base = "rope/" + c.name + "/bs" + std::to_string(B) + (dir == 0 ? "/forward/" : "/backward/");
        const double bytes = rb::minimum_bytes(c, B, T);
        const bool cuda = o.cuda;
        // events time the GPU (manual time); the host is timed by the wall clock
        auto timing = [&](benchmark::internal::Benchmark* b) {
          b->Unit(benchmark::kMillisecond);
          if (cuda) b->UseManualTime();
          else b->UseRealTime();
        };
        auto* copy_b = benchmark::RegisterBenchmark((base + "copy").c_str(), [=](benchmark::State& st) {
          copy(st, bytes, cuda);
          st.counters["verified"] = 1;  // a copy has nothing to check
          st.counters["min_bytes"] = bytes;
          st.counters["T"] = T;
          st.counters["B"] = B;
        });
        timing(copy_b);
        for (int e = 0; e < 4; ++e)
          timing(benchmark::RegisterBenchmark((base + rb::executors[e]).c_str(), [=](benchmark::State& st) {
            if (dir == 0) run_case<L, 0>(st, c, B, T, e, cuda);
            else run_case<L, 1>(st, c, B, T, e, cuda);
          }));
      }
}

bool take(const char* arg, const char* flag, std::string& value) {
  const std::size_t n = std::strlen(flag);
  if (std::strncmp(arg, flag, n) != 0 || arg[n] != '=') return false;
  value = arg + n + 1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (std::strcmp(argv[i], "--quick") == 0) o.quick = true;
    else if (take(argv[i], "--t-cap", v)) o.t_cap = std::stoi(v);
    else if (take(argv[i], "--configs", v)) o.configs = v;
    else if (take(argv[i], "--layout", v)) {
      if (v != "blocks" && v != "grouped") return std::fprintf(stderr, "--layout: blocks or grouped, not %s\n", v.c_str()), 2;
      o.layout = v == "blocks" ? qkv_layout::blocks : qkv_layout::grouped;
    } else if (take(argv[i], "--device", v)) {
      if (v != "cpu" && v != "cuda") return std::fprintf(stderr, "--device: cpu or cuda, not %s\n", v.c_str()), 2;
      o.cuda = v == "cuda";
#if !defined(__CUDACC__)
      if (o.cuda) return std::fprintf(stderr, "--device=cuda: this build is host-only; run bench_rope_cuda\n"), 2;
#endif
    } else rest.push_back(argv[i]);
  }
  if (o.quick && o.t_cap > 128) o.t_cap = 128;
  std::vector<rb::config> configs;
  try {
    configs = rb::read_configs(o.configs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (o.quick) configs = rb::quick_subset(configs);
  if (o.layout == qkv_layout::blocks) register_all<qkv_layout::blocks>(o, configs);
  else register_all<qkv_layout::grouped>(o, configs);
  benchmark::AddCustomContext("fusex_device", o.cuda ? "cuda" : "cpu");
  benchmark::AddCustomContext("qkv_layout", o.layout == qkv_layout::blocks ? "blocks (litgpt >= 0.5.5)" : "grouped (litgpt 0.5.0-0.5.4)");
  benchmark::AddCustomContext("t_cap", std::to_string(o.t_cap));
  benchmark::AddCustomContext("library_versions", "fusex " FUSEX_VERSION_STRING ", compiler " __VERSION__);
  benchmark::AddCustomContext("configs", std::to_string(configs.size()) + (o.quick ? " (quick subset)" : ""));
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
