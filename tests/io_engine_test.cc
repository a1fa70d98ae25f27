#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "io/io_engine.h"
#include "io/location.h"
#include "test_util.h"

namespace pcr {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// Files of pseudo-random bytes, so every offset holds a known value.
struct Files {
  TempDir tmp;
  std::vector<Bytes> contents;
  std::vector<std::string> paths;

  explicit Files(size_t count) {
    uint64_t x = 99;
    for (size_t f = 0; f < count; ++f) {
      Bytes b(10000 + f * 3001);
      for (uint8_t& v : b) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<uint8_t>(x >> 56);
      }
      paths.push_back(tmp / ("f" + std::to_string(f)));
      test::WriteFile(paths.back(), b);
      contents.push_back(std::move(b));
    }
  }
};

std::unique_ptr<IoEngine> Engine(IoEngineKind kind, IoEngineOptions o, const IoFaults& faults = {}) {
  o.kind = kind;
  auto e = MakeIoEngine(o, faults);
  REQUIRE(e.ok());
  return std::move(e).value();
}

struct Mode {
  IoEngineKind kind;
  bool direct;
};

const char* Name(IoEngineKind k) { return k == IoEngineKind::kUring ? "uring" : "pread"; }

TEST_CASE("engines read many ranges of many files, through short reads and EAGAIN") {
  const Mode mode = GENERATE(Mode{IoEngineKind::kPread, false}, Mode{IoEngineKind::kPread, true},
                             Mode{IoEngineKind::kUring, false}, Mode{IoEngineKind::kUring, true});
  const IoFaults faults = GENERATE(IoFaults{}, IoFaults{.max_bytes_per_call = 4096},
                                   IoFaults{.eagain_every = 3},
                                   IoFaults{.max_bytes_per_call = 4096, .eagain_every = 2});
  const unsigned depth = GENERATE(1u, 8u, 64u);
  INFO(Name(mode.kind) << (mode.direct ? " direct" : " buffered") << " depth " << depth << " max "
                       << faults.max_bytes_per_call << " eagain " << faults.eagain_every);
  Files files(12);
  auto engine = Engine(mode.kind, {.queue_depth = depth, .direct = mode.direct}, faults);
  CHECK(engine->name() == Name(mode.kind));
  std::vector<std::unique_ptr<RandomAccessFile>> open;
  for (const auto& p : files.paths) {
    auto f = engine->Open(p);
    REQUIRE(f.ok());
    CHECK((*f)->direct() == mode.direct);
    open.push_back(std::move(f).value());
  }
  std::vector<ReadRequest> reqs;
  std::vector<Bytes> out;
  uint64_t x = 7, bytes = 0;
  for (int i = 0; i < 200; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const size_t f = (x >> 40) % open.size();
    const uint64_t size = open[f]->size();
    const uint64_t off = (x >> 8) % size;
    const uint64_t len = std::min<uint64_t>(size - off, (x >> 24) % 9000);
    out.emplace_back(len);
    bytes += len;
    reqs.push_back({open[f].get(), off, len, nullptr});
  }
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].out = out[i].data();
  REQUIRE(engine->Read(reqs).ok());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Bytes& src = files.contents[std::distance(
        open.begin(), std::find_if(open.begin(), open.end(), [&](auto& f) { return f.get() == reqs[i].file; }))];
    CHECK(std::equal(out[i].begin(), out[i].end(), src.begin() + reqs[i].offset));
    CHECK(reqs[i].status.ok());
  }
  CHECK(engine->counters().reads == 200);
  CHECK(engine->counters().bytes_read == bytes);
}

TEST_CASE("errors are reported per request and name the file") {
  const IoEngineKind kind = GENERATE(IoEngineKind::kPread, IoEngineKind::kUring);
  INFO(Name(kind));
  Files files(3);
  auto engine = Engine(kind, {});
  auto a = engine->Open(files.paths[0]);
  auto b = engine->Open(files.paths[1]);
  auto c = engine->Open(files.paths[2]);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  (*b)->Close();
  // c shrinks after it was opened: the read meets a real end of file.
  REQUIRE(truncate(files.paths[2].c_str(), 5000) == 0);
  Bytes ok(100), closed(100), past(100), shrunk(100);
  ReadRequest reqs[] = {
      {a->get(), 10, 100, ok.data()},
      {b->get(), 0, 100, closed.data()},
      {a->get(), (*a)->size() - 50, 100, past.data()},
      {c->get(), 6000, 100, shrunk.data()},
  };
  const Status s = engine->Read(reqs);
  CHECK_FALSE(s.ok());
  CHECK(reqs[0].status.ok());
  CHECK(std::equal(ok.begin(), ok.end(), files.contents[0].begin() + 10));
  CHECK_THAT(reqs[1].status.message(), Catch::Contains(files.paths[1]) && Catch::Contains("closed"));
  CHECK(reqs[2].status.code() == StatusCode::kCorruption);
  CHECK_THAT(reqs[2].status.message(), Catch::Contains(files.paths[0]) && Catch::Contains("past the end"));
  CHECK(reqs[3].status.code() == StatusCode::kCorruption);
  CHECK_THAT(reqs[3].status.message(),
             Catch::Contains(files.paths[2]) && Catch::Contains("unexpected end of file at offset 6000"));
  CHECK(s.message() == reqs[1].status.message());
  CHECK(engine->counters().reads == 1);
}

TEST_CASE("a filesystem refusing O_DIRECT falls back to buffered reads with a note") {
  const IoEngineKind kind = GENERATE(IoEngineKind::kPread, IoEngineKind::kUring);
  Files files(1);
  auto engine = Engine(kind, {.direct = true}, {.refuse_direct = true});
  auto f = engine->Open(files.paths[0]);
  REQUIRE(f.ok());
  CHECK_FALSE((*f)->direct());
  CHECK_THAT(engine->note(), Catch::Contains("O_DIRECT") && Catch::Contains(files.paths[0]));
  Bytes out(1000);
  ReadRequest req{f->get(), 123, 1000, out.data()};
  REQUIRE(engine->Read({&req, 1}).ok());
  CHECK(std::equal(out.begin(), out.end(), files.contents[0].begin() + 123));
}

TEST_CASE("a bandwidth cap delivers the right bytes no faster than the cap") {
  const IoEngineKind kind = GENERATE(IoEngineKind::kPread, IoEngineKind::kUring);
  INFO(Name(kind));
  Files files(1);
  // 1 MB/s over 10 reads of the 10000-byte file: at least 100 ms less the
  // burst the bucket starts with.
  auto engine = Engine(kind, {.max_io_bytes = 4096, .max_mbps = 1});
  auto f = engine->Open(files.paths[0]);
  REQUIRE(f.ok());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    Bytes out((*f)->size());
    ReadRequest req{f->get(), 0, out.size(), out.data()};
    REQUIRE(engine->Read({&req, 1}).ok());
    CHECK(out == files.contents[0]);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= std::chrono::milliseconds(100) - kCapBurst);
}

TEST_CASE("a cancelled read returns Cancelled, also while it waits for the bandwidth cap") {
  const IoEngineKind kind = GENERATE(IoEngineKind::kPread, IoEngineKind::kUring);
  INFO(Name(kind));
  Files files(2);
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  // 1e-9 MB/s: the first I/O alone would wait for years.
  auto engine = Engine(kind, {.max_io_bytes = 4096, .max_mbps = 1e-9, .cancel = cancel});
  std::vector<std::unique_ptr<RandomAccessFile>> open;
  std::vector<Bytes> out;
  std::vector<ReadRequest> reqs;
  for (const std::string& path : files.paths) {
    auto f = engine->Open(path);
    REQUIRE(f.ok());
    open.push_back(std::move(f).value());
    out.emplace_back(open.back()->size());
  }
  for (size_t i = 0; i < open.size(); ++i) reqs.push_back({open[i].get(), 0, out[i].size(), out[i].data()});
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel->store(true);
  });
  const Status st = engine->Read(reqs);
  canceller.join();
  CHECK(st.code() == StatusCode::kCancelled);
  CHECK_THAT(st.message(), Catch::Contains(files.paths[0]) && Catch::Contains("cancelled"));
  for (const ReadRequest& r : reqs) CHECK(r.status.code() == StatusCode::kCancelled);
  // Without a cap, a cancelled engine issues no I/O at all.
  auto uncapped = Engine(kind, {.cancel = cancel});
  auto f = uncapped->Open(files.paths[1]);
  REQUIRE(f.ok());
  std::fill(out[1].begin(), out[1].end(), uint8_t{0xEE});
  ReadRequest one{f->get(), 0, out[1].size(), out[1].data()};
  CHECK(uncapped->Read({&one, 1}).code() == StatusCode::kCancelled);
  CHECK(std::all_of(out[1].begin(), out[1].end(), [](uint8_t v) { return v == 0xEE; }));
}

// tests/fault_server.py serving `root` on a free loopback port, failing as
// `fault` says every `every`th GET; stopped when destroyed.
class FaultServer {
 public:
  FaultServer(const std::string& root, const std::string& fault, int every) {
    {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t len = sizeof addr;
      REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
      REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
      port_ = ntohs(addr.sin_port);
      close(fd);
    }
    const std::string server = test::DataDir() + "/../fault_server.py";
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      const std::string port_text = std::to_string(port_), every_text = std::to_string(every);
      execl("/usr/bin/python3", "python3", server.c_str(), root.c_str(), port_text.c_str(), fault.c_str(),
            every_text.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 200 && !listening_; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port_));
      listening_ = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
      close(fd);
      if (!listening_) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~FaultServer() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::string url(const std::string& name) const { return "http://127.0.0.1:" + std::to_string(port_) + "/" + name; }
  bool listening() const { return listening_; }

 private:
  int port_ = 0;
  pid_t pid_ = -1;
  bool listening_ = false;
};

TEST_CASE("a cancelled remote read returns Cancelled from an endpoint that never answers") {
  TempDir root;
  test::WriteFile(root / "obj", Bytes(1000, 7));
  FaultServer server(root.path().string(), "hang", 1);
  REQUIRE(server.listening());
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  auto engine = Engine(IoEngineKind::kPread, {.cancel = cancel});
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel->store(true);
  });
  // Opening asks for the size, which the server never gives.
  auto f = engine->Open(server.url("obj"));
  canceller.join();
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().code() == StatusCode::kCancelled);
  CHECK_THAT(f.status().message(), Catch::Contains("/obj: request cancelled"));
}

TEST_CASE("a whole remote object is one GET of a prefix, and one more for the rest of a longer one") {
  TempDir root;
  Bytes object(3000);
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<uint8_t>(i * 7 + i / 256);
  test::WriteFile(root / "obj", object);
  FaultServer server(root.path().string(), "none", 1);
  REQUIRE(server.listening());
  auto engine = Engine(IoEngineKind::kPread, {});
  struct Case {
    uint64_t first_bytes, requests;
  };
  uint64_t sent = 0;
  for (const Case c : {Case{1 << 20, 1}, Case{3000, 1}, Case{2999, 2}, Case{1, 2}}) {
    CAPTURE(c.first_bytes);
    const IoCounters before = engine->counters();
    auto bytes = engine->ReadWhole(server.url("obj"), c.first_bytes);
    REQUIRE(bytes.ok());
    CHECK(*bytes == object);
    CHECK(engine->remote_requests() - sent == c.requests);
    CHECK(engine->counters().reads - before.reads == c.requests);
    CHECK(engine->counters().bytes_read - before.bytes_read == object.size());
    sent = engine->remote_requests();
  }
  auto missing = engine->ReadWhole(server.url("missing"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("/missing"));
  // A server answering for another range than the prefix is refused.
  FaultServer shifted(root.path().string(), "shift", 1);
  REQUIRE(shifted.listening());
  auto wrong = engine->ReadWhole(shifted.url("obj"), 100);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.status().message(),
             Catch::Contains("/obj: bytes 0-99: answered with Content-Range 'bytes 1-100/3000'"));
}

TEST_CASE("threads sharing an engine read at the same time") {
  const IoEngineKind kind = GENERATE(IoEngineKind::kPread, IoEngineKind::kUring);
  INFO(Name(kind));
  Files files(3);
  // Every read call waits, inside the engine, until kThreads calls are
  // inside at once; an engine that let one call in at a time would leave
  // the first waiting until the deadline.
  constexpr int kThreads = 4;
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool all_met = true;
  IoFaults faults{.in_read = [&] {
    std::unique_lock lock(mu);
    ++inside;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return inside >= kThreads; })) all_met = false;
  }};
  auto engine = Engine(kind, {.queue_depth = 4}, faults);
  std::vector<std::unique_ptr<RandomAccessFile>> opened;
  for (const std::string& p : files.paths) opened.push_back(std::move(engine->Open(p)).value());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const size_t f = static_cast<size_t>(t) % files.paths.size();
      std::vector<Bytes> out(8, Bytes(777));
      std::vector<ReadRequest> reqs;
      for (size_t i = 0; i < out.size(); ++i) {
        reqs.push_back({opened[f].get(), i * 1000 + static_cast<uint64_t>(t), out[i].size(), out[i].data()});
      }
      if (!engine->Read(reqs).ok()) ++wrong;
      for (size_t i = 0; i < out.size(); ++i) {
        if (!std::equal(out[i].begin(), out[i].end(), files.contents[f].begin() + reqs[i].offset)) ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(all_met);
  CHECK(inside == kThreads);
  CHECK(wrong == 0);
}

TEST_CASE("the engine is chosen by its options alone") {
  CHECK(*ParseIoEngineKind("pread") == IoEngineKind::kPread);
  CHECK(*ParseIoEngineKind("uring") == IoEngineKind::kUring);
  CHECK(*ParseIoEngineKind("auto") == IoEngineKind::kAuto);
  CHECK(ParseIoEngineKind("mmap").status().code() == StatusCode::kInvalidArgument);
  // The library reads no environment: PCR_IO_ENGINE is the tools' to apply.
  const char* saved = std::getenv("PCR_IO_ENGINE");
  const std::string restore = saved != nullptr ? saved : "";
  setenv("PCR_IO_ENGINE", "pread", 1);
  auto automatic = MakeIoEngine(IoEngineOptions{});
  REQUIRE(automatic.ok());
  CHECK(((*automatic)->name() == "uring" || !(*automatic)->note().empty()));
  if (restore.empty()) {
    unsetenv("PCR_IO_ENGINE");
  } else {
    setenv("PCR_IO_ENGINE", restore.c_str(), 1);
  }
  CHECK((*MakeIoEngine({.kind = IoEngineKind::kPread}))->name() == "pread");
  CHECK((*MakeIoEngine({.kind = IoEngineKind::kUring}))->name() == "uring");
  CHECK_FALSE(MakeIoEngine({.queue_depth = 0}).ok());
  auto bad_kind = MakeIoEngine({.kind = static_cast<IoEngineKind>(7)});
  REQUIRE_FALSE(bad_kind.ok());
  CHECK_THAT(bad_kind.status().message(), Catch::Contains("IoEngineKind"));
  CHECK_FALSE(MakeIoEngine({.max_io_bytes = uint64_t{1} << 32}).ok());
}

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

TEST_CASE("long requests are split into I/Os; aligned direct requests are read in place") {
  const IoEngineKind kind = GENERATE(IoEngineKind::kPread, IoEngineKind::kUring);
  const bool direct = GENERATE(false, true);
  INFO(Name(kind) << (direct ? " direct" : " buffered"));
  Files files(4);
  const Bytes& content = files.contents[3];  // 19003 bytes
  auto engine = Engine(kind, {.direct = direct, .max_io_bytes = 4096});
  auto f = engine->Open(files.paths[3]);
  REQUIRE(f.ok());
  IoBuffer aligned(8192);
  Bytes unaligned(5000);
  ReadRequest reqs[] = {{f->get(), 4096, 8192, aligned.data()}, {f->get(), 17, 5000, unaligned.data()}};
  REQUIRE(engine->Read(reqs).ok());
  CHECK(std::equal(aligned.data(), aligned.data() + 8192, content.begin() + 4096));
  CHECK(std::equal(unaligned.begin(), unaligned.end(), content.begin() + 17));
  const IoCounters c = engine->counters();
  CHECK(c.reads == 2);
  CHECK(c.bytes_read == 8192 + 5000);
  // 8192 bytes in two I/Os; 5000 bytes at 17 in two (direct: its aligned 8192 bytes).
  CHECK(c.ios == 4);
}

}  // namespace
}  // namespace pcr

namespace pcr {
namespace {

TEST_CASE("without io_uring the automatic engine falls back to pread with a note") {
  auto fallback = MakeIoEngine({}, {.refuse_uring = true});
  REQUIRE(fallback.ok());
  CHECK((*fallback)->name() == "pread");
  CHECK_THAT((*fallback)->note(), Catch::Contains("io_uring unavailable"));
  auto forced = MakeIoEngine({.kind = IoEngineKind::kUring}, {.refuse_uring = true});
  REQUIRE_FALSE(forced.ok());
  CHECK(forced.status().code() == StatusCode::kNotSupported);
}

TEST_CASE("Locate tells files, datasets, parts and table directories apart, local and remote") {
  const std::string golden = test::DataDir() + "/golden";
  auto dataset = Locate(golden + "/v0.1-images");
  REQUIRE(dataset.ok());
  CHECK(dataset->directory);
  CHECK(dataset->dataset_manifest);
  CHECK_FALSE(dataset->part_manifest);
  CHECK(dataset->pcr_files.empty());  // a dataset's directory is not listed
  CHECK(dataset->Join("dataset.pcrd") == golden + "/v0.1-images/dataset.pcrd");
  CHECK_THAT(dataset->TableFile().status().message(), Catch::EndsWith("v0.1-images: an image dataset (dataset.pcrd), "
                                                                      "not a table"));
  auto part = Locate(golden + "/v0.3-parts/part0");
  REQUIRE(part.ok());
  CHECK(part->part_manifest);
  CHECK_FALSE(part->dataset_manifest);
  CHECK(part->pcr_files.size() == 2);
  CHECK_THAT(Locate(golden + "/v0.6-tables")->TableFile().status().message(),
             Catch::Contains("expected one table (.pcr) file, found 3"));

  TempDir tmp;
  fs::copy_file(golden + "/v0.6-tables/maps.pcr", tmp / "t.pcr");
  auto table_dir = Locate(tmp.path().string());
  REQUIRE(table_dir.ok());
  CHECK_FALSE(table_dir->dataset_manifest);
  CHECK(table_dir->TableFile().value() == tmp / "t.pcr");
  auto file = Locate(tmp / "t.pcr");
  REQUIRE(file.ok());
  CHECK_FALSE(file->directory);
  CHECK(file->TableFile().value() == tmp / "t.pcr");
  auto missing = Locate(tmp / "none");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->directory);

  auto remote_file = Locate("s3://bucket/x/t.pcr");
  REQUIRE(remote_file.ok());
  CHECK(remote_file->remote);
  CHECK_FALSE(remote_file->directory);
  auto remote_dataset = Locate("https://host/data/ds/");
  REQUIRE(remote_dataset.ok());
  CHECK(remote_dataset->directory);
  CHECK_FALSE(remote_dataset->dataset_manifest);  // not looked at: reading it tells
  CHECK(remote_dataset->TableFile().value() == "https://host/data/ds/");
  CHECK(remote_dataset->Join("dataset.pcrd") == "https://host/data/ds/dataset.pcrd");

  auto engine = MakeIoEngine({.kind = IoEngineKind::kPread});
  REQUIRE(engine.ok());
  CHECK(ReadFileKind(tmp / "t.pcr", **engine).value() == FileKind::kTable);
  CHECK(ReadFileKind(golden + "/v0.1-images/records-00000.pcr", **engine).value() == FileKind::kImages);
  std::ofstream(tmp / "x.pcr") << "not a pcr file, though long enough to hold a header of one";
  const auto bad = ReadFileKind(tmp / "x.pcr", **engine);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::StartsWith(tmp / "x.pcr"));
}

}  // namespace
}  // namespace pcr
