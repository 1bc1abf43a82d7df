#pragma once
// The host executor's groups on the row engine: pointwise writes, row
// reductions (a norm's or softmax's rows, each by one thread), and column
// reductions (over an outer axis: blocks of rows fixed by the extents,
// merged in block order). OpenMP shares rows, or pieces of long rows,
// among the threads; every result is independent of the thread count.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "accumulate.hpp"
#include "engine.hpp"

namespace fusex::detail::host_engine {

using codegen::static_for;

inline int default_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Orders the calling thread's streamed stores (stream_store) before what
// follows, here the end of its share of a launch: another thread or the
// next launch may read those outputs.
inline void end_share() {
#if FUSEX_HOST_SIMD
  simd::stream_fence();
#endif
}

// body(begin, end) on nt threads, each a contiguous share of [0, total).
template <class Body>
void split_among_threads(idx_t total, int nt, const Body& body) {
  if (nt <= 1 || total <= 1) {
    body(idx_t{0}, total);
    end_share();
    return;
  }
#pragma omp parallel num_threads(nt)
  {
#if defined(_OPENMP)
    const idx_t t = omp_get_thread_num(), k = omp_get_num_threads();
#else
    const idx_t t = 0, k = 1;
#endif
    body(total * t / k, total * (t + 1) / k);
    end_share();
  }
}

// The last-level cache's bytes: from Linux's sysfs, the first CPU's cache of
// the highest level that holds data, else 32 MiB. (sysconf's figure comes
// from the CPU's own report, which a virtual machine may leave at its host's
// size; index3 is not always the third level, nor present.)
inline std::size_t parse_cache_size(const std::string& text) {
  std::size_t i = 0, n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') n = n * 10 + static_cast<std::size_t>(text[i++] - '0');
  if (i < text.size() && (text[i] == 'K' || text[i] == 'k')) n <<= 10;
  else if (i < text.size() && (text[i] == 'M' || text[i] == 'm')) n <<= 20;
  return n;
}

inline std::size_t last_level_cache_bytes() {
  static const std::size_t bytes = [] {
    int best_level = 0;
    std::size_t n = 0;
    for (int index = 0; index < 16; ++index) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
      std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
      int level = 0;
      std::string type, size;
      if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) continue;
      if (type == "Instruction" || level <= best_level) continue;
      best_level = level;
      n = parse_cache_size(size);
    }
    return best_level >= 2 && n >= (std::size_t{1} << 20) ? n : std::size_t{32} << 20;
  }();
  return bytes;
}

// Does a launch stream its outputs past the caches (write_sink::stream)?
// Where they take half the last-level cache or more, they and what the
// launch reads would not stay there for a consumer; streamed, their lines
// are not read before they are written and evict none of the inputs (a
// norm's second pass over its row, the next launch's operands). `from`:
// host::stream_writes_from, the bytes from which to stream (0: half the
// last-level cache).
template <class C>
bool stream_writes(const group_args<C>& a, std::size_t from) {
  std::size_t bytes = 0;
  static_for<prog<C>::nwrites()>([&](auto ww) {
    constexpr int R = prog<C>::write_local(decltype(ww)::value);
    idx_t ext[max_rank] = {};
    static_for<prog<C>::rank(R)>([&](auto dd) {
      ext[decltype(dd)::value] = codegen::ext_of<C, prog<C>::shape(R, decltype(dd)::value)>(a);
    });
    std::size_t n = static_cast<std::size_t>(size_of(prog<C>::dt(R)));
    for (int d = 0; d < prog<C>::rank(R); ++d) n *= static_cast<std::size_t>(ext[d]);
    bytes += n;
  });
  return bytes >= (from > 0 ? from : last_level_cache_bytes() / 2);
}

// Extents of local U, from the group's expr slots.
template <class C, int U>
void extents_of(const group_args<C>& a, idx_t* ext) {
  static_for<prog<C>::rank(U)>([&](auto dd) {
    constexpr int d = decltype(dd)::value;
    ext[d] = codegen::ext_of<C, prog<C>::shape(U, d)>(a);
  });
}

// Scratch memory of the calling thread, kept between launches: a column
// reduction's partial states are megabytes, and fresh pages for them would
// cost more than the reduction (the kernel clears each page it maps).
inline void* scratch(std::size_t bytes) {
  thread_local std::vector<std::byte> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

// Work below this many elements runs on the calling thread: a parallel
// region costs microseconds.
inline constexpr idx_t parallel_threshold = idx_t{1} << 15;

// The rows of a space of extents ext (rank r >= 1), each cut into k pieces
// of `chunk` positions: piece(c, c0, c1, n, d, e, m) for n rows from
// coordinates c consecutive along outer axis d, and m such runs consecutive
// along the next outer axis e where whole runs follow each other in a
// thread's share (c[r - 1] free; n = 1 when rows are cut; m = 1, e = -1
// otherwise). Rows go in the order `order` gives the outer axes (outermost
// first). Threads take contiguous ranges of pieces and step the
// coordinates like an odometer.
template <class Piece>
void for_each_piece(const idx_t* ext, int r, int threads, const int* order, const Piece& piece) {
  idx_t rows = 1;
  for (int d = 0; d + 1 < r; ++d) rows *= ext[d];
  const idx_t L = ext[r - 1];
  if (rows == 0 || L == 0) return;
  int nt = threads > 0 ? threads : default_threads();
  if (rows * L < parallel_threshold) nt = 1;
  // pieces: rows alone when there are enough for the threads, else long
  // rows cut into chunks of at least 2048 positions
  idx_t k = 1;
  if (nt > 1 && rows < 4 * static_cast<idx_t>(nt)) {
    k = (4 * static_cast<idx_t>(nt) + rows - 1) / rows;
    const idx_t most = (L + 2047) / 2048;
    if (k > most) k = most;
    if (k < 1) k = 1;
  }
  idx_t chunk = (L + k - 1) / k;
  chunk = (chunk + V - 1) / V * V;
  k = (L + chunk - 1) / chunk;
  // the innermost axis of the order: rows along it come in runs, and runs
  // along the next one in groups of at most max_runs
  const int d = r >= 2 ? order[r - 2] : -1;
  const int e = r >= 3 ? order[r - 3] : -1;
  constexpr idx_t max_runs = 64;
  split_among_threads(rows * k, nt, [&](idx_t begin, idx_t end) {
    if (begin >= end) return;
    idx_t c[max_rank] = {};
    idx_t row = begin / k, part = begin % k;
    for (int j = r - 2; j >= 0; --j) {
      const int a = order[j];
      c[a] = row % ext[a];
      row /= ext[a];
    }
    idx_t it = begin;
    while (it < end) {
      idx_t run = 1;
      idx_t runs = 1;
      if (k == 1 && d >= 0) {
        run = ext[d] - c[d];
        if (run > end - it) run = end - it;
        if (e >= 0 && run == ext[d]) {
          runs = (end - it) / run;
          if (runs > ext[e] - c[e]) runs = ext[e] - c[e];
          if (runs > max_runs) runs = max_runs;
        }
        piece(c, 0, L, run, d, runs > 1 ? e : -1, runs);
        c[d] += run - 1;  // the last run's last row; the odometer steps past it
        if (runs > 1) c[e] += runs - 1;
      } else {
        const idx_t c0 = part * chunk, c1 = c0 + chunk < L ? c0 + chunk : L;
        piece(c, c0, c1, idx_t{1}, d, -1, idx_t{1});
      }
      it += run * runs;
      if (++part == k) {
        part = 0;
        for (int j = r - 2; j >= 0; --j) {
          const int a = order[j];
          if (++c[a] < ext[a]) break;
          c[a] = 0;
        }
      }
    }
  });
}

// The order of a pass's rows: outer axes that move what the rows write (and,
// less, what they read) far in memory go outside, so that consecutive rows
// write neighbouring memory: a write's rows go in tiles (engine::run_rows),
// whose lines stay in L1 until complete where the rows are neighbours,
// while rows that read far apart are prefetched ahead. (The q of a qkv
// split goes time step by time step within a head: consecutive time steps
// are neighbours in q, a qkv row apart in qkv.) Ties keep the axes' own
// order. Probed by binding the first segment at the origin and one step
// along each axis.
template <class E, class Sink>
void row_order(E& e, Sink& sink, const idx_t* ext, int r, int* order) {
  for (int d = 0; d + 1 < r; ++d) order[d] = d;
  if (r < 3) return;
  constexpr int NLEAF = static_cast<int>(std::tuple_size_v<std::remove_reference_t<decltype(e.b.leaf)>>);
  idx_t c[max_rank] = {};
  const char* base[NLEAF + 1] = {};
  const auto probe = [&](const char** out) {
    for (auto& lf : e.b.leaf) lf.p = nullptr;
    idx_t n = ext[r - 1];
    e.bind_roots(c, n);
    sink.bind(e, c);
    for (int j = 0; j < NLEAF; ++j) out[j] = static_cast<const char*>(e.b.leaf[j].p);
    out[NLEAF] = sink.address();
  };
  probe(base);
  const idx_t near = 16 * ext[r - 1];  // bytes: a few rows of up to 4-byte elements
  int cost[max_rank] = {};
  for (int d = 0; d + 1 < r; ++d) {
    if (ext[d] < 2) {
      // outermost: a run of rows along an axis of one row is no run
      cost[d] = 1 << 20;
      continue;
    }
    const char* moved[NLEAF + 1] = {};
    c[d] = 1;
    probe(moved);
    c[d] = 0;
    for (int j = 0; j <= NLEAF; ++j) {
      if (!base[j] || !moved[j]) continue;
      const idx_t delta = moved[j] > base[j] ? moved[j] - base[j] : base[j] - moved[j];
      if (delta > near) cost[d] += j < NLEAF ? 1 : 2;  // the write weighs more than a read
    }
    // Rows along an axis that cannot step are bound one by one: a bind costs
    // more than the prefetchers lose on a longer stride.
    if (!E::forest_type::steppable(d) && ext[d] >= 3) cost[d] += 2 * NLEAF + 2;
  }
  // outermost: the highest cost (stable)
  for (int i = 1; i + 1 < r; ++i)
    for (int j = i; j > 0 && cost[order[j]] > cost[order[j - 1]]; --j) std::swap(order[j], order[j - 1]);
}

// Positions [c0, c1) of write W's row at coordinates c (flattened: the
// whole evaluation inlines into the row loop, its lanes in registers).
template <class C, bool Dense, int W>
FUSEX_HOST_FLATTEN void write_piece(const group_args<C>& a, reduced<C> red, idx_t* c, idx_t c0, idx_t c1, idx_t nrows,
                                    int d, int e, idx_t runs, bool stream) {
  using Fo = forest<C, Dense, prog<C>::write_local(W)>;
  engine<C, Fo> en{a, red, {}};
  write_sink<C, W> sink;
  sink.stream = stream;
  en.run_rows(c, prog<C>::rank(prog<C>::write_local(W)), d, nrows, c0, c1, sink, e, runs);
}

// Write W over its whole domain.
template <class C, bool Dense, int W>
void write_pass(const group_args<C>& a, reduced<C> red, int threads, bool stream) {
  using Q = prog<C>;
  constexpr int R = Q::write_local(W);
  constexpr int r = Q::rank(R);
  if constexpr (r == 0) {
    engine<C, forest<C, Dense, R>> e{a, red, {}};
    write_sink<C, W> sink;
    idx_t c[1] = {0};
    e.run_one(c, sink);
  } else {
    idx_t ext[max_rank] = {};
    extents_of<C, R>(a, ext);
    for (int d = 0; d < r; ++d)
      if (ext[d] == 0) return;
    int order[max_rank] = {};
    {
      engine<C, forest<C, Dense, R>> e{a, red, {}};
      write_sink<C, W> sink;
      row_order(e, sink, ext, r, order);
    }
    for_each_piece(ext, r, threads, order, [&](idx_t* c, idx_t c0, idx_t c1, idx_t n, int d, int e, idx_t runs) {
      write_piece<C, Dense, W>(a, red, c, c0, c1, n, d, e, runs, stream);
    });
  }
}

template <class C>
void pointwise_host(const group_args<C>& a, int threads, std::size_t stream_from = 0) {
  new_launch();
  const bool stream = stream_writes<C>(a, stream_from);
  static_for<prog<C>::nwrites()>([&](auto ww) { write_pass<C, false, decltype(ww)::value>(a, {}, threads, stream); });
}

// ---- reductions ---------------------------------------------------------------

// The host's reducer of reduction M: sums and moments in double.
template <class C, int M>
using host_reducer = codegen::reducer<prog<C>::op(M), prog<C>::dt(prog<C>::operand(M, 0)), double,
                                      prog<C>::op(M) == op_kind::var_mean && (prog<C>::flag(M) & 2) != 0>;

// Does reduction M's value reach the group's writes only through 16-bit
// float outputs (a norm's backward: dx and dweight in bf16)? Then its float
// sums may accumulate in f32 blocks (accumulate.hpp).
template <class C, int M>
consteval bool coarse_reduction() {
  using Q = prog<C>;
  bool reach[Q::nlocals()] = {};
  reach[M] = true;
  for (int i = M + 1; i < Q::nlocals(); ++i)
    for (int k = 0; k < Q::nops(i); ++k)
      if (reach[Q::operand(i, k)]) reach[i] = true;
  for (int w = 0; w < Q::nwrites(); ++w)
    if (reach[Q::write_local(w)] && !is_16bit(Q::dt(Q::write_local(w)))) return false;
  return true;
}
// Are reduction M's terms never negative (a square, an absolute value, an
// exponential)? A sum of such terms cannot cancel: in f32 blocks of 16 its
// error stays within 15 f32 roundings of the sum itself, whatever the data,
// so f64 lanes per register buy nothing. (An f32 block can overflow where
// f64 lanes would not; the row then sums again in f64, groups below.)
template <class C, int M>
consteval bool nonnegative_terms() {
  using Q = prog<C>;
  const int u = Q::operand(M, 0);
  const op_kind k = Q::op(u);
  if (k == op_kind::abs || k == op_kind::exp || k == op_kind::exp2) return true;
  return k == op_kind::mul && Q::operand(u, 0) == Q::operand(u, 1) && Q::bcast(u, 0) == Q::bcast(u, 1);
}
template <class C, int M>
inline constexpr bool block_sum = coarse_reduction<C, M>() || nonnegative_terms<C, M>();
// Exact: the row sums again in f64 lanes (an f32 block overflowed), and
// Welford's moments run in f64, a lane at a time (the f32 difference of two
// finite values, or its square, overflowed).
template <class C, int M, bool Exact = false>
using host_row_acc = std::conditional_t<Exact && acc_kind<host_reducer<C, M>, false>() == 3,
                                        generic_acc<host_reducer<C, M>>,
                                        row_acc<host_reducer<C, M>, !Exact && block_sum<C, M>>>;
// (Column tiles keep f64 states for the non-negative sums, whose f32 tiles
// would gain little: each position is its own chain there.)
template <class C, int M, bool Exact = false>
using host_column_acc = column_acc<host_reducer<C, M>, !Exact && coarse_reduction<C, M>()>;

// Did reduction M's f32 blocks overflow where the f64 sum they stand for
// may not have (an infinity or NaN came out)? Then the row sums it again
// in f64, which gives the reference's value, infinite or not. Welford's
// f32 moments overflow too: v - mean of two finite values past 1.7e38, or
// its square past 1.8e19.
template <class C, int M>
inline constexpr bool may_overflow = acc_kind<host_reducer<C, M>, block_sum<C, M>>() == 4 ||
                                     acc_kind<host_reducer<C, M>, block_sum<C, M>>() == 3;
inline bool finite_state(double s) { return s - s == 0; }
inline bool finite_state(const codegen::moments<double>& s) { return s.mean - s.mean == 0 && s.m2 - s.m2 == 0; }

// An earlier full var_mean of the group over the same operand and axis as
// mean-only var_mean m (LayerNorm's mean beside its variance): its local,
// or -1. The mean is then read from its moments, not summed again.
template <class C>
consteval int moments_twin(int m) {
  using Q = prog<C>;
  if (Q::op(m) != op_kind::var_mean || (Q::flag(m) & 2) == 0) return -1;
  for (int t = 0; t < m; ++t)
    if (Q::computes(t) && Q::op(t) == op_kind::var_mean && (Q::flag(t) & 2) == 0 &&
        Q::operand(t, 0) == Q::operand(m, 0) && Q::axis(t) == Q::axis(m))
      return t;
  return -1;
}

// The mean of mean-only var_mean M from its twin's moments over len values
// (NaN over none, as the sum would give).
template <class C, int M>
inline vt<prog<C>::dt(M)> twin_mean(const codegen::moments<double>& s, idx_t len) {
  return codegen::to_dtype<prog<C>::dt(M)>(len > 0 ? s.mean : static_cast<double>(NAN));
}

// Reductions in passes: a reduction whose operand reads other reductions of
// the group comes a level after them; each level is one pass.
template <class C>
struct reduction_levels {
  using Q = prog<C>;
  static constexpr int NL = Q::nlocals();
  static consteval int level(int m) {
    bool seen[NL] = {};
    int stack[NL] = {}, sp = 0, best = -1;
    stack[sp++] = Q::operand(m, 0);
    seen[Q::operand(m, 0)] = true;
    while (sp > 0) {
      const int u = stack[--sp];
      if (Q::computes(u)) {
        const int lu = level(u);
        best = lu > best ? lu : best;
        continue;
      }
      if (Q::is_leaf(u)) continue;
      for (int k = 0; k < Q::nops(u); ++k)
        if (!seen[Q::operand(u, k)]) seen[Q::operand(u, k)] = true, stack[sp++] = Q::operand(u, k);
    }
    return best + 1;
  }
  static consteval bool in_pass(int m) { return Q::computes(m) && moments_twin<C>(m) < 0; }
  static consteval int count_levels() {
    int n = 0;
    for (int m = 0; m < NL; ++m)
      if (in_pass(m) && level(m) + 1 > n) n = level(m) + 1;
    return n;
  }
  static constexpr int nlevels = count_levels();
  static consteval int count(int lv) {
    int n = 0;
    for (int m = 0; m < NL; ++m) n += in_pass(m) && level(m) == lv;
    return n;
  }
  template <int Lv>
  static consteval std::array<int, count(Lv)> list() {
    std::array<int, count(Lv)> r{};
    int n = 0;
    for (int m = 0; m < NL; ++m)
      if (in_pass(m) && level(m) == Lv) r[static_cast<std::size_t>(n++)] = m;
    return r;
  }
  // Calls f(ic<M>...) with the reductions of level Lv.
  template <int Lv, class F>
  static void with_level(F&& f) {
    constexpr auto l = list<Lv>();
    [&]<std::size_t... I>(std::index_sequence<I...>) { f(ic<l[I]>{}...); }(std::make_index_sequence<l.size()>{});
  }
};

// Reductions Ms of a row group, as one pass's sink (Exact: every float sum
// in f64 lanes).
template <class C, bool Exact, int... Ms>
struct row_sink {
  static constexpr int slots = 2;  // two chains per reduction
  std::tuple<host_row_acc<C, Ms, Exact>...> acc;
  template <class E>
  FUSEX_HOST_INLINE void bind(const E&, const idx_t*) {}
  FUSEX_HOST_INLINE bool contiguous() const { return true; }
  template <mode Md, int Slot, class E>
  FUSEX_HOST_INLINE void put(const E& e, idx_t i, int n) {
    [&]<std::size_t... J>(std::index_sequence<J...>) FUSEX_HOST_LAMBDA {
      ((Md == mode::fast ? std::get<J>(acc).template add<Slot>(e.template root<static_cast<int>(J), Md, false>(i, n))
                         : std::get<J>(acc).add_part(e.template root<static_cast<int>(J), Md, false>(i, n), n)),
       ...);
    }(std::index_sequence_for<decltype(ic<Ms>{})...>{});
  }
};

template <class C, int... Ms>
using row_reduce_sink = row_sink<C, false, Ms...>;

// A thread's rows follow one another in memory (a norm's rows, a page or
// more each). The hardware prefetchers stop at page boundaries, so each
// row's first pass began with misses, a few lines in flight at a time. The
// first pass's inputs that moved by one step over the last two rows: a
// first pass of bf16 pairs (the lightest arithmetic, so its misses are its
// time: a norm's forward) fetches their next row's lines block by block as
// it reads its own (row_block_sink::ahead), twice the lines in flight. In
// the heavier passes of the backward ones, the fetches cost more than they
// saved (1-3%).
struct next_row {
  static constexpr int max_inputs = 4;
  std::uintptr_t last[max_inputs] = {};
  std::intptr_t step[max_inputs] = {};
  idx_t left = 0;  // the thread's rows from the current one
  // the next row's lane 0 of each input, where known, and its lane's bytes
  const char* at[max_inputs] = {};
  idx_t lane_bytes[max_inputs] = {};
  int n_at = 0;
  template <class E>
  FUSEX_HOST_INLINE void after_first_pass(const E& e, idx_t n) {
    using Fo = typename E::forest_type;
    n_at = 0;
    int k = 0;
    unrolled<Fo::nleaf>([&](auto ss) FUSEX_HOST_LAMBDA {
      constexpr int S = decltype(ss)::value;
      if constexpr (Fo::lane_leaf(S) && !Fo::staged_leaf(S)) {
        const auto& lf = e.b.leaf[S];
        if (k == max_inputs || lf.p == nullptr || lf.stride != 1) return;
        const auto p = reinterpret_cast<std::uintptr_t>(lf.p);
        const auto d = static_cast<std::intptr_t>(p - last[k]);
        const idx_t bytes = static_cast<idx_t>(sizeof(typename E::template leaf_value_t<S>));
        // a row that moves by a step past its own bytes (not a weight read
        // alike by every row); the row after the next: this row's pass
        // fetched the next one
        if (left > 2 && d == step[k] && (d < 0 ? -d : d) >= n * bytes) {
          at[n_at] = reinterpret_cast<const char*>(p + 2 * static_cast<std::uintptr_t>(d));
          lane_bytes[n_at++] = bytes;
        }
        step[k] = d;
        last[k++] = p;
      }
    });
    --left;
  }
};

// A pass whose accumulators all take whole blocks (f32 block sums,
// Welford's moments): the engine hands it block_registers register pairs at
// a time, and the block's partial states are locals of run_block, which GCC
// keeps in registers (as members of the sink they went through the stack
// on every register: RMSNorm's forward 24% faster).
template <class C, int... Ms>
struct row_block_sink : row_reduce_sink<C, Ms...> {
  static constexpr int block_registers = host_engine::block_registers;
  // Does every reduction take a widened bf16 input (a norm's statistics of
  // x) into an accumulator that adds bf16 pairs? Its blocks then go from
  // memory as pairs, unwidened, while the accumulators stay unshifted.
  template <class E, int M, int J>
  static consteval bool bf16_pairs_root() {
    constexpr auto f = E::template bf16_pairs_form<J>();
#if FUSEX_HOST_SIMD
    if constexpr (f.leaf < 0) return false;
    else return requires(typename host_row_acc<C, M>::block& b) { b.template add_pairs<f.kind>(simd::u32v{}, 0); };
#else
    return false;  // scalar lanes (nvcc's host pass): no pairs
#endif
  }
  template <class E, std::size_t... J>
  static consteval bool bf16_pairs_of(std::index_sequence<J...>) {
    return (bf16_pairs_root<E, Ms, static_cast<int>(J)>() && ...);
  }
  template <class E>
  static consteval bool bf16_pairs() {
    return bf16_pairs_of<E>(std::make_index_sequence<sizeof...(Ms)>{});
  }
  // Before a row's first pass.
  template <class E>
  FUSEX_HOST_INLINE void prepare() {
    if constexpr (bf16_pairs<E>()) std::apply([](auto&... x) { (x.start_pairs(), ...); }, this->acc);
  }
  // The next row's inputs (a row's first pass), fetched a block at a time.
  const next_row* ahead = nullptr;
  FUSEX_HOST_INLINE void fetch_ahead(idx_t i) const {
#if defined(__GNUC__)
    if (ahead == nullptr) return;
    for (int k = 0; k < ahead->n_at; ++k) {
      const char* q = ahead->at[k] + i * ahead->lane_bytes[k];
      const idx_t bytes = slots * V * block_registers * ahead->lane_bytes[k];
      for (idx_t off = 0; off < bytes; off += 64) __builtin_prefetch(q + off, 0, 3);
    }
#else
    (void)i;
#endif
  }
  template <class E>
  FUSEX_HOST_INLINE void run_block(const E& e, idx_t i) {
#if FUSEX_HOST_SIMD
    if constexpr (bf16_pairs<E>()) {
      const bool ready = std::apply([](const auto&... x) { return (x.pairs_ready() && ...); }, this->acc);
      if (ready) {
        fetch_ahead(i);
        [&]<std::size_t... J>(std::index_sequence<J...>) FUSEX_HOST_LAMBDA {
          std::tuple<typename host_row_acc<C, Ms>::block...> part{std::get<J>(this->acc).begin_block()...};
          const unsigned char* p[] = {static_cast<const unsigned char*>(
              e.b.leaf[E::template bf16_pairs_form<static_cast<int>(J)>().leaf].p)...};
#pragma GCC unroll 16
          for (int k = 0; k < block_registers; k += 2) {
            // pair registers k and k + 1 (2V lanes each, the block's 2V
            // block_registers in block_registers of them)
            const idx_t at = (i + k * 2 * V) * 2;
            simd::u32v r0, r1;
            (
                [&] {
                  std::memcpy(&r0, p[J] + at, sizeof r0);
                  std::memcpy(&r1, p[J] + at + sizeof r0, sizeof r1);
                  constexpr int kind = E::template bf16_pairs_form<static_cast<int>(J)>().kind;
                  std::get<J>(part).template add_pairs<kind>(r0, k);
                  std::get<J>(part).template add_pairs<kind>(r1, k + 1);
                }(),
                ...);
          }
          (std::get<J>(this->acc).add_block(std::get<J>(part)), ...);
        }(std::index_sequence_for<decltype(ic<Ms>{})...>{});
        return;
      }
    }
#endif
    [&]<std::size_t... J>(std::index_sequence<J...>) FUSEX_HOST_LAMBDA {
      std::tuple<typename host_row_acc<C, Ms>::block...> part{std::get<J>(this->acc).begin_block()...};
      // unrolled: a block may keep several chains per slot, picked by k
#pragma GCC unroll 16
      for (int k = 0; k < block_registers; ++k) {
        const idx_t at = i + 2 * k * V;
        (std::get<J>(part).template add<0>(e.template root<static_cast<int>(J), mode::fast, false>(at, V), k), ...);
        (std::get<J>(part).template add<1>(e.template root<static_cast<int>(J), mode::fast, false>(at + V, V), k), ...);
      }
      (std::get<J>(this->acc).add_block(std::get<J>(part)), ...);
    }(std::index_sequence_for<decltype(ic<Ms>{})...>{});
  }
};
template <class C, int... Ms>
consteval bool block_pass() {
  return ((acc_kind<host_reducer<C, Ms>, block_sum<C, Ms>>() >= 3) && ...);
}
template <class C, int... Ms>
using row_pass_sink = std::conditional_t<block_pass<C, Ms...>(), row_block_sink<C, Ms...>, row_reduce_sink<C, Ms...>>;

// One row of a row group at outer coordinates c (rank rd; c[rd - 1] free).
template <class C>
FUSEX_HOST_FLATTEN void row_host(const group_args<C>& a, idx_t* c, idx_t L, bool stream, next_row& next) {
  using Q = prog<C>;
  using Lv = reduction_levels<C>;
  constexpr int X = Q::operand(Q::reduction(), 0);
  constexpr int rd = Q::rank(X);
  codegen::reduction_values<C, 1> rv{};
  codegen::moments<double> moments[Q::nreductions() > 0 ? Q::nreductions() : 1];
  bool mean_valid[Q::nreductions() > 0 ? Q::nreductions() : 1] = {};
  const reduced<C> red{&rv, nullptr};
  static_for<Lv::nlevels>([&](auto lv) {
    constexpr int level = decltype(lv)::value;
    Lv::template with_level<level>([&](auto... ms) {
      using Fo = forest<C, false, Q::operand(decltype(ms)::value, 0)...>;
      engine<C, Fo> e{a, red, {}};
      row_pass_sink<C, decltype(ms)::value...> sink;
      if constexpr (requires { sink.template prepare<decltype(e)>(); }) sink.template prepare<decltype(e)>();
      if constexpr (level == 0 && requires { sink.ahead; }) sink.ahead = &next;
      e.run(c, rd, 0, L, sink);
      if constexpr (level == 0) next.after_first_pass(e, L);
      [&]<std::size_t... J>(std::index_sequence<J...>) {
        (
            [&] {
              constexpr int M = std::array<int, sizeof...(ms)>{decltype(ms)::value...}[J];
              using RD = host_reducer<C, M>;
              auto& acc = std::get<J>(sink.acc);
              auto s = acc.finish();
              bool valid = host_engine::mean_valid(acc), in_f64 = false;
              if constexpr (requires { acc.precise(); }) {
                if (finite_state(s) && !acc.precise()) {
                  // a lane's values drifted from its shift: the row again,
                  // every lane shifted by the row's mean
                  engine<C, forest<C, false, Q::operand(M, 0)>> ex{a, red, {}};
                  row_pass_sink<C, M> again;
                  auto& acc2 = std::get<0>(again.acc);
                  acc2.centre_on(static_cast<float>(s.mean));
                  ex.run(c, rd, 0, L, again);
                  s = acc2.finish();
                  valid = host_engine::mean_valid(acc2);
                  in_f64 = !acc2.precise();
                }
              }
              if constexpr (may_overflow<C, M>) {
                if (in_f64 || !finite_state(s)) {
                  engine<C, forest<C, false, Q::operand(M, 0)>> ex{a, red, {}};
                  row_sink<C, true, M> exact;
                  ex.run(c, rd, 0, L, exact);
                  s = std::get<0>(exact.acc).finish();
                }
              }
              if constexpr (std::is_same_v<std::remove_cv_t<decltype(s)>, codegen::moments<double>>) {
                moments[Q::red_index(M)] = s;
                mean_valid[Q::red_index(M)] = valid;
              }
              rv.template at<Q::red_index(M)>()[0] = RD::template finish<Q::dt(M)>(s, L, Q::value(M));
            }(),
            ...);
      }(std::index_sequence_for<decltype(ms)...>{});
    });
    // mean-only twins of this level's moments (summed after all if the
    // moments met an infinity)
    static_for<Q::nlocals()>([&](auto mm) {
      constexpr int M = decltype(mm)::value;
      if constexpr (Q::computes(M) && moments_twin<C>(M) >= 0) {
        if constexpr (Lv::level(moments_twin<C>(M)) == level) {
          constexpr int T = moments_twin<C>(M);
          if (mean_valid[Q::red_index(T)]) {
            rv.template at<Q::red_index(M)>()[0] = twin_mean<C, M>(moments[Q::red_index(T)], L);
          } else {
            engine<C, forest<C, false, Q::operand(M, 0)>> e{a, red, {}};
            row_reduce_sink<C, M> sink;
            e.run(c, rd, 0, L, sink);
            rv.template at<Q::red_index(M)>()[0] =
                host_reducer<C, M>::template finish<Q::dt(M)>(std::get<0>(sink.acc).finish(), L, Q::value(M));
          }
        }
      }
    });
  });
  // Writes: row-domain shaped values along the row, row-shaped ones once.
  static_for<Q::nwrites()>([&](auto ww) {
    constexpr int w = decltype(ww)::value;
    constexpr int R = Q::write_local(w);
    engine<C, forest<C, false, R>> e{a, red, {}};
    write_sink<C, w> sink;
    sink.stream = stream;
    if constexpr (Q::rank(R) == rd && !Q::static1(R, rd - 1)) {
      e.run(c, rd, 0, L, sink);
    } else {
      c[rd - 1] = 0;
      e.run_one(c, sink);
    }
  });
}

template <class C>
void row_reduction_host(const group_args<C>& a, int threads, std::size_t stream_from = 0) {
  new_launch();
  const bool stream = stream_writes<C>(a, stream_from);
  using Q = prog<C>;
  constexpr int X = Q::operand(Q::reduction(), 0);
  constexpr int rd = Q::rank(X);
  idx_t ext[max_rank] = {};
  extents_of<C, X>(a, ext);
  idx_t rows = 1;
  for (int d = 0; d + 1 < rd; ++d) rows *= ext[d];
  const idx_t L = ext[rd - 1];
  int nt = threads > 0 ? threads : default_threads();
  if (rows * (L > 0 ? L : 1) < parallel_threshold) nt = 1;
  split_among_threads(rows, nt, [&](idx_t begin, idx_t end) {
    if (begin >= end) return;
    idx_t c[max_rank] = {};
    idx_t rr = begin;
    for (int d = rd - 2; d >= 0; --d) {
      c[d] = rr % ext[d];
      rr /= ext[d];
    }
    next_row next;
    next.left = end - begin;
    for (idx_t i = begin; i < end; ++i) {
      row_host<C>(a, c, L, stream, next);
      for (int d = rd - 2; d >= 0; --d) {
        if (++c[d] < ext[d]) break;
        c[d] = 0;
      }
    }
  });
}

// Reductions Ms of a column group over one tile, as one pass's sink.
template <class C, bool Exact, int... Ms>
struct column_reduce_sink {
  static constexpr int slots = 1;  // every position its own chain
  std::tuple<host_column_acc<C, Ms, Exact>...> acc;
  idx_t base = 0;  // tile position of the segment's lane 0
  idx_t c0 = 0;
  int r = 0;
  idx_t row = -1;  // the reduced axis' coordinate of the current row
  int ax = 0;
  template <class E>
  FUSEX_HOST_INLINE void bind(const E&, const idx_t* c) {
    base = c[r - 1] - c0;
    if (c[ax] != row) {
      row = c[ax];
      std::apply([](auto&... x) { (x.row(), ...); }, acc);
    }
  }
  FUSEX_HOST_INLINE bool contiguous() const { return true; }
  template <mode Md, int Slot, class E>
  FUSEX_HOST_INLINE void put(const E& e, idx_t i, int n) {
    [&]<std::size_t... J>(std::index_sequence<J...>) FUSEX_HOST_LAMBDA {
      (std::get<J>(acc).template add<Md>(base + i, e.template root<static_cast<int>(J), Md, false>(i, n), n), ...);
    }(std::make_index_sequence<sizeof...(Ms)>{});
  }
};

// The rows [t0, t1) of X's reduced axis for one tile [c0, c1) of the inner
// axis at outer coordinates c (c[ax] and c[rx - 1] free), into the block's
// partial states at `at` (by reduction; the tile's positions).
// Exact: every float sum in f64 states.
template <class C, class Fo, bool Exact, int... Ms>
FUSEX_HOST_FLATTEN void column_block(const group_args<C>& a, reduced<C> red, idx_t* c, idx_t t0, idx_t t1, idx_t c0,
                                      idx_t c1, void* const* at) {
  using Q = prog<C>;
  constexpr int X = Q::operand(Q::reduction(), 0);
  constexpr int rx = Q::rank(X);
  constexpr int ax = Q::axis(Q::reduction());
  engine<C, Fo> e{a, red, {}};
  column_reduce_sink<C, Exact, Ms...> sink{{}, 0, c0, rx, -1, ax};
  thread_local std::vector<float> scratch[sizeof...(Ms)];  // coarse sums' f32 tiles, kept between blocks
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    (std::get<J>(sink.acc).start(static_cast<typename host_reducer<C, Ms>::state*>(at[J]), c1 - c0, scratch[J]), ...);
  }(std::make_index_sequence<sizeof...(Ms)>{});
  c[ax] = t0;
  e.run_rows(c, rx, ax, t1 - t0, c0, c1, sink);
  std::apply([](auto&... x) { (x.flush(), ...); }, sink.acc);
}

// Did a sum of the block in f32 tiles overflow (an infinity or NaN in its
// states, which f64 states may not have)? The block then runs again exact.
template <class C, int... Ms>
inline constexpr bool column_may_overflow = ((acc_kind<host_reducer<C, Ms>, coarse_reduction<C, Ms>()>() == 4) || ...);
template <class C, int... Ms>
bool column_overflow(void* const* at, idx_t n) {
  bool bad = false;
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    (
        [&] {
          constexpr int M = std::array<int, sizeof...(Ms)>{Ms...}[J];
          if constexpr (column_may_overflow<C, M>) {
            // an exponent of all ones: infinite or NaN (as integers, so
            // that the test vectorises)
            const double* s = static_cast<const double*>(at[J]);
            std::uint64_t inf = 0;
            for (idx_t j = 0; j < n; ++j) {
              std::uint64_t u;
              std::memcpy(&u, s + j, sizeof u);
              inf |= static_cast<std::uint64_t>((u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
            }
            bad = bad || inf != 0;
          }
        }(),
        ...);
  }(std::index_sequence_for<decltype(ic<Ms>{})...>{});
  return bad;
}

template <class C>
void column_reduction_host(const group_args<C>& a, int threads, std::size_t stream_from = 0) {
  new_launch();
  const bool stream = stream_writes<C>(a, stream_from);
  using Q = prog<C>;
  using Lv = reduction_levels<C>;
  constexpr int X = Q::operand(Q::reduction(), 0);
  constexpr int rx = Q::rank(X);
  constexpr int ax = Q::axis(Q::reduction());
  static_assert(ax < rx - 1, "fusex internal: a column reduction over the innermost axis");
  idx_t xext[max_rank] = {};
  extents_of<C, X>(a, xext);
  const idx_t T_len = xext[ax], Lc = xext[rx - 1];
  // output rows: X's rows without the reduced axis
  idx_t orows = 1;
  for (int d = 0; d + 1 < rx; ++d)
    if (d != ax) orows *= xext[d];
  const idx_t nout = orows * Lc;
  const int nt = threads > 0 ? threads : default_threads();
  // blocks of at least 64 rows, at most 16 of them: fixed by the extents
  idx_t nb = T_len / 64;
  if (nb > 16) nb = 16;
  if (nb < 1) nb = 1;
  // finished values of every computed reduction, dense over the output (8
  // bytes a value whatever its type), then each level's partial states
  constexpr int NR = Q::nreductions() > 0 ? Q::nreductions() : 1;
  const std::size_t nvals = static_cast<std::size_t>(nout > 0 ? nout : 1);
  std::size_t part_bytes = 0;
  static_for<Lv::nlevels>([&](auto lv) {
    std::size_t b = 0;
    Lv::template with_level<decltype(lv)::value>([&](auto... ms) {
      b = ((sizeof(typename host_reducer<C, decltype(ms)::value>::state) * static_cast<std::size_t>(nb) * nvals) + ...);
    });
    part_bytes = b > part_bytes ? b : part_bytes;
  });
  auto* work = static_cast<std::byte*>(scratch(NR * nvals * 8 + part_bytes));
  const void* dense[NR] = {};
  static_for<Q::nlocals()>([&](auto mm) {
    constexpr int M = decltype(mm)::value;
    if constexpr (Q::computes(M)) dense[Q::red_index(M)] = work + Q::red_index(M) * nvals * 8;
  });
  std::byte* part_base = work + NR * nvals * 8;
  const reduced<C> red{nullptr, dense};
  // Tiles of whole rows up to 8192 positions: tiles of 1024 read each row
  // a chunk at a time with a jump between, and their loads stalled
  // (LayerNorm's backward at 2048 columns took 27% longer, RMSNorm's 40%).
  // A tile's partial states (8 or 16 bytes a position and reduction) stay
  // within L2. Narrower only when the row blocks leave threads idle; the
  // tiles split positions, not sums, so results do not depend on them.
  idx_t tile = Lc < 8192 ? Lc : 8192;
  while (tile > 256 && nb * orows * ((Lc + tile - 1) / tile) < 2 * nt) tile = (tile / 2 + 63) / 64 * 64;
  const idx_t ntiles = tile > 0 ? (Lc + tile - 1) / tile : 0;
  // Writes that are a reduction's own value, kept dims and dense over the
  // output positions (o = orow * Lc + c, the order out_coords gives): with
  // one row block, each task finishes them straight into the output while
  // they are in cache, and no write pass reads the finished array back
  // (a qkv backward's sums over a head group, 4 terms each, spent a third
  // of their time on that array and that pass).
  bool direct[Q::nwrites() > 0 ? Q::nwrites() : 1] = {};
  static_for<Q::nwrites()>([&](auto ww) {
    constexpr int W = decltype(ww)::value;
    constexpr int R = Q::write_local(W);
    if constexpr (Lv::in_pass(R) && Q::rank(R) == rx) {
      if (nb != 1) return;
      idx_t want = 1;
      bool ok = true;
      for (int d = rx - 1; d >= 0; --d) {
        if (d == ax) continue;
        if (xext[d] > 1 && a.out_str[W][d] != want) ok = false;
        want *= xext[d];
      }
      direct[W] = ok;
    }
  });
  const auto out_coords = [&](idx_t orow, idx_t* c) {
    for (int d = rx - 2; d >= 0; --d) {
      if (d == ax) continue;
      c[d] = orow % xext[d];
      orow /= xext[d];
    }
  };
  static_for<Lv::nlevels>([&](auto lv) {
    Lv::template with_level<decltype(lv)::value>([&](auto... ms) {
      using Fo = forest<C, true, Q::operand(decltype(ms)::value, 0)...>;
      // partial states of block b at position o: parts_J[b * nout + o]
      std::tuple<typename host_reducer<C, decltype(ms)::value>::state*...> parts;
      {
        std::byte* p = part_base;
        [&]<std::size_t... J>(std::index_sequence<J...>) {
          ((std::get<J>(parts) = reinterpret_cast<std::remove_reference_t<decltype(std::get<J>(parts))>>(p),
            p += sizeof(*std::get<J>(parts)) * static_cast<std::size_t>(nb) * nvals),
           ...);
        }(std::index_sequence_for<decltype(ms)...>{});
      }
      // the blocks' partial states at output position o merged in order,
      // finished into the dense values, and twins' means read: reduction J
      // of the level
      const auto finish_one = [&]<std::size_t J>(idx_t o, std::integral_constant<std::size_t, J>) {
        constexpr int M = std::array<int, sizeof...(ms)>{decltype(ms)::value...}[J];
        using RD = host_reducer<C, M>;
        auto& part = std::get<J>(parts);
        auto s = part[static_cast<std::size_t>(o)];
        for (idx_t blk = 1; blk < nb; ++blk) s = RD::combine(s, part[static_cast<std::size_t>(blk * nout + o)]);
        using T = vt<Q::dt(M)>;
        static_cast<T*>(const_cast<void*>(dense[Q::red_index(M)]))[o] = RD::template finish<Q::dt(M)>(s, T_len, Q::value(M));
        if constexpr (std::is_same_v<std::remove_cv_t<decltype(s)>, codegen::moments<double>>) {
          static_for<Q::nlocals()>([&](auto tt) {
            constexpr int W = decltype(tt)::value;
            if constexpr (Q::computes(W) && moments_twin<C>(W) == M)
              static_cast<vt<Q::dt(W)>*>(const_cast<void*>(dense[Q::red_index(W)]))[o] = twin_mean<C, W>(s, T_len);
          });
        }
      };
      const auto finish = [&](idx_t o) {
        [&]<std::size_t... J>(std::index_sequence<J...>) {
          (finish_one(o, std::integral_constant<std::size_t, J>{}), ...);
        }(std::index_sequence_for<decltype(ms)...>{});
      };
      // f(output of W) for each write W of reduction M that goes direct.
      const auto for_direct = [&]<int M>(ic<M>, auto&& f) {
        static_for<Q::nwrites()>([&](auto ww) {
          constexpr int W = decltype(ww)::value;
          if constexpr (Q::write_local(W) == M)
            if (direct[W]) f(static_cast<storage_t<Q::dt(M)>*>(a.out[W]));
        });
      };
      // Positions [o0, o1) of one block's states: a float sum's value is its
      // state, rounded a register at a time (the scalar rounding took as long
      // as a qkv backward's sums of 4 heads).
      const auto finish_block = [&](idx_t o0, idx_t o1) {
        [&]<std::size_t... J>(std::index_sequence<J...>) {
          (
              [&] {
                constexpr int M = std::array<int, sizeof...(ms)>{decltype(ms)::value...}[J];
                using RD = host_reducer<C, M>;
                idx_t o = o0;
#if FUSEX_HOST_SIMD
                if constexpr (RD::kind == op_kind::sum && RD::fp && std::is_same_v<typename RD::state, double> &&
                              std::is_same_v<dlanes<Q::dt(M)>, simd::f32v>) {
                  const double* st = std::get<J>(parts);
                  float* out = static_cast<float*>(const_cast<void*>(dense[Q::red_index(M)]));
                  for (; o + V <= o1; o += V) {
                    // whole registers of doubles (lane by lane, GCC built
                    // each register from eight scalar loads)
                    simd::f64v lo, hi;
                    std::memcpy(&lo, st + o, sizeof lo);
                    std::memcpy(&hi, st + o + V / 2, sizeof hi);
                    const simd::f32v v = round_to<Q::dt(M)>(simd::narrow(lo, hi));
                    std::memcpy(out + o, &v, sizeof v);
                    for_direct(ic<M>{}, [&](auto* p) { store<Q::dt(M), mode::fast>(p + o, 1, V, v); });
                  }
                }
#endif
                for (; o < o1; ++o) {
                  finish_one(o, std::integral_constant<std::size_t, J>{});
                  for_direct(ic<M>{}, [&](auto* p) {
                    codegen::store_value<Q::dt(M)>(p, o, static_cast<const vt<Q::dt(M)>*>(dense[Q::red_index(M)])[o]);
                  });
                }
              }(),
              ...);
        }(std::index_sequence_for<decltype(ms)...>{});
      };
      const idx_t tasks = nb * orows * ntiles;
      int n_threads = nt;
      if (T_len * nout < parallel_threshold) n_threads = 1;
      split_among_threads(tasks, n_threads, [&](idx_t begin, idx_t end) {
        for (idx_t task = begin; task < end; ++task) {
          const idx_t blk = task / (orows * ntiles), rest = task % (orows * ntiles);
          const idx_t orow = rest / ntiles, c0 = (rest % ntiles) * tile;
          const idx_t c1 = c0 + tile < Lc ? c0 + tile : Lc;
          idx_t c[max_rank] = {};
          out_coords(orow, c);
          void* at[sizeof...(ms)] = {};
          [&]<std::size_t... J>(std::index_sequence<J...>) {
            ((at[J] = std::get<J>(parts) + (blk * nout + orow * Lc + c0)), ...);
          }(std::index_sequence_for<decltype(ms)...>{});
          const idx_t t0 = T_len * blk / nb, t1 = T_len * (blk + 1) / nb;
          column_block<C, Fo, false, decltype(ms)::value...>(a, red, c, t0, t1, c0, c1, at);
          if constexpr (column_may_overflow<C, decltype(ms)::value...>) {
            if (column_overflow<C, decltype(ms)::value...>(at, c1 - c0))
              column_block<C, Fo, true, decltype(ms)::value...>(a, red, c, t0, t1, c0, c1, at);
          }
          if (nb == 1) finish_block(orow * Lc + c0, orow * Lc + c1);
        }
      });
      // with one block, each task finishes its own positions while they
      // are in cache: a separate pass read every partial state back
      if (nb > 1) {
        // merge the blocks in order, finish, and read twins' means
        split_among_threads(nout, nout * nb < parallel_threshold ? 1 : nt, [&](idx_t begin, idx_t end) {
          for (idx_t o = begin; o < end; ++o) finish(o);
        });
      }
    });
  });
  // Writes, over their own domains: values of the reductions read their
  // finished arrays.
  static_for<Q::nwrites()>([&](auto ww) {
    if (!direct[decltype(ww)::value]) write_pass<C, true, decltype(ww)::value>(a, red, threads, stream);
  });
}

}  // namespace fusex::detail::host_engine
