// The viewer's text overlay: an image cairo rendered (premultiplied alpha), drawn over the view.
in vec2 position;
layout(binding = 0) uniform sampler2D overlay;
out vec4 colour;
void main() { colour = texture(overlay, vec2(position.x, 1.0 - position.y)); }
