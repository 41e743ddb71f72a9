// The residual curve of an iterative run as CSV and as a PNG chart (residual_plot.h); the chart uses cairo.
#include "residual_plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/io.h"

namespace glrecon::app {

double dataNorm(const Image& projections) {
  double sum = 0;
  for (float b : projections.data) sum += static_cast<double>(b) * b;
  return std::sqrt(sum);
}

namespace {

std::string residualCsvText(const IterativeReport& report) {
  std::ostringstream f;
  f << "iteration,subsets,residual,relative_residual,seconds\n";
  for (const IterationRecord& r : report.iterations)
    f << r.iteration << ',' << r.subsets << ',' << r.residual << ',' << (report.dataNorm > 0 ? r.residual / report.dataNorm : 0.0) << ','
      << r.seconds << '\n';
  f << "final,," << report.finalResidual << ',' << (report.dataNorm > 0 ? report.finalResidual / report.dataNorm : 0.0) << ','
    << report.seconds << '\n';
  return f.str();
}

// Draws the chart into `file` (a temporary), errors naming `target`.
void drawResidualPng(const std::string& target, const std::string& file, const IterativeReport& report, const std::string& title) {
  const int width = 640, height = 400, left = 80, right = 20, top = 40, bottom = 50;
  std::vector<double> values;
  for (const IterationRecord& r : report.iterations) values.push_back(r.residual);
  values.push_back(report.finalResidual);
  double lo = 1e300, hi = 0;
  for (double v : values)
    if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(hi > 0)) lo = 1e-3, hi = 1;
  if (hi <= lo * 1.0001) lo = hi / 10;
  const double llo = std::floor(std::log10(lo)), lhi = std::ceil(std::log10(hi));
  auto x = [&](double i) { return left + (width - left - right) * (values.size() > 1 ? i / (values.size() - 1) : 0.5); };
  auto y = [&](double v) { return top + (height - top - bottom) * (1 - (std::log10(std::max(v, lo)) - llo) / std::max(1e-9, lhi - llo)); };
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 14);
  cairo_move_to(cr, 10, 22);
  cairo_show_text(cr, ("residual ||b - A x|| per iteration: " + title).c_str());
  cairo_set_font_size(cr, 11);
  cairo_set_line_width(cr, 1);
  for (double e = llo; e <= lhi; e += 1) {  // decades
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    cairo_move_to(cr, left, y(std::pow(10, e)));
    cairo_line_to(cr, width - right, y(std::pow(10, e)));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    char label[32];
    std::snprintf(label, sizeof label, "1e%+d", static_cast<int>(e));
    cairo_move_to(cr, 10, y(std::pow(10, e)) + 4);
    cairo_show_text(cr, label);
  }
  cairo_move_to(cr, left, height - 20);
  cairo_show_text(cr, "iteration 1 ... last, then the final volume (log scale)");
  cairo_set_source_rgb(cr, 0.1, 0.35, 0.75);
  cairo_set_line_width(cr, 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i == 0) cairo_move_to(cr, x(i), y(values[i]));
    else cairo_line_to(cr, x(i), y(values[i]));
  }
  cairo_stroke(cr);
  cairo_destroy(cr);
  const cairo_status_t status = cairo_surface_write_to_png(surface, file.c_str());
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS) throwInputError(target, "output", "a writable PNG", cairo_status_to_string(status));
}

}  // namespace

void writeResidualFiles(const std::string& csvPath, const std::string& pngPath, const IterativeReport& report, const std::string& title,
                        bool overwrite) {
  // Both written under temporary names first and published together: a full disk while drawing the chart leaves
  // neither (the CSV was published empty before, its stream's late write error unseen).
  std::optional<AtomicOutput> csv, png;
  if (!csvPath.empty()) {
    csv.emplace(csvPath, overwrite);
    const std::string text = residualCsvText(report);
    writeFileBytes(csvPath, csv->temporaryPath(), text.data(), text.size());
  }
  if (!pngPath.empty()) {
    png.emplace(pngPath, overwrite);
    drawResidualPng(pngPath, png->temporaryPath(), report, title);
  }
  if (csv && png) {
    AtomicOutput::commitPair(*csv, *png);
  } else if (csv) {
    csv->commit();
  } else if (png) {
    png->commit();
  }
}

void writeResidualCsv(const std::string& path, const IterativeReport& report, bool overwrite) {
  writeResidualFiles(path, "", report, "", overwrite);
}

void writeResidualPng(const std::string& path, const IterativeReport& report, const std::string& title, bool overwrite) {
  writeResidualFiles("", path, report, title, overwrite);
}

}  // namespace glrecon::app
