#pragma once
// The forward and Adjoint passes of the GL operators (see gl_ray_passes.cpp), made at their first use in the
// operator's context. Internal to src/operators/gl.
#include <cstdint>
#include <map>
#include <vector>

#include "device/gl/shader.h"
#include "glrecon/operator.h"
#include "operators/projector_views.h"

namespace glrecon::detail {

class GlRayPasses {
 public:
  /// `compute`: compute shaders; else the raster path. The context must be current.
  /// `matched`: the matched pair (project_matched.comp, compute shaders on either path).
  GlRayPasses(bool compute, ProjectorPair pair, const Geometry& geometry, const VolumeGrid& grid, double step);
  ~GlRayPasses();
  GlRayPasses(const GlRayPasses&) = delete;
  GlRayPasses& operator=(const GlRayPasses&) = delete;

  /// projections[i] = A(views[i]) of `volume` (an R32F 2D array texture of the grid, layer = z slice).
  void forward(GLuint volume, const std::size_t* views, std::size_t count, float* projections);
  /// target += B projections (Adjoint) into an R32F 2D array texture of the grid.
  void back(const float* projections, const std::size_t* views, std::size_t count, GLuint target);
  /// The subset rule applied to `iterate` (an R32F 2D array texture of the grid) with B_S(correction) and B_S(1)
  /// computed here; `mask` (nullptr: none) as setUpdateMask gave it.
  void updateSubset(GLuint iterate, const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule);
  void setMask(const std::uint8_t* mask);
  /// The subset methods' data on the device (ConeBeamOperator::setSubsetData): false where half the free device memory
  /// (as the driver tells) does not hold the data, the ray lengths and a correction of every view.
  bool setSubsetData(const float* projections, const float* rayLengths, std::size_t views, float rayFloor, bool multiplicative);
  /// A_S of `volume` and the subset's correction, kept on the device for updateSubset(nullptr); the residual's squares.
  double correctSubset(GLuint volume, const std::size_t* views, std::size_t count);

 private:
  /// `volume` (an R32F 2D array texture of the grid) into the 3D texture the rays sample.
  void sample(GLuint volume);
  /// A of the 3D texture for `n` views into the first n layers of projectionLayers_ (views' constants uploaded).
  void drawForward(const std::size_t* views, int n);
  void forwardTexture(const std::size_t* views, std::size_t count, float* projections);
  /// `unpack` non-zero: the projections come from that buffer (bound as the pixel unpack buffer), `projections` unused.
  void backInto(const float* projections, const std::size_t* views, std::size_t count, GLuint target, bool clear,
                bool repeatFirstBatch = false, GLuint unpack = 0);
  /// glTextureSubImage3D of batch `first` (n views) into projectionLayers_, from host memory or the unpack buffer.
  void uploadBatch(const float* projections, std::size_t first, int n, bool repeatFirstBatch, GLuint unpack);
  gl::Program build(const std::vector<gl::ShaderStage>& stages, const std::vector<std::string>& defines);
  void uploadViews(const std::size_t* views, int n);
  void setCommonUniforms(GLuint program);

  void matchedBackInto(const float* projections, const std::size_t* views, std::size_t count, GLuint target, bool clear,
                       bool repeatFirstBatch, GLuint unpack);
  bool compute_, matched_, distanceDriven_;
  VolumeGrid grid_;
  int nu_, nv_;
  float step_;
  int maxLayers_ = 1;
  std::vector<ProjectorView> views_;
  gl::Program forwardProgram_, backProgram_;
  gl::Texture sampled_, projectionLayers_;  // sampled_: the volume's 3D copy the rays sample
  gl::Buffer viewBuffer_;
  gl::Framebuffer framebuffer_;
  gl::VertexArray vertexArray_;
  // updateSubset: programs, B_S(c)'s and B_S(1)'s targets, the mask, the largest weight.
  gl::Program maxProgram_, updateProgram_;
  gl::Texture updateTarget_, weightTarget_, maskTexture_;
  gl::Buffer largest_;
  // The matched pair: its programs and the transpose's buffer of float bits; per view, whether it is in plane form
  // (src/operators/plane_gather.h: its forward on its planes, its transpose weighed then gathered).
  gl::Program matchedForward_, matchedBack_, matchedCopy_, matchedWeigh_, matchedGather_;
  gl::Buffer scatter_;
  std::vector<unsigned char> planeGather_;
  // B_S(1) and its largest value per subset (keyed by its views), kept while they fit (see updateSubset).
  struct SubsetWeights {
    gl::Texture weights;
    float largest = 0.0f;
  };
  std::map<std::vector<std::size_t>, SubsetWeights> weightCache_;
  std::size_t cacheCapacity_ = 0;
  bool masked_ = false;
  std::vector<float> ones_;
  // The subset methods' data (setSubsetData): every projection and ray length, a whole subset's correction, the
  // subset's view indices, the work groups' sums of squares.
  gl::Program correctProgram_;
  gl::Buffer data_, lengths_, correction_, viewIndex_, partials_;
  float rayFloor_ = 0.0f;
  bool multiplicative_ = false;
  std::size_t correctionViews_ = 0;  // views of the correction correctSubset formed (0: none pending)
};

}  // namespace glrecon::detail
