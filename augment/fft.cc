#include "augment/fft.h"

#include <array>
#include <algorithm>
#include <cmath>

namespace augmentd::fft {

namespace {
constexpr int64_t kMaxRadix = 13;  // larger prime factors go through Bluestein
constexpr double kPi = 3.14159265358979323846;

// Prime factors, pairs of 2 merged into radix-4 passes.
std::vector<int64_t> Factor(int64_t n) {
  std::vector<int64_t> f;
  while (n % 4 == 0) {
    f.push_back(4);
    n /= 4;
  }
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return f;
}
}  // namespace

Plan::Plan(int64_t n) : n_(n < 1 ? 1 : n) {
  std::vector<int64_t> f = Factor(n_);
  bool small = true;
  for (int64_t p : f) small = small && p <= kMaxRadix;
  if (small) {
    factors_ = std::move(f);
    twiddles_.resize(static_cast<size_t>(n_));
    for (int64_t j = 0; j < n_; ++j) {
      const double a = -2.0 * kPi * static_cast<double>(j) / static_cast<double>(n_);
      twiddles_[static_cast<size_t>(j)] = Complex(std::cos(a), std::sin(a));
    }
    return;
  }
  int64_t m = 1;
  while (m < 2 * n_ - 1) m *= 2;
  inner_ = std::make_unique<Plan>(m);
  chirp_.resize(static_cast<size_t>(n_));
  for (int64_t k = 0; k < n_; ++k) {
    const int64_t k2 = (k * k) % (2 * n_);  // exact: keeps the angle small for large k
    const double a = -kPi * static_cast<double>(k2) / static_cast<double>(n_);
    chirp_[static_cast<size_t>(k)] = Complex(std::cos(a), std::sin(a));
  }
  chirp_fft_.assign(static_cast<size_t>(m), Complex(0, 0));
  chirp_fft_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < n_; ++k) {
    chirp_fft_[static_cast<size_t>(k)] = std::conj(chirp_[static_cast<size_t>(k)]);
    chirp_fft_[static_cast<size_t>(m - k)] = std::conj(chirp_[static_cast<size_t>(k)]);
  }
  inner_->Transform(chirp_fft_.data(), false);
}

Plan::~Plan() = default;

Complex Plan::Twiddle(int64_t j, bool inverse) const {
  const Complex w = twiddles_[static_cast<size_t>(j)];
  return inverse ? std::conj(w) : w;
}

// Stockham autosort, decimation in frequency, one pass per factor p (n = p·m at that pass, s = product of the
// earlier factors): y[q + s·(p·j + u)] = W_n^{j·u} · Σ_r x[q + s·(j + r·m)] · W_p^{r·u}, j < m, q < s, u < p.
// After the last pass the result is in natural order.
void Plan::Stockham(Complex* data, Complex* work, bool inverse) const {
  Complex* x = data;
  Complex* y = work;
  int64_t n = n_, s = 1;
  std::array<Complex, kMaxRadix> a, tw, wp;
  for (int64_t p : factors_) {
    const int64_t m = n / p;
    const int64_t step = n_ / n;
    for (int64_t u = 0; u < p; ++u) wp[static_cast<size_t>(u)] = Twiddle(u * (n_ / p), inverse);
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t u = 0; u < p; ++u) tw[static_cast<size_t>(u)] = Twiddle(j * u * step, inverse);  // j·u < n
      if (p == 2) {
        for (int64_t q = 0; q < s; ++q) {
          const Complex a0 = x[q + s * j], a1 = x[q + s * (j + m)];
          y[q + s * (2 * j)] = a0 + a1;
          y[q + s * (2 * j + 1)] = (a0 - a1) * tw[1];
        }
        continue;
      }
      if (p == 4) {  // W_4 = ∓i
        const double sg = inverse ? 1.0 : -1.0;
        for (int64_t q = 0; q < s; ++q) {
          const Complex a0 = x[q + s * j], a1 = x[q + s * (j + m)], a2 = x[q + s * (j + 2 * m)],
                        a3 = x[q + s * (j + 3 * m)];
          const Complex e = a0 + a2, f = a0 - a2, g = a1 + a3, h = a1 - a3;
          const Complex ih(-sg * h.imag(), sg * h.real());  // (∓i)·h
          y[q + s * (4 * j)] = e + g;
          y[q + s * (4 * j + 1)] = (f + ih) * tw[1];
          y[q + s * (4 * j + 2)] = (e - g) * tw[2];
          y[q + s * (4 * j + 3)] = (f - ih) * tw[3];
        }
        continue;
      }
      for (int64_t q = 0; q < s; ++q) {
        for (int64_t r = 0; r < p; ++r) a[static_cast<size_t>(r)] = x[q + s * (j + r * m)];
        for (int64_t u = 0; u < p; ++u) {
          Complex sum = a[0];
          for (int64_t r = 1; r < p; ++r) sum += a[static_cast<size_t>(r)] * wp[static_cast<size_t>((r * u) % p)];
          y[q + s * (p * j + u)] = u == 0 ? sum : sum * tw[static_cast<size_t>(u)];
        }
      }
    }
    std::swap(x, y);
    n = m;
    s *= p;
  }
  if (x != data) std::copy(x, x + n_, data);
}

void Plan::Bluestein(Complex* data, bool inverse) const {
  const int64_t m = inner_->size();
  thread_local std::vector<Complex> a;  // not the inner plan's Stockham buffer (a different thread_local)
  a.assign(static_cast<size_t>(m), Complex(0, 0));
  for (int64_t k = 0; k < n_; ++k) {
    const Complex x = inverse ? std::conj(data[k]) : data[k];
    a[static_cast<size_t>(k)] = x * chirp_[static_cast<size_t>(k)];
  }
  inner_->Transform(a.data(), false);
  for (int64_t k = 0; k < m; ++k) a[static_cast<size_t>(k)] *= chirp_fft_[static_cast<size_t>(k)];
  inner_->Transform(a.data(), true);
  for (int64_t k = 0; k < n_; ++k) {
    const Complex y = a[static_cast<size_t>(k)] * chirp_[static_cast<size_t>(k)];
    data[k] = inverse ? std::conj(y) / static_cast<double>(n_) : y;
  }
}

void Plan::Transform(Complex* data, bool inverse) const {
  if (inner_ != nullptr) return Bluestein(data, inverse);
  thread_local std::vector<Complex> work;
  if (work.size() < static_cast<size_t>(n_)) work.resize(static_cast<size_t>(n_));
  Stockham(data, work.data(), inverse);
  if (inverse) {
    const double sc = 1.0 / static_cast<double>(n_);
    for (int64_t k = 0; k < n_; ++k) data[k] *= sc;
  }
}

void FftN(std::vector<Complex>& data, const std::vector<int64_t>& shape, bool inverse) {
  constexpr int64_t kBlock = 16;  // lines gathered together along strided axes (contiguous reads)
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  std::vector<Complex> lines;
  int64_t inner = total;
  for (int64_t s : shape) {
    inner /= s;  // stride of this axis
    if (s <= 1) continue;
    const Plan plan(s);
    lines.resize(static_cast<size_t>(s * kBlock));
    const int64_t outer = total / (s * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i0 = 0; i0 < inner; i0 += kBlock) {
        const int64_t nb = std::min(kBlock, inner - i0);
        Complex* base = data.data() + o * s * inner + i0;
        for (int64_t k = 0; k < s; ++k)
          for (int64_t b = 0; b < nb; ++b) lines[static_cast<size_t>(b * s + k)] = base[k * inner + b];
        for (int64_t b = 0; b < nb; ++b) plan.Transform(lines.data() + b * s, inverse);
        for (int64_t k = 0; k < s; ++k)
          for (int64_t b = 0; b < nb; ++b) base[k * inner + b] = lines[static_cast<size_t>(b * s + k)];
      }
  }
}

std::vector<Complex> NaiveDft(const std::vector<Complex>& x, bool inverse) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<Complex> y(x.size());
  for (int64_t k = 0; k < n; ++k) {
    Complex s(0, 0);
    for (int64_t j = 0; j < n; ++j) {
      const double a = (inverse ? 2.0 : -2.0) * kPi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      s += x[static_cast<size_t>(j)] * Complex(std::cos(a), std::sin(a));
    }
    y[static_cast<size_t>(k)] = inverse ? s / static_cast<double>(n) : s;
  }
  return y;
}

}  // namespace augmentd::fft
