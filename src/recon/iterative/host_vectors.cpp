// OperatorVectors over host memory (host_vectors.h). Compiled with -ffp-contract=off (CMakeLists.txt): every product
// and sum is rounded on its own, as operator.h writes the operations and cuda's kernels compute them, also where the
// target has fused multiply-adds (GLRECON_NATIVE, aarch64).
#include "recon/iterative/host_vectors.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace glrecon::detail {

void backProjectInto(ConeBeamOperator& op, const std::vector<float>& zeros, const float* values, const std::vector<std::size_t>& views,
                     float* out) {
  op.setVolume(zeros.data());
  op.back(values, views.data(), views.size(), Weighting::Adjoint);
  op.readVolume(out);
}

namespace {

// The gradient of the smoothed isotropic total variation TV(x) = sum_p sqrt(eps^2 + |D x(p)|^2), D the forward
// differences along x, y, z (0 past the last voxel), in voxel units as TIGRE's: with u = D x / sqrt(eps^2 + |D x|^2),
// dTV/dx(p) = u_x(p - e_x) + u_y(p - e_y) + u_z(p - e_z) - (u_x + u_y + u_z)(p). Voxels outside `mask` get 0.
void totalVariationGradient(const float* x, const std::array<int, 3>& n, float eps, const std::uint8_t* mask, float* ux, float* uy,
                            float* uz, float* gradient) {
  const std::size_t nx = n[0], ny = n[1], nz = n[2], plane = nx * ny;
  parallelFor(nz, 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k)
      for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
          const std::size_t p = k * plane + j * nx + i;
          const float dx = i + 1 < nx ? x[p + 1] - x[p] : 0.0f, dy = j + 1 < ny ? x[p + nx] - x[p] : 0.0f,
                      dz = k + 1 < nz ? x[p + plane] - x[p] : 0.0f;
          const float norm = std::sqrt(eps * eps + dx * dx + dy * dy + dz * dz);
          ux[p] = dx / norm;
          uy[p] = dy / norm;
          uz[p] = dz / norm;
        }
  });
  parallelFor(nz, 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k)
      for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
          const std::size_t p = k * plane + j * nx + i;
          float g = -(ux[p] + uy[p] + uz[p]);
          if (i > 0) g += ux[p - 1];
          if (j > 0) g += uy[p - nx];
          if (k > 0) g += uz[p - plane];
          gradient[p] = (!mask || mask[p]) ? g : 0.0f;
        }
  });
}

// PDHG-TV's gradient pair: D x, the forward differences along x, y, z (0 past the last voxel, as the TV above), and
// its transpose D^T z (z's three components laid one after another): D^T z(p) = sum over axes of z(p - e) - z(p),
// each term present where its difference is.
void forwardDifferences(const float* x, const std::array<int, 3>& n, float scale, float* out) {
  const std::size_t nx = n[0], ny = n[1], nz = n[2], plane = nx * ny, voxels = nx * ny * nz;
  parallelFor(nz, 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k)
      for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
          const std::size_t p = k * plane + j * nx + i;
          out[p] = i + 1 < nx ? scale * (x[p + 1] - x[p]) : 0.0f;
          out[voxels + p] = j + 1 < ny ? scale * (x[p + nx] - x[p]) : 0.0f;
          out[2 * voxels + p] = k + 1 < nz ? scale * (x[p + plane] - x[p]) : 0.0f;
        }
  });
}

void addTransposedDifferences(const float* z, const std::array<int, 3>& n, float scale, float* out) {
  const std::size_t nx = n[0], ny = n[1], nz = n[2], plane = nx * ny, voxels = nx * ny * nz;
  const float* zx = z;
  const float* zy = zx + voxels;
  const float* zz = zy + voxels;
  parallelFor(nz, 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k)
      for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
          const std::size_t p = k * plane + j * nx + i;
          float g = 0.0f;
          if (i > 0) g += zx[p - 1];
          if (i + 1 < nx) g -= zx[p];
          if (j > 0) g += zy[p - nx];
          if (j + 1 < ny) g -= zy[p];
          if (k > 0) g += zz[p - plane];
          if (k + 1 < nz) g -= zz[p];
          out[p] += scale * g;
        }
  });
}

// OperatorVectors over host vectors, for operators that keep none on their device: the operator's forward and back of
// host memory, the algebra on every core in the operations CudaVectors' kernels use (sums in fixed blocks).
class HostVectors final : public OperatorVectors {
 public:
  HostVectors(ConeBeamOperator& op, const std::vector<float>& zeros, const std::vector<std::size_t>& all)
      : op_(op),
        size_(op.grid().size),
        voxels_(op.grid().voxelCount()),
        values_(all.size() * static_cast<std::size_t>(op.geometry().detector.nu) * op.geometry().detector.nv),
        all_(all),
        zeros_(zeros) {
    if (zeros.size() != voxels_) throw std::invalid_argument("HostVectors: expected a volume of zeros of the whole grid");
  }
  Id volume() override { return make(voxels_); }
  Id projections() override { return make(values_); }
  Id field() override { return make(3 * voxels_); }
  void upload(Id to, const float* values) override { std::copy_n(values, at(to).size(), at(to).begin()); }
  void download(Id from, float* values) override { std::copy(at(from).begin(), at(from).end(), values); }
  void setMask(const std::uint8_t* mask) override { mask_ = mask; }
  void forward(Id volume, Id projections) override {
    op_.setVolume(at(volume).data());
    op_.forward(all_.data(), all_.size(), at(projections).data());
  }
  void back(Id projections, Id volume) override {
    std::vector<float>& out = at(volume);
    backProjectInto(op_, zeros_, at(projections).data(), all_, out.data());
    if (mask_)
      forEachIndex(out.size(), [&](std::size_t i) {
        if (!mask_[i]) out[i] = 0.0f;
      });
  }
  void axpy(double a, Id x, Id y) override {
    const std::vector<float>& from = at(x);
    std::vector<float>& to = at(y);
    forEachIndex(to.size(), [&](std::size_t i) { to[i] += static_cast<float>(a * from[i]); });
  }
  void xpay(Id x, double b, Id y) override {
    const std::vector<float>& from = at(x);
    std::vector<float>& to = at(y);
    forEachIndex(to.size(), [&](std::size_t i) { to[i] = static_cast<float>(from[i] + b * to[i]); });
  }
  void copy(Id from, Id to) override { at(to) = at(from); }
  double dot(Id a, Id b) override {
    const std::vector<float>& u = at(a);
    const std::vector<float>& v = at(b);
    return blockedSum(u.size(), [&](std::size_t i) { return static_cast<double>(u[i]) * v[i]; });
  }

  double distanceSquared(Id a, Id b) override {
    const std::vector<float>& u = at(a);
    const std::vector<float>& v = at(b);
    return blockedSum(u.size(), [&](std::size_t i) {
      const double d = static_cast<double>(u[i]) - v[i];
      return d * d;
    });
  }
  double largestMagnitude(Id x) override {
    double largest = 0;
    for (float v : at(x)) largest = std::max(largest, static_cast<double>(std::abs(v)));
    return largest;
  }
  void clampNegative(Id x) override {
    std::vector<float>& v = at(x);
    forEachIndex(v.size(), [&](std::size_t i) { v[i] = std::max(v[i], 0.0f); });
  }
  void extrapolate(Id x, Id previous, Id out) override {
    const std::vector<float>& now = at(x);
    const std::vector<float>& before = at(previous);
    std::vector<float>& to = at(out);
    forEachIndex(to.size(), [&](std::size_t i) { to[i] = 2.0f * now[i] - before[i]; });
  }
  void forwardDifferences(Id volume, float scale, Id field) override {
    detail::forwardDifferences(at(volume).data(), size_, scale, at(field).data());
  }
  void addTransposedDifferences(Id field, float scale, Id volume) override {
    detail::addTransposedDifferences(at(field).data(), size_, scale, at(volume).data());
  }
  void clipToBall(Id zId, Id dId, float bound) override {
    float* zx = at(zId).data();
    float* zy = zx + voxels_;
    float* zz = zy + voxels_;
    const float* d = at(dId).data();
    const std::size_t voxels = voxels_;
    parallelFor(voxels, 4096, 0, [&](std::size_t i0, std::size_t i1) {
      for (std::size_t i = i0; i < i1; ++i) {
        const float a = zx[i] + d[i], b = zy[i] + d[voxels + i], c = zz[i] + d[2 * voxels + i];
        const float length = std::sqrt(a * a + b * b + c * c);
        const float shrink = length > bound ? bound / length : 1.0f;
        zx[i] = a * shrink;
        zy[i] = b * shrink;
        zz[i] = c * shrink;
      }
    });
  }
  void dataDualStep(Id yId, Id axId, Id axPreviousId, Id bId, Id sigmaId) override {
    std::vector<float>& y = at(yId);
    const float* ax = at(axId).data();
    const float* axPrevious = at(axPreviousId).data();
    const float* b = at(bId).data();
    const float* sigma = at(sigmaId).data();
    forEachIndex(y.size(), [&](std::size_t i) {
      const float axBar = 2.0f * ax[i] - axPrevious[i];
      y[i] = (y[i] + sigma[i] * (axBar - b[i])) / (1.0f + sigma[i]);
    });
  }
  void projectedStep(Id xId, Id tauId, Id gId, Id outId) override {
    const float* x = at(xId).data();
    const float* tau = at(tauId).data();
    const float* g = at(gId).data();
    std::vector<float>& out = at(outId);
    forEachIndex(out.size(), [&](std::size_t i) { out[i] = std::max(0.0f, x[i] - tau[i] * g[i]); });
  }
  void totalVariationGradient(Id x, float eps, Id fieldId, Id gradient) override {
    float* u = at(fieldId).data();
    detail::totalVariationGradient(at(x).data(), size_, eps, mask_, u, u + voxels_, u + 2 * voxels_, at(gradient).data());
  }
  void fromOperatorVolume(Id to) override { op_.readVolume(at(to).data()); }
  void toOperatorVolume(Id from) override { op_.setVolume(at(from).data()); }

 private:
  Id make(std::size_t n) {
    vectors_.emplace_back(n, 0.0f);
    return static_cast<Id>(vectors_.size() - 1);
  }
  std::vector<float>& at(Id id) {
    if (id < 0 || static_cast<std::size_t>(id) >= vectors_.size()) throw std::logic_error("OperatorVectors: no vector " + std::to_string(id));
    return vectors_[static_cast<std::size_t>(id)];
  }
  ConeBeamOperator& op_;
  std::array<int, 3> size_;
  std::size_t voxels_, values_;
  const std::vector<std::size_t>& all_;
  const std::vector<float>& zeros_;
  const std::uint8_t* mask_ = nullptr;
  std::vector<std::vector<float>> vectors_;
};

}  // namespace

std::unique_ptr<OperatorVectors> makeHostVectors(ConeBeamOperator& op, const std::vector<float>& zeros, const std::vector<std::size_t>& all) {
  return std::make_unique<HostVectors>(op, zeros, all);
}

}  // namespace glrecon::detail
