// The 3D view's model (rayFrame, the camera, the transfer function) and its CPU reference renderer: the steps of
// shaders/volume_view.frag in the same float operations, in the same order. This file is compiled with
// -ffp-contract=off (CMakeLists.txt): a fused multiply-add rounds once where the shader (`precise`) rounds twice.
#include <algorithm>
#include <cmath>
#include <string>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/parallel.h"
#include "viewer/volume_renderer.h"

namespace glrecon::viewer {

void OrbitCamera::rotate(double dx, double dy, int height) {
  const double perPixel = 3.141592653589793 / std::max(1, height);
  yaw -= dx * perPixel;
  pitch = std::clamp(pitch + dy * perPixel, -1.5, 1.5);  // short of the poles, where "up" would flip
}

void OrbitCamera::zoomBy(double steps) { zoom = std::clamp(zoom * std::pow(1.1, steps), 0.2, 20.0); }

std::vector<TransferPoint> defaultTransfer(double low, double high) {
  const auto at = [&](double f) { return static_cast<float>(low + f * (high - low)); };
  // Nothing below the window; within it faint and warm at the middle, opaque and light at the top (the structures
  // the grey window was chosen for); above it faint white, so a skull or a container shows as a veil, not a wall.
  return {{at(0.0), 0.0f, 0.0f, 0.0f, 0.0f}, {at(0.5), 0.9f, 0.4f, 0.2f, 0.004f}, {at(1.0), 1.0f, 0.85f, 0.55f, 0.15f},
          {at(1.5), 1.0f, 1.0f, 1.0f, 0.02f}};
}

RayFrame rayFrame(const VolumeGrid& grid, const OrbitCamera& camera, const VolumeStyle& style, int width, int height) {
  using glm::dvec3;
  RayFrame f;
  f.size = grid.size;
  const dvec3 n(grid.size[0], grid.size[1], grid.size[2]);
  const dvec3 centre = grid.origin + (n - 1.0) * 0.5 * grid.spacing;
  const double radius = glm::length(n * grid.spacing * 0.5);
  const double half = 0.5 * camera.fovY;
  const double distance = radius / std::sin(half) / camera.zoom;
  const dvec3 towardsEye(std::cos(camera.pitch) * std::sin(camera.yaw), std::sin(camera.pitch), std::cos(camera.pitch) * std::cos(camera.yaw));
  const dvec3 eye = centre + towardsEye * distance, forward = -towardsEye;
  const dvec3 right = glm::normalize(glm::cross(forward, dvec3(0.0, 1.0, 0.0))), up = glm::cross(right, forward);
  const double perPixel = std::tan(half) / (0.5 * height);
  // To voxel coordinates: q = (world - origin) / spacing + 1/2 (voxel i's centre at i + 1/2).
  const auto store = [](std::array<float, 3>& to, const dvec3& v) {
    for (int i = 0; i < 3; ++i) to[i] = static_cast<float>(v[i]);
  };
  store(f.eye, (eye - grid.origin) / grid.spacing + 0.5);
  store(f.forward, forward / grid.spacing);
  store(f.right, right * perPixel / grid.spacing);
  store(f.up, up * perPixel / grid.spacing);
  const double dt = style.stepVoxels * std::min({grid.spacing.x, grid.spacing.y, grid.spacing.z});
  const double t0 = std::max(distance - radius, 0.5 * dt), t1 = distance + radius;
  f.t0 = static_cast<float>(t0);
  f.dt = static_cast<float>(dt);
  f.samples = static_cast<int>(std::ceil((t1 - t0) / dt)) + 1;
  f.halfWidth = 0.5f * static_cast<float>(width);
  f.halfHeight = 0.5f * static_cast<float>(height);
  f.low = static_cast<float>(style.low);
  f.invWindow = static_cast<float>(1.0 / std::max(1e-30, style.high - style.low));

  const std::vector<TransferPoint>& tf = style.transfer;
  if (tf.empty() || tf.size() > static_cast<std::size_t>(kMaxTransferPoints))
    throw UsageError("transfer function: expected 1 to " + std::to_string(kMaxTransferPoints) + " control points, found " + std::to_string(tf.size()));
  f.points = static_cast<int>(tf.size());
  // Per sample, a voxel's opacity a becomes 1 - (1 - a)^stepVoxels (the same material over a different length).
  std::array<double, 4> c[kMaxTransferPoints];
  for (std::size_t i = 0; i < tf.size(); ++i) {
    if (i && !(tf[i].density > tf[i - 1].density))
      throw UsageError("transfer function: control point " + std::to_string(i) + ": expected a density above " + std::to_string(tf[i - 1].density) +
                       ", found " + std::to_string(tf[i].density));
    const double a = std::clamp(static_cast<double>(tf[i].opacity), 0.0, 1.0);
    c[i] = {tf[i].r, tf[i].g, tf[i].b, 1.0 - std::pow(1.0 - a, style.stepVoxels)};
    f.density[i] = tf[i].density;
    for (int j = 0; j < 4; ++j) f.colour[i][j] = static_cast<float>(c[i][j]);
  }
  for (std::size_t i = 0; i + 1 < tf.size(); ++i)
    for (int j = 0; j < 4; ++j)
      f.slope[i][j] = static_cast<float>((c[i + 1][j] - c[i][j]) / (static_cast<double>(tf[i + 1].density) - tf[i].density));
  return f;
}

namespace {

// shaders/colour_maps.glsl's colourOf: grey is exact; the other maps' polynomials agree within float rounding only.
std::array<float, 3> colourOf(int map, float t) {
  if (map == 1) return {std::clamp(3.0f * t, 0.0f, 1.0f), std::clamp(3.0f * t - 1.0f, 0.0f, 1.0f), std::clamp(3.0f * t - 2.0f, 0.0f, 1.0f)};
  if (map == 2 || map == 3) {
    static const double viridis[7][3] = {{0.2777273272234177, 0.005407344544966578, 0.3340998053353061},
                                         {0.1050930431085774, 1.404613529898575, 1.384590162594685},
                                         {-0.3308618287255563, 0.214847559468213, 0.09509516302823659},
                                         {-4.634230498983486, -5.799100973351585, -19.33244095627987},
                                         {6.228269936347081, 14.17993336680509, 56.69055260068105},
                                         {4.776384997670288, -13.74514537774601, -65.35303263337234},
                                         {-5.435455855934631, 4.645852612178535, 26.3124352495832}};
    static const double inferno[7][3] = {{0.0002189403691192265, 0.001651004631001012, -0.01948089843709184},
                                         {0.1065134194856116, 0.5639564367884091, 3.932712388889277},
                                         {11.60249308247187, -3.972853965665698, -15.9423941062914},
                                         {-41.70399613139459, 17.43639888205313, 44.35414519872813},
                                         {77.162935699427, -33.40235894210092, -81.80730925738993},
                                         {-71.31942824499214, 32.62606426397723, 73.20951985803202},
                                         {25.13112622477341, -12.24266895238567, -23.07032500287172}};
    const auto& c = map == 2 ? viridis : inferno;
    std::array<float, 3> out{};
    for (int j = 0; j < 3; ++j) {
      float v = static_cast<float>(c[6][j]);
      for (int i = 5; i >= 0; --i) v = static_cast<float>(c[i][j]) + t * v;
      out[j] = std::clamp(v, 0.0f, 1.0f);
    }
    return out;
  }
  return {t, t, t};
}

// One pixel: the shader's main() step for step (the comments there say why each step is exact).
std::array<float, 4> castRay(const RayFrame& f, const float* voxels, float scale, const VolumeStyle& style, int x, int y) {
  const float sx = (static_cast<float>(x) + 0.5f) - f.halfWidth, sy = (static_cast<float>(y) + 0.5f) - f.halfHeight;
  float d[3], safe[3], e[3];
  for (int i = 0; i < 3; ++i) {
    const float across = f.forward[i] + f.right[i] * sx;
    d[i] = across + f.up[i] * sy;
    safe[i] = std::fabs(d[i]) < 1e-20f ? 1e-20f : d[i];
    e[i] = f.eye[i];
  }
  float enter = -INFINITY, leave = INFINITY;
  for (int i = 0; i < 3; ++i) {
    const float ta = (0.0f - e[i]) / safe[i], tb = (static_cast<float>(f.size[i]) - e[i]) / safe[i];
    enter = std::max(enter, std::min(ta, tb));
    leave = std::min(leave, std::max(ta, tb));
  }
  int first = f.samples, last = -1;
  if (leave >= enter - f.dt) {
    first = std::max(0, static_cast<int>(std::floor((enter - f.t0) / f.dt)) - 1);
    last = std::min(f.samples - 1, static_cast<int>(std::ceil((leave - f.t0) / f.dt)) + 1);
  }
  const std::size_t nx = static_cast<std::size_t>(f.size[0]), nxy = nx * static_cast<std::size_t>(f.size[1]);
  float peak = 0.0f, alpha = 0.0f, emitted[3] = {0.0f, 0.0f, 0.0f};
  bool hit = false;
  for (int k = first; k <= last; ++k) {
    const float t = f.t0 + static_cast<float>(k) * f.dt;
    int voxel[3];
    bool inside = true;
    for (int i = 0; i < 3; ++i) {
      const float p = e[i] + d[i] * t;
      voxel[i] = static_cast<int>(std::floor(p));
      inside = inside && voxel[i] >= 0 && voxel[i] < f.size[i];
    }
    if (!inside) continue;
    const float v = voxels[static_cast<std::size_t>(voxel[2]) * nxy + static_cast<std::size_t>(voxel[1]) * nx + static_cast<std::size_t>(voxel[0])] * scale;
    if (style.mode == VolumeMode::Mip) {
      peak = hit ? std::max(peak, v) : v;
      hit = true;
      continue;
    }
    std::array<float, 4> c;
    if (v <= f.density[0]) {
      c = f.colour[0];
    } else if (v >= f.density[f.points - 1]) {
      c = f.colour[f.points - 1];
    } else {
      int s = 0;
      for (int j = 1; j < f.points - 1; ++j)
        if (v >= f.density[j]) s = j;
      const float offset = v - f.density[s];
      for (int j = 0; j < 4; ++j) c[j] = f.colour[s][j] + f.slope[s][j] * offset;
    }
    const float w = (1.0f - alpha) * c[3];
    for (int j = 0; j < 3; ++j) emitted[j] = emitted[j] + c[j] * w;
    alpha = alpha + w;
    if (alpha >= 0.99f) break;
  }
  const float background = 0.05f;
  if (style.mode == VolumeMode::Mip) {
    if (style.raw) return {peak, hit ? 1.0f : 0.0f, 0.0f, 1.0f};
    if (!hit) return {background, background, background, 1.0f};
    const float g = std::clamp((peak - f.low) * f.invWindow, 0.0f, 1.0f);
    const std::array<float, 3> rgb = colourOf(style.colourMap, g);
    return {rgb[0], rgb[1], rgb[2], 1.0f};
  }
  const float behind = 1.0f - alpha;
  return {emitted[0] + background * behind, emitted[1] + background * behind, emitted[2] + background * behind, 1.0f};
}

}  // namespace

std::vector<float> renderVolumeCpu(const float* voxels, const VolumeGrid& grid, float scale, const OrbitCamera& camera, const VolumeStyle& style,
                                   int width, int height, int threads) {
  const RayFrame f = rayFrame(grid, camera, style, width, height);
  std::vector<float> rgba(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4);
  parallelFor(static_cast<std::size_t>(height), 1, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t y = begin; y < end; ++y)
      for (int x = 0; x < width; ++x) {
        const std::array<float, 4> c = castRay(f, voxels, scale, style, x, static_cast<int>(y));
        std::copy(c.begin(), c.end(), rgba.begin() + static_cast<std::ptrdiff_t>((y * static_cast<std::size_t>(width) + x) * 4));
      }
  });
  return rgba;
}

}  // namespace glrecon::viewer
