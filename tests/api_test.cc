// The public C++ API's safety: what a program gets when it misuses a Result.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pcr/image_dataset.h"
#include "pcr/status.h"

namespace pcr {
namespace {

// Runs `f` in a child process; returns what it wrote to stderr and whether
// it ended by SIGABRT.
std::pair<std::string, bool> InChild(const std::function<void()>& f) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    f();
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) err.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {err, WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT};
}

Result<std::string> Fails() { return Status::NotFound("train-pcr: no such dataset"); }

TEST_CASE("reading the value of a failed Result aborts with the error's message") {
  for (const auto& read : std::vector<std::function<void()>>{
           [] { (void)Fails().value(); },
           [] { (void)*Fails(); },
           [] {
             auto r = Fails();
             (void)r->size();
           },
           [] {
             auto r = Fails();
             (void)r.MoveValue();
           },
           [] {
             const auto r = Fails();
             (void)*r;
           },
       }) {
    const auto [err, aborted] = InChild(read);
    CHECK(aborted);
    CHECK_THAT(err, Catch::Contains("Not found: train-pcr: no such dataset"));
  }
  // A real failure from the library reads the same way.
  const auto [err, aborted] = InChild([] { (void)(*ImageDataset::Open("/nonexistent/train-pcr"))->num_images(); });
  CHECK(aborted);
  CHECK_THAT(err, Catch::Contains("/nonexistent/train-pcr"));
}

TEST_CASE("a Result gives its value, a fallback or its error") {
  Result<std::string> ok = std::string("abc");
  CHECK(ok.ok());
  CHECK(ok.status().ok());
  CHECK(*ok == "abc");
  CHECK(ok.ValueOr("x") == "abc");
  CHECK(Fails().ValueOr("x") == "x");
  CHECK(Result<std::string>(std::string("moved")).ValueOr("x") == "moved");
  CHECK(ok.MoveValue() == "abc");

  Result<std::unique_ptr<int>> owned = std::make_unique<int>(7);
  std::unique_ptr<int> taken = owned.MoveValue();
  CHECK(*taken == 7);
  Result<std::unique_ptr<int>> owned2 = std::make_unique<int>(8);
  CHECK(*std::move(owned2).ValueOr(nullptr) == 8);
}

TEST_CASE("a Result built from an OK status is an error, not an empty value") {
  Result<int> r = Status::OK();
  CHECK_FALSE(r.ok());
  CHECK_FALSE(r.status().ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("OK status"));
  CHECK(r.ValueOr(5) == 5);
}

}  // namespace
}  // namespace pcr
