#pragma once
// Reading the reference data that tools/litgpt_reference.py writes with
// litgpt itself, and the counter-based generator both sides use for the
// inputs and weights (so that only litgpt's results are stored).

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <cmath>
#include <cstdlib>

namespace litgpt_data {

// element i of stream s: offset + scale * u, u uniform in [-1, 1) on a 2^-23
// grid from splitmix64((s << 40) | i), rounded to float (as the script does).
inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline std::vector<float> generated(std::uint64_t stream, std::size_t n, double scale, double offset = 0.0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double k = static_cast<double>(splitmix64((stream << 40) | i) >> 40);
    v[i] = static_cast<float>(offset + scale * ((k - 8388608.0) / 8388608.0));
  }
  return v;
}
// The largest power of two not above 1 / sqrt(fan_in).
inline double weight_scale(double fan_in) {
  double s = 1.0;
  while (s * s * fan_in > 1.0) s /= 2.0;
  return s;
}

struct stored {
  std::vector<int> shape;
  std::vector<float> values;
  double litgpt_f32 = 0, litgpt_bf16 = 0;  // litgpt's own error in that dtype, against float64
};

struct param {
  std::string name;
  std::vector<int> shape;  // torch's
  std::vector<float> values;
};

struct reference {
  std::string name, layout, litgpt;
  std::map<std::string, long> config;
  std::vector<param> params;  // in litgpt's order
  std::map<std::string, stored> tensors;
  int B = 0, T = 0;

  long cfg(const std::string& k) const {
    auto it = config.find(k);
    if (it == config.end()) throw std::runtime_error(name + ": no config value " + k);
    return it->second;
  }
  const stored& at(const std::string& k) const {
    auto it = tensors.find(k);
    if (it == tensors.end()) throw std::runtime_error(name + ": no tensor " + k);
    return it->second;
  }
  std::vector<float> x() const { return generated(0, std::size_t(B) * T * cfg("n_embd"), 1.0); }
  std::vector<float> dy() const { return generated(1, std::size_t(B) * T * cfg("n_embd"), 1.0); }
};

inline std::size_t count(const std::vector<int>& s) {
  std::size_t n = 1;
  for (int e : s) n *= static_cast<std::size_t>(e);
  return n;
}

// The data folder: FUSEX_LITGPT_DATA in the environment (the live mode), else
// the committed one.
inline std::string data_dir() {
  if (const char* d = std::getenv("FUSEX_LITGPT_DATA")) return d;
  return FUSEX_LITGPT_DATA_DIR;
}

inline reference load(const std::string& name) {
  reference r;
  r.name = name;
  const std::string base = data_dir() + "/" + name;
  std::ifstream idx(base + ".idx");
  if (!idx) throw std::runtime_error("cannot read " + base + ".idx (run tools/litgpt_reference.py)");
  std::ifstream bin(base + ".bin", std::ios::binary);
  std::vector<float> blob;
  {
    bin.seekg(0, std::ios::end);
    const auto bytes = static_cast<std::size_t>(bin.tellg());
    bin.seekg(0);
    blob.resize(bytes / 4);
    bin.read(reinterpret_cast<char*>(blob.data()), static_cast<std::streamsize>(bytes));
  }
  std::string line;
  while (std::getline(idx, line)) {
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    if (kind == "layout") in >> r.layout;
    else if (kind == "litgpt") in >> r.litgpt;
    else if (kind == "shape") in >> r.B >> r.T;
    else if (kind == "config") {
      std::string k, v;
      while (in >> k >> v) r.config[k] = k == "norm_eps" ? 0 : std::strtol(v.c_str(), nullptr, 10);
    } else if (kind == "param") {
      param p;
      in >> p.name;
      int e;
      while (in >> e) p.shape.push_back(e);
      r.params.push_back(std::move(p));
    } else if (kind == "tensor") {
      std::string key, tok;
      long offset;
      stored s;
      in >> key >> offset;
      while (in >> tok && tok != "|") s.shape.push_back(std::stoi(tok));
      in >> s.litgpt_f32 >> s.litgpt_bf16;
      const std::size_t n = count(s.shape);
      if (static_cast<std::size_t>(offset) + n > blob.size()) throw std::runtime_error(base + ".bin is short");
      s.values.assign(blob.begin() + offset, blob.begin() + offset + static_cast<long>(n));
      r.tensors[key] = std::move(s);
    }
  }
  // the parameters, as the script generated them
  for (std::size_t k = 0; k < r.params.size(); ++k) {
    param& p = r.params[k];
    const bool norm_weight = p.name == "norm_1.weight" || p.name == "norm_2.weight";
    const double scale = norm_weight ? 0.25 : p.shape.size() == 2 ? weight_scale(p.shape[1]) : 0.125;
    p.values = generated(2 + k, count(p.shape), scale, norm_weight ? 1.0 : 0.0);
  }
  return r;
}

}  // namespace litgpt_data
