#pragma once
// The viewer's 3D view: the volume texture (the one the slices come from, a GL_TEXTURE_2D_ARRAY of r32f voxels, layer
// z) ray cast in a compute shader (one invocation per pixel, into an image the window shows), as a maximum intensity projection (MIP) or by direct volume rendering (DVR:
// emission-absorption composited front to back through a 1-D transfer function), seen by an orbit camera. A CPU
// reference renders the same model in the same float operations (renderVolumeCpu), so the two agree bit for bit
// (tests/viewer/volume_render_gl_test.cpp; why they can is in shaders/volume_view.comp).
//
// The model, shared by both renderers (rayFrame): a pinhole camera; the ray of pixel (x, y) has direction
// d = F + R (x + 1/2 - W/2) + U (y + 1/2 - H/2), with F the unit view direction and R, U the pixel's steps on the image
// plane at unit depth; sample k is at eye + d t_k, t_k = t0 + k dt, so the samples of all rays lie on the planes at
// depth t_k along F (as in texture-slicing renderers: no per-pixel division or square root, which is what lets the
// CPU reproduce the GPU exactly). A sample takes the voxel it falls in (nearest): what is shown is what was
// reconstructed, and fetches of the same voxels give the same values on both sides.
#include <GL/glew.h>

#include <array>
#include <optional>
#include <vector>

#include "device/gl/objects.h"
#include "glrecon/grid.h"

namespace glrecon::viewer {

enum class VolumeMode { Mip, Dvr };

/// An orbit camera about the volume's centre: yaw about the y axis (RTK's rotation axis), pitch above the x-z plane,
/// zoom 1 fits the volume's bounding sphere in the view's height.
struct OrbitCamera {
  double yaw = 0.6, pitch = 0.35;  ///< radians
  double zoom = 1.0;
  double fovY = 0.5235987755982988;  ///< 30 degrees
  /// A mouse drag of (dx, dy) pixels over a view `height` pixels tall: half a turn per view height.
  void rotate(double dx, double dy, int height);
  /// Wheel steps: each zooms in (positive) or out by 10%.
  void zoomBy(double steps);
};

/// A control point of the transfer function: at `density` (in the volume's units, after its scale) the colour
/// (r, g, b in 0..1) and the opacity of one voxel's length of material (0..1). Between points both are linear.
struct TransferPoint {
  float density = 0, r = 1, g = 1, b = 1, opacity = 0;
};

/// At most this many control points (the shader's uniform arrays).
inline constexpr int kMaxTransferPoints = 8;

/// A transfer function for the grey window [low, high]: transparent below low, most opaque at high, a faint veil above.
std::vector<TransferPoint> defaultTransfer(double low, double high);

struct VolumeStyle {
  VolumeMode mode = VolumeMode::Mip;
  double low = 0.0, high = 1.0;  ///< MIP: the grey window
  int colourMap = 0;             ///< MIP: as the slices' (0 grey, 1 hot, 2 viridis, 3 inferno)
  std::vector<TransferPoint> transfer = defaultTransfer(0.0, 1.0);  ///< DVR; sorted by density, 1..kMaxTransferPoints
  double stepVoxels = 1.0;       ///< the distance between sample planes, in the grid's smallest spacing
  bool raw = false;              ///< MIP: the maximum itself in red, 1 in green where the ray met the volume (tests, probes)
};

/// The rays of one frame as both renderers use them, in float (what the shader's uniforms hold): positions and
/// directions in voxel coordinates (voxel (i, j, k) is the cube [i, i+1) x [j, j+1) x [k, k+1), so floor() finds it).
struct RayFrame {
  std::array<float, 3> eye{}, forward{}, right{}, up{};
  float t0 = 0, dt = 1;  ///< depths of the sample planes, mm along the view direction
  int samples = 1;       ///< sample planes from t0 (they span the volume's bounding sphere)
  float halfWidth = 0.5f, halfHeight = 0.5f;
  std::array<int, 3> size{1, 1, 1};
  /// Opacity per sample at the transfer function's control points and its slopes between them, and the densities.
  std::array<float, kMaxTransferPoints> density{};
  std::array<std::array<float, 4>, kMaxTransferPoints> colour{}, slope{};
  int points = 0;
  float invWindow = 1, low = 0;  ///< MIP: grey = (value - low) * invWindow, clamped to 0..1
};

/// The frame's rays for a `width` x `height` view of `grid` from `camera` with `style` (the transfer function made per
/// sample: a voxel's opacity a becomes 1 - (1 - a)^stepVoxels). Throws UsageError for a transfer function with no
/// point, more than kMaxTransferPoints, or densities not increasing.
RayFrame rayFrame(const VolumeGrid& grid, const OrbitCamera& camera, const VolumeStyle& style, int width, int height);

/// The CPU reference of the 3D view: RGBA floats, bottom row first (as glReadPixels), of `voxels` (x fastest, each
/// multiplied by `scale`) on `grid`. The same sample positions and arithmetic as shaders/volume_view.frag.
std::vector<float> renderVolumeCpu(const float* voxels, const VolumeGrid& grid, float scale, const OrbitCamera& camera, const VolumeStyle& style,
                                   int width, int height, int threads = 0);

/// The 3D view on the GPU: a compute shader renders into an image of its own (RGBA32F, so tests read exactly what was
/// computed; the window shows it as a texture). The GL state it changes is restored (gl::StateScope, image unit 0).
class VolumeRenderer {
 public:
  VolumeRenderer();  ///< needs the context current
  /// Ray casts `volume` (a GL_TEXTURE_2D_ARRAY of r32f voxels of `grid`, multiplied by `scale`) into a `width` x
  /// `height` image, re-made when the size changes; returns the image's texture.
  GLuint render(GLuint volume, const VolumeGrid& grid, float scale, const OrbitCamera& camera, const VolumeStyle& style, int width, int height);
  GLuint texture() const { return image_.id(); }
  int width() const { return width_; }
  int height() const { return height_; }
  /// The last image, RGBA floats bottom row first.
  std::vector<float> read() const;
  /// The last image as RGB bytes, top row first (as PNG writes them).
  std::vector<unsigned char> readRgb() const;
  /// The GPU time of a timed render (its dispatch alone, by GL timestamps; the first render after the last result is
  /// timed) once the GPU has done it; nothing before (never waits).
  std::optional<double> gpuSeconds();

 private:
  gl::Program program_;
  gl::Texture image_;
  gl::Query queries_[2];
  bool timing_ = false;
  int width_ = 0, height_ = 0;
};

}  // namespace glrecon::viewer
