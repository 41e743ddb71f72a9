// Forward projection through the raster pipeline: one fragment per detector pixel of view `view`, marching its
// ray through the volume (a 3D texture, hardware trilinear). Fragment centres sit at pixel index + 0.5.
uniform int view;
layout(location = 0) out float lineIntegral;
void main() { lineIntegral = forwardRay(view, gl_FragCoord.xy - 0.5); }
