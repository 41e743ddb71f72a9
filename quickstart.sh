#!/usr/bin/env bash
# glrecon quick start on Debian 12: installs the packages that are missing, builds (Release), then
#   ./quickstart.sh demo [demo options]   simulates a Shepp-Logan scan, reconstructs it, writes glrecon-demo/
#   ./quickstart.sh test                  runs the whole test suite (what CI runs)
set -euo pipefail
cd "$(dirname "$0")"

# OpenGL: headers and loaders (EGL, libOpenGL, GLEW) and Mesa's drivers, whose llvmpipe runs the GL backends
# (and their tests) on machines without a GPU. Dear ImGui (libimgui-dev): the desktop app's widgets. Python: pybind11 and NumPy build the module, pytest, hypothesis (property
# tests) and matplotlib test it
# (the Python tests and the example run under ctest).
packages=(cmake g++ ninja-build pkg-config libfftw3-dev libtinyxml2-dev libcli11-dev libglm-dev libpng-dev
          zlib1g-dev libgtest-dev libegl-dev libopengl-dev libglew-dev libegl-mesa0 libgl1-mesa-dri libglfw3-dev
          libcairo2-dev libimgui-dev xvfb xauth xdotool libx11-dev libopenmpi-dev openmpi-bin libtiff-dev pybind11-dev python3-dev python3-numpy python3-pytest python3-matplotlib
          python3-setuptools python3-hypothesis python3-scipy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build

action="${1:-demo}"
[ $# -gt 0 ] && shift
case "$action" in
  demo) ./build/glrecon demo "$@" ;;
  # Without a display the window tests run under a virtual X server (Xvfb); GL itself runs headless via EGL.
  test)
    if [ -z "${DISPLAY:-}" ] && command -v xvfb-run > /dev/null; then
      xvfb-run -a -s "-screen 0 1280x1024x24" ctest --test-dir build --output-on-failure "$@"
    else
      ctest --test-dir build --output-on-failure "$@"
    fi ;;
  *) echo "usage: ./quickstart.sh [demo|test] [options]" >&2; exit 2 ;;
esac
