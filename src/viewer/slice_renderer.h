#pragma once
// Draws the viewer's frame: three orthogonal slices of a volume texture side by side (axial, coronal, sagittal, each
// `cell` pixels square, voxels as blocks), a progress bar along the bottom, a text band on top (cairo renders the
// lines and, on the right, a curve such as the residuals, log scale); reads frames back for screenshots. The GL state
// it changes is restored after each frame (gl::StateScope): operators draw in the same context.
#include <GL/glew.h>

#include <array>
#include <string>
#include <vector>

#include "device/gl/objects.h"

typedef struct _cairo_surface cairo_surface_t;

namespace glrecon::viewer {

/// One panel: a slice across `axis` (0 x, 1 y: axial, 2 z) at `index`; `across` x `up` voxels shown.
struct Panel {
  int axis = 1, index = 0, across = 1, up = 1;
};

/// The axial, coronal and sagittal panels of a volume, at its centre.
std::array<Panel, 3> centralPanels(const std::array<int, 3>& size);

struct FrameContent {
  GLuint volume = 0;               ///< a GL_TEXTURE_2D_ARRAY of r32f voxels (layer z)
  std::array<int, 3> size{1, 1, 1};
  float scale = 1.0f;              ///< multiplies the voxels (FDK: the projections in the scan / so far)
  double low = 0.0, high = 1.0;    ///< grey range
  int colourMap = 0;               ///< 0 grey, 1 hot, 2 viridis, 3 inferno (kColourMaps)
  std::array<Panel, 3> panels{};
  double progress = 0.0;           ///< 0..1, the bar's fill
  std::vector<std::string> lines;  ///< the text band's lines (as many as the renderer was made for)
  std::vector<double> curve;       ///< drawn on the right of the text band (log scale) when it has two points or more
};

/// The colour maps' names, by number (shaders/colour_maps.glsl).
inline constexpr const char* kColourMaps[] = {"grey", "hot", "viridis", "inferno"};

/// The program that draws a slice of a volume texture into the current viewport (shaders/slice_view.frag).
gl::Program buildSliceProgram();

class SliceRenderer {
 public:
  /// Panels of `cell` pixels, a text band of `textLines` lines. Needs the context current.
  SliceRenderer(int cell, int textLines);
  ~SliceRenderer();
  SliceRenderer(const SliceRenderer&) = delete;
  SliceRenderer& operator=(const SliceRenderer&) = delete;

  int cell() const { return cell_; }
  /// The frame's size: three panels across, the bar and the text band above and below them.
  int width() const { return 3 * cell_; }
  int height() const { return cell_ + kBarHeight + textHeight_; }

  void draw(const FrameContent& frame, GLuint framebuffer, int width, int height);
  /// A texture for a volume on the host (made for its size on first use), refreshed from `voxels`.
  GLuint upload(const float* voxels, const std::array<int, 3>& size);

  static constexpr int kBarHeight = 12;

 private:
  void renderText(const FrameContent& frame);
  int cell_, textHeight_;
  gl::Program slices_, overlay_;
  gl::VertexArray quad_;
  gl::Texture text_, hostVolume_;
  std::array<int, 3> hostSize_{0, 0, 0};
  cairo_surface_t* surface_ = nullptr;
};

/// `width` x `height` pixels of `framebuffer` as RGB bytes, top row first (as PNG writes them): the viewer's and the
/// app's screenshots.
std::vector<unsigned char> readFramebufferRgb(GLuint framebuffer, int width, int height);

}  // namespace glrecon::viewer
