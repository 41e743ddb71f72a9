// RTK geometry XML: round trip, a hand-written file, bad files.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "test_support.h"

namespace glrecon {
namespace {

// How far a coordinate built by ITK's three rotations may lie from the value worked by hand: the rotations are made of
// cos and sin of multiples of 90 degrees (cos(pi/2) is 6.1e-17, not 0), each of the 3 products of a coordinate sums 3
// terms of an entry (at most 1) times a value of at most `scale`, each term and sum rounded: 3 x 3 x scale x (6.2e-17
// + 2 eps).
double rotationBound(double scale) { return 9.0 * scale * (6.2e-17 + 2.0 * std::numeric_limits<double>::epsilon()); }

using test::expectError;

std::vector<CircularParams> randomParams(int count, bool varySid) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> angle(-400, 400), offset(-30, 30);
  std::vector<CircularParams> params;
  for (int i = 0; i < count; ++i) {
    CircularParams p;
    p.sid = varySid ? 900 + 0.123456789 * i : 1000.0 / 3.0;
    p.sdd = 1536.0 + 1e-7;
    p.gantryAngle = angle(rng);
    p.outOfPlaneAngle = 3.3;
    p.inPlaneAngle = angle(rng) / 100;
    p.sourceOffsetX = offset(rng);
    p.sourceOffsetY = 0.0;
    p.projectionOffsetX = offset(rng);
    p.projectionOffsetY = 1.0 / 7.0;
    params.push_back(p);
  }
  return params;
}

void expectSame(const std::vector<CircularParams>& a, const std::vector<CircularParams>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    // Exact: the writer stores the shortest decimal that reads back as the same double.
    EXPECT_EQ(a[i].sid, b[i].sid);
    EXPECT_EQ(a[i].sdd, b[i].sdd);
    EXPECT_EQ(a[i].gantryAngle, b[i].gantryAngle);
    EXPECT_EQ(a[i].outOfPlaneAngle, b[i].outOfPlaneAngle);
    EXPECT_EQ(a[i].inPlaneAngle, b[i].inPlaneAngle);
    EXPECT_EQ(a[i].sourceOffsetX, b[i].sourceOffsetX);
    EXPECT_EQ(a[i].sourceOffsetY, b[i].sourceOffsetY);
    EXPECT_EQ(a[i].projectionOffsetX, b[i].projectionOffsetX);
    EXPECT_EQ(a[i].projectionOffsetY, b[i].projectionOffsetY);
  }
}

TEST(RtkGeometry, RoundTripIsExact) {
  const auto dir = test::scratchDir();
  for (bool varySid : {false, true}) {
    const auto params = randomParams(25, varySid);
    const std::string path = (dir / (varySid ? "vary.xml" : "global.xml")).string();
    writeRtkGeometry(path, params, false);
    expectSame(params, readRtkGeometry(path));
  }
  // Global parameters are written once at the top, zero ones not at all, as RTK does.
  const std::string text = test::readText(dir / "global.xml");
  EXPECT_NE(text.find("<RTKThreeDCircularGeometry version=\"3\">"), std::string::npos);
  EXPECT_EQ(text.find("<SourceOffsetY>"), std::string::npos);
  EXPECT_LT(text.find("<SourceToIsocenterDistance>"), text.find("<Projection>"));
}

TEST(RtkGeometry, HandWrittenFileGivesTheExpectedVectors) {
  const auto dir = test::scratchDir();
  // Version 2 with RTK 1.x's <Angle>, global distances and offsets, one rotation per projection.
  test::writeText(dir / "g.xml", R"(<?xml version="1.0"?>
<!DOCTYPE RTKGEOMETRY>
<RTKThreeDCircularGeometry version="2">
  <SourceToIsocenterDistance>1000</SourceToIsocenterDistance>
  <SourceToDetectorDistance>1500</SourceToDetectorDistance>
  <ProjectionOffsetX>10</ProjectionOffsetX>
  <SourceOffsetY>5</SourceOffsetY>
  <Projection><Angle>90</Angle></Projection>
  <Projection><GantryAngle>0</GantryAngle><OutOfPlaneAngle>90</OutOfPlaneAngle></Projection>
  <Projection><OutOfPlaneAngle>0</OutOfPlaneAngle><InPlaneAngle>90</InPlaneAngle></Projection>
</RTKThreeDCircularGeometry>
)");
  const auto params = readRtkGeometry((dir / "g.xml").string());
  ASSERT_EQ(params.size(), 3u);
  // Detector: pixel (0,0) at detector mm (-10, -20), 2 mm pixels.
  const Geometry g = Geometry::fromCircular(params, DetectorLayout{11, 21, 2.0, 2.0, -10.0, -20.0});
  // In the rotated frame: source (0, 5, 1000), pixel00 (-10 + 10, -20, 1000 - 1500), steps (2,0,0), (0,2,0).
  // Worked by hand with ITK's rotations: Ry(90): (x,y,z) -> (z, y, -x); Rx(90): (x, -z, y); Rz(90): (-y, x, z).
  struct Expected {
    glm::dvec3 source, pixel00, u, v;
  } expected[] = {
      {{1000, 5, 0}, {-500, -20, 0}, {0, 0, -2}, {0, 2, 0}},
      {{0, -1000, 5}, {0, 500, -20}, {2, 0, 0}, {0, 0, 2}},
      {{-5, 0, 1000}, {20, 0, -500}, {0, 2, 0}, {-2, 0, 0}},
  };
  for (int i = 0; i < 3; ++i) {
    const ProjectionVectors& v = g.views[i];
    for (int a = 0; a < 3; ++a) {
      EXPECT_NEAR(v.source[a], expected[i].source[a], rotationBound(1500)) << "projection " << i;  // SDD 1500 mm
      EXPECT_NEAR(v.pixel00[a], expected[i].pixel00[a], rotationBound(1500)) << "projection " << i;
      EXPECT_NEAR(v.uStep[a], expected[i].u[a], rotationBound(2)) << "projection " << i;  // 2 mm pixels
      EXPECT_NEAR(v.vStep[a], expected[i].v[a], rotationBound(2)) << "projection " << i;
    }
  }
  // As in RTK's reader a value carries over: the third projection keeps the second one's gantry angle (0)
  // rather than the default; the first one's 90 would have put its source on +x.
  EXPECT_EQ(params[2].gantryAngle, 0.0);
  EXPECT_EQ(params[0].gantryAngle, 90.0);
}

TEST(RtkGeometry, MatrixIsCheckedAgainstTheParameters) {
  const auto dir = test::scratchDir();
  const auto params = randomParams(3, false);
  std::string text = formatRtkGeometry(params);
  test::writeText(dir / "ok.xml", text);
  EXPECT_NO_THROW(readRtkGeometry((dir / "ok.xml").string()));
  // Corrupt the first number of the second <Matrix>.
  auto first = text.find("<Matrix>");
  auto second = text.find("<Matrix>", first + 1);
  auto number = text.find_first_of("-0123456789", second + 8);
  text.insert(number, "1");
  test::writeText(dir / "bad.xml", text);
  expectError<InputError>([&] { readRtkGeometry((dir / "bad.xml").string()); },
                          {"bad.xml", "Matrix of projection 1", "consistent with the projection's parameters"});
}

TEST(RtkGeometry, BadFilesNameFileAndField) {
  const auto dir = test::scratchDir();
  const auto write = [&](const std::string& name, const std::string& body) {
    test::writeText(dir / name, "<?xml version=\"1.0\"?>\n" + body);
    return (dir / name).string();
  };
  const std::string head = "<RTKThreeDCircularGeometry version=\"3\"><SourceToIsocenterDistance>1000</SourceToIsocenterDistance>"
                           "<SourceToDetectorDistance>1500</SourceToDetectorDistance>";
  const std::string tail = "</RTKThreeDCircularGeometry>";
  expectError<InputError>([&] { readRtkGeometry(write("cyl.xml", head + "<RadiusCylindricalDetector>500</RadiusCylindricalDetector><Projection><GantryAngle>0</GantryAngle></Projection>" + tail)); },
                          {"cyl.xml", "RadiusCylindricalDetector", "flat-panel", "cylindrical"});
  expectError<InputError>([&] { readRtkGeometry(write("unknown.xml", head + "<Projection><GantryAngle>0</GantryAngle><Tilt>3</Tilt></Projection>" + tail)); },
                          {"unknown.xml", "unknown element <Tilt>"});
  expectError<InputError>([&] { readRtkGeometry(write("nan.xml", head + "<Projection><GantryAngle>abc</GantryAngle></Projection>" + tail)); },
                          {"nan.xml", "GantryAngle", "a finite number", "'abc'"});
  expectError<InputError>([&] { readRtkGeometry(write("v4.xml", "<RTKThreeDCircularGeometry version=\"4\"></RTKThreeDCircularGeometry>")); },
                          {"v4.xml", "version", "2 or 3", "'4'"});
  expectError<InputError>([&] { readRtkGeometry(write("root.xml", "<Geometry/>")); }, {"root.xml", "root element", "<Geometry>"});
  expectError<InputError>([&] { readRtkGeometry(write("empty.xml", head + tail)); }, {"empty.xml", "at least one <Projection>"});
  expectError<InputError>([&] { readRtkGeometry(write("broken.xml", head + "<Projection>")); }, {"broken.xml", "well-formed XML"});
  expectError<InputError>([&] { readRtkGeometry((dir / "missing.xml").string()); }, {"missing.xml", "no such file"});
}

// RTK's parallel geometry: SourceToDetectorDistance 0 (rtk::ThreeDCircularProjectionGeometry: "If SDD equals 0., then
// one is dealing with a parallel geometry"), which RTK's writer leaves out as it leaves out every zero.
TEST(RtkGeometry, ParallelGeometryRoundTripIsExactAndWrittenAsRtkDoes) {
  const auto dir = test::scratchDir();
  for (bool varySid : {false, true}) {
    auto params = randomParams(25, varySid);
    for (CircularParams& p : params) p.sdd = 0.0;
    const std::string path = (dir / (varySid ? "vary.xml" : "global.xml")).string();
    writeRtkGeometry(path, params, false);
    expectSame(params, readRtkGeometry(path));
    EXPECT_EQ(test::readText(path).find("SourceToDetectorDistance"), std::string::npos) << path;
  }
}

// A file as RTK writes a parallel scan (rtksimulatedgeometry --sdd 0): SID, no SDD, and RTK's matrix, whose parallel
// form (RTK's header: rows (R row 0, -ProjectionOffsetX), (R row 1, -ProjectionOffsetY), (0, 0, 0, 1)) is worked here
// by hand, so the matrix check holds glrecon's to RTK's. At gantry angle 90 world -> rotated is Ry(-90):
// (x, y, z) -> (-z, y, x), so row 0 is (0, 0, -1), row 1 (0, 1, 0).
TEST(RtkGeometry, HandWrittenParallelFileGivesRaysAlongTheBeamAxis) {
  const auto dir = test::scratchDir();
  test::writeText(dir / "p.xml", R"(<?xml version="1.0"?>
<!DOCTYPE RTKGEOMETRY>
<RTKThreeDCircularGeometry version="3">
  <SourceToIsocenterDistance>1000</SourceToIsocenterDistance>
  <ProjectionOffsetX>10</ProjectionOffsetX>
  <Projection>
    <GantryAngle>0</GantryAngle>
    <Matrix>
      1 0 0 -10
      0 1 0 0
      0 0 0 1
    </Matrix>
  </Projection>
  <Projection>
    <GantryAngle>90</GantryAngle>
    <Matrix>
      0 0 -1 -10
      0 1 0 0
      0 0 0 1
    </Matrix>
  </Projection>
</RTKThreeDCircularGeometry>
)");
  const auto params = readRtkGeometry((dir / "p.xml").string());
  ASSERT_EQ(params.size(), 2u);
  EXPECT_TRUE(params[0].parallel() && params[1].parallel());
  // Detector: pixel (0,0) at detector mm (-10, -20), 2 mm pixels; detector mm u lies at rotated x = u + 10.
  const Geometry g = Geometry::fromCircular(params, DetectorLayout{11, 21, 2.0, 2.0, -10.0, -20.0});
  ASSERT_TRUE(g.parallel());
  // Gantry 0: rays along -z (from RTK's source side, +z), pixel (0,0) at rotated (0, -20, 0); gantry 90: Ry(90) takes
  // (x, y, z) to (z, y, -x): rays along -x, u along -z.
  struct Expected {
    glm::dvec3 ray, pixel00, u, v;
  } expected[] = {{{0, 0, -1}, {0, -20, 0}, {2, 0, 0}, {0, 2, 0}}, {{-1, 0, 0}, {0, -20, 0}, {0, 0, -2}, {0, 2, 0}}};
  for (int i = 0; i < 2; ++i)
    for (int a = 0; a < 3; ++a) {
      EXPECT_NEAR(g.views[i].ray[a], expected[i].ray[a], rotationBound(1)) << "projection " << i;  // unit rays
      EXPECT_NEAR(g.views[i].pixel00[a], expected[i].pixel00[a], rotationBound(1000)) << "projection " << i;  // up to SID
      EXPECT_NEAR(g.views[i].uStep[a], expected[i].u[a], rotationBound(2)) << "projection " << i;
      EXPECT_NEAR(g.views[i].vStep[a], expected[i].v[a], rotationBound(2)) << "projection " << i;
    }
  // RTK's cone-beam matrix in place of the parallel one is refused: it is not the parameters' matrix.
  std::string text = test::readText(dir / "p.xml");
  text.replace(text.find("0 0 0 1"), 7, "0 0 1 -1000");
  test::writeText(dir / "cone_matrix.xml", text);
  expectError<InputError>([&] { readRtkGeometry((dir / "cone_matrix.xml").string()); },
                          {"cone_matrix.xml", "Matrix of projection 0", "consistent with the projection's parameters"});
}

// What RTK would refuse, or a parallel ray could not be: each names the file, the field, what was expected and found.
TEST(RtkGeometry, BadParallelFilesNameFileFieldExpectedAndFound) {
  const auto dir = test::scratchDir();
  const auto write = [&](const std::string& name, const std::string& body) {
    test::writeText(dir / name, "<?xml version=\"1.0\"?>\n<RTKThreeDCircularGeometry version=\"3\">" + body +
                                    "</RTKThreeDCircularGeometry>");
    return (dir / name).string();
  };
  const std::string view = "<Projection><GantryAngle>0</GantryAngle></Projection>";
  expectError<InputError>([&] { readRtkGeometry(write("negative_sid.xml", "<SourceToIsocenterDistance>-1000</SourceToIsocenterDistance>" + view)); },
                          {"negative_sid.xml", "SourceToIsocenterDistance of projection 0", "expected a positive distance (a parallel geometry's too",
                           "found -1000"});
  expectError<InputError>([&] { readRtkGeometry(write("no_sid.xml", view)); },
                          {"no_sid.xml", "SourceToIsocenterDistance of projection 0", "expected a positive distance", "found 0 (or missing)"});
  expectError<InputError>([&] { readRtkGeometry(write("negative_sdd.xml", "<SourceToIsocenterDistance>1000</SourceToIsocenterDistance>"
                                                                            "<SourceToDetectorDistance>-5</SourceToDetectorDistance>" + view)); },
                          {"negative_sdd.xml", "SourceToDetectorDistance of projection 0", "a positive distance, or 0 (or none) for a parallel geometry",
                           "found -5"});
  // RTK refuses to mix parallel and cone-beam projections, either way round.
  expectError<InputError>([&] { readRtkGeometry(write("cone_then_parallel.xml", "<SourceToIsocenterDistance>1000</SourceToIsocenterDistance>"
                                                                                  "<SourceToDetectorDistance>1536</SourceToDetectorDistance>" + view +
                                                                                  "<Projection><SourceToDetectorDistance>0</SourceToDetectorDistance></Projection>")); },
                          {"cone_then_parallel.xml", "SourceToDetectorDistance of projection 1", "a positive distance, as projection 0's", "found 0"});
  expectError<InputError>([&] { readRtkGeometry(write("parallel_then_cone.xml", "<SourceToIsocenterDistance>1000</SourceToIsocenterDistance>" + view + view +
                                                                                  "<Projection><SourceToDetectorDistance>1536</SourceToDetectorDistance></Projection>")); },
                          {"parallel_then_cone.xml", "SourceToDetectorDistance of projection 2", "0 (or none), as projection 0's: a parallel geometry",
                           "found 1536"});
}

TEST(RtkGeometry, WriterRefusesToOverwrite) {
  const auto dir = test::scratchDir();
  test::writeText(dir / "g.xml", "keep me");
  expectError<InputError>([&] { writeRtkGeometry((dir / "g.xml").string(), randomParams(2, false), false); }, {"g.xml", "overwrite"});
  EXPECT_EQ(test::readText(dir / "g.xml"), "keep me");
  writeRtkGeometry((dir / "g.xml").string(), randomParams(2, false), true);
  EXPECT_NE(test::readText(dir / "g.xml"), "keep me");
}

// Text from the file reaches messages escaped (glrecon::quoted), never as raw bytes: an attribute (a terminal
// escape) and an element's name (tinyxml2 takes any byte above 0x7F in names; Collimation* any suffix).
TEST(RtkGeometry, FileTextIsQuotedInMessages) {
  const auto dir = test::scratchDir();
  // Expects `read` to throw an InputError whose message holds `escaped` and only printable ASCII.
  const auto expectQuoted = [](const auto& read, const std::string& escaped) {
    try {
      read();
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(escaped), std::string::npos) << message;
      for (unsigned char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << message;
    }
  };
  const std::string tail = "<Projection><GantryAngle>0</GantryAngle></Projection></RTKThreeDCircularGeometry>\n";
  test::writeText(dir / "version.xml", "<RTKThreeDCircularGeometry version=\"\x1b[31m\">" + tail);
  expectQuoted([&] { readRtkGeometry((dir / "version.xml").string()); }, "version: expected 2 or 3, found '\\x1B[31m'");
  test::writeText(dir / "name.xml", "<RTKThreeDCircularGeometry version=\"3\"><Collimation\xc3\xa9>x</Collimation\xc3\xa9>" + tail);
  expectQuoted([&] { readRtkGeometry((dir / "name.xml").string()); }, "Collimation\\xC3\\xA9: expected a finite number");
}

}  // namespace
}  // namespace glrecon
