// RTK geometry files: the XML that rtksimulatedgeometry writes and rtkfdk reads.
#include <tinyxml2.h>

#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"

namespace glrecon {
namespace {

// Shortest text that reads back as the same double: the round trip is exact.
std::string exact(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}

std::string trimmed(const char* text) {
  std::string s = text ? text : "";
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

double parseNumber(const std::string& path, const tinyxml2::XMLElement* element) {
  const std::string text = trimmed(element->GetText());
  // The element's name is the file's text too (Collimation* takes any suffix, and tinyxml2 any byte above 0x7F).
  const std::string name = quoted(element->Name());
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    throwInputError(path + " (line " + std::to_string(element->GetLineNum()) + ")", name, "a finite number",
                    "'" + quoted(text) + "'");
  // Distances and offsets beyond 10 km (or angles beyond 1e7 degrees) are typing errors, and overflow the
  // float arithmetic downstream.
  if (std::abs(value) > kMaxCoordinateMm)
    throwInputError(path + " (line " + std::to_string(element->GetLineNum()) + ")", name,
                    "a number within 1e7 in magnitude", "'" + quoted(text) + "'");
  return value;
}

// The per-projection parameters of RTK files, by element name (GantryAngle also as RTK 1.x's Angle).
using Setter = void (*)(CircularParams&, double);
const std::map<std::string, Setter>& parameterSetters() {
  static const std::map<std::string, Setter> setters = {
      {"SourceToIsocenterDistance", [](CircularParams& p, double v) { p.sid = v; }},
      {"SourceToDetectorDistance", [](CircularParams& p, double v) { p.sdd = v; }},
      {"GantryAngle", [](CircularParams& p, double v) { p.gantryAngle = v; }},
      {"Angle", [](CircularParams& p, double v) { p.gantryAngle = v; }},
      {"OutOfPlaneAngle", [](CircularParams& p, double v) { p.outOfPlaneAngle = v; }},
      {"InPlaneAngle", [](CircularParams& p, double v) { p.inPlaneAngle = v; }},
      {"SourceOffsetX", [](CircularParams& p, double v) { p.sourceOffsetX = v; }},
      {"SourceOffsetY", [](CircularParams& p, double v) { p.sourceOffsetY = v; }},
      {"ProjectionOffsetX", [](CircularParams& p, double v) { p.projectionOffsetX = v; }},
      {"ProjectionOffsetY", [](CircularParams& p, double v) { p.projectionOffsetY = v; }},
  };
  return setters;
}

bool isCollimation(const std::string& name) { return name.rfind("Collimation", 0) == 0; }

// Handles one parameter element; returns false when the name is not a parameter RTK defines.
bool applyParameter(const std::string& path, const tinyxml2::XMLElement* e, CircularParams& params) {
  const std::string name = e->Name();
  const std::string where = path + " (line " + std::to_string(e->GetLineNum()) + ")";
  if (auto it = parameterSetters().find(name); it != parameterSetters().end()) {
    it->second(params, parseNumber(path, e));
    return true;
  }
  if (name == "RadiusCylindricalDetector") {
    if (parseNumber(path, e) != 0.0)
      throwInputError(where, name, "0 (glrecon reconstructs flat-panel detectors only)",
                      quoted(trimmed(e->GetText())) + " (a cylindrical detector)");
    return true;
  }
  if (isCollimation(name)) {
    // Collimation only masks detector regions in RTK; glrecon reconstructs from the whole detector.
    parseNumber(path, e);
    return true;
  }
  return false;
}

void checkMatrix(const std::string& path, const tinyxml2::XMLElement* e, const CircularParams& params,
                 std::size_t index) {
  std::istringstream in(trimmed(e->GetText()));
  const auto expected = rtkProjectionMatrix(params);
  const std::string where = path + " (line " + std::to_string(e->GetLineNum()) + ")";
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      double value = 0.0;
      if (!(in >> value))
        throwInputError(where, "Matrix of projection " + std::to_string(index), "12 numbers (3 rows of 4)",
                        "fewer or unreadable values");
      // RTK's own reader accepts 0.001 (absolute) between the stored matrix and the parameters;
      // the same bound keeps every file RTK accepts readable here.
      if (std::abs(value - expected[r][c]) > 1e-3) {
        std::ostringstream found;
        found << "entry (" << r << "," << c << ") = " << value << " but the parameters give " << expected[r][c];
        throwInputError(where, "Matrix of projection " + std::to_string(index),
                        "a matrix consistent with the projection's parameters", found.str());
      }
    }
  std::string extra;
  if (in >> extra)
    throwInputError(where, "Matrix of projection " + std::to_string(index), "12 numbers", "more values");
}

}  // namespace

std::vector<CircularParams> readRtkGeometry(const std::string& path) {
  // A FIFO or device would block tinyxml2's read; a missing file and permission denied read differently.
  requireReadableFile(path, "RTK geometry file");
  tinyxml2::XMLDocument doc;
  const tinyxml2::XMLError status = doc.LoadFile(path.c_str());
  if (status == tinyxml2::XML_ERROR_FILE_NOT_FOUND || status == tinyxml2::XML_ERROR_FILE_COULD_NOT_BE_OPENED)
    throwInputError(path, "file", "a readable RTK geometry XML file", std::strerror(errno));
  if (status != tinyxml2::XML_SUCCESS)
    throwInputError(path, "XML", "well-formed XML", doc.ErrorStr() ? quoted(doc.ErrorStr(), 200) : "a parse error");

  const tinyxml2::XMLElement* root = doc.RootElement();
  if (!root || std::string(root->Name()) != "RTKThreeDCircularGeometry")
    throwInputError(path, "root element", "<RTKThreeDCircularGeometry>",
                    root ? "<" + quoted(root->Name()) + ">" : "no element");
  const char* version = root->Attribute("version");
  if (!version || (std::string(version) != "2" && std::string(version) != "3"))
    throwInputError(path, "RTKThreeDCircularGeometry version", "2 or 3",
                    version ? "'" + quoted(version) + "'" : "no version attribute");

  // Like RTK's reader, a parameter keeps its last value: top-level elements set it for all projections
  // and a value inside a <Projection> carries over to the following ones until set again.
  CircularParams current;
  current.sid = 0.0;
  current.sdd = 0.0;
  std::vector<CircularParams> params;
  for (const tinyxml2::XMLElement* e = root->FirstChildElement(); e; e = e->NextSiblingElement()) {
    const std::string name = e->Name();
    if (name == "Projection") {
      const tinyxml2::XMLElement* matrix = nullptr;
      for (const tinyxml2::XMLElement* p = e->FirstChildElement(); p; p = p->NextSiblingElement()) {
        if (std::string(p->Name()) == "Matrix")
          matrix = p;
        else if (!applyParameter(path, p, current))
          throwInputError(path + " (line " + std::to_string(p->GetLineNum()) + ")", "<Projection> child",
                          "an RTK projection parameter", "unknown element <" + quoted(p->Name()) + ">");
      }
      if (matrix) checkMatrix(path, matrix, current, params.size());
      params.push_back(current);
    } else if (!applyParameter(path, e, current)) {
      throwInputError(path + " (line " + std::to_string(e->GetLineNum()) + ")", "element",
                      "an RTK geometry parameter or <Projection>", "unknown element <" + quoted(name) + ">");
    }
  }
  if (params.empty()) throwInputError(path, "Projection", "at least one <Projection>", "none");
  // RTK's parallel geometry is SourceToDetectorDistance 0 (rtk::ThreeDCircularProjectionGeometry; its writer omits a
  // zero, so a parallel file has none). Like RTK, a scan is all parallel or all cone-beam, as projection 0 is.
  const bool parallel = params[0].parallel();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string index = std::to_string(i);
    // Parallel too: RTK integrates a parallel ray from +SID to -SID (0 integrates nothing) and takes its source angle
    // from the source at SID.
    if (!(params[i].sid > 0.0))
      throwInputError(path, "SourceToIsocenterDistance of projection " + index,
                      parallel ? "a positive distance (a parallel geometry's too: RTK's rays run from +SID to -SID)"
                               : "a positive distance",
                      exact(params[i].sid) + (params[i].sid == 0.0 ? " (or missing)" : ""));
    if (params[i].sdd < 0.0)
      throwInputError(path, "SourceToDetectorDistance of projection " + index,
                      "a positive distance, or 0 (or none) for a parallel geometry", exact(params[i].sdd));
    if (params[i].parallel() != parallel)
      throwInputError(path, "SourceToDetectorDistance of projection " + index,
                      parallel ? "0 (or none), as projection 0's: a parallel geometry (RTK refuses a mix of parallel and cone-beam projections)"
                               : "a positive distance, as projection 0's: a cone-beam geometry (RTK refuses a mix of parallel and cone-beam projections)",
                      exact(params[i].sdd));
  }
  return params;
}

std::string formatRtkGeometry(const std::vector<CircularParams>& params) {
  if (params.empty()) throw InputError("RTK geometry: nothing to write: the geometry has no projection");
  std::ostringstream out;
  out << "<?xml version=\"1.0\"?>\n<!DOCTYPE RTKGEOMETRY>\n<RTKThreeDCircularGeometry version=\"3\">\n";
  // As RTK writes it: a parameter equal for all projections is stored once at the top (omitted when 0);
  // the gantry angle is always per projection.
  struct Field {
    const char* name;
    double CircularParams::*member;
  };
  const Field fields[] = {
      {"SourceToIsocenterDistance", &CircularParams::sid}, {"SourceToDetectorDistance", &CircularParams::sdd},
      {"SourceOffsetX", &CircularParams::sourceOffsetX},   {"SourceOffsetY", &CircularParams::sourceOffsetY},
      {"ProjectionOffsetX", &CircularParams::projectionOffsetX},
      {"ProjectionOffsetY", &CircularParams::projectionOffsetY},
      {"InPlaneAngle", &CircularParams::inPlaneAngle},     {"OutOfPlaneAngle", &CircularParams::outOfPlaneAngle},
  };
  std::vector<bool> global;
  for (const Field& f : fields) {
    bool same = true;
    for (const CircularParams& p : params) same = same && p.*f.member == params[0].*f.member;
    global.push_back(same);
    if (same && params[0].*f.member != 0.0)
      out << "  <" << f.name << '>' << exact(params[0].*f.member) << "</" << f.name << ">\n";
  }
  for (const CircularParams& p : params) {
    out << "  <Projection>\n    <GantryAngle>" << exact(p.gantryAngle) << "</GantryAngle>\n";
    for (std::size_t f = 0; f < std::size(fields); ++f)
      if (!global[f])
        out << "    <" << fields[f].name << '>' << exact(p.*fields[f].member) << "</" << fields[f].name << ">\n";
    out << "    <Matrix>\n";
    for (const auto& row : rtkProjectionMatrix(p)) {
      out << "      ";
      for (int c = 0; c < 4; ++c) out << (c ? " " : "") << exact(row[c]);
      out << '\n';
    }
    out << "    </Matrix>\n  </Projection>\n";
  }
  out << "</RTKThreeDCircularGeometry>\n";
  return out.str();
}

void writeRtkGeometry(const std::string& path, const std::vector<CircularParams>& params, bool overwrite) {
  const std::string text = formatRtkGeometry(params);
  AtomicOutput output(path, overwrite);
  writeFileBytes(path, output.temporaryPath(), text.data(), text.size());
  output.commit();
}

}  // namespace glrecon
