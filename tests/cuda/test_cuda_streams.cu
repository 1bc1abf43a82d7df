// The CUDA executor's contract with its caller: runs on two streams from two
// host threads at once (each with its own cuBLAS context), a plan captured
// into a CUDA graph and replayed, a caller's workspace of
// fx::workspace_bytes and the errors for a workspace too small or for
// scratch needed during capture.
#include <thread>

#include "device_support.hpp"

namespace {

using namespace fxt;
using fxt::cuda::arena;
using fxt::cuda::stream_guard;
using bf = fx::bf16;

// A matmul between two fused groups, a row reduction and a column
// reduction: intermediates, cuBLAS and partial states in one plan.
constexpr auto block = fx::trace([](fx::tensor<bf, 2> x, fx::tensor<bf, 2> w, fx::tensor<bf, 1> g) {
  auto h = fx::ops::gelu(fx::matmul(fx::ops::rms_norm(x, g, 1e-5), w));
  return std::tuple{h, fx::sum<0>(fx::convert<float>(h))};
});

template <class T, int R>
fx::host_tensor<T, R> download(const fx::view<T, R>& d) {
  fx::host_tensor<T, R> h(d.extents());
  CUDA_REQUIRE(cudaMemcpy(h.data(), d.data(), static_cast<std::size_t>(h.size()) * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

struct block_case {
  fx::host_tensor<bf, 2> x, w;
  fx::host_tensor<bf, 1> g;
  block_case(int rows) : x(random_tensor<bf, 2>({rows, 512})), w(random_tensor<bf, 2>({512, 384}, -0.1, 0.1)),
                         g(random_tensor<bf, 1>({512})) {}
};

}  // namespace

TEST_CASE("cuda: two host threads on two streams", "[cuda]") {
  const auto plan = fx::partition(block);
  block_case c0(1000), c1(333);
  const auto ref0 = fx::evaluate(block, fx::reference, c0.x, c0.w, c0.g);
  const auto ref1 = fx::evaluate(block, fx::reference, c1.x, c1.w, c1.g);
  bool ok[2] = {false, false};
  auto worker = [&](int k, const block_case& c, fx::host_tensor<bf, 2>& h, fx::host_tensor<float, 1>& s) {
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) return;
    arena a;
    const auto dx = a.copy(c.x), dw = a.copy(c.w);
    const auto dg = a.copy(c.g);
    auto dh = a.copy(h);
    auto ds = a.copy(s);
    for (int rep = 0; rep < 20; ++rep)  // interleave with the other thread's GEMMs
      fx::run(plan, fx::cuda_stream{st}, fx::inputs(fx::view<const bf, 2>(dx), fx::view<const bf, 2>(dw), fx::view<const bf, 1>(dg)),
              fx::outputs(dh, ds));
    ok[k] = cudaStreamSynchronize(st) == cudaSuccess;
    cudaMemcpy(h.data(), dh.data(), static_cast<std::size_t>(h.size()) * sizeof(bf), cudaMemcpyDeviceToHost);
    cudaMemcpy(s.data(), ds.data(), static_cast<std::size_t>(s.size()) * sizeof(float), cudaMemcpyDeviceToHost);
    cudaStreamDestroy(st);
  };
  fx::host_tensor<bf, 2> h0({1000, 384}), h1({333, 384});
  fx::host_tensor<float, 1> s0({384}), s1({384});
  std::thread t0(worker, 0, std::cref(c0), std::ref(h0), std::ref(s0));
  std::thread t1(worker, 1, std::cref(c1), std::ref(h1), std::ref(s1));
  t0.join();
  t1.join();
  REQUIRE(ok[0]);
  REQUIRE(ok[1]);
  require_close(h0, std::get<0>(ref0), "thread 0 output");
  require_close(h1, std::get<0>(ref1), "thread 1 output");
  // the column sums of bf16 values over many rows: compare at bf16 precision
  for (int j = 0; j < 384; ++j) {
    REQUIRE(close_as<bf>(s0(j), std::get<1>(ref0)(j)));
    REQUIRE(close_as<bf>(s1(j), std::get<1>(ref1)(j)));
  }
}

TEST_CASE("cuda: a caller's workspace, and capture into a CUDA graph", "[cuda]") {
  const auto plan = fx::partition(block);
  block_case c(700);
  const auto ref = fx::evaluate(block, fx::reference, c.x, c.w, c.g);
  stream_guard s;
  arena a;
  const fx::view<const bf, 2> dx = a.copy(c.x), dw = a.copy(c.w);
  const fx::view<const bf, 1> dg = a.copy(c.g);
  auto dh = a.copy(std::get<0>(ref));
  auto ds = a.copy(std::get<1>(ref));
  const auto in = fx::inputs(dx, dw, dg);
  const std::size_t need = fx::workspace_bytes(plan, in);
  INFO("workspace_bytes = " << need);
  REQUIRE(need > 0);

  SECTION("a workspace too small is an error naming the sizes") {
    void* ws = a.bytes(need / 2);
    REQUIRE_THROWS_AS(fx::run(plan, fx::cuda_stream{s, ws, need / 2}, in, fx::outputs(dh, ds)), fx::argument_error);
  }
  SECTION("runs on exactly workspace_bytes, then captured and replayed") {
    void* ws = a.bytes(need);
    fx::cuda_context ctx(s);
    const fx::cuda_stream on{s, ws, need, &ctx};
    CUDA_REQUIRE(cudaMemsetAsync(dh.data(), 0, static_cast<std::size_t>(dh.size()) * sizeof(bf), s));
    fx::run(plan, on, in, fx::outputs(dh, ds));
    CUDA_REQUIRE(cudaStreamSynchronize(s));
    require_close(download(dh), std::get<0>(ref), "run on the caller's workspace");

    cudaGraph_t graph = nullptr;
    CUDA_REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    fx::run(plan, on, in, fx::outputs(dh, ds));
    CUDA_REQUIRE(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec = nullptr;
    CUDA_REQUIRE(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_REQUIRE(cudaMemsetAsync(dh.data(), 0, static_cast<std::size_t>(dh.size()) * sizeof(bf), s));
    for (int rep = 0; rep < 3; ++rep) CUDA_REQUIRE(cudaGraphLaunch(exec, s));
    CUDA_REQUIRE(cudaStreamSynchronize(s));
    require_close(download(dh), std::get<0>(ref), "graph replay");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  SECTION("capture without a workspace is an error, not an allocation") {
    fx::cuda_context ctx(s);
    cudaGraph_t graph = nullptr;
    CUDA_REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    bool threw = false;
    try {
      fx::run(plan, fx::cuda_stream{s, nullptr, 0, &ctx}, in, fx::outputs(dh, ds));
    } catch (const fx::argument_error& e) {
      threw = std::string(e.what()).find("capture") != std::string::npos;
    }
    cudaStreamEndCapture(s, &graph);
    if (graph) cudaGraphDestroy(graph);
    REQUIRE(threw);
  }
  SECTION("a context of another stream is an error") {
    stream_guard other;
    fx::cuda_context ctx(other);
    REQUIRE_THROWS_AS(fx::run(plan, fx::cuda_stream{s, nullptr, 0, &ctx}, in, fx::outputs(dh, ds)), fx::argument_error);
  }
}
