// augment/fft.h — a small CPU FFT for arbitrary lengths (the MRI k-space transforms' CPU reference).
//
// Complex double precision. Lengths whose prime factors are all <= 13 run as mixed-radix Stockham autosort passes
// (decimation in frequency, one direct p-point butterfly per factor p = 2, 3, 5, ...); other lengths (a prime
// factor > 13, e.g. 2·127 or 1009) run through Bluestein's chirp-z algorithm over a power-of-two FFT, so every length
// costs O(n log n). Conventions are numpy's: forward X[k] = Σ x[j]·exp(−2πi·jk/n), inverse with the 1/n factor.
//
//   augmentd::fft::Plan plan(160);                      // immutable after construction
//   std::vector<std::complex<double>> line(160, ...);
//   plan.Transform(line.data(), /*inverse=*/false);
//   augmentd::fft::FftN(volume, {80, 128, 160}, /*inverse=*/true);   // numpy.fft.ifftn over all axes
//
// Thread-safety: a Plan is immutable; Transform may run concurrently on different buffers.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

namespace augmentd::fft {

using Complex = std::complex<double>;

class Plan {
 public:
  explicit Plan(int64_t n);  // n >= 1
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  int64_t size() const { return n_; }
  // In place on n contiguous values; inverse includes the 1/n factor.
  void Transform(Complex* data, bool inverse) const;

 private:
  void Stockham(Complex* data, Complex* work, bool inverse) const;
  void Bluestein(Complex* data, bool inverse) const;
  Complex Twiddle(int64_t j, bool inverse) const;  // exp(∓2πi j / n_), j in [0, n_)

  int64_t n_;
  std::vector<int64_t> factors_;  // empty when Bluestein is used
  std::vector<Complex> twiddles_;  // exp(−2πi j / n), j < n (mixed radix)
  // Bluestein: chirp w_k = exp(−iπ k²/n), FFT of the conjugate chirp (length m), the power-of-two plan.
  std::vector<Complex> chirp_;
  std::vector<Complex> chirp_fft_;
  std::unique_ptr<Plan> inner_;
};

// n-dimensional transform over every axis of a C-ordered array of `shape` (numpy.fft.fftn / ifftn).
void FftN(std::vector<Complex>& data, const std::vector<int64_t>& shape, bool inverse);

// Plain O(n²) DFT (tests and tiny sizes), same conventions as Plan.
std::vector<Complex> NaiveDft(const std::vector<Complex>& x, bool inverse);

}  // namespace augmentd::fft
