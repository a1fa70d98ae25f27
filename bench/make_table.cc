// make_table: a synthetic recommendation table shaped like table 5 of Meta's
// ISCA 2022 data-ingestion paper, plus the feature projections of simulated
// training jobs whose feature use follows a skewed popularity.
//
//   make_table OUT_DIR [--rows N] [--dense N] [--sparse N] [--history N]
//              [--jobs N] [--concentration C] [--seed N] [--no-table]
//
// Writes OUT_DIR/table.jsonl (map rows: "label", "dense" id -> float,
// "sparse" id -> list of int64), OUT_DIR/access.log (one line per past job,
// in the access log format of a table reader) and OUT_DIR/job-K.txt (the
// features of new job K, one per line). Each feature's coverage is drawn
// from [0.3, 0.45]; list lengths are uniform on 1..49 (mean 25). Each
// feature has a popularity p, the chance that a job reads it, drawn from
// Beta(0.1 C, 0.9 C): a job reads 10% of the features on average, and the
// smaller C, the more jobs agree on which (most p near 0 or near 1). The rows
// depend on --seed only, so tables made with other C or job counts are equal;
// --no-table writes only the access log and jobs.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "format/popularity.h"

namespace {

struct Args {
  std::string out;
  uint64_t rows = 120000, dense = 1000, sparse = 100, history = 100, jobs = 5, seed = 1;
  double concentration = 0.5;
  bool table = true;
};

std::vector<std::string> DrawJob(const std::vector<std::string>& names, const std::vector<double>& p,
                                 std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::string> job;
  for (size_t i = 0; i < names.size(); ++i) {
    if (u(rng) < p[i]) job.push_back(names[i]);
  }
  return job;
}

int Usage() {
  std::fputs("usage: make_table OUT_DIR [--rows N] [--dense N] [--sparse N] [--history N] [--jobs N]\n"
             "                  [--concentration C] [--seed N] [--no-table]\n",
             stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--no-table") {
      a.table = false;
      continue;
    }
    if (k.starts_with("--") && i + 1 >= argc) return Usage();
    if (k == "--rows") a.rows = std::strtoull(argv[++i], nullptr, 10);
    else if (k == "--dense") a.dense = std::strtoull(argv[++i], nullptr, 10);
    else if (k == "--sparse") a.sparse = std::strtoull(argv[++i], nullptr, 10);
    else if (k == "--history") a.history = std::strtoull(argv[++i], nullptr, 10);
    else if (k == "--jobs") a.jobs = std::strtoull(argv[++i], nullptr, 10);
    else if (k == "--seed") a.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (k == "--concentration") a.concentration = std::strtod(argv[++i], nullptr);
    else if (k.starts_with("--") || !a.out.empty()) return Usage();
    else a.out = k;
  }
  if (a.out.empty() || a.dense + a.sparse == 0) return Usage();
  std::filesystem::create_directories(a.out);
  std::mt19937_64 rng(a.seed), job_rng(a.seed ^ 0x9e3779b97f4a7c15ULL);
  std::uniform_real_distribution<double> coverage_dist(0.3, 0.45), u(0, 1);

  // Dense ids 1..D, sparse ids 100001..100000+S.
  std::vector<double> dense_cov(a.dense), sparse_cov(a.sparse);
  for (double& c : dense_cov) c = coverage_dist(rng);
  for (double& c : sparse_cov) c = coverage_dist(rng);
  std::vector<std::string> names;
  for (uint64_t d = 0; d < a.dense; ++d) names.push_back(std::to_string(d + 1));
  for (uint64_t s = 0; s < a.sparse; ++s) names.push_back(std::to_string(100001 + s));
  std::gamma_distribution<double> ga(0.1 * a.concentration), gb(0.9 * a.concentration);
  std::vector<double> popularity(names.size());
  for (double& p : popularity) {
    const double x = ga(job_rng), y = gb(job_rng);
    p = x + y > 0 ? x / (x + y) : 0;
  }

  std::string log;
  for (uint64_t h = 0; h < a.history; ++h) {
    log += pcr::FormatAccessLogEntry({.features = DrawJob(names, popularity, job_rng), .job = "job-" + std::to_string(h)});
  }
  FILE* f = std::fopen((a.out + "/access.log").c_str(), "w");
  std::fwrite(log.data(), 1, log.size(), f);
  std::fclose(f);
  for (uint64_t j = 0; j < a.jobs; ++j) {
    f = std::fopen((a.out + "/job-" + std::to_string(j) + ".txt").c_str(), "w");
    for (const std::string& name : DrawJob(names, popularity, job_rng)) std::fprintf(f, "%s\n", name.c_str());
    std::fclose(f);
  }

  if (!a.table) return 0;
  f = std::fopen((a.out + "/table.jsonl").c_str(), "w");
  std::string line;
  char buf[64];
  for (uint64_t r = 0; r < a.rows; ++r) {
    line = "{\"label\": " + std::to_string(rng() % 2) + ", \"dense\": {";
    bool first = true;
    for (uint64_t d = 0; d < a.dense; ++d) {
      if (u(rng) >= dense_cov[d]) continue;
      const float v = static_cast<float>(static_cast<int>(rng() % 2000000) - 1000000) / 4096.0f;
      line += first ? "\"" : ", \"";
      line += std::to_string(d + 1);
      line += "\": ";
      line.append(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
      first = false;
    }
    line += "}, \"sparse\": {";
    first = true;
    for (uint64_t s = 0; s < a.sparse; ++s) {
      if (u(rng) >= sparse_cov[s]) continue;
      line += first ? "\"" : ", \"";
      line += std::to_string(100001 + s);
      line += "\": [";
      for (uint64_t n = 1 + rng() % 49, k = 0; k < n; ++k) {
        if (k > 0) line += ',';
        line += std::to_string(rng() & ((uint64_t{1} << 40) - 1));
      }
      line += ']';
      first = false;
    }
    line += "}}\n";
    std::fwrite(line.data(), 1, line.size(), f);
  }
  return std::fclose(f) == 0 ? 0 : 1;
}
